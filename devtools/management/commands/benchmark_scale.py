"""Benchmark the platform at a million stored answers (issue 27).

    python manage.py benchmark_scale --json
    python manage.py benchmark_scale --answers 20000 --sentences 2000 --seconds 3 --json
    python manage.py benchmark_scale --only retrain --answers 300000 --json
    python manage.py benchmark_scale --only annotators --json

It creates a scratch PostgreSQL database (dropped at the end), migrates it, and in one run:

1. seeds a project of `--sentences` training sentences (UD English EWT train, repeated with new
   ids past its 12,543), one annotator account per phone (`--clients`) and a simulated crowd
   (`--annotators`), and stores `--small-answers` simulated answers in bulk (tasks, submitted
   assignments, observations: `devtools.seeding`); a first retrain makes the model the live
   model starts from;
2. at that size: the seconds of an online update of `--online-answers` new answers
   (`learning.live.live_model_update`, in a process that keeps its learner as a worker does),
   the annotator cycle against gunicorn (`devtools.load`: phones that do what the phone does)
   and the dashboard's requests;
3. stores answers up to `--answers` in bulk (the seeding time is printed), and measures the
   online update, the cycle and the dashboard again;
4. an export of all answers (`observations.jsonl` through the export view, streamed) and a full
   batch retrain (`retrain_and_push`, the Celery job's code), each in a child process whose
   peak resident memory is read from /proc while it runs; the retrain is stopped after
   `--retrain-timeout` seconds and reported as not finished, with the time reached;
5. freshness on the production stack (gunicorn, a Celery worker, beat, the live model on every
   `--live-seconds`): once the live model has caught up, the seconds from an answer stored
   through the API to that answer being applied by the live model (its watermark);
6. two Celery workers retraining two projects of `--pair-answers` answers at once, against the
   same two retrains one at a time (four identical projects, EWT train).

`--only retrain` seeds `--answers` answers at once and measures the full retrain alone (step 4's
retrain, cold as at a million after 10,000 answers), to measure it at intermediate sizes.

It prints one JSON object (`cycles_per_second_10k`, `cycles_per_second_1m`, `p99_ms_1m`,
`online_update_seconds_10k`, `online_update_seconds_1m`, `retrain_seconds_1m`,
`retrain_peak_mb_1m`, `export_seconds_1m`, `export_peak_mb_1m`, `freshness_seconds`, ...;
"10k" and "1m" name the two sizes whatever `--small-answers` and `--answers` are) and stops
everything it started. Only 127.0.0.1 is touched; progress goes to stderr.
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import secrets
import statistics
import subprocess
import time
from pathlib import Path

import psycopg
import redis
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from annotation.models import Observation
from devtools import scale_steps
from devtools.load import CpuMeter, cycle_measure, cycle_warm_up
from devtools.phones import Connection
from devtools.stack import BASE_DIR, Platform, StackError, free_port, production_env
from learning.models import LiveModel

ADMIN_URL_DEFAULT = "postgres://postgres@127.0.0.1:5432/postgres"
EWT = Path(settings.BASE_DIR) / "data" / "ud-english-ewt"
CROWD_PREFIX = "bench-crowd"
DASHBOARD_PATHS = ("stats/", "reports/latest/", "retrain-status/")  # what the page loads
DASHBOARD_TRIES = 10
PAIR_PROJECTS = 4  # two retrained one at a time, two at once


class Command(BaseCommand):
    help = "Benchmark the cycle, online updates, a retrain, an export and freshness at 1M answers."

    def add_arguments(self, parser):
        parser.add_argument("--answers", type=int, default=1_000_000, help="the large size")
        parser.add_argument("--small-answers", type=int, default=10_000, help="the small size")
        parser.add_argument("--sentences", type=int, default=100_000)
        parser.add_argument("--annotators", type=int, default=200, help="the simulated crowd")
        parser.add_argument("--clients", type=int, default=20, help="phones in the cycle")
        parser.add_argument("--seconds", type=float, default=15.0, help="of the cycle, each size")
        parser.add_argument("--ramp-ms", type=float, default=10.0)
        parser.add_argument("--online-answers", type=int, default=1000)
        parser.add_argument("--online-repeats", type=int, default=3)
        parser.add_argument("--retrain-timeout", type=float, default=1500.0, help="seconds")
        parser.add_argument("--export-timeout", type=float, default=1200.0, help="seconds")
        parser.add_argument("--live-seconds", type=int, default=10, help="TALLY_LIVE_MODEL_SECONDS")
        parser.add_argument("--freshness-samples", type=int, default=3)
        parser.add_argument("--pair-answers", type=int, default=50_000, help="0: skip")
        parser.add_argument("--data", default=str(EWT), help="folder of en_ewt-ud-*.conllu.gz")
        parser.add_argument(
            "--redis-url",
            default=os.environ.get("BENCHMARK_REDIS_URL", "redis://127.0.0.1:6379/14"),
            help="a Redis database of the benchmark's own (its queues are emptied)",
        )
        parser.add_argument(
            "--admin-database-url",
            default=os.environ.get("BENCHMARK_ADMIN_DATABASE_URL", ADMIN_URL_DEFAULT),
            help="PostgreSQL URL of a database to connect to while creating the scratch one",
        )
        parser.add_argument(
            "--only",
            choices=("all", "retrain", "annotators"),
            default="all",
            help="retrain: seed, store answers up to --answers and time the full retrain only "
            "(no first retrain, cycle, online update, export, freshness or pair); annotators: "
            "the online learner's memory with --annotator-ids against 50 ids (no database)",
        )
        parser.add_argument(
            "--annotator-ids", type=int, default=1_000_000, help="distinct ids, --only annotators"
        )
        parser.add_argument(
            "--annotator-block", type=int, default=20_000, help="answers per update, ditto"
        )
        parser.add_argument("--json", action="store_true", help="print the JSON on one line")
        parser.add_argument(
            "--step", default="", help="(internal) one step in a child on the scratch database"
        )
        parser.add_argument("--project", type=int, default=0, help="(internal)")
        parser.add_argument("--projects", default="", help="(internal)")
        parser.add_argument("--seed", type=int, default=0, help="(internal)")
        parser.add_argument("--no-first-retrain", action="store_true", help="(internal)")

    def handle(self, *args, **options):
        if options["step"]:
            result = scale_steps.run(options["step"], options)
            result["peak_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
            self.stdout.write(json.dumps(result))
            return
        admin_url = options["admin_database_url"]
        if not admin_url.startswith(("postgres://", "postgresql://")):
            raise CommandError("--admin-database-url must be a postgres:// URL")
        name = f"tally_bench_scale_{os.getpid()}_{secrets.token_hex(3)}"
        port = free_port()
        env = production_env(
            database_url=admin_url.rsplit("/", 1)[0] + "/" + name,
            redis_url=options["redis_url"],
            data_dir=Path(settings.DATA_DIR) / "benchmark-scale" / name,
            port=port,
            SECURE_SSL_REDIRECT="0",
            TALLY_LOG_LEVEL="WARNING",
            DB_CONN_MAX_AGE="600",
            TALLY_LIVE_MODEL_SECONDS=str(options["live_seconds"]),
        )
        platform = Platform(Path(env["TALLY_DATA_DIR"]), env)
        _redis_empty(options["redis_url"])
        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}"')
        run = _Run(self, platform, options, env["DATABASE_URL"], admin_url, name)
        try:
            result = run.all()
        except (StackError, subprocess.CalledProcessError) as exc:
            detail = getattr(exc, "stderr", "") or ""
            raise CommandError(f"{exc}\n{detail[-3000:]}") from exc
        finally:
            platform.close()
            with psycopg.connect(admin_url, autocommit=True) as admin:
                admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            subprocess.run(["rm", "-rf", env["TALLY_DATA_DIR"]], check=False)
            _redis_empty(options["redis_url"])
            run.log(f"dropped {name}")
        self.stdout.write(json.dumps(result, indent=None if options["json"] else 2))


class _Run:
    """The parent's side of one run: children for the database work, the servers, the clients."""

    def __init__(self, command, platform: Platform, options, scratch_url, admin_url, name):
        self.command, self.platform, self.options = command, platform, options
        self.scratch_url, self.admin_url, self.name = scratch_url, admin_url, name
        self.started = time.monotonic()
        self.round = 0

    def log(self, message: str) -> None:
        self.command.stderr.write(f"[{time.monotonic() - self.started:7.1f} s] {message}")

    def step(self, step: str, *extra: str, timeout: float = 3600) -> dict:
        done = self.platform.manage(
            "benchmark_scale", "--step", step, "--data", self.options["data"], *extra,
            timeout=timeout,
        )  # fmt: skip
        return json.loads(done.stdout.strip().splitlines()[-1])

    def all(self) -> dict:
        options, platform = self.options, self.platform
        small, large = options["small_answers"], options["answers"]
        self.log(f"scratch database {self.name}: migrating…")
        platform.manage("migrate", "--noinput", "-v0")
        if options["only"] == "retrain":
            return self.retrain_only()
        if options["only"] == "annotators":
            return self.annotators()
        self.log(f"seeding {options['sentences']} sentences and {small} answers…")
        seeded = self.step(
            "seed", "--sentences", str(options["sentences"]), "--answers", str(small),
            "--clients", str(options["clients"] + 1), "--annotators", str(options["annotators"]),
        )  # fmt: skip
        project = seeded["seed"]["project"]
        # The last phone answers only in the freshness measurement, on tasks still open.
        phones = seeded["seed"] | {"tokens": seeded["seed"]["tokens"][:-1]}
        fresh_phone = seeded["seed"]["tokens"][-1]
        result = {
            "sentences": seeded["sentences"],
            "answers_small": seeded["answers_stored"],
            "seconds_seeding_small": seeded["seconds_seeding"],
            "retrain_seconds_small": seeded["retrain"]["seconds"],
            "retrain_small": seeded["retrain"],
        }
        self.log("online update, small size…")
        result |= _suffixed(self.online(project, seed=100), "10k")
        platform.add_web("--preload")
        platform.start("web")
        platform.wait_healthy(path="/api/ping/")
        self.log("annotator cycle and dashboard, small size…")
        result |= _suffixed(self.cycle_and_dashboard(phones), "10k")

        self.log(f"storing answers up to {large}…")
        grown = self.step("grow", "--project", str(project), "--answers", str(large), "--seed", "1")
        result |= {
            "answers_large": grown["answers"],
            "seconds_seeding_large": grown["seconds_seeding"],
            "seeding_answers_per_second": grown["answers_per_second"],
            "seeding_peak_mb": grown["peak_mb"],
            "database_mb_1m": _database_mb(self.admin_url, self.name),
        }
        self.log("online update, large size…")
        result |= _suffixed(self.online(project, seed=200), "1m")
        self.log("annotator cycle and dashboard, large size…")
        result |= _suffixed(self.cycle_and_dashboard(phones), "1m")

        self.log("export of every answer…")
        figures, export = self.measured("export", project, options["export_timeout"])
        result |= figures | {
            "export_rows": export.get("rows"),
            "export_megabytes": export.get("megabytes"),
        }
        self.log(f"full retrain (at most {options['retrain_timeout']:.0f} s)…")
        figures, retrain = self.measured("retrain", project, options["retrain_timeout"])
        result |= figures | {"retrain_1m": retrain.get("retrain")}
        self.log("freshness on the production stack…")
        result |= self.freshness(project, fresh_phone)
        if options["pair_answers"]:
            self.log(f"{PAIR_PROJECTS} projects of {options['pair_answers']} answers…")
            result |= self.two_workers()
        result |= {
            "clients": options["clients"],
            "cycle_seconds": options["seconds"],
            "cpus": os.cpu_count(),
            "load_average": [round(x, 2) for x in os.getloadavg()],
            "seconds_total": round(time.monotonic() - self.started, 1),
        }
        return result

    def retrain_only(self) -> dict:
        """``--only retrain``: the project seeded with ``--answers`` answers at once (no first
        retrain: the full retrain is then cold, as at a million after 10,000), and the full
        retrain measured as in a whole run."""
        options = self.options
        self.log(f"seeding {options['sentences']} sentences and {options['answers']} answers…")
        seeded = self.step(
            "seed", "--sentences", str(options["sentences"]), "--answers", str(options["answers"]),
            "--clients", "1", "--annotators", str(options["annotators"]), "--no-first-retrain",
        )  # fmt: skip
        project = seeded["seed"]["project"]
        self.log(f"full retrain (at most {options['retrain_timeout']:.0f} s)…")
        figures, retrain = self.measured("retrain", project, options["retrain_timeout"])
        return {
            "sentences": seeded["sentences"],
            "answers_large": seeded["answers_stored"],
            "seconds_seeding_large": seeded["seconds_seeding"],
            "seeding_peak_mb": seeded["peak_mb"],
            **figures,
            "retrain_1m": retrain.get("retrain"),
            "cpus": os.cpu_count(),
            "load_average": [round(x, 2) for x in os.getloadavg()],
            "seconds_total": round(time.monotonic() - self.started, 1),
        }

    def annotators(self) -> dict:
        """``--only annotators``: the online learner through the same ``--answers`` answers
        from 50 and from ``--annotator-ids`` distinct annotators, each in a child process:
        what the ids cost in peak memory and in the learner's kept state."""
        options, runs = self.options, {}
        for ids in (50, options["annotator_ids"]):
            self.log(f"online learner through {options['answers']} answers of {ids} annotators…")
            runs[ids] = self.step(
                "annotators", "--answers", str(options["answers"]), "--annotator-ids", str(ids),
                "--annotator-block", str(options["annotator_block"]), "--seed", "0",
            )  # fmt: skip
        few, many = runs[50], runs[options["annotator_ids"]]
        return {
            "answers": many["answers"],
            "annotator_ids": many["annotator_ids"],
            "annotators_peak_mb_50": few["peak_mb"],
            "annotators_peak_mb_many": many["peak_mb"],
            "annotators_extra_peak_mb": round(many["peak_mb"] - few["peak_mb"], 1),
            "annotators_state_mb_50": few["state_mb"],
            "annotators_state_mb_many": many["state_mb"],
            "annotators_table_rows_used": many["table_rows_used"],
            "annotators_table_rows_shared": many["table_rows_shared"],
            "annotators_seconds": [few["seconds"], many["seconds"]],
            "cpus": os.cpu_count(),
            "seconds_total": round(time.monotonic() - self.started, 1),
        }

    def online(self, project: int, *, seed: int) -> dict:
        out = self.step(
            "online", "--project", str(project), "--answers", str(self.options["online_answers"]),
            "--seed", str(seed), "--online-repeats", str(self.options["online_repeats"]),
        )  # fmt: skip
        return {
            "online_update_seconds": out["seconds_per_1000"],
            "online_first_update_seconds": out["first_update_seconds"],
            "online_answers_per_update": out["answers_per_update"],
        }

    def cycle_and_dashboard(self, seed: dict) -> dict:
        meter = CpuMeter(self.platform.pid("web"), self.admin_url, self.name)
        ramp = self.options["ramp_ms"] / 1000.0

        async def drive() -> tuple[dict, dict]:
            await cycle_warm_up(
                self.platform.port, seed, clients=len(seed["tokens"]), ramp=ramp,
                scratch_url=self.scratch_url,
            )  # fmt: skip
            cycle = await cycle_measure(
                self.platform.port, seed, seconds=self.options["seconds"], ramp=ramp,
                meter=meter, round_number=self.round,
            )  # fmt: skip
            return cycle, await _dashboard(self.platform.port, seed)

        cycle, dashboard = asyncio.run(drive())
        self.round += 1
        return {
            "cycles_per_second": cycle["cycles_per_second"],
            "p99_ms": cycle["p99_ms"],
            "p50_ms": cycle["p50_ms"],
            "cpu_ms_per_cycle": cycle["cpu_ms_per_cycle"],
            "cycle_errors": cycle["errors"],
            "dashboard_ms": dashboard["all"],
            "dashboard_endpoints_ms": dashboard["endpoints"],
        }

    def measured(self, step: str, project: int, timeout: float) -> tuple[dict, dict]:
        """The step in a child process: its figures (`<step>_seconds_1m`, wall time;
        `<step>_peak_mb_1m`, peak resident memory, VmHWM read while it runs;
        `<step>_finished`, False when stopped after ``timeout`` seconds) and its output."""
        command = [self.platform.python, "manage.py", "benchmark_scale", "--step", step,
                   "--project", str(project), "--data", self.options["data"]]  # fmt: skip
        with (self.platform.logs / f"{step}.log").open("ab") as log:
            child = subprocess.Popen(
                command, cwd=BASE_DIR, env=self.platform.env, stdout=subprocess.PIPE, stderr=log
            )
        tic, peak_kb = time.perf_counter(), 0
        while child.poll() is None and time.perf_counter() - tic < timeout:
            peak_kb = max(peak_kb, _peak_kb(child.pid))
            time.sleep(0.2)
        seconds = time.perf_counter() - tic
        finished = child.poll() is not None
        if not finished:
            child.kill()
        output = child.communicate()[0].decode()
        if finished and child.returncode != 0:
            raise CommandError(f"{step} failed:\n{self.platform.tail(step)}")
        out = json.loads(output.strip().splitlines()[-1]) if finished else {}
        peak_mb = max(peak_kb / 1024, out.get("peak_mb", 0.0))
        figures = {f"{step}_seconds_1m": round(seconds, 1), f"{step}_peak_mb_1m": round(peak_mb, 1),
                   f"{step}_finished": finished}  # fmt: skip
        return figures, out

    def freshness(self, project: int, phone: str) -> dict:
        """Worker (production's concurrency) and beat join the running web server; once the
        live model has applied every stored answer, answers through the API and the seconds
        until the live model's watermark passes each."""
        platform = self.platform
        platform.add_worker("worker", "--concurrency", "2")
        platform.add_beat()
        platform.start("worker")
        platform.start("beat")
        tic = time.perf_counter()
        caught_up = _live_caught_up(self.scratch_url, project, timeout=300)
        catch_up = round(time.perf_counter() - tic, 1)
        self.log(f"live model caught up: {caught_up} after {catch_up} s; answering…")
        samples = asyncio.run(
            _freshness_samples(
                platform.port, project, phone, self.scratch_url, self.options["freshness_samples"],
                spacing=self.options["live_seconds"] / 3,
            )
        )  # fmt: skip
        platform.stop("beat")
        platform.stop("worker", timeout=60)
        finished = [s for s in samples if s is not None]
        return {
            "freshness_seconds": max(finished) if len(finished) == len(samples) else None,
            "freshness_samples_seconds": samples,
            "freshness_catch_up_seconds": catch_up,
            "freshness_caught_up": caught_up,
            "live_model_seconds": self.options["live_seconds"],
        }

    def two_workers(self) -> dict:
        """Four identical projects; two retrained one at a time, two at once, by two Celery
        workers of one process each."""
        platform = self.platform
        platform.stop("web")
        _redis_empty(self.options["redis_url"])  # no queued job of the earlier phases
        for name in ("pair-a", "pair-b"):
            platform.add_worker(name, "--concurrency", "1")
            platform.start(name)  # connected to the broker while the projects are seeded
        seeded = self.step("pair-seed", "--answers", str(self.options["pair_answers"]))
        projects = ",".join(str(pk) for pk in seeded["projects"])
        retrains = self.step("pair-retrain", "--projects", projects)
        for name in ("pair-a", "pair-b"):
            platform.stop(name, timeout=60)
        one_at_a_time = sum(retrains["one_at_a_time"])
        return {
            "pair_answers_per_project": seeded["answers_per_project"],
            "pair_retrain_seconds_each": retrains["one_at_a_time"],
            "pair_one_at_a_time_seconds": round(one_at_a_time, 1),
            "pair_two_workers_seconds": retrains["together"],
            "pair_two_workers_speedup": round(one_at_a_time / retrains["together"], 2),
        }


def _suffixed(values: dict, suffix: str) -> dict:
    return {f"{key}_{suffix}": value for key, value in values.items()}


def _database_mb(admin_url: str, name: str) -> float:
    with psycopg.connect(admin_url, autocommit=True) as admin:
        (size,) = admin.execute("SELECT pg_database_size(%s)", [name]).fetchone()
    return round(size / 2**20, 1)


def _peak_kb(pid: int) -> int:
    """VmHWM (peak resident set, kB) of process ``pid``; 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _redis_empty(url: str) -> None:
    redis.Redis.from_url(url).flushdb()


async def _dashboard(port: int, seed: dict) -> dict:
    """Milliseconds of the dashboard's requests: each endpoint's median over a few tries, and
    the median of the three at once (as the page asks them)."""
    headers = f"Authorization: Token {seed['manager_token']}\r\nX-Forwarded-Proto: https\r\n"
    base = f"/api/projects/{seed['project']}/"
    connections = [Connection(port, headers) for _ in DASHBOARD_PATHS]

    async def timed(connection: Connection, path: str) -> float:
        tic = time.perf_counter()
        status, body = await connection.request("GET", base + path)
        if status != 200:
            raise CommandError(f"dashboard {path}: {status} {body[:200]!r}")
        return (time.perf_counter() - tic) * 1000

    try:
        each = {path: [] for path in DASHBOARD_PATHS}
        together = []
        pairs = list(zip(connections, DASHBOARD_PATHS, strict=True))
        for _ in range(DASHBOARD_TRIES):
            for connection, path in pairs:
                each[path].append(await timed(connection, path))
            tic = time.perf_counter()
            await asyncio.gather(*(timed(connection, path) for connection, path in pairs))
            together.append((time.perf_counter() - tic) * 1000)
    finally:
        for connection in connections:
            connection.close()
    return {
        "all": round(statistics.median(together), 1),
        "endpoints": {path: round(statistics.median(ms), 1) for path, ms in each.items()},
    }


def _live_state(scratch_url: str, project: int) -> tuple[int, int]:
    """(the live model's watermark, the newest answer's id) of ``project``."""
    with psycopg.connect(scratch_url, autocommit=True) as scratch:
        (watermark,) = scratch.execute(
            f"SELECT coalesce(max(watermark), 0) FROM {LiveModel._meta.db_table} "  # noqa: S608
            "WHERE project_id = %s",
            [project],
        ).fetchone()
        (newest,) = scratch.execute(
            f"SELECT coalesce(max(id), 0) FROM {Observation._meta.db_table} "  # noqa: S608
            "WHERE project_id = %s",
            [project],
        ).fetchone()
    return watermark, newest


def _live_caught_up(scratch_url: str, project: int, *, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        watermark, newest = _live_state(scratch_url, project)
        if watermark >= newest:
            return True
        time.sleep(0.5)
    return False


async def _freshness_samples(
    port: int, project: int, phone_token: str, scratch_url: str, samples: int, *, spacing: float
) -> list[float | None]:
    """For each sample, one answer through the API by the phone of ``phone_token``, and the
    seconds from its 201 until the live model's watermark reaches its id (None: not within 5
    minutes)."""
    headers = f"Authorization: Token {phone_token}\r\nContent-Type: application/json\r\n"
    headers += "X-Forwarded-Proto: https\r\n"
    phone = Connection(port, headers)
    out: list[float | None] = []
    try:
        for i in range(samples):
            status, payload = await phone.request("POST", f"/api/projects/{project}/tasks/next/")
            if status != 200:
                raise CommandError(f"no task for the freshness phone: {status}")
            task = json.loads(payload)
            body = json.dumps({
                "assignment": task["assignment"], "counts": {t["name"]: 0 for t in task["tags"]},
                "seconds_on_device": 3.0, "idempotency_key": f"fresh-{i}",
            }).encode()  # fmt: skip
            status, payload = await phone.request("POST", "/api/observations/", body)
            stored = time.perf_counter()
            if status != 201:
                raise CommandError(f"freshness answer refused: {status} {payload[:200]!r}")
            answer = json.loads(payload)["id"]
            seconds = None
            while time.perf_counter() - stored < 300:
                watermark, _ = await asyncio.to_thread(_live_state, scratch_url, project)
                if watermark >= answer:
                    seconds = round(time.perf_counter() - stored, 2)
                    break
                await asyncio.sleep(0.1)
            out.append(seconds)
            await asyncio.sleep(spacing * (i + 1))  # answers land at other points of the period
    finally:
        phone.close()
    return out
