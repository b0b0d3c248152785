"""Real Celery worker processes for the retraining tests, on the test database and Redis."""

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import psycopg.sql
from django.conf import settings
from django.db import connection

from config.celery import app as celery_app

ROOT = Path(__file__).resolve().parents[2]


def database_url() -> str:
    db = connection.settings_dict
    user = db.get("USER") or "postgres"
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    host = db.get("HOST") or "127.0.0.1"
    port = db.get("PORT") or 5432
    return f"postgres://{user}{password}@{host}:{port}/{db['NAME']}"


def worker_env(**extra: str) -> dict[str, str]:
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "REDIS_URL": settings.REDIS_URL,
        "MEDIA_ROOT": str(settings.MEDIA_ROOT),
        "TALLY_LOG_FORMAT": "plain",
        "PYTHONUNBUFFERED": "1",
    }
    env.update(extra)
    return env


class Worker:
    def __init__(self, log: Path, *, beat: bool = False, **env: str) -> None:
        self.log = log
        command = [
            sys.executable, "-m", "celery", "-A", "config", "worker", "--pool", "solo",
            "--loglevel", "INFO", "--without-gossip", "--without-mingle", "-n",
            f"test-{os.getpid()}-{time.monotonic_ns()}@%h",
        ]  # fmt: skip
        if beat:
            command += [
                "--beat", "--scheduler", "django_celery_beat.schedulers:DatabaseScheduler",
                "--schedule", str(log.with_suffix(".beat")),
            ]  # fmt: skip
        self._log_file = log.open("ab")
        self.process = subprocess.Popen(
            command,
            cwd=ROOT,
            env=worker_env(**env),
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def wait_ready(self, timeout: float = 60) -> "Worker":
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if b" ready." in self.log.read_bytes():
                return self
            if self.process.poll() is not None:
                raise AssertionError("worker exited:\n" + self.log.read_text()[-3000:])
            time.sleep(0.1)
        raise AssertionError("worker not ready:\n" + self.log.read_text()[-3000:])

    def kill(self) -> None:
        """SIGKILL: no cleanup, no acknowledgement, like a machine losing power."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)
        self._log_file.close()

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()
        self._log_file.close()


def wait_for(predicate, timeout: float, message: str, interval: float = 0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(message)


def purge_queue() -> None:
    """Drop messages earlier tests left in the queue."""
    celery_app.control.purge()


@contextlib.contextmanager
def broker_at(url: str):
    """Point this process's Celery producer at another broker (e.g. a closed port)."""
    previous = celery_app.conf.broker_url
    celery_app.conf.update(CELERY_BROKER_URL=url)
    celery_app._pool = None
    celery_app.amqp._producer_pool = None
    try:
        yield
    finally:
        celery_app.conf.update(CELERY_BROKER_URL=previous)
        celery_app._pool = None
        celery_app.amqp._producer_pool = None


def rows_held(table: str, project_id: int) -> psycopg.Connection:
    """Lock the project's rows of `table` from another connection (closing it lets go), so that
    a worker writing them waits there, inside its transaction, to be killed."""
    db = connection.settings_dict
    holder = psycopg.connect(
        dbname=db["NAME"], user=db["USER"], host=db["HOST"], port=db["PORT"] or 5432,
        password=db.get("PASSWORD") or None,
    )  # fmt: skip
    query = psycopg.sql.SQL("SELECT 1 FROM {} WHERE project_id = %s FOR UPDATE")
    holder.execute(query.format(psycopg.sql.Identifier(table)), [project_id])
    return holder
