"""How many dashboards' event streams one event-server process holds (issue 44, item 9).

    python manage.py benchmark_streams --steps 250,500,1000,2000,4000 --json

It starts a redis-server of its own and one uvicorn process serving `config.asgi` (as
production's event server) on a scratch SQLite database in a temporary directory, all on
127.0.0.1, with the stream caps lifted and streams that last the whole run. Then, step by step,
it opens event streams (from one manager account per 10 streams, as the per-user cap has it)
until the step's count is open, and measures at each step:

- the process's resident memory, threads and open file descriptors (from /proc), and the memory
  each stream added since the process served its first;
- how long the step's new streams took to get their `hello`;
- how long a new report took to reach every open stream: a model version is written, its number
  published on Redis as a retrain publishes it, and the time runs until the last stream has read
  its `report` event (each stream reads the report from the database on its own).

It stops at the last step, or earlier when a step's streams do not all open or a report takes
longer than `--report-seconds` to reach them all (the figure is then the step before). It prints
one JSON object and stops everything it started. Only 127.0.0.1 is touched.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

import redis
from django.core.management.base import BaseCommand, CommandError

from devtools.stack import BASE_DIR, Redis, child_env, free_port

SEED = """
import json
from django.contrib.auth import get_user_model
from accounts import services as accounts
from annotation import services
from annotation.models import Membership
User = get_user_model()
owner = User.objects.create_user("owner")
project = services.project_create(owner=owner, name="Streams", tag_preset="ud_upos",
                                  window_size=5, tags_per_task=2, redundancy=1, gold_fraction=0.0)
tokens = []
for i in range({managers}):
    user = User.objects.create_user(f"manager-{{i}}")
    Membership.objects.create(project=project, user=user, role="manager")
    tokens.append(accounts.token_issue(user=user, name="benchmark").key)
print(json.dumps({{"project": project.pk, "tokens": tokens}}))
"""
NEW_VERSION = """
from learning.models import AccuracyReport, ModelVersion
version = ModelVersion.objects.create(project_id={project}, number={number}, file="none.npz",
                                      observations_count=0, newest_observation=0)
AccuracyReport.objects.create(version=version)
"""


def _proc(pid: int) -> dict:
    status = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "Threads"):
            status[key] = int(value.split()[0])
    status["fds"] = len(list(Path(f"/proc/{pid}/fd").iterdir()))
    return status


class _Stream:
    """One open event stream on a raw connection: its `hello`, then the reports it reads."""

    def __init__(self, port: int, path: str, token: str) -> None:
        self.port, self.path, self.token = port, path, token
        self.hello = asyncio.Event()
        self.reports: dict[int, float] = {}
        self.failed: str | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def run(self) -> None:
        try:
            reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
            self.writer.write(
                f"GET {self.path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Token "
                f"{self.token}\r\nAccept: text/event-stream\r\n\r\n".encode()
            )
            status = (await reader.readline()).decode()
            if " 200 " not in status:
                self.failed = status.strip() or "closed"
                self.hello.set()
                return
            event = None
            while line := await reader.readline():
                text = line.decode().strip()
                if text.startswith("event: "):
                    event = text[7:]
                    if event == "hello":
                        self.hello.set()
                elif text.startswith("id: ") and event == "report":
                    self.reports[int(text[4:])] = time.perf_counter()
            self.failed = self.failed or "ended"
        except OSError as exc:
            self.failed = type(exc).__name__
        finally:
            self.hello.set()

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


class Command(BaseCommand):
    help = __doc__.splitlines()[0]

    def add_arguments(self, parser):
        parser.add_argument("--steps", default="250,500,1000,2000,4000")
        parser.add_argument("--report-seconds", type=float, default=10.0)
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, **options):
        steps = sorted({int(step) for step in options["steps"].split(",")})
        if not steps or steps[0] < 1 or steps[-1] > 8000:
            raise CommandError("--steps: counts from 1 to 8000")
        with tempfile.TemporaryDirectory(prefix="tally-streams-") as tmp:
            result = self._run(Path(tmp), steps, options["report_seconds"])
        self.stdout.write(json.dumps(result, indent=None if options["json"] else 2))

    def _manage(self, env: dict, code: str) -> str:
        import subprocess

        done = subprocess.run(
            [sys.executable, "manage.py", "shell", "-c", code],
            cwd=BASE_DIR, env=env, check=True, capture_output=True, text=True,
        )  # fmt: skip
        return done.stdout

    def _run(self, tmp: Path, steps: list[int], report_seconds: float) -> dict:
        import subprocess

        server = Redis(tmp / "redis")
        server.start()
        try:
            env = child_env(
                TALLY_DATA_DIR=str(tmp / "data"),
                REDIS_URL=server.url(),
                PYTHONUNBUFFERED="1",
                TALLY_SSE_STREAM_SECONDS="3600",
                TALLY_SSE_STREAMS_PER_USER="10",
                TALLY_SSE_STREAMS_PER_ADDRESS="100000",
                TALLY_SSE_STREAMS_TOTAL="100000",
            )
            subprocess.run(
                [sys.executable, "manage.py", "migrate", "--noinput", "-v0"],
                cwd=BASE_DIR, env=env, check=True,
            )  # fmt: skip
            seed = json.loads(
                self._manage(env, SEED.format(managers=(steps[-1] + 9) // 10)).splitlines()[-1]
            )
            port = free_port()
            log = (tmp / "events.log").open("wb")
            command = [sys.executable, "-m", "uvicorn", "config.asgi:application", "--host",
                       "127.0.0.1", "--port", str(port), "--lifespan", "off",
                       "--no-access-log", "--backlog", "4096"]  # fmt: skip
            process = subprocess.Popen(
                command, cwd=BASE_DIR, env=env, stdout=log, stderr=subprocess.STDOUT
            )
            try:
                return asyncio.run(
                    self._measure(port, process.pid, env, seed, steps, report_seconds, server)
                )
            finally:
                process.terminate()
                process.wait(timeout=30)
                log.close()
        finally:
            server.stop()

    async def _measure(self, port, pid, env, seed, steps, report_seconds, server) -> dict:
        deadline = time.monotonic() + 60
        while True:
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise CommandError("uvicorn did not start") from None
                await asyncio.sleep(0.2)
        path = f"/api/projects/{seed['project']}/events/"
        publisher = redis.Redis.from_url(server.url())
        streams: list[_Stream] = []
        tasks: list[asyncio.Task] = []
        rows, base, per_stream_kb = [], None, None
        for number, target in enumerate(steps, start=1):
            fresh = []
            tic = time.perf_counter()
            while len(streams) < target:
                stream = _Stream(port, path, seed["tokens"][len(streams) // 10])
                streams.append(stream)
                fresh.append(stream)
                tasks.append(asyncio.create_task(stream.run()))
                if len(fresh) % 100 == 0:
                    await asyncio.sleep(0.05)  # a burst of 100, as dashboards reconnecting
            await asyncio.wait_for(asyncio.gather(*(s.hello.wait() for s in fresh)), 120)
            opened = time.perf_counter() - tic
            failed = [s.failed for s in streams if s.failed]
            await asyncio.sleep(1)
            proc = _proc(pid)
            if base is None:
                base = (len(streams), proc["VmRSS"])
            elif len(streams) > base[0]:
                per_stream_kb = (proc["VmRSS"] - base[1]) / (len(streams) - base[0])
            await asyncio.to_thread(
                self._manage, env, NEW_VERSION.format(project=seed["project"], number=number)
            )
            sent = time.perf_counter()
            publisher.publish(
                f"tally:project:{seed['project']}:reports", json.dumps({"version": number})
            )
            while time.perf_counter() - sent < report_seconds and not all(
                number in s.reports for s in streams if not s.failed
            ):
                await asyncio.sleep(0.05)
            got = [s.reports[number] - sent for s in streams if number in s.reports]
            row = {
                "streams": len(streams),
                "failed": len(failed),
                "open_seconds": round(opened, 2),
                "opens_per_second": round(len(fresh) / opened, 1),
                "rss_mb": round(proc["VmRSS"] / 1024, 1),
                "threads": proc["Threads"],
                "fds": proc["fds"],
                "report_reached": len(got),
                "report_last_seconds": round(max(got), 2) if got else None,
            }
            rows.append(row)
            self.stderr.write(json.dumps(row))
            if failed or len(got) < len(streams):
                break
        for stream in streams:
            stream.close()
        await asyncio.gather(*tasks, return_exceptions=True)
        held = [r for r in rows if not r["failed"] and r["report_reached"] == r["streams"]]
        # Streams end every TALLY_SSE_STREAM_SECONDS and reconnect: a process keeps N open when
        # it can open N / stream_seconds a second (the last step's rate: with the most open).
        rate = rows[-1]["opens_per_second"]
        return {
            "steps": rows,
            "held_with_reports_within": report_seconds,
            "streams_held": held[-1]["streams"] if held else 0,
            "kb_per_stream": round(per_stream_kb, 1) if per_stream_kb is not None else None,
            "sustained_at_30s_streams": int(rate * 30),
        }
