"""The steps of `benchmark_scale` that run in a child process on the scratch database
(`manage.py benchmark_scale --step NAME`): each returns a JSON-ready dict, to which the command
adds the process's peak resident memory.

- `seed`: the project, its phones, its corpus repeated to `--sentences`, the simulated crowd and
  `--answers` answers, then a first retrain (the model the live model starts from; none with
  `--no-first-retrain`, for `--only retrain`);
- `grow`: answers up to `--answers`;
- `online`: the seconds of live model updates of `--answers` new answers each;
- `export`: every answer through the export view, streamed;
- `retrain`: a full retrain as the Celery job runs it;
- `pair-seed`, `pair-retrain`: projects for two workers, and their retrains queued and waited for;
- `annotators`: the online learner (no database) through `--answers` simulated answers from
  `--annotator-ids` distinct annotators, for its memory with few and with a million ids.
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from pathlib import Path

import numpy as np
from django.contrib.auth import get_user_model
from django.core.management.base import CommandError

from annotation.models import Observation, Project, Sentence
from devtools.phones import seed_project
from devtools.retrains import timed_retrain
from devtools.seeding import (
    annotators_create,
    answers_store_simulated,
    corpus_replicate,
    seed_corpus,
)
from learning import selectors
from learning.core.online import OnlineCountTagger
from learning.core.pipeline import CountTagger
from learning.core.training import TrainingSet
from learning.experiments.simulate import simulate_crowd
from learning.live import live_model_reset, live_model_update
from learning.management.commands.simulate_crowd import read_corpus
from learning.models import LiveModel, ModelVersion
from learning.tasks import retrain_enqueue

CROWD_PREFIX = "bench-crowd"
PAIR_PROJECTS = 4
PAIR_ANNOTATORS = 20
PAIR_SEED = 7  # the same answers in every pair project
RETRAIN_WAIT_SECONDS = 3600


def run(step: str, options: dict) -> dict:
    steps = {
        "seed": _seed,
        "grow": _grow,
        "online": _online,
        "export": _export,
        "retrain": _retrain,
        "pair-seed": _pair_seed,
        "pair-retrain": _pair_retrain,
        "annotators": _annotators,
    }
    if step not in steps:
        raise CommandError(f"unknown step {step!r}")
    return steps[step](options)


def _test_corpus(options: dict):
    return read_corpus(str(Path(options["data"]) / "en_ewt-ud-test.conllu.gz"), "test")


def _answers_store(project: Project, answers: int, *, seed: int, prefix: str) -> int:
    """About ``answers`` simulated answers (window and tags per task: the project's) from the
    project's annotators named ``prefix-*``, spread over its training sentences; how many
    were stored."""
    rows = (
        Sentence.objects.filter(project=project, split=Sentence.Split.TRAIN)
        .order_by("position")
        .values_list("id", "gold_tags")
    )
    ids, gold = zip(*rows, strict=True)
    annotators = list(
        get_user_model()
        .objects.filter(username__startswith=f"{prefix}-", memberships__project=project)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    stored, _ = answers_store_simulated(
        project, annotators, ids, gold, np.arange(project.tags.count()),
        obs_per_sentence=answers / len(ids), seed=seed, window=project.window_size,
        tags_per_task=project.tags_per_task, n_annotators=len(annotators),
    )  # fmt: skip
    return stored


def _seed(options: dict) -> dict:
    tic = time.perf_counter()
    seeded = seed_project(
        phones=options["clients"],
        sentences=options["sentences"],
        corpus=Path(options["data"]) / "en_ewt-ud-train.conllu.gz",
    )
    project = Project.objects.get(pk=seeded["project"])
    sentences = corpus_replicate(project, sentences=options["sentences"])
    annotators_create(project, options["annotators"], prefix=CROWD_PREFIX)
    stored = _answers_store(project, options["answers"], seed=0, prefix=CROWD_PREFIX)
    seconds = time.perf_counter() - tic
    return {
        "seed": seeded,
        "sentences": sentences,
        "answers_stored": stored,
        "seconds_seeding": round(seconds, 2),
        "retrain": (
            None if options["no_first_retrain"] else timed_retrain(project, _test_corpus(options))
        ),
    }


def _grow(options: dict) -> dict:
    project = Project.objects.get(pk=options["project"])
    tic = time.perf_counter()
    missing = options["answers"] - Observation.objects.filter(project=project).count()
    stored = (
        _answers_store(project, missing, seed=options["seed"], prefix=CROWD_PREFIX)
        if missing > 0
        else 0
    )
    seconds = time.perf_counter() - tic
    return {
        "answers": Observation.objects.filter(project=project).count(),
        "stored": stored,
        "seconds_seeding": round(seconds, 2),
        "answers_per_second": round(stored / seconds) if stored else None,
    }


def _online(options: dict) -> dict:
    """The live model restarted from the current version with every stored answer counted as
    applied; a first update (the learner seeded from the newest answers, as after a retrain),
    then `--online-repeats` updates of `--answers` new answers each, in this process (as a
    worker keeps its learner). Seconds per 1,000 answers: the repeats' median."""
    project = Project.objects.get(pk=options["project"])
    current = selectors.current_version(project_id=project.pk)
    live_model_reset(project_id=project.pk, version=current)
    newest = Observation.objects.filter(project=project).order_by("-id").values("id")[:1]
    LiveModel.objects.filter(project=project).update(watermark=newest)
    seed, answers = options["seed"], options["answers"]

    def timed_update() -> tuple[float, int]:
        tic = time.perf_counter()
        out = live_model_update(project_id=project.pk, force=True)
        if out["status"] != "published":
            raise CommandError(f"live update: {out}")
        return time.perf_counter() - tic, out["answers"]

    _answers_store(project, answers, seed=seed, prefix=CROWD_PREFIX)
    first, _ = timed_update()
    per_thousand, sizes = [], []
    for repeat in range(options["online_repeats"]):
        _answers_store(project, answers, seed=seed + 1 + repeat, prefix=CROWD_PREFIX)
        seconds, applied = timed_update()
        per_thousand.append(seconds * 1000 / applied)
        sizes.append(applied)
    return {
        "seconds_per_1000": round(statistics.median(per_thousand), 3),
        "first_update_seconds": round(first, 3),
        "answers_per_update": sizes,
    }


def _annotators(options: dict) -> dict:
    """The online learner as the platform runs it (started from a batch fit of the first
    2,000 answers, never refitted) through `--answers` simulated 1-tag answers on EWT train in
    blocks of `--annotator-block`, each answer from one of `--annotator-ids` annotators; what
    the learner keeps afterwards, and its table's rows. The command adds the peak memory."""
    train = read_corpus(str(Path(options["data"]) / "en_ewt-ud-train.conllu.gz"), "train")
    tagset = sorted({tag for sentence in train for tag in sentence.upos})
    index = {tag: k for k, tag in enumerate(tagset)}
    sentences = [sentence.tokens for sentence in train]
    gold = [[index[tag] for tag in sentence.upos] for sentence in train]
    answers, ids = options["answers"], options["annotator_ids"]
    crowd = simulate_crowd(
        gold, len(tagset), window=5, tags_per_task=1, obs_per_sentence=answers / len(gold),
        random_state=options["seed"],
    )  # fmt: skip
    rng = np.random.default_rng(options["seed"])
    observations = dataclasses.replace(
        crowd.observations,
        annotator=rng.permutation(np.arange(len(crowd.observations)) % ids).astype(np.int64),
    )
    order = rng.permutation(len(observations))
    first, rest = np.sort(order[:2000]), order[2000:]
    tic = time.perf_counter()
    first_set = TrainingSet(sentences, observations.subset(first), tagset)
    start = CountTagger(model="context", random_state=0).fit(first_set)
    learner = OnlineCountTagger(random_state=0)
    learner.partial_fit(first_set, warm_start=start)
    for block in np.array_split(rest, max(1, len(rest) // options["annotator_block"])):
        learner.partial_fit(TrainingSet(sentences, observations.subset(np.sort(block)), tagset))
    state = learner.state()
    return {
        "answers": len(observations),
        "annotator_ids": int(np.unique(observations.annotator).shape[0]),
        "seconds": round(time.perf_counter() - tic, 1),
        "state_mb": round(sum(v.nbytes for v in state.values()) / 2**20, 1),
        "table_rows_used": int((learner.slot_owner_ >= 0).sum()),
        "table_rows_shared": int(learner.slot_shared_.sum()),
    }


def _export(options: dict) -> dict:
    """observations.jsonl through its view (as the manager downloads it), read to the end."""
    from rest_framework.test import APIRequestFactory, force_authenticate

    from annotation.api.exports import export_view

    project = Project.objects.get(pk=options["project"])
    request = APIRequestFactory().get(f"/api/projects/{project.pk}/exports/observations.jsonl")
    force_authenticate(request, user=project.owner)
    tic = time.perf_counter()
    response = export_view("observations.jsonl")(request, project_id=project.pk)
    if response.status_code != 200:
        raise CommandError(f"export: {response.status_code}")
    size = rows = 0
    for chunk in response.streaming_content:
        size += len(chunk)
        rows += chunk.count(b"\n")
    return {
        "rows": rows,
        "megabytes": round(size / 2**20, 1),
        "seconds_inside": round(time.perf_counter() - tic, 1),
    }


def _retrain(options: dict) -> dict:
    project = Project.objects.get(pk=options["project"])
    return {"retrain": timed_retrain(project, _test_corpus(options))}


def _pair_seed(options: dict) -> dict:
    owner = get_user_model().objects.create_user(username="bench-pair-manager")
    projects, stored = [], []
    for i in range(PAIR_PROJECTS):
        project = seed_corpus(Path(options["data"]), owner=owner, name=f"Pair {i}")
        annotators_create(project, PAIR_ANNOTATORS, prefix=f"bench-pair{i}")
        stored.append(
            _answers_store(project, options["answers"], seed=PAIR_SEED, prefix=f"bench-pair{i}")
        )
        projects.append(project.pk)
    if len(set(stored)) != 1:
        raise CommandError(f"the pair projects differ: {stored} answers")
    return {"projects": projects, "answers_per_project": stored[0]}


def _pair_retrain(options: dict) -> dict:
    """`--projects` a,b,c,d: a retrain of a queued and waited for, then of b, then of c and d
    queued at once; the seconds until each has a model."""
    a, b, c, d = (int(pk) for pk in options["projects"].split(","))
    return {
        "one_at_a_time": [_retrains_queued_and_waited([a]), _retrains_queued_and_waited([b])],
        "together": _retrains_queued_and_waited([c, d]),
    }


def _retrains_queued_and_waited(ids: list[int]) -> float:
    tic = time.perf_counter()
    for pk in ids:
        if not retrain_enqueue(project_id=pk, trigger="manual"):
            raise CommandError("the broker refused the retrain")
    while time.perf_counter() - tic < RETRAIN_WAIT_SECONDS:
        done = ModelVersion.objects.filter(project_id__in=ids).values("project").distinct()
        if done.count() == len(ids):
            return round(time.perf_counter() - tic, 1)
        time.sleep(0.2)
    raise CommandError(f"no model for {ids} after {RETRAIN_WAIT_SECONDS} s")
