"""A simulated annotation campaign: rounds of tasks chosen by a policy, answered by a simulated
crowd, each followed by a retrain, as a project lives on the platform.

Round 0 asks ``start`` uniform count tasks per sentence and fits the first version. Each later
round spends an equal share of the rest of the budget (``budget`` tasks per sentence in all, in
annotator seconds) on tasks chosen by the policy from the current version, then retrains as
the platform's scheduled retrain does (warm from the version only when a few more answers, drawn
uniformly, came since the last full fit):

* ``uniform`` — tasks drawn as the paper's ``S(o | y)``, as before adaptive tasks;
* ``adaptive`` — :func:`.task_value.round_plan` on the version's token probabilities given the
  answers in hand (:func:`.task_value.given_answers`; the code the platform runs after a
  retrain), with its exploration share; with ``verification``, the share of
  verification tasks :func:`.task_value.verification_share` gives by bits per second, on each
  sentence's most informative window;
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
from learning.core.pipeline import CountTagger
from learning.core.schedule import asked_share, warm_start_suits
from learning.core.task_value import (
    EXPLORATION,
    best_verification_windows,
    given_answers,
    given_verifications,
    round_plan,
    verification_share,
)
from learning.core.verification import VerificationAnswers

from .crowd_report import gold_indices
from .simulate import SimulatedCrowd, answer_counts, answer_verifications, simulate_crowd

__all__ = [
    "POLICIES", "SECONDS_PER_ANSWER", "campaign_rounds", "error_oracle", "seconds_per_count",
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
    word_ids: np.ndarray | None = None  # per token: its lowercased form's index


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
        word_ids=np.unique([w.lower() for s in sentences for w in s], return_inverse=True)[1],
    )
    count_seconds = seconds_per_count(tags_per_task, n_tags)
    seconds = {"count": count_seconds * len(crowd.observations), "verify": 0.0}
    n_sentences = int((lengths > 0).sum())
    round_seconds = (budget - start) * n_sentences * count_seconds / max(1, rounds - 1)
    model = None
    history: list[tuple[float, float]] = []
    budget_answers = None
    full_fit_answers = full_fit_chosen = 0  # of the last fit that did not go on warm: the
    # answers, and those chosen by value (count tasks not drawn uniformly, and verifications)
    for number in range(rounds):
        planning = time.perf_counter()
        if number > 0:
            spent = _round(state, model, policy, round_seconds, count_seconds, window,
                           tags_per_task, verification, exploration, given_answers,
                           repeat_discount, rng)  # fmt: skip
            for kind, value in spent.items():
                seconds[kind] += value
        fitting = time.perf_counter()
        answers = len(state.observations) + (
            len(state.verifications) if state.verifications is not None else 0
        )
        # As a retrain: warm from the version when the answers of both kinds grew little since
        # the last full fit, and by uniform draws only.
        chosen = answers - int(state.explored.sum())
        warm = model is not None and warm_start_suits(
            full_fit_answers,
            answers,
            asked=asked_share(state.observations, int(state.offsets[-1])),
            chosen_since=chosen - full_fit_chosen,
        )
        if not warm:
            full_fit_answers, full_fit_chosen = answers, chosen
        model = CountTagger(
            random_state=seed,
            word_classes=model.word_classes_ if model is not None else True,
        ).fit(
            sentences,
            state.observations,
            tagset,
            verifications=state.verifications,
            warm_start=model if warm else None,
            uniform=state.explored,
        )
        fitted = time.perf_counter()
        if budget_answers is None:  # the answers the budget buys, at round 0's rate per task
            budget_answers = answers * budget / start
        score = accuracy(test_tags, model.predict(test_sentences))
        history.append((answers, score))
        spammers = crowd.annotators_of_kind("spammer")
        row = {
            "policy": policy,
            "round": number,
            "answers": answers,
            "count_answers": len(state.observations),
            "verification_answers": 0 if state.verifications is None else len(state.verifications),
            "accuracy": score,
            "annotator_seconds": {kind: round(value, 1) for kind, value in seconds.items()},
            "flagged_annotators": [int(a) for a in model.flagged_annotators_],
            "simulated_spammers": [int(a) for a in spammers],
            "exact_annotators_flagged": [
                int(a)
                for a in np.intersect1d(
                    crowd.annotators_of_kind("exact"), model.flagged_annotators_
                )  # fmt: skip
            ],
            "schedule": model.schedule_.name,
            "seconds_choosing_tasks": round(fitting - planning, 2),  # the model's token
            "seconds_retrain": round(fitted - fitting, 2),  # probabilities and the round's plan
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


def _round(state, model, policy, round_seconds, count_seconds, window, tags_per_task,
           verification, exploration, given, discount, rng) -> dict[str, float]:  # fmt: skip
    """Ask the round's tasks and add their answers to ``state``; returns seconds spent by kind."""
    n_tags = len(state.tagset)
    # As the platform: an annotator the version flagged is served gold checks only, so the
    # round's tasks go to the others.
    crowd_size = state.crowd.annotator_kind.shape[0]
    serving = np.setdiff1d(np.arange(crowd_size), model.flagged_annotators_)
    probs = model.token_proba(state.sentences) if policy != "uniform" else None
    counted = probs
    if policy == "oracle":
        counted = error_oracle(probs, np.concatenate(state.gold))
    elif given and probs is not None:
        o = state.observations  # as the platform: not the flagged annotators' answers
        kept = ~np.isin(o.annotator, model.flagged_annotators_)
        counted = given_answers(probs, state.offsets, o.sentence[kept], o.start[kept],
                                o.length[kept], o.tag_mask[kept], o.counts[kept])  # fmt: skip
        if state.verifications is not None:
            v = state.verifications
            kept = ~np.isin(v.annotator, model.flagged_annotators_)
            counted = given_verifications(counted, state.offsets, v.sentence[kept],
                                          v.start[kept], v.shown[kept], v.answer[kept],
                                          v.wrong[kept])  # fmt: skip
    share = 0.0
    verify_seconds = SECONDS_PER_ANSWER["verify"]
    if verification and policy == "adaptive":
        starts, verify_value = best_verification_windows(counted, state.offsets, window)
        plan = round_plan(counted, state.offsets, window=window, tags_per_task=tags_per_task,
                          n_tasks=int(round_seconds / count_seconds), exploration=0.0,
                          asked=_asked(state.observations), random_state=rng)  # fmt: skip
        share = verification_share(plan.value, count_seconds, verify_value, verify_seconds)
    # Seconds split by the share of tasks: n_count · c + n_verify · v = round_seconds.
    per_task = (1 - share) * count_seconds + share * verify_seconds
    n_tasks = int(round_seconds / per_task)
    n_verify = int(round(share * n_tasks))
    n_count = n_tasks - n_verify
    if policy == "uniform":
        plan = round_plan(np.zeros((state.offsets[-1], n_tags)), state.offsets, window=window,
                          tags_per_task=tags_per_task, n_tasks=n_count, exploration=1.0,
                          random_state=rng)  # fmt: skip
    else:
        plan = round_plan(counted, state.offsets, window=window, tags_per_task=tags_per_task,
                          n_tasks=n_count, exploration=exploration,
                          asked=_asked(state.observations), token_keys=state.word_ids,
                          repeat_discount=discount, random_state=rng)  # fmt: skip
    new = answer_counts(state.crowd, state.gold, plan.sentence, plan.start, plan.length,
                        plan.tag_mask, rng, serving=serving)  # fmt: skip
    state.observations = _concat(state.observations, new, state.offsets)
    state.explored = np.concatenate([state.explored, plan.explore])
    spent = {"count": n_count * count_seconds, "verify": 0.0}
    if n_verify:
        best = np.argsort(-verify_value, kind="stable")[:n_verify]
        answers = answer_verifications(
            state.crowd, state.gold, probs, best, starts[best], window, rng, serving=serving
        )
        state.verifications = (
            answers
            if state.verifications is None
            else _concat_verifications(state.verifications, answers, state.offsets, n_tags)
        )
        spent["verify"] = n_verify * verify_seconds
    return spent


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


def _concat(old: Observations, new: Observations, offsets: np.ndarray) -> Observations:
    return Observations.create(
        sentence=np.concatenate([old.sentence, new.sentence]),
        start=np.concatenate([old.start, new.start]),
        length=np.concatenate([old.length, new.length]),
        tag_mask=np.concatenate([old.tag_mask, new.tag_mask]),
        counts=np.concatenate([old.counts, new.counts]),
        annotator=np.concatenate([old.annotator, new.annotator]),
        sentence_lengths=np.diff(offsets),
        allow_empty=True,
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
