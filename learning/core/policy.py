"""The retrain policy: what a new model version is, decided once for the platform's retrain
and the simulators (``simulate_campaign``, ``simulate_crowd``), which call the same function
so they cannot drift.

:func:`plan_version` takes the retrain's facts (:class:`RetrainFacts`: the answers as a
:class:`.training.TrainingSet`, who answered how much, the sentences rounds are made on), the
previous version (:class:`PreviousVersion`, or None) and the settings (:class:`PolicySettings`),
and returns a :class:`VersionPlan`. It decides, in this order:

1. **exclusion** — the annotators the previous version flagged are judged, not fitted
   (``TrainingSet.excluded``): their answers weigh 0 in this fit, and the fit's reliability
   estimate covers them, so a flag is lifted once their answers agree with the model;
2. **warm start** — go on from the previous version only when the answers grew little since
   the last full fit it descends from, and by uniform draws only
   (:func:`.schedule.warm_start_suits`);
3. **word classes** — the previous version's, when learned from the same text;
4. **the fit and its calibration** — :class:`.pipeline.CountTagger`, whose calibrate stage
   alone decides the temperatures (gold, previous, held-out answers);
5. **the annotator table and its flags** — from the fit's one reliability estimate
   (:func:`.report.annotator_table`), no second estimate;
6. **the next round and the task mix** — :mod:`.next_round`, on the version's probabilities
   given the answers in hand of the annotators it trusts; no verification round before the
   version has been fitted on enough answers to be judged (:attr:`VersionPlan.judged`: its
   temperatures fitted to held-out answers or gold, held-out count answers, or gold sentences
   to score it on), after which the share is what the values say.

The platform reads the facts through ``learning.adapter`` and stores the plan
(``learning.services``); the campaign answers the plan's round with a simulated crowd.

**Extension points.** A new kind of answer (entity counts in mentions or in words) enters
through :class:`.training.TrainingSet` (its docstring says where), and its answerers' estimate
reaches the table in step 5 beside the count and verification ones; a richer annotator model
(miss rates, confusions) is a field of :class:`.settings.CrowdSettings`, estimated in
:mod:`.pipeline.reliability`. Neither needs a change here beyond reading the new estimate.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from .next_round import NextCounts, Window, answered_rows, count_round, verification_windows
from .next_round import verified_answers as verified_on
from .observations import Observations
from .pipeline import CountTagger
from .pipeline.calibrate import Calibration
from .report import TokenProbabilities, annotator_table, held_out_consistency
from .schedule import asked_share, warm_start_suits
from .settings import CrowdSettings
from .task_value import EXPLORATION
from .training import TrainingSet
from .wordclasses import WordClasses

__all__ = [
    "JUDGE_MIN_GOLD_TOKENS",
    "JUDGE_MIN_HELD_OUT",
    "NothingToFit",
    "NothingToLearn",
    "PolicySettings",
    "PreviousVersion",
    "RetrainFacts",
    "RoundSettings",
    "VersionPlan",
    "plan_version",
]

# A version is judged by held-out count answers or gold sentences from these many on
# (docs/decisions/, "No verification round before a model can be judged").
JUDGE_MIN_HELD_OUT = 20
JUDGE_MIN_GOLD_TOKENS = 50


class NothingToFit(ValueError):
    """Every answer is held out or of an excluded annotator."""


class NothingToLearn(ValueError):
    """Every count answer counts 0 of each tag it asks (and there is nothing else)."""


@dataclass(frozen=True)
class AnnotatorStats:
    """Every annotator who answered (sorted ids), their answers and median seconds (nan:
    unknown)."""

    annotators: np.ndarray
    answers: np.ndarray
    median_seconds: np.ndarray


@dataclass(frozen=True)
class RetrainFacts:
    """What a retrain knows.

    data : the answers not held out, every annotator's, and the gold sentences to calibrate
        on; its ``excluded`` annotators, and those the previous version flagged, are judged
        and not fitted.
    answers_total : count and verification answers of every annotator, held-out ones included.
    annotators : :class:`AnnotatorStats` (anything with the same three fields).
    text_tokens : tokens of the corpus' text (word classes are reused while it stays).
    training_tokens : tokens of the sentences count tasks ask about.
    number : the number of the version this retrain makes.
    held_out : count answers held out of fitting (sentence indices into ``data.sentences``).
    served : (key, tokens, is a gold check) of every sentence the next round may ask about.
    sentence_keys : the key of each of ``data.sentences`` (default: its index).
    asked : regions that exist as tasks already, rows [index into the training sentences of
        ``served``, start, length, tag mask...].
    seconds : measured (median seconds, timed answers) of an answer of each kind.
    """

    data: TrainingSet
    answers_total: int
    annotators: AnnotatorStats
    text_tokens: int
    training_tokens: int
    number: int
    held_out: Observations | None = None
    served: Sequence[tuple[int, list[str], bool]] = ()
    sentence_keys: np.ndarray | None = None
    asked: np.ndarray | None = None
    seconds: dict[str, tuple[float | None, int]] | None = None

    @classmethod
    def of_answers(
        cls,
        data: TrainingSet,
        *,
        number: int,
        asked: np.ndarray | None = None,
        seconds: dict[str, tuple[float | None, int]] | None = None,
    ) -> RetrainFacts:
        """The facts of a simulation: every answer fitted (none held out), every sentence of
        ``data`` a training sentence keyed by its index, no time measured unless ``seconds``."""
        who = [data.observations.annotator]
        if data.verifications is not None:
            who.append(data.verifications.annotator)
        annotators, answers = np.unique(np.concatenate(who), return_counts=True)
        text = data.text if data.text is not None else data.sentences
        return cls(
            data=data,
            answers_total=data.answers,
            annotators=AnnotatorStats(annotators, answers, np.full(annotators.shape[0], np.nan)),
            text_tokens=sum(len(s) for s in text),
            training_tokens=sum(len(s) for s in data.sentences),
            number=number,
            served=[(i, list(s), False) for i, s in enumerate(data.sentences) if len(s)],
            asked=asked,
            seconds=seconds,
        )


@dataclass(frozen=True)
class PreviousVersion:
    """The current version, as the next one needs it: the answers of the last full fit it
    descends from (and of them those chosen by value; None: unknown), the text it learned word
    classes from, the annotators it flagged, and ``load``, which reads its served tagger (None
    when unreadable) only when the plan needs it."""

    number: int
    full_fit_answers: int
    full_fit_chosen: int | None
    text_tokens: int | None
    flagged: np.ndarray
    load: Callable[[], object | None]


@dataclass(frozen=True)
class RoundSettings:
    """How a version's next round is made (:mod:`.next_round`).

    window, tags_per_task : the project's window and tags per count task (None: all).
    verification_share : the manager's fixed share of verification leases, 0 for none, or None
        (default): the values choose it.
    n_tasks : count tasks of a round (default None: one per training sentence).
    exploration : share of the round drawn uniformly (default :data:`.task_value.EXPLORATION`).
    given_answers : value tasks given the answers in hand (default True).
    repeat_discount : multiply a window's value by this for each window of the round already
        asking about the same word (default 1: off).
    """

    window: int
    tags_per_task: int | None
    verification_share: float | None = None
    n_tasks: int | None = None
    exploration: float = EXPLORATION
    given_answers: bool = True
    repeat_discount: float = 1.0

    def __post_init__(self) -> None:
        if self.window < 1:
            raise ValueError("window must be at least 1")
        if not 0.0 <= self.exploration <= 1.0:
            raise ValueError("exploration must be between 0 and 1")


@dataclass(frozen=True)
class PolicySettings:
    """crowd : :class:`.settings.CrowdSettings` of the fit and the table. rounds :
    :class:`RoundSettings`, or None to plan no round (``simulate_crowd``). seed : the fit's
    random state; a version's rounds use ``seed + number``. estimator : further
    :class:`.pipeline.CountTagger` parameters (``model``, ``schedule``) for the simulators."""

    crowd: CrowdSettings = field(default_factory=CrowdSettings)
    rounds: RoundSettings | None = None
    seed: int = 0
    estimator: dict = field(default_factory=dict)


@dataclass(frozen=True)
class VersionPlan:
    """What :func:`plan_version` decided (the module docstring, step by step)."""

    estimator: CountTagger
    warm_started: bool
    full_fit_answers: int  # of the last full fit it descends from (itself if full)
    full_fit_chosen: int  # of them, those chosen by value
    word_classes_reused: bool
    calibration: Calibration
    table: list[dict]
    flags: dict[int, str]  # flagged annotator → reason
    probabilities: TokenProbabilities | None  # of the served sentences, then the others
    place: dict[int, int]  # row of each sentence key in ``probabilities``
    consistency: float | None
    judged: bool
    windows: list[Window] | None  # None: the version asks no verification round
    counts: NextCounts | None  # None: no round planned
    timings: dict[str, float]

    @property
    def flagged(self) -> np.ndarray:
        return np.array(sorted(self.flags), dtype=np.int64)


def plan_version(
    facts: RetrainFacts, previous: PreviousVersion | None, settings: PolicySettings
) -> VersionPlan:
    """The next version (module docstring). Raises :class:`NothingToFit` or
    :class:`NothingToLearn` when the answers carry nothing to fit."""
    excluded = facts.data.excluded  # the caller's, and those the previous version flagged
    if previous is not None:
        excluded = np.union1d(excluded, previous.flagged)
    data = replace(facts.data, excluded=excluded)
    obs = data.observations
    trusted = data.trusted(obs.annotator) > 0
    verifications = data.verifications
    n_verified = 0 if verifications is None else int(data.trusted(verifications.annotator).sum())
    if not trusted.any():
        raise NothingToFit("No observations to fit: every answer is held out or flagged.")
    if data.mechanism is None and not n_verified and not obs.counts[trusted].any():
        raise NothingToLearn(
            "Not enough answers to learn from yet: every answer so far counts 0 of each tag it "
            "asks. The model is trained as soon as answers count some tags."
        )
    uniform = np.ones(len(obs), dtype=bool) if data.uniform is None else data.uniform
    chosen = int((~uniform & trusted).sum()) + n_verified
    suits = previous is not None and warm_start_suits(
        previous.full_fit_answers,
        facts.answers_total,
        asked=asked_share(obs.subset(trusted), facts.training_tokens),
        chosen_since=chosen - (previous.full_fit_chosen or 0),
    )
    warm = previous.load() if suits else None
    data = _with_served_proba(data, previous, warm)
    classes: bool | WordClasses = True
    if previous is not None and previous.text_tokens == facts.text_tokens:
        model = warm if warm is not None else previous.load()
        found = getattr(model, "word_classes", None)
        classes = True if found is None else found
    estimator = CountTagger(
        **settings.estimator, word_classes=classes, crowd=settings.crowd,
        random_state=settings.seed,
    ).fit(data, warm_start=warm)  # fmt: skip
    tagger = estimator.tagger_
    table = annotator_table(
        estimator.reliability_,
        estimator.verification_reliability_,
        annotators=facts.annotators.annotators,
        answers=facts.annotators.answers,
        median_seconds=facts.annotators.median_seconds,
        crowd=settings.crowd,
        min_observations=estimator.min_flag_observations_,
    )
    flags = {row["annotator"]: row["flag_reason"] for row in table if row["flagged"]}
    keys = np.arange(len(data.sentences)) if facts.sentence_keys is None else facts.sentence_keys
    held_out = facts.held_out if facts.held_out is not None and len(facts.held_out) else None
    probs, place, consistency = None, {}, None
    if settings.rounds is not None or held_out is not None:
        probs, place = _probabilities(tagger, facts.served, keys, data.sentences)
    if held_out is not None:
        consistency = held_out_consistency(probs.take([place[int(k)] for k in keys]), held_out)
    gold_tokens = sum(len(s) for s in data.gold_sentences)
    judged = (
        estimator.calibration_.judged
        or (held_out is not None and len(held_out) >= JUDGE_MIN_HELD_OUT)
        or gold_tokens >= JUDGE_MIN_GOLD_TOKENS
    )
    timings = dict(estimator.timings_)
    windows = counts = None
    if settings.rounds is not None:
        windows, counts = _next_round(
            facts, data, settings, probs, keys, flags, judged, held_out, timings
        )
    return VersionPlan(
        estimator=estimator,
        warm_started=warm is not None,
        full_fit_answers=previous.full_fit_answers if warm is not None else facts.answers_total,
        full_fit_chosen=(previous.full_fit_chosen or 0) if warm is not None else chosen,
        word_classes_reused=isinstance(classes, WordClasses),
        calibration=estimator.calibration_,
        table=table,
        flags=flags,
        probabilities=probs,
        place=place,
        consistency=consistency,
        judged=bool(judged),
        windows=windows,
        counts=counts,
        timings=timings,
    )


def _with_served_proba(data: TrainingSet, previous: PreviousVersion | None, warm) -> TrainingSet:
    """``data`` with the previous version's probabilities of its sentences, when answers given
    while it was served are to be tested for giving back its answers (:mod:`.copying`)."""
    served = data.served_answers
    if data.served_proba is not None or served is None or not served.any() or previous is None:
        return data
    tagger = warm if warm is not None else previous.load()
    if tagger is None or data.mechanism is not None:
        return data
    return replace(data, served_proba=tagger.token_proba(data.sentences))


def _probabilities(tagger, served, keys, sentences):
    """The version's probabilities of every sentence its reports and rounds read (the served
    sentences, then any other answered one), computed once; and each key's row."""
    texts = [tokens for _, tokens, _ in served]
    place = {int(key): i for i, (key, _, _) in enumerate(served)}
    for key, tokens in zip(keys.tolist(), sentences, strict=True):
        if key not in place:
            place[key] = len(texts)
            texts.append(tokens)
    return TokenProbabilities.of(tagger, texts), place


def _next_round(facts, data, settings, probs, keys, flags, judged, held_out, timings):
    """The version's verification windows (None when it asks none) and its count round."""
    rounds = settings.rounds
    served = list(facts.served)
    seed = settings.seed + facts.number
    private = data.mechanism is not None
    asks = rounds.verification_share is None or rounds.verification_share > 0
    tic = time.perf_counter()
    windows = None
    if not private and asks and judged:
        windows = verification_windows(probs, served, window=rounds.window, random_state=seed)
    timings["verification_round"] = time.perf_counter() - tic
    tic = time.perf_counter()
    training_rows = [i for i, (_, _, gold) in enumerate(served) if not gold]
    training = [served[i][:2] for i in training_rows]
    flagged = np.array(sorted(flags), dtype=np.int64)
    answered = verified = None
    if rounds.given_answers:  # the answers in hand of the annotators the version trusts
        in_hand = [data.observations] + ([held_out] if held_out is not None else [])
        in_hand = [o.subset(~np.isin(o.annotator, flagged)) for o in in_hand]
        answered = None if private else answered_rows(in_hand, keys, training)
        v = data.verifications
        if v is not None:
            verified = verified_on(v.subset(~np.isin(v.annotator, flagged)), keys, training)
    token_keys = None
    if rounds.repeat_discount < 1.0:  # each token's lowercased form
        forms = [w.lower() for _, tokens in training for w in tokens]
        token_keys = np.unique(forms, return_inverse=True)[1].ravel()
    n_tags = len(data.tagset)
    counts = count_round(
        probs.take(training_rows), training, window=rounds.window,
        tags_per_task=rounds.tags_per_task,
        asked=np.zeros((0, 3 + n_tags), dtype=np.int64) if facts.asked is None else facts.asked,
        verification=windows, seconds=facts.seconds, random_state=seed, answered=answered,
        verified=verified, n_tasks=rounds.n_tasks, exploration=rounds.exploration,
        token_keys=token_keys, repeat_discount=rounds.repeat_discount,
    )  # fmt: skip
    timings["count_round"] = time.perf_counter() - tic
    return windows, counts
