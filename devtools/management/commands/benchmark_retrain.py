"""Benchmark the retrain job on the full UD English EWT training split.

    python manage.py benchmark_retrain --json
    python manage.py benchmark_retrain --obs-per-sentence 3 --tags-per-task 2 --json

It creates a scratch PostgreSQL database (dropped at the end), migrates it, and in a child process
(whose DATABASE_URL is the scratch database):

1. seeds a project with the 17 UPOS tags: the EWT train split (12,544 sentences) as training
   sentences and the EWT dev split as the evaluation set, imported through the annotation service;
2. stores the answers ``simulate_crowd --seed 0`` gives for the setting (window 5, exact
   annotators; 1 all-tag task per sentence by default) — in bulk (`devtools.seeding`), a fast
   path for the benchmark only;
3. times a full retrain as the worker runs it (read, learn, write, push: `retrain_and_push`);
4. removes the open tasks of the first version's value round, stores 9 % more answers
   (simulated with seed 1: drawn uniformly, within the tenth a warm retrain takes; see
   `schedule.warm_start_suits`) and times a warm-started retrain;
5. changes the project's cost matrix through the API and runs, timed, every task the change
   queued (`seconds_cost_change`: the worker's time; `cost_change` names the tasks);
6. fits the same answers through simulate_crowd's own path (`simulation_report`, same run).

It prints one JSON object: `seconds_full_retrain`, `seconds_warm_retrain`, `accuracy_test` (the
served model of the full retrain on EWT test), `accuracy_simulate_crowd` (simulate_crowd's model
of the same answers on EWT test), the schedules that ran, a per-stage breakdown of both retrains,
the accuracy on EWT dev and the count-consistency. Only 127.0.0.1 is touched.
"""

from __future__ import annotations

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
from django.db import connection

from annotation.models import Task, TaskOrigin
from devtools.retrains import timed_cost_change, timed_retrain
from devtools.seeding import (
    annotators_create,
    answers_store_simulated,
    seed_corpus,
    tag_columns,
    train_sentence_ids,
)
from learning.experiments.crowd_report import gold_indices, simulation_report
from learning.management.commands.simulate_crowd import parse_tags_per_task, read_corpus

ADMIN_URL_DEFAULT = "postgres://postgres@127.0.0.1:5432/postgres"
EWT = Path(settings.BASE_DIR) / "data" / "ud-english-ewt"
N_ANNOTATORS = 20
WARM_SHARE = 0.09  # the warm retrain sees this share more answers (a warm retrain takes a tenth)


class Command(BaseCommand):
    help = "Benchmark a full and a warm-started retrain on the EWT train split (PostgreSQL)."

    def add_arguments(self, parser):
        parser.add_argument(
            "--admin-database-url",
            default=os.environ.get("BENCHMARK_ADMIN_DATABASE_URL", ADMIN_URL_DEFAULT),
            help="PostgreSQL URL of a database to connect to while creating the scratch one",
        )
        parser.add_argument("--data", default=str(EWT), help="folder of en_ewt-ud-*.conllu.gz")
        parser.add_argument(
            "--obs-per-sentence", type=float, default=1.0, help="count tasks per sentence"
        )
        parser.add_argument(
            "--tags-per-task", default="all", help="tags asked per task: a number or 'all'"
        )
        parser.add_argument("--json", action="store_true", help="print only the JSON result")
        parser.add_argument("--inner", action="store_true", help="(internal) run in the child")

    def handle(self, *args, **options):
        if options["inner"]:
            return self._inner(options)
        quiet = options["json"]
        log = (lambda message: None) if quiet else (lambda message: self.stderr.write(message))
        admin_url = options["admin_database_url"]
        if not admin_url.startswith(("postgres://", "postgresql://")):
            raise CommandError("--admin-database-url must be a postgres:// URL")
        name = f"tally_bench_retrain_{os.getpid()}_{secrets.token_hex(3)}"
        data_dir = Path(settings.DATA_DIR) / "benchmark-retrain" / name
        env = {
            **os.environ,
            "DATABASE_URL": admin_url.rsplit("/", 1)[0] + "/" + name,
            "MEDIA_ROOT": str(data_dir / "media"),
            "TALLY_LOG_LEVEL": "WARNING",
        }
        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}"')
        try:
            log(f"scratch database {name}: migrating…")
            subprocess.run(
                [sys.executable, "manage.py", "migrate", "--noinput", "-v0"],
                cwd=settings.BASE_DIR,
                env=env,
                check=True,
            )
            log("seeding EWT and its simulated answers, then retraining twice…")
            child = subprocess.run(
                [sys.executable, "manage.py", "benchmark_retrain", "--inner", "--data",
                 options["data"], "--obs-per-sentence", str(options["obs_per_sentence"]),
                 "--tags-per-task", options["tags_per_task"]],
                cwd=settings.BASE_DIR,
                env=env,
                check=True,
                capture_output=True,
                text=True,
            )  # fmt: skip
            result = json.loads(child.stdout.strip().splitlines()[-1])
        except subprocess.CalledProcessError as exc:
            raise CommandError(f"benchmark failed:\n{(exc.stderr or '')[-3000:]}") from exc
        finally:
            with psycopg.connect(admin_url, autocommit=True) as admin:
                admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            subprocess.run(["rm", "-rf", str(data_dir)], check=False)
            log(f"dropped {name}")
        self.stdout.write(json.dumps(result, indent=None if quiet else 2))

    # The child: DATABASE_URL is the scratch database ------------------------------------------

    def _inner(self, options):
        if connection.vendor != "postgresql":
            raise CommandError("the benchmark runs on PostgreSQL only")
        data = Path(options["data"])
        per_sentence = options["obs_per_sentence"]
        tags_per_task = parse_tags_per_task(options["tags_per_task"])
        train = read_corpus(str(data / "en_ewt-ud-train.conllu.gz"), "train")
        test = read_corpus(str(data / "en_ewt-ud-test.conllu.gz"), "test")
        tic = time.perf_counter()
        project = seed_corpus(data)
        train_ids = train_sentence_ids(project)
        annotators = annotators_create(project, N_ANNOTATORS)
        setting = {"window": 5, "tags_per_task": tags_per_task, "n_annotators": N_ANNOTATORS}
        tagset, gold = gold_indices(train)
        simulated_on = (project, annotators, train_ids, gold, tag_columns(project, tagset))
        stored, skipped = answers_store_simulated(
            *simulated_on, obs_per_sentence=per_sentence, seed=0, **setting
        )
        seed_seconds = time.perf_counter() - tic

        full = timed_retrain(project, test)
        # Answers to the version's value round would be fitted afresh: the warm path is timed on
        # uniform draws, so none lands on a task the version chose.
        Task.objects.filter(project=project, origin=TaskOrigin.VALUE, assignments=None).delete()
        more, more_skipped = answers_store_simulated(
            *simulated_on, obs_per_sentence=per_sentence * WARM_SHARE, seed=1, **setting
        )
        warm = timed_retrain(project, test)
        if warm["warm_started_from"] != full["version"]:
            raise CommandError("the second retrain was not warm-started")
        cost_change = timed_cost_change(project)
        tic = time.perf_counter()
        simulated, model = simulation_report(
            train, test, obs_per_sentence=per_sentence, references=False, seed=0, **setting
        )
        simulate_seconds = time.perf_counter() - tic
        result = {
            "obs_per_sentence": per_sentence,
            "tags_per_task": options["tags_per_task"],
            "seconds_full_retrain": full["seconds"],
            "seconds_warm_retrain": warm["seconds"],
            "seconds_cost_change": cost_change["worker_seconds"],
            "cost_change": cost_change,
            "accuracy_test": full["accuracy_ewt_test"],
            "accuracy_simulate_crowd": simulated["accuracy_refined"],
            "accuracy_warm_test": warm["accuracy_ewt_test"],
            "schedule_full": full["schedule"],
            "schedule_warm": warm["schedule"],
            "schedule_simulate_crowd": model.schedule_.name,
            "seconds_simulate_crowd": round(simulate_seconds, 3),
            "full": full,
            "warm": warm,
            "answers_stored": stored,
            "answers_added_for_warm": more,
            "answers_not_stored": skipped + more_skipped,
            "observations_full": full["observations"],
            "observations_warm": warm["observations"],
            "training_sentences": len(train_ids),
            "seconds_seeding": round(seed_seconds, 2),
            "cpus": os.cpu_count(),
            "database": "postgresql",
            "push": "redis" if settings.REDIS_URL else "database polling",
        }
        self.stdout.write(json.dumps(result))
