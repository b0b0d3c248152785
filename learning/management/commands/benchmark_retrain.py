"""Benchmark the retrain job on the full UD English EWT training split.

    python manage.py benchmark_retrain --json

It creates a scratch PostgreSQL database (dropped at the end), migrates it, and in a child process
(whose DATABASE_URL is the scratch database):

1. seeds a project with the 17 UPOS tags: the EWT train split (12,544 sentences) as training
   sentences and the EWT dev split as the evaluation set, imported through the annotation service;
2. stores one window-5, all-tag observation per training sentence from the learning core's
   simulated crowd (exact annotators) — bulk-created here, a fast path for the benchmark only;
3. times a full retrain as the worker runs it (read, learn, write, push: `retrain_and_push`);
4. stores 500 new observations and times a warm-started retrain.

It prints one JSON object: `seconds_full_retrain`, `seconds_warm_retrain`, a per-stage breakdown
of both, the accuracy on EWT dev and the count-consistency. Only 127.0.0.1 is touched.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import psycopg
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import connection, transaction
from django.utils import timezone

from annotation import services
from annotation.models import Assignment, Membership, Observation, Project, Sentence, Task
from learning import tasks
from learning.core.simulate import simulate_crowd

ADMIN_URL_DEFAULT = "postgres://postgres@127.0.0.1:5432/postgres"
EWT = Path(settings.BASE_DIR) / "data" / "ud-english-ewt"
N_ANNOTATORS = 20
NEW_OBSERVATIONS = 500


class Command(BaseCommand):
    help = "Benchmark a full and a warm-started retrain on the EWT train split (PostgreSQL)."

    def add_arguments(self, parser):
        parser.add_argument(
            "--admin-database-url",
            default=os.environ.get("BENCHMARK_ADMIN_DATABASE_URL", ADMIN_URL_DEFAULT),
            help="PostgreSQL URL of a database to connect to while creating the scratch one",
        )
        parser.add_argument("--data", default=str(EWT), help="folder of en_ewt-ud-*.conllu.gz")
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
            log("seeding EWT and 12,544 observations, then retraining twice…")
            child = subprocess.run(
                [sys.executable, "manage.py", "benchmark_retrain", "--inner", "--data",
                 options["data"]],
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
        tic = time.perf_counter()
        project, manager, train_ids, gold = _seed_corpus(data)
        annotators = _annotators(project, N_ANNOTATORS)
        _store_simulated(project, annotators, train_ids, gold, seed=0, sentences=None)
        seed_seconds = time.perf_counter() - tic

        full = _timed_retrain(project)
        rng = np.random.default_rng(1)
        longer = np.flatnonzero(np.array([len(tags) for tags in gold]) > 5)
        extra = rng.choice(longer, size=NEW_OBSERVATIONS, replace=False)
        _store_simulated(project, annotators, train_ids, gold, seed=1, sentences=extra)
        warm = _timed_retrain(project)
        if warm["warm_started_from"] != full["version"]:
            raise CommandError("the second retrain was not warm-started")
        result = {
            "seconds_full_retrain": full["seconds"],
            "seconds_warm_retrain": warm["seconds"],
            "full": full,
            "warm": warm,
            "observations_full": full["observations"],
            "observations_warm": warm["observations"],
            "training_sentences": len(train_ids),
            "seconds_seeding": round(seed_seconds, 2),
            "cpus": os.cpu_count(),
            "database": "postgresql",
            "push": "redis" if settings.REDIS_URL else "database polling",
        }
        self.stdout.write(json.dumps(result))


def _seed_corpus(data: Path) -> tuple[Project, object, list[int], list[list[int]]]:
    """The project: EWT train as training sentences, EWT dev as the evaluation set."""
    manager = get_user_model().objects.create_user(username="bench-manager")
    project = services.project_create(
        owner=manager,
        name="EWT retrain benchmark",
        tag_preset="ud_upos",
        window_size=5,
        tags_per_task=None,
        redundancy=1,
    )
    for split, evaluation_fraction in (("train", 0.0), ("dev", 1.0)):
        path = data / f"en_ewt-ud-{split}.conllu.gz"
        with path.open("rb") as corpus:  # the released gzipped CoNLL-U, as a manager uploads it
            services.corpus_import(
                project=project,
                user=manager,
                file=corpus,
                filename=path.name,
                format="conllu",
                evaluation_fraction=evaluation_fraction,
                max_bytes=10**9,
                seed=0,
            )
    Task.objects.filter(project=project).delete()  # the benchmark stores its own regions
    rows = list(
        Sentence.objects.filter(project=project, split=Sentence.Split.TRAIN)
        .order_by("position")
        .values_list("id", "gold_tags")
    )
    return project, manager, [r[0] for r in rows], [r[1] for r in rows]


def _annotators(project: Project, n: int) -> list[int]:
    users = get_user_model().objects.bulk_create(
        get_user_model()(username=f"bench-annotator-{i}") for i in range(n)
    )
    Membership.objects.bulk_create(
        Membership(project=project, user=user, role=Membership.Role.ANNOTATOR) for user in users
    )
    return [user.pk for user in users]


def _store_simulated(project, annotators, train_ids, gold, *, seed: int, sentences) -> int:
    """Store the simulated crowd's answers (exact annotators, one window-5 all-tag observation
    per chosen sentence) as tasks, submitted assignments and observations, in bulk."""
    chosen = np.arange(len(train_ids)) if sentences is None else np.asarray(sentences)
    n_tags = Project.objects.get(pk=project.pk).tags.count()
    crowd = simulate_crowd(
        [gold[i] for i in chosen],
        n_tags,
        window=5,
        n_annotators=len(annotators),
        random_state=seed,
    )
    obs = crowd.observations
    taken = set(Task.objects.filter(project=project).values_list("sentence_id", "start", "length"))
    rows = []
    for i in range(len(obs)):
        sentence_id = train_ids[chosen[obs.sentence[i]]]
        tags = gold[chosen[obs.sentence[i]]]
        start, length = int(obs.start[i]), int(obs.length[i])
        n_starts = len(tags) - length + 1
        free = [
            (start + k) % n_starts
            for k in range(n_starts)
            if (sentence_id, (start + k) % n_starts, length) not in taken
        ]
        if not free:  # every window of this sentence was asked already
            continue
        start = free[0]
        taken.add((sentence_id, start, length))
        counts = np.bincount(tags[start : start + length], minlength=n_tags)
        rows.append((sentence_id, start, length, counts.tolist(), annotators[obs.annotator[i]]))
    now = timezone.now()
    all_tags = list(range(n_tags))
    rng = np.random.default_rng(seed)
    with transaction.atomic():
        task_rows = Task.objects.bulk_create(
            (
                Task(project=project, sentence_id=s, start=a, length=w, tags=all_tags,
                     open_slots=0, round=seed + 1)
                for s, a, w, _, _ in rows
            ),
            batch_size=2000,
        )  # fmt: skip
        assignments = Assignment.objects.bulk_create(
            (
                Assignment(project=project, task=task, annotator_id=row[4],
                           status=Assignment.Status.SUBMITTED, leased_at=now, expires_at=now,
                           submitted_at=now)
                for task, row in zip(task_rows, rows, strict=True)
            ),
            batch_size=2000,
        )  # fmt: skip
        Observation.objects.bulk_create(
            (
                Observation(project=project, annotator_id=row[4], assignment=assignment,
                            sentence_id=row[0], start=row[1], length=row[2], tags=all_tags,
                            counts=row[3], seconds_on_device=float(rng.uniform(2, 8)),
                            idempotency_key=secrets.token_hex(16), submitted_at=now)
                for assignment, row in zip(assignments, rows, strict=True)
            ),
            batch_size=2000,
        )  # fmt: skip
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    return len(rows)


def _timed_retrain(project: Project) -> dict:
    tic = time.perf_counter()
    outcome = tasks.retrain_and_push(project_id=project.pk, trigger="manual")
    seconds = time.perf_counter() - tic
    if outcome.version is None:
        raise CommandError(f"no version: {outcome.status} {outcome.message}")
    version = outcome.version
    timings = {k: round(v, 3) for k, v in version.timings.items() if not k.startswith("cpu_")}
    timings["commit_and_push"] = round(seconds - version.timings["total"], 3)
    return {
        "seconds": round(seconds, 3),
        "version": version.number,
        "warm_started_from": version.warm_started_from,
        "observations": version.observations_count,
        "fitted_observations": version.hyperparameters["fitted_observations"],
        "em_iterations": version.hyperparameters["em_iterations"],
        "accuracy_ewt_dev": version.report.accuracy,
        "count_consistency": version.report.count_consistency,
        "breakdown": timings,
        "cpu_seconds": {
            k.removeprefix("cpu_"): round(v, 3)
            for k, v in version.timings.items()
            if k.startswith("cpu_")
        },
    }
