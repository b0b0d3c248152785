"""A real HTTP receiver on 127.0.0.1 in a thread, for webhook tests."""

import http.server
import threading
from dataclasses import dataclass, field


@dataclass
class Receiver:
    url: str
    requests: list = field(default_factory=list)
    statuses: list = field(default_factory=list)  # answered in order; the last one repeats
    server: http.server.HTTPServer | None = None

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def start_receiver(statuses=(200,), headers=None) -> Receiver:
    receiver = Receiver(url="", statuses=list(statuses))

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's naming
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            receiver.requests.append(
                {"path": self.path, "headers": dict(self.headers), "body": body}
            )
            index = min(len(receiver.requests), len(receiver.statuses)) - 1
            self.send_response(receiver.statuses[index])
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    receiver.server = server
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}/hook?x=1"
    return receiver
