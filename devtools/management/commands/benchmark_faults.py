"""Nothing lost under faults: the annotator cycle under load while the stack is broken.

    python manage.py benchmark_faults --json                 # 5 minutes, 10 faults of each kind
    python manage.py benchmark_faults --seconds 40 --faults-per-kind 2 --phones 16 --json

It starts its own production stack on this machine, apart from anything else running: a
throwaway PostgreSQL cluster (initdb into a temporary directory, its own port), its own
redis-server, gunicorn with the production settings and `gunicorn.conf.py`, two Celery workers
and beat. It seeds a project from UD English EWT with one annotator per phone, runs the phones
and the faults (see `devtools.faults`; a fault waits for the previous one's window to end, so
the run can last longer than `--seconds`: `seconds_run`), lets the phones send what they still
hold, waits for a retrain after the last fault, checks the history and prints one JSON object.
The live models follow the answers meanwhile (an update every `--live-seconds`, 0: off) and are
checked after every Celery kill, once the load is over and at the end (`devtools.live_check`):
each answer applied once, none skipped, the row, its curve and its files in agreement.
Everything it started is stopped and its directory removed (`--keep` keeps it, with the logs and
the run's history in `history.json`: every request, answer and fault, times in seconds from the
start).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from devtools.faults import (
    Behaviour,
    Run,
    check_history,
    history_record,
    live_figures,
    retrain_figures,
    window_figures,
)
from devtools.phones import seed_project
from devtools.stack import Platform, Postgres, Redis, StackError, free_port, production_env


class Command(BaseCommand):
    help = "The annotator cycle under client- and server-side faults, checked against history."

    def add_arguments(self, parser):
        parser.add_argument("--phones", type=int, default=50)
        parser.add_argument("--seconds", type=float, default=300.0)
        parser.add_argument(
            "--faults-per-kind",
            type=int,
            default=None,
            help="faults of each kind (default: one of each kind per 30 s)",
        )
        parser.add_argument("--outage-seconds", type=float, default=2.0,
                            help="how long Redis and PostgreSQL stay down")  # fmt: skip
        parser.add_argument("--lease-seconds", type=int, default=30,
                            help="the project's lease; a stalled phone sleeps past it")  # fmt: skip
        parser.add_argument("--sentences", type=int, default=None)
        parser.add_argument("--drain-seconds", type=float, default=60.0)
        parser.add_argument("--retrain-timeout", type=float, default=240.0)
        parser.add_argument("--web-workers", type=int, default=2)
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--keep", action="store_true", help="keep the stack's directory")
        parser.add_argument("--json", action="store_true", help="print only the JSON result")
        parser.add_argument("--seed-only", action="store_true", help="(internal)")
        parser.add_argument("--redundancy", type=int, default=3)
        parser.add_argument("--live-seconds", type=int, default=3,
                            help="the live models' update interval (0: off)")  # fmt: skip

    def handle(self, *args, **options):
        if options["seed_only"]:
            seeded = seed_project(
                phones=options["phones"],
                sentences=options["sentences"],
                redundancy=options["redundancy"],
                lease_seconds=options["lease_seconds"],
                with_gold=True,
                retrain_target=2000,
            )
            self.stdout.write(json.dumps(seeded))
            return
        quiet = options["json"]
        started = time.monotonic()

        def log(message: str) -> None:
            if not quiet:
                self.stderr.write(f"[{time.monotonic() - started:7.1f}] {message}")

        seconds = options["seconds"]
        per_kind = options["faults_per_kind"] or max(1, int(seconds // 30))
        # Enough regions that the phones never run out: about 60 answers a second at most.
        sentences = options["sentences"] or max(1000, int(seconds * 60 / options["redundancy"]))
        root = Path(tempfile.mkdtemp(prefix="tally-faults-"))
        postgres = Postgres(root / "postgres")
        redis = Redis(root / "redis")
        platform = None
        load_before = os.getloadavg()
        try:
            log(f"stack in {root}: PostgreSQL on {postgres.port}, Redis on {redis.port}")
            postgres.init()
            postgres.start()
            redis.start()
            database_url = postgres.create_database("tally")
            env = production_env(
                database_url=database_url,
                redis_url=redis.url(0),
                data_dir=root / "data",
                port=free_port(),
                WEB_WORKERS=str(options["web_workers"]),
                TALLY_RETRAIN_INTERVAL_MINUTES="1",
                TALLY_RETRAIN_SWEEP_SECONDS="5",
                TALLY_LIVE_MODEL_SECONDS=str(options["live_seconds"]),
            )
            platform = Platform(root, env)
            log("migrating and seeding…")
            platform.manage("migrate", "--noinput", "-v0")
            seed_args = ["--seed-only", "--phones", str(options["phones"]), "--sentences",
                         str(sentences), "--lease-seconds", str(options["lease_seconds"]),
                         "--redundancy", str(options["redundancy"])]  # fmt: skip
            seeded = json.loads(platform.manage("benchmark_faults", *seed_args).stdout)
            platform.add_web()
            platform.add_worker("worker1", "-c", "1")
            platform.add_worker("worker2", "-c", "1")
            platform.add_beat()
            platform.start_all()
            platform.wait_healthy()
            log(f"{options['phones']} phones for {seconds:.0f} s, {per_kind} faults of each kind")
            run = Run(
                platform=platform,
                postgres=postgres,
                redis=redis,
                database_url=database_url,
                seeded=seeded,
                behaviour=Behaviour(),
                seed=options["seed"],
                log=log,
                media_root=root / "data" / "media",
                live_on=options["live_seconds"] > 0,
            )
            asyncio.run(
                run.main(
                    seconds=seconds,
                    per_kind=per_kind,
                    outage=options["outage_seconds"],
                    drain=options["drain_seconds"],
                )
            )
            self._everything_up(platform, postgres, redis)
            if options["live_seconds"]:
                asyncio.run(run.check_live_models(after="the load"))
            log("waiting for a retrain after the last fault…")
            last_run = run.db_value(Run.LAST_RUN) or 0
            asyncio.run(run.manager_retrain())
            final_retrain = run.wait_for_retrain(last_run, options["retrain_timeout"])
            if options["live_seconds"]:
                asyncio.run(run.check_live_models(after="the final retrain"))
            log("checking the history…")
            result = self._figures(run, root, per_kind, final_retrain, options["live_seconds"])
            if options["keep"]:
                (root / "history.json").write_text(json.dumps(history_record(run.history)))
            result |= {
                "phones": options["phones"],
                "seconds": seconds,
                "sentences": sentences,
                "outage_seconds": options["outage_seconds"],
                "machine": {
                    "cpus": os.cpu_count(),
                    "load_average_before": [round(x, 2) for x in load_before],
                    "load_average_after": [round(x, 2) for x in os.getloadavg()],
                    "shared": "figures are from a machine other work may share",
                },
                "logs": str(root / "logs") if options["keep"] else None,
            }
        except StackError as exc:
            raise CommandError(str(exc)) from exc
        finally:
            if platform is not None:
                platform.close()
            redis.stop()
            postgres.stop("fast")
            if not options["keep"]:
                shutil.rmtree(root, ignore_errors=True)
        self.stdout.write(json.dumps(result, indent=None if quiet else 2))

    @staticmethod
    def _everything_up(platform: Platform, postgres: Postgres, redis: Redis) -> None:
        if not postgres.accepting():
            postgres.start()
        if not redis.accepting():
            redis.start()
        for name in platform.services:
            if not platform.running(name):
                platform.start(name)

    @staticmethod
    def _figures(
        run: Run, root: Path, per_kind: int, final_retrain: float | None, live_seconds: int
    ) -> dict:
        history = run.history
        checked = check_history(run, root / "data" / "media")
        windows = window_figures(history)
        retraining = retrain_figures(run)
        faults = {kind: sum(1 for f in history.faults if f.kind == kind) for kind in run.kinds}
        live = live_figures(run, live_seconds) if live_seconds else None
        bounds = {
            "every acknowledged answer stored exactly once, as sent": checked["lost"] == 0
            and checked["duplicated"] == 0
            and checked["altered"] == 0,
            "nothing stored that no phone sent": checked["stored_but_never_sent"] == 0,
            "no answer refused (a 4xx the phone would drop)": not checked["rejected_by_status"],
            "no 500 (a database away is a 503 with Retry-After)": not any(
                "5xx:500" in failures for failures in windows["http_failures_by_window"].values()
            ),
            "no region answered more often than its redundancy (late answers apart)": checked[
                "regions_over_redundancy"
            ]
            == 0,
            "every model version complete and loadable, the newest current": checked[
                "model_versions"
            ]
            == checked["model_versions_complete"]
            == checked["model_versions_loadable"],
            "the previous model stayed current during each killed retrain": retraining[
                "previous_model_stayed_current"
            ],
            "the next retrain succeeded after each kill": retraining[
                "next_retrain_succeeded_after_each_kill"
            ],
            "a retrain succeeded after every fault": retraining[
                "retraining_resumed_after_each_fault"
            ],
            "a retrain succeeded after the run": final_retrain is not None,
            f"at least {per_kind} faults of each kind": min(faults.values()) >= per_kind,
            f"at least {per_kind} Celery workers killed mid-retrain": retraining[
                "celery_kills_mid_retrain"
            ]
            >= per_kind,
            "every kill mid-retrain hit the worker that was retraining": retraining[
                "celery_kills_of_the_wrong_worker"
            ]
            == 0,
        }
        if live is not None:
            bounds["the live models published and stayed consistent after every Celery kill"] = (
                live["publications_seen"] > 0
                and live["checks_after_celery_kills"] == live["celery_kills"] > 0
                and live["violations"] == 0
            )
            bounds[f"at least {per_kind} Celery workers killed mid-live-update"] = (
                live["kills_mid_update"] >= per_kind
            )
        return {
            "acknowledged": checked["acknowledged"],
            "stored": checked["stored"],
            "lost": checked["lost"],
            "duplicated": checked["duplicated"],
            "seconds_run": round(history.ended - history.started, 1),
            "faults_injected": faults,
            **windows,
            "client_faults": dict(history.client_faults),
            "history": checked,
            "retraining": {**retraining, "seconds_to_final_retrain": final_retrain},
            "live_model": live,
            "bounds_checked": bounds,
            "ok": all(bounds.values()),
            "faults": [
                {"kind": f.kind, "at_s": round(f.started - history.started, 1), **f.detail}
                for f in history.faults
            ],
        }
