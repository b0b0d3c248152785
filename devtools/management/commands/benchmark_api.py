"""Benchmark the annotator cycle against the platform served the production way.

    python manage.py benchmark_api --clients 50 --seconds 20 --json

It creates a scratch PostgreSQL database (and drops it at the end), migrates it, seeds a project
from a slice of UD English EWT with one annotator account per client, starts gunicorn with several
workers on a free 127.0.0.1 port, and then drives, with asyncio over keep-alive HTTP/1.1:

1. the trivial view `/api/ping/` (no auth, no database) for a few seconds: the ceiling;
2. `--clients` simulated annotators, each doing what the phone does: lease a first task, then
   loop "submit counts and lease the next task" in one request (the answer's `next`), leasing on
   its own only when an answer brought none.
3. With `--streams N`: the event server (uvicorn, `config.asgi`, as production routes the event
   path to it) is started too, N dashboards' event streams are opened on it (from N / 10 manager
   accounts, reconnecting as EventSource does), and the annotator cycle is measured again while
   they are open. Both servers then use Redis (`--redis-url`), as in production; the figures
   without streams are measured in the same run, as the baseline (`with_streams` holds the rest).

In each phase the clients connect 10 ms apart (`--ramp-ms`), and requests count once all of them
are connected, over `--seconds` (`--ping-seconds` for the trivial view).

Before both, every annotator runs the cycle for a second and the scratch database is ANALYZEd:
a live platform's tables have planner statistics, kept by autovacuum (which this machine's
PostgreSQL has turned off); statistics taken while the assignment and observation tables were
still empty make PostgreSQL plan for empty tables (sequential scans that grow with the run, or a
fresh custom plan for every execution).

It prints one JSON object (`cycles_per_second`, `p99_ms`, `trivial_view_requests_per_second`, ...)
and stops everything it started. Only 127.0.0.1 is touched.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import subprocess
import sys
import time
from pathlib import Path

import psycopg
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from devtools.load import (
    CpuMeter,
    Phase,
    Stats,
    cpu_in_window,
    cycle_measure,
    cycle_warm_up,
    wait_until,
)
from devtools.phones import EWT_TRAIN as EWT
from devtools.phones import Connection, percentile, seed_project
from devtools.stack import (
    Platform,
    StackError,
    free_port,
    production_env,
)

ADMIN_URL_DEFAULT = "postgres://postgres@127.0.0.1:5432/postgres"


def _server_shape(python: str, environ: dict[str, str]) -> tuple[int, int]:
    """(workers, threads) as gunicorn.conf.py sets them in `environ`."""
    read = "import json, runpy; c = runpy.run_path('gunicorn.conf.py'); "
    read += "print(json.dumps([c['workers'], c['threads']]))"
    done = subprocess.run(
        [python, "-c", read],
        cwd=settings.BASE_DIR,
        env=environ,
        capture_output=True,
        text=True,
        check=True,
    )
    workers, threads = json.loads(done.stdout)
    return workers, threads


async def _ping_client(port: int, phase: Phase, client: int, stats: Stats) -> None:
    await wait_until(phase.start_of(client))
    connection = Connection(port, "")
    try:
        while time.perf_counter() < phase.deadline:
            started = time.perf_counter()
            try:
                status, _ = await connection.request("GET", "/api/ping/")
            except (OSError, asyncio.IncompleteReadError):
                stats.error("ping: connection")
                continue
            if started >= phase.window_start:
                stats.latencies["ping"].append(time.perf_counter() - started)
            if status != 200:
                stats.error(f"ping: {status}")
    finally:
        connection.close()


class _StreamStats:
    def __init__(self) -> None:
        self.opened = 0
        self.hello = 0
        self.errors: dict[str, int] = {}

    def error(self, what: str) -> None:
        self.errors[what] = self.errors.get(what, 0) + 1


async def _dashboard_stream(
    port: int, token: str, path: str, until: asyncio.Event, stats: _StreamStats
) -> None:
    """One open dashboard: an event stream, reopened when it ends (as EventSource does)."""
    request = (
        f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Token {token}\r\n"
        "Accept: text/event-stream\r\n\r\n"
    ).encode()
    first = True
    while not until.is_set():
        writer = None
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            status = int(head.split(b" ", 2)[1])
            if status != 200:
                stats.error(f"stream: {status}")
                await asyncio.sleep(1.0)
                continue
            stats.opened += 1
            while not until.is_set():
                read = asyncio.ensure_future(reader.read(4096))
                stop = asyncio.ensure_future(until.wait())
                done, _ = await asyncio.wait({read, stop}, return_when=asyncio.FIRST_COMPLETED)
                if read not in done:
                    read.cancel()
                    break
                stop.cancel()
                chunk = read.result()
                if not chunk:
                    break  # the stream ended: reconnect
                if first and b"event: hello" in chunk:
                    stats.hello += 1
                    first = False
        except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
            stats.error(f"stream: {type(exc).__name__}")
            await asyncio.sleep(0.5)
        finally:
            if writer is not None:
                writer.close()


class Command(BaseCommand):
    help = "Benchmark the annotator cycle (next task + submit) on PostgreSQL behind gunicorn."

    def add_arguments(self, parser):
        parser.add_argument("--clients", type=int, default=50)
        parser.add_argument("--seconds", type=float, default=20.0)
        parser.add_argument("--ping-seconds", type=float, default=None)
        parser.add_argument(
            "--ramp-ms",
            type=float,
            default=10.0,
            help="milliseconds between two clients' first connection (0: all at once)",
        )
        parser.add_argument("--sentences", type=int, default=5000)
        parser.add_argument(
            "--streams",
            type=int,
            default=0,
            help="dashboards' event streams held open on the event server during a second "
            "measurement of the annotator cycle (0: none)",
        )
        parser.add_argument(
            "--redis-url",
            default=os.environ.get("BENCHMARK_REDIS_URL", "redis://127.0.0.1:6379/15"),
            help="Redis for both servers when --streams is given (production's push channel)",
        )
        parser.add_argument(
            "--workers", type=int, default=None, help="gunicorn workers (default: production's)"
        )
        parser.add_argument(
            "--threads", type=int, default=None, help="threads per worker (default: production's)"
        )
        parser.add_argument(
            "--admin-database-url",
            default=os.environ.get("BENCHMARK_ADMIN_DATABASE_URL", ADMIN_URL_DEFAULT),
            help="PostgreSQL URL of a database to connect to while creating the scratch one",
        )
        parser.add_argument(
            "--adaptive",
            action="store_true",
            help="then retrain (a first model, whose value round replaces the uniform tasks "
            "nobody leased) and measure the cycle again on the tasks it chose; the phones "
            "answer exactly, from the gold tags",
        )
        parser.add_argument("--corpus", default=str(EWT))
        parser.add_argument("--json", action="store_true", help="print only the JSON result")
        parser.add_argument(
            "--seed-only",
            action="store_true",
            # internal
            help="(internal) seed the database of DATABASE_URL and print JSON",
        )

    # The parent process ---------------------------------------------------------------------

    def handle(self, *args, **options):
        if options["seed_only"]:
            return self._seed(options)
        quiet = options["json"]
        log = (lambda message: None) if quiet else (lambda message: self.stderr.write(message))
        admin_url = options["admin_database_url"]
        if not admin_url.startswith(("postgres://", "postgresql://")):
            raise CommandError("--admin-database-url must be a postgres:// URL")
        name = f"tally_bench_{os.getpid()}_{secrets.token_hex(3)}"
        scratch_url = admin_url.rsplit("/", 1)[0] + "/" + name
        port = free_port()
        env = production_env(
            database_url=scratch_url,
            redis_url=options["redis_url"] if options["streams"] else None,
            data_dir=Path(settings.DATA_DIR) / "benchmark",
            port=port,
            SECURE_SSL_REDIRECT="0",
            TALLY_LOG_LEVEL="WARNING",
            DB_CONN_MAX_AGE="600",
        )
        # The production server config (gunicorn.conf.py), on a private port.
        if options["workers"]:
            env["WEB_WORKERS"] = str(options["workers"])
        if options["threads"]:
            env["WEB_THREADS"] = str(options["threads"])
        platform = Platform(Path(env["TALLY_DATA_DIR"]), env)
        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}"')
        try:
            log(f"scratch database {name}: migrating and seeding…")
            platform.manage("migrate", "--noinput", "-v0")
            seed_args = ["--seed-only", "--clients", str(options["clients"]), "--sentences",
                         str(options["sentences"]), "--streams", str(options["streams"]),
                         "--corpus", options["corpus"]]  # fmt: skip
            if options["adaptive"]:
                seed_args.append("--adaptive")
            seeded = platform.manage("benchmark_api", *seed_args).stdout
            seed = json.loads(seeded.strip().splitlines()[-1])
            workers, threads = _server_shape(sys.executable, env)
            log(f"gunicorn: {workers} workers × {threads} threads on 127.0.0.1:{port}")
            # --preload: a recycled worker (max_requests) is a fork, not a fresh import.
            platform.add_web("--preload")
            platform.start("web")
            platform.wait_healthy(path="/api/ping/")
            meter = CpuMeter(platform.pid("web"), admin_url, name)
            events_port = None
            if options["streams"]:
                events_port = free_port()
                log(f"event server: uvicorn on 127.0.0.1:{events_port}")
                platform.add_events(events_port, "--no-access-log")
                platform.start("events")
                events_url = f"http://127.0.0.1:{events_port}"
                platform.wait_healthy(path="/api/ping/", name="events", url=events_url)
                meter.event_server_pid = platform.pid("events")
            result = asyncio.run(
                self._drive(port, seed, options, log, meter, scratch_url, events_port)
            )
            if options["adaptive"]:
                result["adaptive"] = self._adaptive(
                    platform, port, seed, log, meter, scratch_url, result
                )
            result |= {
                "clients": options["clients"],
                "seconds": options["seconds"],
                "gunicorn_workers": workers,
                "gunicorn_threads": threads,
                "cpus": os.cpu_count(),
            }
        except StackError as exc:
            raise CommandError(str(exc)) from exc
        finally:
            platform.close()
            with psycopg.connect(admin_url, autocommit=True) as admin:
                admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            log(f"dropped {name}")
        self.stdout.write(json.dumps(result, indent=None if quiet else 2))

    async def _drive(
        self,
        port: int,
        seed: dict,
        options: dict,
        log,
        meter: CpuMeter,
        scratch_url: str,
        events_port: int | None,
    ) -> dict:
        clients, seconds = options["clients"], options["seconds"]
        ping_seconds = options["ping_seconds"] or max(3.0, min(10.0, seconds / 2))
        ramp = options["ramp_ms"] / 1000.0

        def phase(length: float) -> Phase:
            return Phase(time.perf_counter(), clients, ramp, length)

        await cycle_warm_up(port, seed, clients=clients, ramp=ramp, scratch_url=scratch_url)
        log(f"trivial view: {clients} clients for {ping_seconds:.0f} s…")
        ping, ping_phase = Stats(), phase(ping_seconds)
        ping_cpu_parts, *_ = await asyncio.gather(
            cpu_in_window(meter, ping_phase),
            *(_ping_client(port, ping_phase, i, ping) for i in range(clients)),
        )
        ping_elapsed = ping_seconds
        ping_cpu = sum(ping_cpu_parts.values())
        ping_rate = len(ping.latencies["ping"]) / ping_elapsed
        cpu_per_ping = ping_cpu / len(ping.latencies["ping"]) if ping.latencies["ping"] else None
        self._seconds, self._ramp, self._round = seconds, ramp, 0
        log(f"annotator cycle: {clients} clients for {seconds:.0f} s…")
        result = await self._cycle_phase(port, seed, meter)
        result |= {
            "trivial_view_requests_per_second": round(ping_rate, 1),
            "trivial_view_p99_ms": round(percentile(ping.latencies["ping"], 0.99) * 1000, 1),
            # Counted as when a cycle took two requests (a lease, an answer): the phone's two
            # requests per cycle against the trivial view's one, whatever the requests are now.
            "ratio_to_trivial_view": (
                round(2 * result["cycles_per_second"] / ping_rate, 3) if ping_rate else None
            ),
            "cpu_ms_per_trivial_request": round(cpu_per_ping * 1000, 3) if cpu_per_ping else None,
            "idle_machine_ratio_estimate": (
                round(2 * cpu_per_ping / result["_cpu_per_cycle"], 3)
                if result["_cpu_per_cycle"] and cpu_per_ping
                else None
            ),
            "errors": {**result["errors"], **{f"ping {k}": v for k, v in ping.errors.items()}},
        }
        result.pop("_cpu_per_cycle")
        if events_port is not None:
            result["with_streams"] = await self._with_streams(
                port, events_port, seed, options, log, phase, meter
            )
        return result

    async def _with_streams(self, port, events_port, seed, options, log, phase, meter) -> dict:
        """The annotator cycle again, while `--streams` event streams are open."""
        n, managers = options["streams"], seed["managers"]
        path = f"/api/projects/{seed['project']}/events/"
        stop, stream_stats = asyncio.Event(), _StreamStats()
        log(f"opening {n} event streams from {len(managers)} managers…")
        streams = []
        for i in range(n):
            token = managers[i % len(managers)]
            streams.append(
                asyncio.ensure_future(
                    _dashboard_stream(events_port, token, path, stop, stream_stats)
                )
            )
            await asyncio.sleep(0.005)
        deadline = time.perf_counter() + 30
        while stream_stats.hello < n and time.perf_counter() < deadline:
            await asyncio.sleep(0.1)
        hello = stream_stats.hello
        log(f"{hello} streams open; annotator cycle again…")
        result = await self._cycle_phase(port, seed, meter)
        result.pop("_cpu_per_cycle")
        stop.set()
        await asyncio.gather(*streams)
        result |= {
            "streams": n,
            "streams_open_before_measuring": hello,
            "stream_connections": stream_stats.opened,
            "stream_errors": stream_stats.errors,
        }
        return result

    def _adaptive(self, platform, port, seed, log, meter, scratch_url, uniform: dict) -> dict:
        """Retrain (the Celery job's code, in a child process): the first version's value round
        replaces the count tasks nobody leased, in the order of their value; then the cycle
        again, on those tasks (issue 25: at least 0.95 × the uniform cycles/s of this run)."""
        log("adaptive: retraining, which replaces the unleased tasks by a value round…")
        tic = time.perf_counter()
        retrained = platform.manage("retrain", str(seed["project"])).stdout
        outcome = json.loads(retrained.strip().splitlines()[-1])
        if outcome["status"] != "succeeded":
            raise CommandError(f"the retrain before the adaptive phase failed: {outcome}")
        retrain_seconds = time.perf_counter() - tic
        with psycopg.connect(scratch_url) as scratch:
            rows = scratch.execute(
                "SELECT origin, count(*) FROM annotation_task WHERE project_id = %s "
                "AND kind = 'count' AND open_slots > 0 GROUP BY origin",
                [seed["project"]],
            ).fetchall()
        open_tasks = dict(rows)
        log(f"adaptive: {open_tasks} open count tasks; the annotator cycle again…")
        result = asyncio.run(self._cycle_phase(port, seed, meter))
        result.pop("_cpu_per_cycle")
        result |= {
            "ratio_to_uniform": (
                round(result["cycles_per_second"] / uniform["cycles_per_second"], 3)
                if uniform["cycles_per_second"]
                else None
            ),
            "retrain_seconds": round(retrain_seconds, 1),
            "open_count_tasks_by_origin": open_tasks,
        }
        return result

    async def _cycle_phase(self, port, seed, meter) -> dict:
        result = await cycle_measure(
            port, seed, seconds=self._seconds, ramp=self._ramp, meter=meter,
            round_number=self._round,
        )  # fmt: skip
        self._round += 1
        return result

    # The seeding child process (runs with DATABASE_URL = the scratch database) ----------------

    def _seed(self, options) -> None:
        seeded = seed_project(
            phones=options["clients"],
            sentences=options["sentences"],
            corpus=options["corpus"],
            dashboards=options["streams"],
            with_gold=options["adaptive"],  # the phones then answer exactly
        )
        self.stdout.write(json.dumps(seeded))
