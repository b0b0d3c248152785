"""`./tally up`'s command: migrates, makes the demo, runs web + worker + beat, Ctrl-C stops all."""

import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.processes import child_env

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _children(pid: int) -> list[str]:
    out = subprocess.run(["ps", "-o", "args=", "--ppid", str(pid)], capture_output=True, text=True)
    return out.stdout.splitlines()


@pytest.mark.slow
def test_starts_everything_prints_logins_and_stops_cleanly_on_ctrl_c(tmp_path):
    port = _free_port()
    env = child_env(TALLY_DATA_DIR=str(tmp_path))
    log = (tmp_path / "up.log").open("w+b")
    up = subprocess.Popen(
        [sys.executable, "manage.py", "tally_up", "--port", str(port),
         "--demo-sentences", "120", "--demo-answers", "80"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 240
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert up.poll() is None, (tmp_path / "up.log").read_text()
            assert time.monotonic() < deadline, (tmp_path / "up.log").read_text()
            time.sleep(0.5)
        children = _children(up.pid)
        assert any("runserver" in c for c in children)
        assert any("worker" in c for c in children) and any(" beat" in c for c in children)
        output = (tmp_path / "up.log").read_text()
        assert "manager:   manager / " in output and "annotator: annotator / " in output
        assert f"http://127.0.0.1:{port}/join/" in output

        up.send_signal(signal.SIGINT)  # what Ctrl-C sends
        assert up.wait(timeout=30) is not None
        time.sleep(0.5)
        assert _children(up.pid) == []
        with pytest.raises(httpx.TransportError):
            httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2)
    finally:
        if up.poll() is None:
            up.kill()
