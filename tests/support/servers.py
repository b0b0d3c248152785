"""Start the platform's own servers (gunicorn, uvicorn) as a user would, on a scratch SQLite
database, for tests that must see a real server process: its threads, its memory, its sockets."""

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

from tests.support.processes import child_env

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def scratch_env(data_dir: Path, **variables: str) -> dict[str, str]:
    """The environment of a development-mode platform on SQLite in `data_dir`, migrated."""
    env = child_env(TALLY_DATA_DIR=str(data_dir), PYTHONUNBUFFERED="1", **variables)
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v0"], cwd=ROOT, env=env, check=True
    )
    return env


def manage(env: dict[str, str], *arguments: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *arguments],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout


@contextlib.contextmanager
def serving(command: list[str], env: dict[str, str], url: str, log: Path) -> Iterator[int]:
    """Run `command` (in its own session) until `url`/healthz answers 200; yield its pid."""
    with log.open("wb") as output:
        process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=output, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    if httpx.get(f"{url}/healthz").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if process.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"{command[:3]} did not start:\n{log.read_text()[-3000:]}")
                time.sleep(0.2)
            yield process.pid
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


@contextlib.contextmanager
def gunicorn_scratch(tmp: Path, **variables: str) -> Iterator[tuple[str, int]]:
    """gunicorn with gunicorn.conf.py, one worker process of four threads, logging warnings, on
    a scratch SQLite platform in `tmp` (its data in data/, its log web.log) and `variables`, for
    the block: its URL and the master's pid."""
    port = free_port()
    env = scratch_env(
        tmp / "data",
        TALLY_BIND=f"127.0.0.1:{port}",
        WEB_WORKERS="1",
        WEB_THREADS="4",
        TALLY_LOG_LEVEL="WARNING",
        **variables,
    )
    url = f"http://127.0.0.1:{port}"
    command = [sys.executable, "-m", "gunicorn", "config.wsgi"]
    with serving(command, env, url, tmp / "web.log") as pid:
        yield url, pid


def proc_status(pid: int, field: str) -> int:
    """A number from /proc/PID/status (`VmHWM`, `VmRSS` in kB, `Threads`)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} in /proc/{pid}/status")
