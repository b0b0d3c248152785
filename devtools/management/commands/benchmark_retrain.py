"""Benchmark the retrain job on the full UD English EWT training split.

    python manage.py benchmark_retrain --json
    python manage.py benchmark_retrain --obs-per-sentence 3 --tags-per-task 2 --json

It creates a scratch PostgreSQL database (dropped at the end), migrates it, and in a child process
(whose DATABASE_URL is the scratch database):

1. seeds a project with the 17 UPOS tags: the EWT train split (12,544 sentences) as training
   sentences and the EWT dev split as the evaluation set, imported through the annotation service;
2. stores the answers ``simulate_crowd --seed 0`` gives for the setting (window 5, exact
   annotators; 1 all-tag task per sentence by default) — bulk-created here, a fast path for the
   benchmark only;
3. times a full retrain as the worker runs it (read, learn, write, push: `retrain_and_push`);
4. stores 10 % more answers (simulated with seed 1) and times a warm-started retrain;
5. fits the same answers through simulate_crowd's own path (`simulation_report`, same run).

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

import numpy as np
import psycopg
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import connection, transaction
from django.utils import timezone

from annotation import services
from annotation.models import (
    Assignment,
    Membership,
    Observation,
    Project,
    Sentence,
    Tag,
    Task,
    TaskKind,
)
from learning import adapter, tasks
from learning.core.evaluate import accuracy
from learning.experiments.crowd_report import gold_indices, simulation_report
from learning.experiments.simulate import simulate_crowd
from learning.management.commands.simulate_crowd import parse_tags_per_task, read_corpus

ADMIN_URL_DEFAULT = "postgres://postgres@127.0.0.1:5432/postgres"
EWT = Path(settings.BASE_DIR) / "data" / "ud-english-ewt"
N_ANNOTATORS = 20
WARM_SHARE = 0.1  # the warm retrain sees this share more answers


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
        project, train_ids = _seed_corpus(data)
        annotators = _annotators(project, N_ANNOTATORS)
        setting = {"window": 5, "tags_per_task": tags_per_task, "n_annotators": N_ANNOTATORS}
        stored, skipped = _store_simulated(
            project, annotators, train_ids, train, obs_per_sentence=per_sentence, seed=0,
            **setting,
        )  # fmt: skip
        seed_seconds = time.perf_counter() - tic

        full = _timed_retrain(project, test)
        more, more_skipped = _store_simulated(
            project, annotators, train_ids, train, obs_per_sentence=per_sentence * WARM_SHARE,
            seed=1, **setting,
        )  # fmt: skip
        warm = _timed_retrain(project, test)
        if warm["warm_started_from"] != full["version"]:
            raise CommandError("the second retrain was not warm-started")
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


def _seed_corpus(data: Path) -> tuple[Project, list[int]]:
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
    train_ids = list(
        Sentence.objects.filter(project=project, split=Sentence.Split.TRAIN)
        .order_by("position")
        .values_list("id", flat=True)
    )
    return project, train_ids


def _annotators(project: Project, n: int) -> list[int]:
    users = get_user_model().objects.bulk_create(
        get_user_model()(username=f"bench-annotator-{i}") for i in range(n)
    )
    Membership.objects.bulk_create(
        Membership(project=project, user=user, role=Membership.Role.ANNOTATOR) for user in users
    )
    return [user.pk for user in users]


def _store_simulated(
    project, annotators, train_ids, train, *, obs_per_sentence: float, seed: int, **setting
) -> tuple[int, int]:
    """Store the answers simulate_crowd gives with ``seed`` (its own tag columns mapped to the
    project's) as tasks, submitted assignments and observations, in bulk. An answer whose
    annotator already answered the same region (one assignment per task and annotator) is not
    stored. Returns (stored, not stored)."""
    tagset, gold = gold_indices(train)
    crowd = simulate_crowd(
        gold, len(tagset), obs_per_sentence=obs_per_sentence, random_state=seed, **setting
    )
    obs = crowd.observations
    position = dict(Tag.objects.filter(project=project).values_list("name", "position"))
    column = np.array([position[name] for name in tagset])
    tasks = {
        (t.sentence_id, t.start, t.length, tuple(t.tags)): t
        for t in Task.objects.filter(project=project, kind=TaskKind.COUNT)
    }
    answered = set(
        Assignment.objects.filter(project=project).values_list("task_id", "annotator_id")
    )
    new_tasks, rows = {}, []
    for i in range(len(obs)):
        asked = np.flatnonzero(obs.tag_mask[i])
        order = np.argsort(column[asked])
        tags = tuple(int(t) for t in column[asked][order])
        counts = [int(c) for c in obs.counts[i, asked][order]]
        region = (train_ids[obs.sentence[i]], int(obs.start[i]), int(obs.length[i]), tags)
        if region not in tasks and region not in new_tasks:
            new_tasks[region] = Task(
                project=project, sentence_id=region[0], start=region[1], length=region[2],
                tags=list(tags), open_slots=0, round=seed + 1,
            )  # fmt: skip
        rows.append((region, counts, annotators[obs.annotator[i]]))
    now = timezone.now()
    rng = np.random.default_rng(seed)
    with transaction.atomic():
        Task.objects.bulk_create(new_tasks.values(), batch_size=2000)
        tasks.update(new_tasks)
        kept = []
        for region, counts, annotator in rows:
            key = (tasks[region].pk, annotator)
            if key not in answered:
                answered.add(key)
                kept.append((region, counts, annotator))
        assignments = Assignment.objects.bulk_create(
            (
                Assignment(project=project, task=tasks[region], annotator_id=annotator,
                           status=Assignment.Status.SUBMITTED, leased_at=now, expires_at=now,
                           submitted_at=now)
                for region, _, annotator in kept
            ),
            batch_size=2000,
        )  # fmt: skip
        Observation.objects.bulk_create(
            (
                Observation(project=project, annotator_id=annotator, assignment=assignment,
                            sentence_id=region[0], start=region[1], length=region[2],
                            tags=list(region[3]), counts=counts,
                            seconds_on_device=float(rng.uniform(2, 8)),
                            idempotency_key=secrets.token_hex(16), submitted_at=now)
                for assignment, (region, counts, annotator) in zip(assignments, kept, strict=True)
            ),
            batch_size=2000,
        )  # fmt: skip
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    return len(kept), len(rows) - len(kept)


def _timed_retrain(project: Project, test) -> dict:
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
        "accuracy_ewt_test": accuracy(
            [s.tags("upos") for s in test],
            adapter.model_load(version.file.name).predict([s.tokens for s in test]),
        ),
        "schedule": version.hyperparameters["schedule"]["name"],
        "count_consistency": version.report.count_consistency,
        "breakdown": timings,
        "cpu_seconds": {
            k.removeprefix("cpu_"): round(v, 3)
            for k, v in version.timings.items()
            if k.startswith("cpu_")
        },
    }
