"""Tally's production stack on this machine, apart from anything else running on it.

For benchmarks and end-to-end tests that need the real thing, and the power to break it:

- `Postgres`: a throwaway PostgreSQL cluster (initdb into a directory, its own port), which can be
  stopped as a crash does (`pg_ctl -m immediate`) and started again (crash recovery);
- `Redis`: its own redis-server on its own port, as docker-compose runs it (append-only file);
- `Platform`: the processes docker-compose runs from one image (gunicorn with `gunicorn.conf.py`,
  Celery workers, beat) with the production settings, each of which can be killed (`kill -9`)
  and started again, as a container's restart policy does.

Everything listens on 127.0.0.1 only and is stopped by `close()` (the objects are context
managers). PostgreSQL refuses to run as root: as root, the cluster is run as the `postgres`
user, which owns its directory.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
# Behind the TLS-terminating proxy production expects, every request says it came over HTTPS.
PROXY_HEADERS = {"X-Forwarded-Proto": "https"}
# Variables of the calling process that must not leak into the platform's processes: a test
# run's database and Redis, the flags a test fixture sets for itself (Playwright needs
# DJANGO_ALLOW_ASYNC_UNSAFE in the test process; a deploy check must never see it).
CALLER_ONLY_VARIABLES = {
    "DATABASE_URL",
    "REDIS_URL",
    "DJANGO_ALLOW_ASYNC_UNSAFE",
    "DJANGO_SETTINGS_MODULE",
    "TALLY_REQUIRE_SERVICES",
    "TALLY_DB_TESTS_ONLY",
}


class StackError(RuntimeError):
    """A part of the stack did not start or stop as it should (the message says which)."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def child_env(**variables: str) -> dict[str, str]:
    """The environment a user would give a platform process: the caller's, without the
    caller's own database and flags, plus `variables`."""
    env = {k: v for k, v in os.environ.items() if k not in CALLER_ONLY_VARIABLES}
    env.update(variables)
    return env


def production_env(
    *, database_url: str, redis_url: str | None, data_dir: Path, port: int, **extra: str
) -> dict[str, str]:
    """The production settings, as docker-compose gives them, for a stack on 127.0.0.1
    (without `redis_url`, the broker and cache that need no server)."""
    env = child_env(
        TALLY_ENV="production",
        SECRET_KEY=secrets.token_urlsafe(64),
        ALLOWED_HOSTS="127.0.0.1",
        DATABASE_URL=database_url,
        TALLY_DATA_DIR=str(data_dir),
        STATIC_ROOT=str(data_dir / "static"),
        TALLY_BIND=f"127.0.0.1:{port}",
        PYTHONUNBUFFERED="1",
        **extra,
    )
    if redis_url:
        env["REDIS_URL"] = redis_url
    return env


def children(pid: int) -> list[int]:
    """The direct children of process `pid` (from /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    if int(handle.read().rsplit(")", 1)[1].split()[1]) == pid:
                        found.append(int(entry))
            except (OSError, IndexError, ValueError):
                continue
    return found


_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process `pid` so far (0 if it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / _TICKS


def _as_owner(user: str | None) -> dict:
    return {"user": user} if user else {}


# PostgreSQL --------------------------------------------------------------------------------------


def postgres_bindir() -> Path:
    """The newest PostgreSQL server binaries on this machine (`TALLY_PG_BINDIR` to choose)."""
    chosen = os.environ.get("TALLY_PG_BINDIR")
    candidates = [chosen] if chosen else glob.glob("/usr/lib/postgresql/*/bin")
    candidates = [c for c in candidates if c and (Path(c) / "initdb").exists()]
    if not candidates and shutil.which("initdb"):
        candidates = [str(Path(shutil.which("initdb")).parent)]
    if not candidates:
        raise StackError("PostgreSQL server binaries (initdb, pg_ctl) not found")
    return Path(max(candidates, key=lambda c: [int(p) for p in Path(c).parent.name.split(".")
                                                if p.isdigit()] or [0]))  # fmt: skip


@dataclass
class Postgres:
    """A throwaway PostgreSQL cluster in `root`, on `port`, with trust authentication for
    127.0.0.1 only. `stop(mode="immediate")` is a crash: the next `start()` recovers from WAL."""

    root: Path
    port: int = field(default_factory=free_port)
    settings: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.bindir = postgres_bindir()
        self.data = self.root / "pgdata"
        self.log = self.root / "postgres.log"
        self.owner = "postgres" if os.geteuid() == 0 else None

    def _run(self, *args: str, timeout: float = 120, check: bool = True):
        return subprocess.run(
            [str(self.bindir / args[0]), *args[1:]],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=check,
            **_as_owner(self.owner),
        )

    def init(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        if self.owner:
            entry = pwd.getpwnam(self.owner)
            os.chown(self.root, entry.pw_uid, entry.pw_gid)
            # The postgres user must reach its directory: our own temporary directories on
            # the way (mkdtemp makes them private) become traversable, nothing else.
            temp = Path(tempfile.gettempdir()).resolve()
            for parent in self.root.resolve().parents:
                if temp not in parent.parents:
                    break
                mode = parent.stat().st_mode
                if parent.stat().st_uid == os.geteuid() and not mode & 0o001:
                    parent.chmod(mode | 0o011)
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "-A", "trust", "-E", "UTF8",
                  "--no-sync", "--no-instructions")  # fmt: skip

    def start(self, *, timeout: float = 60) -> None:
        options = {
            "port": str(self.port),
            "listen_addresses": "127.0.0.1",
            "unix_socket_directories": str(self.root),
            "max_connections": "200",
            **self.settings,
        }
        line = " ".join(f"-c {key}={value}" for key, value in options.items())
        done = self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", line,
                         "-w", "-t", str(int(timeout)), "start", check=False)  # fmt: skip
        if done.returncode != 0:
            raise StackError(f"PostgreSQL did not start: {done.stdout}{done.stderr}{self.tail()}")

    def stop(self, mode: str = "fast") -> None:
        """`fast` (clean), or `immediate`: the server quits at once, as in a crash."""
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop",
                  check=False)  # fmt: skip

    def accepting(self) -> bool:
        done = subprocess.run(
            [str(self.bindir / "pg_isready"), "-q", "-h", "127.0.0.1", "-p", str(self.port)],
            check=False,
            timeout=10,
        )
        return done.returncode == 0

    def url(self, database: str = "postgres") -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def tail(self, lines: int = 20) -> str:
        return tail(self.log, lines)


# Redis -------------------------------------------------------------------------------------------


@dataclass
class Redis:
    """A redis-server of our own, persisted as in docker-compose (`--appendonly yes`), so a
    restart keeps the queued jobs. `stop()` is a clean shutdown, `kill()` a crash."""

    root: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen | None = None

    def url(self, db: int = 0) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    def start(self, *, timeout: float = 20) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        command = [shutil.which("redis-server") or "redis-server", "--port", str(self.port),
                   "--bind", "127.0.0.1", "--dir", str(self.root), "--appendonly", "yes",
                   "--save", "", "--protected-mode", "yes"]  # fmt: skip
        log = (self.root / "redis.log").open("ab")
        self.process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        log.close()
        deadline = time.monotonic() + timeout
        while not self.accepting():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise StackError("redis-server did not start:\n" + tail(self.root / "redis.log"))
            time.sleep(0.05)

    def accepting(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()  # SIGTERM: redis-server shuts down cleanly
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None


# The platform's processes ------------------------------------------------------------------------


def tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


@dataclass
class Service:
    name: str
    command: list[str]
    process: subprocess.Popen | None = None
    starts: int = 0


class Platform:
    """gunicorn, Celery workers and beat with `env` (see `production_env`), from `BASE_DIR`.

    Each service runs in a session of its own, so that killing it kills its children too (a
    Celery worker's pool processes), as a container's end does. Logs go to `logs/<name>.log`.
    """

    def __init__(self, root: Path, env: dict[str, str], *, python: str = sys.executable) -> None:
        self.root, self.env, self.python = root, env, python
        self.logs = root / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.services: dict[str, Service] = {}
        self.port = int(env["TALLY_BIND"].rsplit(":", 1)[1])
        self.url = f"http://127.0.0.1:{self.port}"

    def manage(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
        """`manage.py <args>` with the platform's environment; its output."""
        return subprocess.run(
            [self.python, "manage.py", *args],
            cwd=BASE_DIR,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=True,
        )

    def add(self, name: str, command: list[str]) -> Service:
        self.services[name] = Service(name, command)
        return self.services[name]

    def add_web(self, *extra: str) -> Service:
        return self.add("web", [self.python, "-m", "gunicorn", "-c", "gunicorn.conf.py", *extra,
                                "config.wsgi"])  # fmt: skip

    def add_events(self, port: int, *extra: str) -> Service:
        """The event server (uvicorn, `config.asgi`), which production routes the dashboards'
        event streams to."""
        return self.add("events", [self.python, "-m", "uvicorn", "config.asgi:application",
                                   "--host", "127.0.0.1", "--port", str(port), "--lifespan", "off",
                                   *extra])  # fmt: skip

    def add_worker(self, name: str = "worker", *extra: str) -> Service:
        return self.add(name, [self.python, "-m", "celery", "-A", "config", "worker", "-l",
                               "INFO", "-n", f"{name}@%h", *extra])  # fmt: skip

    def add_beat(self) -> Service:
        return self.add("beat", [self.python, "-m", "celery", "-A", "config", "beat", "-l", "INFO",
                                 "--schedule", str(self.root / "beat-schedule")])  # fmt: skip

    def start(self, name: str) -> None:
        service = self.services[name]
        with (self.logs / f"{name}.log").open("ab") as log:
            service.process = subprocess.Popen(
                service.command,
                cwd=BASE_DIR,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        service.starts += 1

    def start_all(self) -> None:
        for name in self.services:
            self.start(name)

    def pid(self, name: str) -> int | None:
        process = self.services[name].process
        return process.pid if process is not None and process.poll() is None else None

    def running(self, name: str) -> bool:
        return self.pid(name) is not None

    def kill(self, name: str) -> None:
        """`kill -9` of the service and every process of its session."""
        process = self.services[name].process
        if process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()

    def stop(self, name: str, timeout: float = 20) -> None:
        process = self.services[name].process
        if process is None or process.poll() is not None:
            return
        try:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill(name)
        except ProcessLookupError:
            pass

    def close(self) -> None:
        for name in reversed(list(self.services)):
            self.stop(name)

    def web_workers(self) -> list[int]:
        """The gunicorn worker processes (children of the master)."""
        pid = self.pid("web")
        return children(pid) if pid else []

    def wait_healthy(
        self, timeout: float = 90, path: str = "/healthz", *, name: str = "web", url: str = ""
    ) -> None:
        """Until `url` (default: the web server's) answers 200 at `path`; `StackError` if the
        service `name` exits or `timeout` passes first."""
        target = (url or self.url) + path
        request = urllib.request.Request(target, headers=PROXY_HEADERS)  # noqa: S310 (http://127.0.0.1)
        deadline = time.monotonic() + timeout
        while True:
            try:
                with urllib.request.urlopen(request, timeout=5) as response:  # noqa: S310
                    if response.status == 200:
                        return
            except (OSError, urllib.error.URLError):
                pass
            if time.monotonic() > deadline or not self.running(name):
                raise StackError(f"{name} did not answer at {target}:\n" + self.tail(name))
            time.sleep(0.2)

    def tail(self, name: str, lines: int = 40) -> str:
        return tail(self.logs / f"{name}.log", lines)
