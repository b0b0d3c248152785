"""A simulated annotation campaign: rounds of tasks chosen by a policy, answered by a simulated
crowd, each followed by a retrain, as a project lives on the platform.

Round 0 asks ``start`` uniform count tasks per sentence and fits the first version. Each later
round spends an equal share of the rest of the budget (``budget`` tasks per sentence in all, in
annotator seconds) on tasks chosen by the policy from the current version, then retrains as
the platform's scheduled retrain does: the same retrain policy (:mod:`learning.core.policy`)
decides the warm start, the word classes, the calibration, the flags and the next round:

* ``uniform`` — tasks drawn as the paper's ``S(o | y)``, as before adaptive tasks;
* ``adaptive`` — the round the platform's retrain policy plans with the version
  (:func:`learning.core.policy.plan_version`: :func:`.task_value.round_plan` on the version's
  token probabilities given the answers in hand, with its exploration share; with
  ``verification``, its windows and the share of verification leases by bits per second),
  served as leasing serves it: each kind in its order, in the round's seconds;
* ``oracle`` — a bound for any value, not a policy a project could run: the same plan on
  probabilities that know the gold, certain where the version is right and split evenly
  between its tag and the gold tag where it is wrong (:func:`error_oracle`), so the round asks
  the version's errors, with the pair each confuses.

As on the platform, an annotator the current version flags is served no more tasks of the
rounds (only gold checks, which the simulation does not ask): the rounds go to the others.

Seconds per answer are simulated (``SECONDS_PER_ANSWER``): a count task costs more the more tags it
asks, a yes/no less. From round 1 on, a learning curve fitted to the versions so far forecasts the
accuracy at the budget (:mod:`learning.core.forecast`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from learning.core.conllu import ConlluSentence
from learning.core.evaluate import accuracy
from learning.core.observations import Observations
from learning.core.policy import (
    PolicySettings,
    PreviousVersion,
    RetrainFacts,
    RoundSettings,
    VersionPlan,
    plan_version,
)
from learning.core.task_value import EXPLORATION, round_plan
from learning.core.training import TrainingSet
from learning.core.verification import VerificationAnswers

from .crowd_report import gold_indices
from .simulate import SimulatedCrowd, answer_counts, answer_verifications, simulate_crowd

__all__ = [
    "POLICIES", "SECONDS_PER_ANSWER", "campaign_facts", "campaign_rounds", "error_oracle",
    "seconds_per_count",
]  # fmt: skip

POLICIES = ("uniform", "adaptive", "oracle")
# Simulated seconds an annotator spends per answer: reading the window, then per asked tag
# (all tags: an answer per tag present); a yes/no is one look and one tap.
SECONDS_PER_ANSWER = {"read": 4.0, "per_tag": 1.5, "verify": 4.0}


def seconds_per_count(tags_per_task: int | None, n_tags: int) -> float:
    asked = n_tags if tags_per_task is None else tags_per_task
    per_tag = min(asked, 5)  # all tags: the annotator names the few tags present
    return SECONDS_PER_ANSWER["read"] + SECONDS_PER_ANSWER["per_tag"] * per_tag


@dataclass
class _Campaign:
    sentences: list[list[str]]
    gold: list[list[int]]
    tagset: list[str]
    offsets: np.ndarray
    crowd: SimulatedCrowd
    observations: Observations
    explored: np.ndarray  # per observation: drawn as S(o | y)
    verifications: VerificationAnswers | None = None


def campaign_rounds(
    train: Sequence[ConlluSentence],
    test: Sequence[ConlluSentence],
    *,
    policy: str,
    tag_column: str = "upos",
    window: int = 5,
    tags_per_task: int | None = 2,
    start: float = 1.0,
    budget: float = 3.0,
    rounds: int = 4,
    n_annotators: int = 20,
    spam_fraction: float = 0.0,
    verification: bool = False,
    exploration: float = EXPLORATION,
    given_answers: bool = True,
    repeat_discount: float = 1.0,
    seed: int = 0,
):
    """Run the campaign; yields one JSON-ready dict per round (module docstring)."""
    from learning.core.forecast import LearningCurve

    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {POLICIES}, not {policy!r}")
    if not 0 < start <= budget:
        raise ValueError("start must be positive and at most the budget")
    if rounds < 1:
        raise ValueError("rounds must be at least 1")
    tagset, gold = gold_indices(train, tag_column)
    sentences = [s.tokens for s in train]
    test_sentences = [s.tokens for s in test]
    test_tags = [s.tags(tag_column) for s in test]
    n_tags = len(tagset)
    lengths = np.array([len(s) for s in sentences], dtype=np.int64)
    rng = np.random.default_rng(seed + 1)
    crowd = simulate_crowd(
        gold,
        n_tags,
        window=window,
        obs_per_sentence=start,
        tags_per_task=tags_per_task,
        n_annotators=n_annotators,
        spam_fraction=spam_fraction,
        random_state=seed,
    )
    state = _Campaign(
        sentences=sentences,
        gold=gold,
        tagset=tagset,
        offsets=np.concatenate([[0], np.cumsum(lengths)]),
        crowd=crowd,
        observations=crowd.observations,
        explored=np.ones(len(crowd.observations), dtype=bool),
    )
    count_seconds = seconds_per_count(tags_per_task, n_tags)
    seconds = {"count": count_seconds * len(crowd.observations), "verify": 0.0}
    n_sentences = int((lengths > 0).sum())
    round_seconds = (budget - start) * n_sentences * count_seconds / max(1, rounds - 1)
    round_settings = RoundSettings(
        window=window,
        tags_per_task=tags_per_task,
        verification_share=None if verification and policy == "adaptive" else 0.0,
        n_tasks=int(round_seconds / count_seconds),  # as many as the round could buy
        exploration=exploration,
        given_answers=given_answers,
        repeat_discount=repeat_discount,
    )
    plan = None
    history: list[tuple[float, float]] = []
    budget_answers = None
    for number in range(rounds):
        planning = time.perf_counter()
        if number > 0:
            spent = _round(state, plan, policy, round_seconds, count_seconds, round_settings,
                           rng)  # fmt: skip
            for kind, value in spent.items():
                seconds[kind] += value
        fitting = time.perf_counter()
        # As a retrain: the platform's policy, on every answer so far; the next round is
        # planned with the version unless it is the last or another policy chooses it.
        plans_round = policy == "adaptive" and number < rounds - 1
        settings = PolicySettings(seed=seed, rounds=round_settings if plans_round else None)
        facts = _facts(state, number + 1, count_seconds)
        plan = plan_version(facts, _previous(plan, number, facts.text_tokens), settings)
        model = plan.estimator
        fitted = time.perf_counter()
        answers = plan.estimator.n_observations_ + (
            len(state.verifications) if state.verifications is not None else 0
        )
        if budget_answers is None:  # the answers the budget buys, at round 0's rate per task
            budget_answers = answers * budget / start
        score = accuracy(test_tags, model.predict(test_sentences))
        history.append((answers, score))
        spammers = crowd.annotators_of_kind("spammer")
        planned = sum(plan.timings.get(k, 0.0) for k in ("verification_round", "count_round"))
        row = {
            "policy": policy,
            "round": number,
            "answers": answers,
            "count_answers": len(state.observations),
            "verification_answers": 0 if state.verifications is None else len(state.verifications),
            "accuracy": score,
            "annotator_seconds": {kind: round(value, 1) for kind, value in seconds.items()},
            "flagged_annotators": [int(a) for a in plan.flagged],
            "simulated_spammers": [int(a) for a in spammers],
            "exact_annotators_flagged": [
                int(a) for a in np.intersect1d(crowd.annotators_of_kind("exact"), plan.flagged)
            ],
            "schedule": model.schedule_.name,
            "warm_started": plan.warm_started,
            "verification_share": (
                None if plan.counts is None else round(plan.counts.verification_share, 4)
            ),
            # The next round's plan (made with the version) and the simulated answers to it.
            "seconds_choosing_tasks": round(fitting - planning + planned, 2),
            "seconds_retrain": round(fitted - fitting - planned, 2),
        }
        if number > 0:
            n_eval = sum(len(tags) for tags in test_tags)
            curve = LearningCurve(random_state=seed).fit(*zip(*history, strict=True), n_eval=n_eval)
            forecast = curve.predict(budget_answers)
            row.update(
                forecast_final=forecast.value,
                forecast_low=forecast.low,
                forecast_high=forecast.high,
            )
        yield row


def campaign_facts(
    sentences: Sequence[Sequence[str]],
    tagset: Sequence[str],
    observations: Observations,
    verifications: VerificationAnswers | None,
    explored: np.ndarray,
    *,
    number: int,
    seconds: dict[str, tuple[float | None, int]] | None,
) -> RetrainFacts:
    """The retrain's facts of a campaign: every answer so far (``explored``: per count answer,
    drawn as ``S(o | y)``), the regions answered already, the ``seconds`` of each kind as
    measured (median, answers)."""
    data = TrainingSet(
        sentences, observations, tuple(tagset), verifications=verifications, uniform=explored
    )
    return RetrainFacts.of_answers(data, number=number, asked=_asked(observations), seconds=seconds)


def _facts(state: _Campaign, number: int, count_seconds: float) -> RetrainFacts:
    n_verify = 0 if state.verifications is None else len(state.verifications)
    measured = {  # every simulated answer of a kind takes the same seconds
        "count": (count_seconds, len(state.observations)),
        "verify": (SECONDS_PER_ANSWER["verify"], n_verify),
    }
    return campaign_facts(
        state.sentences, state.tagset, state.observations, state.verifications, state.explored,
        number=number, seconds=measured,
    )  # fmt: skip


def _previous(plan: VersionPlan | None, number: int, text_tokens: int) -> PreviousVersion | None:
    """The campaign's current version (``number``, learned on the same text) as the policy
    reads it."""
    if plan is None:
        return None
    model = plan.estimator
    return PreviousVersion(
        number=number,
        full_fit_answers=plan.full_fit_answers,
        full_fit_chosen=plan.full_fit_chosen,
        text_tokens=text_tokens,
        flagged=plan.flagged,
        load=lambda: model.tagger_,
    )


def _round(state, plan, policy, round_seconds, count_seconds, settings, rng):
    """Ask the round's tasks and add their answers to ``state``; returns seconds spent by kind.
    ``adaptive``: the version's plan, served as leasing serves it (its share of verification
    leases, each kind in its order); ``uniform`` and ``oracle``: drawn here."""
    n_tags, window = len(state.tagset), settings.window
    model = plan.estimator
    # As the platform: an annotator the version flagged is served gold checks only, so the
    # round's tasks go to the others.
    crowd_size = state.crowd.annotator_kind.shape[0]
    serving = np.setdiff1d(np.arange(crowd_size), plan.flagged)
    share = 0.0 if plan.counts is None or not plan.windows else plan.counts.verification_share
    verify_seconds = SECONDS_PER_ANSWER["verify"]
    # Seconds split by the share of tasks: n_count · c + n_verify · v = round_seconds.
    per_task = (1 - share) * count_seconds + share * verify_seconds
    n_tasks = int(round_seconds / per_task)
    n_verify = min(int(round(share * n_tasks)), len(plan.windows or []))
    n_count = n_tasks - n_verify
    if policy == "adaptive":
        chosen = plan.counts.plan
        keys = np.array([key for key, _, gold in _served(state) if not gold], dtype=np.int64)
        sentence, start, length = keys[chosen.sentence], chosen.start, chosen.length
        tag_mask, explore = chosen.tag_mask, chosen.explore
        sentence, start, length, tag_mask, explore = (
            a[:n_count] for a in (sentence, start, length, tag_mask, explore)
        )
    else:
        uniform = policy == "uniform"
        if uniform:
            probs = np.zeros((state.offsets[-1], n_tags))
        else:
            probs = error_oracle(model.token_proba(state.sentences), np.concatenate(state.gold))
        word_ids = np.unique([w.lower() for s in state.sentences for w in s],
                             return_inverse=True)[1].ravel()  # fmt: skip
        drawn = round_plan(probs, state.offsets, window=window,
                           tags_per_task=settings.tags_per_task, n_tasks=n_count,
                           exploration=1.0 if uniform else settings.exploration,
                           asked=None if uniform else _asked(state.observations),
                           token_keys=None if uniform else word_ids,
                           repeat_discount=1.0 if uniform else settings.repeat_discount,
                           random_state=rng)  # fmt: skip
        sentence, start, length = drawn.sentence, drawn.start, drawn.length
        tag_mask, explore = drawn.tag_mask, drawn.explore
    new = answer_counts(state.crowd, state.gold, sentence, start, length, tag_mask, rng,
                        serving=serving)  # fmt: skip
    state.observations = state.observations.joined(new)
    state.explored = np.concatenate([state.explored, explore])
    spent = {"count": n_count * count_seconds, "verify": 0.0}
    if n_verify:
        windows = plan.windows[:n_verify]  # the most informative first, as leasing serves them
        best = np.array([w.sentence_id for w in windows], dtype=np.int64)
        starts = np.array([w.start for w in windows], dtype=np.int64)
        answers = answer_verifications(state.crowd, state.gold, plan.probabilities.probs, best,
                                       starts, window, rng, serving=serving)  # fmt: skip
        state.verifications = (
            answers
            if state.verifications is None
            else _concat_verifications(state.verifications, answers, state.offsets, n_tags)
        )
        spent["verify"] = n_verify * verify_seconds
    return spent


def _served(state: _Campaign):
    """The sentences a round is made on, as :meth:`.policy.RetrainFacts.of_answers` serves
    them."""
    return [(i, s, False) for i, s in enumerate(state.sentences) if len(s)]


def error_oracle(token_probs: np.ndarray, gold: np.ndarray) -> np.ndarray:
    """Probabilities that know the truth: one-hot on the gold tag where the model's most likely
    tag is right, half on each of the two where it is wrong."""
    n = gold.shape[0]
    decided = token_probs.argmax(axis=1)
    known = np.zeros_like(token_probs)
    known[np.arange(n), gold] = 1.0
    wrong = np.flatnonzero(decided != gold)
    known[wrong] = 0.0
    known[wrong, gold[wrong]] = 0.5
    known[wrong, decided[wrong]] = 0.5
    return known


def _asked(observations: Observations) -> np.ndarray:
    return np.concatenate(
        [
            observations.sentence[:, None],
            observations.start[:, None],
            observations.length[:, None],
            observations.tag_mask,
        ],
        axis=1,
    )


def _concat_verifications(old: VerificationAnswers, new: VerificationAnswers, offsets, n_tags):
    width = max(old.shown.shape[1], new.shown.shape[1])

    def padded(shown):
        return np.pad(shown, ((0, 0), (0, width - shown.shape[1])), constant_values=-1)

    return VerificationAnswers.create(
        sentence=np.concatenate([old.sentence, new.sentence]),
        start=np.concatenate([old.start, new.start]),
        shown=np.concatenate([padded(old.shown), padded(new.shown)]),
        answer=np.concatenate([old.answer, new.answer]),
        wrong=np.concatenate([old.wrong, new.wrong]),
        annotator=np.concatenate([old.annotator, new.annotator]),
        sentence_lengths=np.diff(offsets),
        n_tags=n_tags,
    )
