"""Projects of the benchmarks filled in bulk: a corpus, annotators, and simulated answers stored as
the platform stores them (tasks, submitted assignments, observations), at benchmark speed.

Runs in a Django process whose database is a scratch one. The answers are those
`simulate_crowd` gives; `answers_store_simulated` writes their three rows each with PostgreSQL's
COPY rather than as ORM objects (for a million answers, see the seeding time `benchmark_scale`
prints) — a fast path for the benchmarks only: the platform stores each answer through
`annotation.services.observation_submit`.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

import numpy as np
from django.contrib.auth import get_user_model
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
from learning.core.conllu import conllu_head
from learning.experiments.simulate import simulate_crowd

# Rows per statement when reading the tasks and assignments of the answered sentences.
_READ_CHUNK = 10_000


def conllu_import(
    project: Project,
    user,
    path: Path,
    *,
    sentences: int | None = None,
    evaluation_fraction: float = 0.0,
    gold_check_fraction: float = 0.0,
    seed: int = 0,
):
    """The CoNLL-U file `path` (plain or gzipped; its first `sentences` only, when given) into
    `project` through the annotation service, as a manager's upload; its `CorpusImport`."""
    data = path.read_bytes() if sentences is None else conllu_head(path, sentences).encode()
    return services.corpus_import(
        project=project,
        user=user,
        file=io.BytesIO(data),
        filename=path.name,
        format="conllu",
        evaluation_fraction=evaluation_fraction,
        gold_check_fraction=gold_check_fraction,
        max_bytes=10**9,  # a benchmark's own file, gzipped or not: the upload limit is not its
        seed=seed,
    )


def seed_corpus(data: Path, *, owner=None, name: str = "EWT retrain benchmark") -> Project:
    """A project with the 17 UPOS tags, all tags asked per task: EWT train (``data`` holds
    en_ewt-ud-*.conllu.gz) as training sentences and EWT dev as the evaluation set, imported
    through the annotation service, without the tasks the import made (the benchmarks store
    their own regions). ``owner``: the manager (default: a new user `bench-manager`)."""
    manager = owner or get_user_model().objects.create_user(username="bench-manager")
    project = services.project_create(
        owner=manager,
        name=name,
        tag_preset="ud_upos",
        window_size=5,
        tags_per_task=None,
        redundancy=1,
    )
    for split, evaluation_fraction in (("train", 0.0), ("dev", 1.0)):
        path = data / f"en_ewt-ud-{split}.conllu.gz"  # the released file, as a manager uploads it
        conllu_import(project, manager, path, evaluation_fraction=evaluation_fraction)
    Task.objects.filter(project=project).delete()
    return project


def train_sentence_ids(project: Project) -> list[int]:
    """The ids of the project's training sentences, in corpus order."""
    return list(
        Sentence.objects.filter(project=project, split=Sentence.Split.TRAIN)
        .order_by("position")
        .values_list("id", flat=True)
    )


def corpus_replicate(project: Project, *, sentences: int) -> int:
    """Copy the project's training sentences (new ids, later positions) until it has at least
    ``sentences`` of them, in SQL; returns how many it has."""
    table = Sentence._meta.db_table
    copied = "project_id, corpus_import_id, length, tokens, gold_tags, split, text, source"
    copied += ", multiword"
    rows = f"FROM {table} WHERE project_id = %s"  # noqa: S608 (the model's table)
    train = rows + " AND split = %s"
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*), max(position) {train}", [project.pk, "train"])
        originals, last = cursor.fetchone()
        cursor.execute(f"SELECT max(position) {rows}", [project.pk])
        (top,) = cursor.fetchone()
        have, copy = originals, 1
        while have < sentences:
            cursor.execute(
                f"INSERT INTO {table} (position, {copied}) SELECT position + %s, {copied} "
                f"{train} AND position <= %s ORDER BY position LIMIT %s",
                [copy * (top + 1), project.pk, "train", last, sentences - have],
            )
            have += cursor.rowcount
            copy += 1
    return have


def annotators_create(project: Project, n: int, *, prefix: str = "bench-annotator") -> list[int]:
    """``n`` annotator accounts of ``project`` (no password, no token); their ids."""
    users = get_user_model().objects.bulk_create(
        get_user_model()(username=f"{prefix}-{i}") for i in range(n)
    )
    Membership.objects.bulk_create(
        Membership(project=project, user=user, role=Membership.Role.ANNOTATOR) for user in users
    )
    return [user.pk for user in users]


def tag_columns(project: Project, tagset: Sequence[str]) -> np.ndarray:
    """The project's tag position of each name of ``tagset``."""
    position = dict(Tag.objects.filter(project=project).values_list("name", "position"))
    return np.array([position[name] for name in tagset])


def answers_store_simulated(
    project: Project,
    annotators: Sequence[int],
    sentence_ids: Sequence[int],
    gold: Sequence[Sequence[int]],
    columns: np.ndarray,
    *,
    obs_per_sentence: float,
    seed: int,
    **setting,
) -> tuple[int, int]:
    """Store the answers ``simulate_crowd`` gives with ``seed`` on the sentences ``sentence_ids``
    (gold tags ``gold``, in the simulation's tag columns; ``columns`` maps each to the
    project's tag position) as tasks (new regions, closed), submitted assignments and
    observations. ``setting``: simulate_crowd's window, tags_per_task, n_annotators. An answer
    whose annotator already answered the same region (one assignment per task and annotator)
    is not stored. Returns (stored, not stored)."""
    crowd = simulate_crowd(
        gold, len(columns), obs_per_sentence=obs_per_sentence, random_state=seed, **setting
    )
    obs = crowd.observations
    sentence = np.asarray(sentence_ids, dtype=np.int64)[obs.sentence]
    rows = []
    for i in range(len(obs)):
        asked = np.flatnonzero(obs.tag_mask[i])
        order = np.argsort(columns[asked])
        tags = tuple(int(t) for t in columns[asked][order])
        counts = [int(c) for c in obs.counts[i, asked][order]]
        region = (int(sentence[i]), int(obs.start[i]), int(obs.length[i]), tags)
        rows.append((region, counts, annotators[obs.annotator[i]]))
    now = timezone.now()
    rng = np.random.default_rng(seed)
    with transaction.atomic():
        tasks = _tasks_of(project, {region[0] for region, _, _ in rows})
        answered = _answered(tasks.values())
        new_regions = list(dict.fromkeys(r for r, _, _ in rows if r not in tasks))
        tasks.update(zip(new_regions, _ids(Task, len(new_regions)), strict=True))
        kept = []
        for region, counts, annotator in rows:
            key = (tasks[region], annotator)
            if key not in answered:
                answered.add(key)
                kept.append((region, counts, annotator))
        assignment_ids = _ids(Assignment, len(kept))
        seconds = rng.uniform(2, 8, size=len(kept))
        _copy(Task, ["id", "project", "sentence", "start", "length", "kind", "tags", "is_gold",
                     "open_slots", "round", "origin", "created_at"],
              ((tasks[r], project.pk, r[0], r[1], r[2], TaskKind.COUNT, _json(r[3]), False, 0,
                seed + 1, "uniform", now) for r in new_regions))  # fmt: skip
        _copy(Assignment, ["id", "project", "task", "annotator", "status", "leased_at",
                           "expires_at", "submitted_at"],
              ((a, project.pk, tasks[r], who, Assignment.Status.SUBMITTED, now, now, now)
               for a, (r, _, who) in zip(assignment_ids, kept, strict=True)))  # fmt: skip
        _copy(Observation, ["project", "annotator", "assignment", "sentence", "start", "length",
                            "kind", "tags", "counts", "is_gold", "seconds_on_device",
                            "idempotency_key", "submitted_at", "mechanism"],
              ((project.pk, who, a, r[0], r[1], r[2], TaskKind.COUNT, _json(r[3]), _json(c),
                False, float(s), f"bulk-{seed}-{a}", now, "")
               for a, (r, c, who), s in zip(assignment_ids, kept, seconds, strict=True))
              )  # fmt: skip
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    return len(kept), len(rows) - len(kept)


def _tasks_of(project: Project, sentences: set[int]) -> dict[tuple, int]:
    """The count tasks of ``sentences``, by region (sentence, start, length, tags)."""
    ordered, tasks = sorted(sentences), {}
    for at in range(0, len(ordered), _READ_CHUNK):
        found = Task.objects.filter(
            project=project, kind=TaskKind.COUNT, sentence_id__in=ordered[at : at + _READ_CHUNK]
        ).values_list("id", "sentence_id", "start", "length", "tags")
        tasks.update({(s, b, n, tuple(t)): pk for pk, s, b, n, t in found})
    return tasks


def _answered(task_ids) -> set[tuple[int, int]]:
    """(task, annotator) of every assignment of ``task_ids``."""
    ordered, answered = sorted(task_ids), set()
    for at in range(0, len(ordered), _READ_CHUNK):
        answered.update(
            Assignment.objects.filter(task_id__in=ordered[at : at + _READ_CHUNK]).values_list(
                "task_id", "annotator_id"
            )
        )
    return answered


def _ids(model, n: int) -> list[int]:
    """``n`` ids from the table's own sequence, so rows written later by the platform follow."""
    if n == 0:
        return []
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT nextval(pg_get_serial_sequence(%s, 'id')) FROM generate_series(1, %s)",
            [model._meta.db_table, n],
        )
        return [pk for (pk,) in cursor.fetchall()]


def _json(values) -> str:
    return "[" + ", ".join(str(int(v)) for v in values) + "]"


def _copy(model, fields: list[str], rows) -> None:
    """COPY ``rows`` (tuples in the order of ``fields``) into ``model``'s table, in text format
    built here: psycopg's row-by-row adaptation cost more than the database's work."""
    columns = ", ".join(model._meta.get_field(name).column for name in fields)
    buffer = io.StringIO()
    for row in rows:
        buffer.write("\t".join(_text(value) for value in row))
        buffer.write("\n")
    with connection.cursor() as cursor:
        sql = f"COPY {model._meta.db_table} ({columns}) FROM STDIN"
        with cursor.cursor.copy(sql) as copy:
            copy.write(buffer.getvalue())


def _text(value) -> str:
    if isinstance(value, bool):
        return "t" if value else "f"
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)
