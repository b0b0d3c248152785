"""A Redis of the test run's own for `./tally test` (issue 26, item 9): a redis-server started on
a free port with an empty temporary folder, stopped when the run ends.

    python -m devtools.own_redis [--required] -- pytest ...

Runs the command with `REDIS_URL` naming that server. Never a Redis found on the machine: a running
Tally's worker on the same Redis took the tests' retrain jobs (and could have run them with the
tests' project ids against its own data), and pub/sub channels are shared by every database
number of a server, so only a server of its own keeps a run apart. `TALLY_TEST_REDIS_URL` names
one explicitly instead (the caller's choice). Without redis-server the command runs without
`REDIS_URL` (the tests that need Redis are skipped), or, with `--required` (CI's full mode), not
at all.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator

import redis


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def redis_server() -> str | None:
    return shutil.which("redis-server") or next(
        (p for p in ("/usr/bin/redis-server", "/usr/sbin/redis-server") if os.path.exists(p)), None
    )


@contextlib.contextmanager
def private_redis(*, binary: str, timeout: float = 10.0) -> Iterator[str]:
    """A redis-server of our own while the block runs; yields its URL (database 0). Nothing is
    written to disk; the server is stopped (and its folder removed) when the block ends."""
    with tempfile.TemporaryDirectory(prefix="tally-test-redis-") as folder:
        for _attempt in range(3):  # another process may take the free port first
            port = free_port()
            process = subprocess.Popen(
                [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                 "--appendonly", "no", "--dir", folder, "--daemonize", "no"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )  # fmt: skip
            url = f"redis://127.0.0.1:{port}/0"
            if _wait_until_it_answers(url, process, timeout):
                break
            _stop(process)
        else:
            raise RuntimeError(f"{binary} did not start (three free ports tried)")
        try:
            yield url
        finally:
            _stop(process)


def _wait_until_it_answers(url: str, process: subprocess.Popen, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    client = redis.Redis.from_url(url, socket_connect_timeout=0.5)
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if client.ping():
                return True
        except redis.RedisError:
            time.sleep(0.05)
    return False


def _stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def main(argv: list[str]) -> int:
    required = "--required" in argv[: argv.index("--")] if "--" in argv else False
    if "--" not in argv or argv.index("--") == len(argv) - 1:
        print("usage: python -m devtools.own_redis [--required] -- command ...", file=sys.stderr)
        return 2
    command = argv[argv.index("--") + 1 :]
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    if os.environ.get("TALLY_TEST_REDIS_URL"):
        env["REDIS_URL"] = os.environ["TALLY_TEST_REDIS_URL"]
        return subprocess.call(command, env=env)
    binary = redis_server()
    if binary is None:
        if required:
            print("tally: redis-server is required (apt-get install redis-server)", file=sys.stderr)
            return 1
        print(
            "tally: redis-server not found: the tests that need Redis are skipped "
            "(apt-get install redis-server)",
            file=sys.stderr,
        )
        return subprocess.call(command, env=env)
    with private_redis(binary=binary) as url:
        print(f"tally: a Redis of this run's own at {url}", file=sys.stderr)
        env["REDIS_URL"] = url
        return subprocess.call(command, env=env)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
