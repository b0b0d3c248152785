"""The one place where ORM rows become arrays for `learning.core`, and learned arrays become
bytes for storage.

- `training_data_load` reads a project's observations in chunks (`values_list` + `iterator`) and
  its sentences, and returns the core's `Observations` (fit and held-out parts), the sentences they
  refer to, the evaluation set and per-annotator answer statistics, with the id indices needed to
  map results back.
- `model_dump` / `model_load` write and read a tagger through the core's model file format (an
  `.npz` archive of plain arrays plus a JSON header, loaded with `allow_pickle=False`).

Held-out observations: an observation is held out of fitting when a multiplicative hash of its
id falls in the lowest `HOLDOUT_FRACTION` of the range, or, in a project with more than
`HOLDOUT_ANSWERS / HOLDOUT_FRACTION` answers, in the lowest share that holds out about
`HOLDOUT_ANSWERS` (enough for the count-consistency; every answer held out is one the model does
not learn from, docs/decisions/007-held-out-answers.md). The slice is deterministic and nested:
a project that
grows only returns answers to fitting, so count-consistency stays comparable across the learning
curve. Projects with fewer
than `HOLDOUT_MIN_OBSERVATIONS` observations hold nothing out (their count-consistency is null).
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from typing import NamedTuple

import numpy as np
from django.core.files.storage import default_storage
from django.db.models import Exists, OuterRef

from annotation.models import (
    Assignment,
    Observation,
    Project,
    Sentence,
    Tag,
    Task,
    TaskKind,
    TaskOrigin,
)
from learning.core.modelfile import load_tagger, save_tagger
from learning.core.observations import Observations
from learning.core.policy import RetrainFacts
from learning.core.privacy import Mechanism
from learning.core.training import TrainingSet
from learning.core.verification import VerificationAnswers

CHUNK_SIZE = 5000
HOLDOUT_FRACTION = 0.1
HOLDOUT_ANSWERS = 1000
HOLDOUT_MIN_OBSERVATIONS = 50
_HASH = np.uint64(2654435761)
_HASH_RANGE = 2**32


@dataclass(frozen=True)
class AnnotatorAnswers:
    """Per-annotator statistics over all of a project's observations (fit and held out)."""

    annotators: np.ndarray  # sorted user ids
    answers: np.ndarray
    median_seconds: np.ndarray  # nan where never sent


@dataclass(frozen=True)
class TrainingData:
    tagset: tuple[str, ...]
    sentence_ids: np.ndarray  # database id of each entry of `sentences`
    sentences: list[list[str]]  # sentences referred to by the observations
    fit: Observations  # sentence indices into `sentences`
    fit_uniform: np.ndarray  # per `fit` row: its task was drawn as S(o | y), not chosen by value
    judged: Observations  # not held out: `fit` plus the excluded annotators' answers
    judged_uniform: np.ndarray  # per `judged` row, as `fit_uniform`
    held_out: Observations
    observations_total: int
    newest_observation: int  # 0 when none
    excluded_observations: int  # answers of excluded (flagged) annotators
    answers: AnnotatorAnswers
    evaluation_sentences: list[list[str]]
    evaluation_tags: list[list[str]]
    text: list[list[str]]  # every sentence of the corpus (word classes learn from its text)
    # A private project's mechanism: the observations' counts are its releases (issue 13).
    mechanism: Mechanism | None = None
    # Verification answers (issue 15), sentence indices into `sentences`: those fitted (not of
    # excluded annotators) and all of them (for the annotator table); None when there are none.
    verifications: VerificationAnswers | None = None
    verifications_judged: VerificationAnswers | None = None
    # The sentences verification tasks are made on: (id, tokens, is a gold check) of every
    # training and gold-check sentence.
    served: list[tuple[int, list[str], bool]] | None = None
    # Annotator time on the device, by task kind, over the answers that carry it.
    effort: dict | None = None
    # The median seconds of an answer of each kind and how many answers report them.
    seconds_per_answer: dict[str, tuple[float | None, int]] | None = None
    # The excluded (flagged) annotators' ids.
    excluded_annotators: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    # Per `judged` row: given while the current version was served (None: no version yet).
    judged_served: np.ndarray | None = None

    @property
    def answers_total(self) -> int:
        """Count and verification answers, every annotator's."""
        judged = self.verifications_judged
        return self.observations_total + (len(judged) if judged is not None else 0)

    @property
    def text_tokens(self) -> int:
        return sum(len(s) for s in self.text)

    @property
    def training_tokens(self) -> int:
        """Tokens of the training sentences: what count tasks ask about."""
        return sum(len(tokens) for _, tokens, gold_check in self.served or () if not gold_check)

    def training_set(self) -> TrainingSet:
        """The core's training set: every answer not held out, the excluded annotators' too
        (the retrain policy judges them without fitting them), and the evaluation sentences
        to calibrate on."""
        return TrainingSet(
            sentences=self.sentences,
            observations=self.judged,
            tagset=self.tagset,
            verifications=self.verifications_judged,
            mechanism=self.mechanism,
            text=self.text,
            uniform=self.judged_uniform,
            excluded=self.excluded_annotators,
            gold_sentences=self.evaluation_sentences,
            gold_tags=self.evaluation_tags,
            served_answers=self.judged_served,
        )


def holdout_mask(observation_ids: np.ndarray) -> np.ndarray:
    """True for observations held out of fitting (see the module docstring)."""
    ids = np.asarray(observation_ids, dtype=np.uint64)
    if ids.shape[0] < HOLDOUT_MIN_OBSERVATIONS:
        return np.zeros(ids.shape[0], dtype=bool)
    hashed = (ids * _HASH) % np.uint64(_HASH_RANGE)
    share = min(HOLDOUT_FRACTION, HOLDOUT_ANSWERS / ids.shape[0])
    return hashed < np.uint64(int(share * _HASH_RANGE))


def project_tagset(*, project_id: int) -> tuple[str, ...]:
    return tuple(
        Tag.objects.filter(project_id=project_id)
        .order_by("position")
        .values_list("name", flat=True)
    )


def project_mechanism(*, project_id: int, n_tags: int) -> Mechanism | None:
    """The privacy mechanism that released a private project's answers (None when the project
    is not private). Its settings are fixed once the first answer exists, so one mechanism
    released them all."""
    private, name, alpha = Project.objects.values_list("private", "mechanism", "alpha").get(
        pk=project_id
    )
    return Mechanism(name, alpha, n_tags) if private else None


def _read_observations(
    project_id: int,
    min_id: int = 0,
    *,
    max_id: int | None = None,
    limit: int | None = None,
    newest_first: bool = False,
) -> dict[str, np.ndarray | list]:
    """A project's count answers with ids in ``(min_id, max_id]`` as columns, oldest first (at
    most ``limit``, the oldest or with ``newest_first`` the newest of them)."""
    columns: dict[str, list] = {
        k: []
        for k in (
            "id", "sentence", "start", "length", "annotator", "seconds", "tags", "counts", "origin",
            "submitted_at",
        )
    }  # fmt: skip
    query = Observation.objects.filter(project_id=project_id, id__gt=min_id, kind=TaskKind.COUNT)
    if max_id is not None:
        query = query.filter(id__lte=max_id)
    query = query.order_by("-id" if newest_first else "id")
    if limit is not None:
        query = query[:limit]
    rows = query.values_list(
        "id", "sentence_id", "start", "length", "annotator_id", "seconds_on_device", "tags",
        "counts", "assignment__task__origin", "submitted_at",
    ).iterator(chunk_size=CHUNK_SIZE)  # fmt: skip
    if newest_first:
        rows = reversed(list(rows))
    names = list(columns)
    for row in rows:
        for name, value in zip(names, row, strict=True):
            columns[name].append(value)
    out: dict[str, np.ndarray | list] = {
        name: np.asarray(columns[name], dtype=np.int64)
        for name in ("id", "sentence", "start", "length", "annotator")
    }
    out["seconds"] = np.array(
        [np.nan if s is None else s for s in columns["seconds"]], dtype=np.float64
    )
    out["tags"], out["counts"] = columns["tags"], columns["counts"]
    out["submitted_at"] = columns["submitted_at"]
    # Drawn as S(o | y) (an answer whose lease is gone counts as uniform, as tasks were before
    # adaptive rounds): what the moments may read (`CountTagger.fit(uniform=...)`).
    out["uniform"] = np.array([origin != TaskOrigin.VALUE for origin in columns["origin"]])
    return out


def _read_verifications(project_id: int) -> dict[str, np.ndarray | list]:
    """A project's verification answers as columns (`wrong` -1 where no word was tapped)."""
    rows = list(
        Observation.objects.filter(project_id=project_id, kind=TaskKind.VERIFY)
        .order_by("id")
        .values_list(
            "id", "sentence_id", "start", "annotator_id", "seconds_on_device", "shown_tags",
            "answer", "wrong",
        )
        .iterator(chunk_size=CHUNK_SIZE)
    )  # fmt: skip
    columns = list(zip(*rows, strict=True)) if rows else [()] * 8
    out: dict[str, np.ndarray | list] = {
        name: np.asarray(values, dtype=np.int64)
        for name, values in zip(("id", "sentence", "start", "annotator"), columns[:4], strict=True)
    }
    out["seconds"] = np.array([np.nan if s is None else s for s in columns[4]], dtype=np.float64)
    out["shown"] = list(columns[5])
    out["answer"] = np.asarray(columns[6], dtype=bool)
    out["wrong"] = np.array([-1 if w is None else w for w in columns[7]], dtype=np.int64)
    return out


def _mask_and_counts(tags: list, counts: list, n_tags: int) -> tuple[np.ndarray, np.ndarray]:
    n = len(tags)
    sizes = np.fromiter((len(t) for t in tags), dtype=np.int64, count=n)
    rows = np.repeat(np.arange(n), sizes)
    flat_tags = np.fromiter((k for t in tags for k in t), dtype=np.int64, count=int(sizes.sum()))
    flat_counts = np.fromiter(
        (c for row in counts for c in row), dtype=np.int64, count=int(sizes.sum())
    )
    mask = np.zeros((n, n_tags), dtype=bool)
    matrix = np.zeros((n, n_tags), dtype=np.int64)
    mask[rows, flat_tags] = True
    matrix[rows, flat_tags] = flat_counts
    return mask, matrix


def _answers(annotator: np.ndarray, seconds: np.ndarray) -> AnnotatorAnswers:
    annotators, which, answers = np.unique(annotator, return_inverse=True, return_counts=True)
    medians = np.full(annotators.shape[0], np.nan)
    order = np.argsort(which, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(answers)])
    for k in range(annotators.shape[0]):
        values = seconds[order[bounds[k] : bounds[k + 1]]]
        values = values[~np.isnan(values)]
        if values.size:
            medians[k] = float(np.median(values))
    return AnnotatorAnswers(annotators=annotators, answers=answers, median_seconds=medians)


def evaluation_gold(*, project_id: int) -> tuple[list[list[str]], list[list[str]]]:
    """The evaluation sentences with gold tags, and their tags' names (what reports score)."""
    tagset = project_tagset(project_id=project_id)
    rows = (
        Sentence.objects.filter(
            project_id=project_id, split=Sentence.Split.EVALUATION, gold_tags__isnull=False
        )
        .order_by("position")
        .values_list("tokens", "gold_tags")
        .iterator(chunk_size=CHUNK_SIZE)
    )
    sentences, tags = [], []
    for tokens, gold in rows:
        sentences.append(tokens)
        tags.append([tagset[k] for k in gold])
    return sentences, tags


def training_data_load(
    *, project_id: int, excluded_annotators: set[int], served_since: datetime | None = None
) -> TrainingData:
    """Everything a retrain of the project needs, as arrays. Observations of
    `excluded_annotators` (flagged ones) are read for the annotator table but not fitted; those
    submitted from `served_since` on (when the current version was stored) are marked as given
    while it was served, to be tested for giving back its answers (`learning.core.copying`)."""
    tagset = project_tagset(project_id=project_id)
    mechanism = project_mechanism(project_id=project_id, n_tags=len(tagset))
    obs = _read_observations(project_id)
    ver = _read_verifications(project_id)
    mask, counts = _mask_and_counts(obs["tags"], obs["counts"], len(tagset))
    used_sentences = np.union1d(obs["sentence"], ver["sentence"])
    index_of = {int(s): i for i, s in enumerate(used_sentences)}
    sentences: list[list[str]] = [[] for _ in range(used_sentences.shape[0])]
    evaluation_sentences, evaluation_tags, text = [], [], []
    served: list[tuple[int, list[str], bool]] = []
    serve = {Sentence.Split.TRAIN: False, Sentence.Split.GOLD_CHECK: True}
    rows = (
        Sentence.objects.filter(project_id=project_id)
        .order_by("position")
        .values_list("id", "tokens", "gold_tags", "split")
        .iterator(chunk_size=CHUNK_SIZE)
    )
    for sentence_id, tokens, gold, split in rows:
        text.append(tokens)
        position = index_of.get(sentence_id)
        if position is not None:
            sentences[position] = tokens
        if split == Sentence.Split.EVALUATION and gold is not None:
            evaluation_sentences.append(tokens)
            evaluation_tags.append([tagset[k] for k in gold])
        if split in serve and tokens:
            served.append((sentence_id, tokens, serve[split]))
    local = np.array([index_of[int(s)] for s in obs["sentence"]], dtype=np.int64)
    lengths = np.fromiter((len(s) for s in sentences), dtype=np.int64, count=len(sentences))
    held = holdout_mask(obs["id"])
    excluded = np.isin(obs["annotator"], np.fromiter(excluded_annotators, dtype=np.int64))

    def part(select: np.ndarray) -> Observations:
        return Observations.create(
            sentence=local[select],
            start=obs["start"][select],
            length=obs["length"][select],
            tag_mask=mask[select],
            counts=counts[select],
            annotator=obs["annotator"][select],
            sentence_lengths=lengths,
            allow_empty=True,
            released=mechanism is not None,
        )

    judged = part(~held)
    verifications = judged_verifications = None
    if ver["id"].size:
        judged_verifications = VerificationAnswers.create(
            sentence=np.array([index_of[int(s)] for s in ver["sentence"]], dtype=np.int64),
            start=ver["start"],
            shown=ver["shown"],
            answer=ver["answer"],
            wrong=ver["wrong"],
            annotator=ver["annotator"],
            sentence_lengths=lengths,
            n_tags=len(tagset),
        )
        fitted = ~np.isin(ver["annotator"], np.fromiter(excluded_annotators, dtype=np.int64))
        if fitted.any():
            verifications = judged_verifications.subset(fitted)
    ids = np.concatenate([obs["id"], ver["id"]])
    return TrainingData(
        tagset=tagset,
        sentence_ids=used_sentences,
        sentences=sentences,
        fit=judged.subset(~excluded[~held]),
        fit_uniform=obs["uniform"][~held][~excluded[~held]],
        judged=judged,
        judged_uniform=obs["uniform"][~held],
        held_out=part(held),
        observations_total=int(ids.shape[0]),
        newest_observation=int(ids.max()) if ids.size else 0,
        excluded_observations=int((~held & excluded).sum()),
        answers=_answers(
            np.concatenate([obs["annotator"], ver["annotator"]]),
            np.concatenate([obs["seconds"], ver["seconds"]]),
        ),
        evaluation_sentences=evaluation_sentences,
        evaluation_tags=evaluation_tags,
        text=text,
        mechanism=mechanism,
        verifications=verifications,
        verifications_judged=judged_verifications,
        served=served,
        effort=_effort({"count": obs["seconds"], "verify": ver["seconds"]}),
        seconds_per_answer=_median_seconds({"count": obs["seconds"], "verify": ver["seconds"]}),
        excluded_annotators=np.array(sorted(excluded_annotators), dtype=np.int64),
        judged_served=(
            None
            if served_since is None
            else np.array([at >= served_since for at in obs["submitted_at"]], dtype=bool)[~held]
        ),
    )


def _median_seconds(seconds_by_kind: dict[str, np.ndarray]) -> dict[str, tuple[float | None, int]]:
    """(median seconds on the device, answers that report them) by task kind."""
    out: dict[str, tuple[float | None, int]] = {}
    for kind, seconds in seconds_by_kind.items():
        timed = seconds[np.isfinite(seconds)]
        out[kind] = (float(np.median(timed)) if timed.size else None, int(timed.size))
    return out


def asked_regions(*, project_id: int, sentence_index: dict[int, int], n_tags: int) -> np.ndarray:
    """The training count tasks that stay when a version's round replaces the never-leased ones
    (those with a lease or an answer), as rows [sentence, start, length, tag mask...] with the
    sentence an index of `sentence_index` (tasks of other sentences are left out)."""
    leased = Assignment.objects.filter(task=OuterRef("pk"))
    rows = (
        Task.objects.filter(Exists(leased), project_id=project_id, kind=TaskKind.COUNT)
        .filter(is_gold=False)
        .values_list("sentence_id", "start", "length", "tags")
        .iterator(chunk_size=CHUNK_SIZE)
    )
    out = [
        (sentence_index[sentence_id], start, length, tags)
        for sentence_id, start, length, tags in rows
        if sentence_id in sentence_index
    ]
    regions = np.zeros((len(out), 3 + n_tags), dtype=np.int64)
    for i, (sentence, start, length, tags) in enumerate(out):
        regions[i, :3] = sentence, start, length
        regions[i, [3 + tag for tag in tags]] = 1
    return regions


def retrain_facts(data: TrainingData, *, project_id: int, number: int) -> RetrainFacts:
    """The retrain policy's facts (`learning.core.policy.RetrainFacts`) of `data`, for the
    version `number`: its rounds are made on the served sentences, leaving out the regions
    that have a lease or an answer."""
    served = data.served or []
    training = [sentence_id for sentence_id, _, gold in served if not gold]
    return RetrainFacts(
        data=data.training_set(),
        answers_total=data.answers_total,
        annotators=data.answers,
        text_tokens=data.text_tokens,
        training_tokens=data.training_tokens,
        number=number,
        held_out=data.held_out,
        served=served,
        sentence_keys=data.sentence_ids,
        asked=asked_regions(
            project_id=project_id,
            sentence_index={sentence_id: i for i, sentence_id in enumerate(training)},
            n_tags=len(data.tagset),
        ),
        seconds=data.seconds_per_answer,
    )


def _effort(seconds_by_kind: dict[str, np.ndarray]) -> dict:
    """Minutes on the device and the number of answers that report them, by task kind."""
    timed = {kind: s[np.isfinite(s)] for kind, s in seconds_by_kind.items()}
    return {
        "minutes": {kind: round(float(s.sum()) / 60.0, 2) for kind, s in timed.items()},
        "timed_answers": {kind: int(s.shape[0]) for kind, s in timed.items()},
    }


def count_answers(
    *, project_id: int, after: int, up_to: int | None = None, limit: int, newest_first: bool = False
) -> tuple[Observations, dict[int, list[str]], int]:
    """Count answers with ids in ``(after, up_to]``, at most ``limit`` (the oldest, or the
    newest), as observations whose sentence indices are the sentences' ids; the tokens of those
    sentences by id; and the newest id read (``after`` when none)."""
    tagset = project_tagset(project_id=project_id)
    private = project_mechanism(project_id=project_id, n_tags=len(tagset)) is not None
    obs = _read_observations(
        project_id, after, max_id=up_to, limit=limit, newest_first=newest_first
    )
    mask, counts = _mask_and_counts(obs["tags"], obs["counts"], len(tagset))
    tokens = sentence_tokens(project_id=project_id, ids=np.unique(obs["sentence"]))
    lengths = np.zeros(int(obs["sentence"].max()) + 1 if obs["id"].size else 0, dtype=np.int64)
    for sentence_id, words in tokens.items():
        lengths[sentence_id] = len(words)
    observations = Observations.create(
        sentence=obs["sentence"], start=obs["start"], length=obs["length"], tag_mask=mask,
        counts=counts, annotator=obs["annotator"], sentence_lengths=lengths, allow_empty=True,
        released=private,
    )  # fmt: skip
    newest = int(obs["id"].max()) if obs["id"].size else after
    return observations, tokens, newest


def sentence_tokens(*, project_id: int, ids) -> dict[int, list[str]]:
    """The tokens of the project's sentences ``ids``, by id."""
    ids = [int(i) for i in ids]
    tokens: dict[int, list[str]] = {}
    for start in range(0, len(ids), CHUNK_SIZE):
        rows = Sentence.objects.filter(
            project_id=project_id, id__in=ids[start : start + CHUNK_SIZE]
        )
        tokens.update(rows.values_list("id", "tokens"))
    return tokens


def newest_observation_id(*, project_id: int) -> int:
    newest = (
        Observation.objects.filter(project_id=project_id)
        .order_by("-id")
        .values_list("id", flat=True)
        .first()
    )
    return int(newest or 0)


class CorpusRow(NamedTuple):
    """A sentence as exports write it: `source` is its CoNLL-U lines as imported ("" for other
    formats), whose `tag_column` (`upos` or `xpos`) holds the tags."""

    id: int
    split: str
    tokens: list[str]
    gold: list[int] | None
    text: str
    source: str
    tag_column: str


def corpus_sentences(*, project_id: int) -> Iterator[CorpusRow]:
    """Every sentence of the project, in order, read in chunks."""
    rows = (
        Sentence.objects.filter(project_id=project_id)
        .order_by("position")
        .values_list(
            "id", "split", "tokens", "gold_tags", "text", "source", "corpus_import__tag_column"
        )
        .iterator(chunk_size=1000)
    )
    for row in rows:
        yield CorpusRow(*row[:6], row[6] or "upos")


# Model files ------------------------------------------------------------------------------------


def model_dump(tagger, *, metadata: dict | None = None) -> bytes:
    """The tagger in the learning core's model file format (`.npz` of plain arrays + a JSON
    header; see `learning.core.modelfile`), as bytes for the storage."""
    buffer = io.BytesIO()
    save_tagger(tagger, buffer, metadata=metadata)
    return buffer.getvalue()


def model_load_bytes(data: bytes):
    """Read a model file (never unpickles; raises `ModelFileError`, a `ValueError`)."""
    tagger, _ = load_tagger(io.BytesIO(data))
    return tagger


@lru_cache(maxsize=2)
def model_load(name: str):
    """The tagger (node-only or contextual) stored under `name` in the default storage (files
    are immutable, so a small per-process cache keyed by name is safe; a loaded tagger holds its
    dense weights, about 36 MB with the default 2^18 hashed features × 17 tags, hence only
    two)."""
    with default_storage.open(name, "rb") as handle:
        return model_load_bytes(handle.read())
