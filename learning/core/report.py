"""What a retrain reports about its model: accuracy on gold sentences, count consistency on
held-out answers, and every annotator's reliability with the reason for a flag.

Plain functions over a fitted tagger of either kind and arrays; the retrain service stores what
they return. Every number is computed from the served model, each token read in its sentence.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .calibration import (
    expected_calibration_error,
    fit_temperature_gold,
    tempered_groups,
)
from .cost import bayes_decision, cost_report
from .counts import expected_counts
from .crowd import estimate_reliability
from .evaluate import accuracy, confusion_matrix, count_consistency, per_tag_scores
from .observations import Observations
from .privacy import Mechanism

__all__ = [
    "TokenProbabilities",
    "annotator_table",
    "cost_evaluation",
    "gold_calibrates",
    "gold_calibration",
    "evaluation_report",
    "held_out_consistency",
]


@dataclass(frozen=True)
class TokenProbabilities:
    """The model's tag probabilities of every token of a list of sentences (each read whole),
    computed once for every report that needs them."""

    probs: np.ndarray  # (n_tokens, K)
    offsets: np.ndarray  # flat index of each sentence's first token

    @classmethod
    def of(cls, tagger, sentences: Sequence[Sequence[str]]) -> TokenProbabilities:
        lengths = np.fromiter((len(s) for s in sentences), dtype=np.int64, count=len(sentences))
        offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
        return cls(probs=tagger.token_proba(sentences), offsets=offsets)

    def take(self, indices: Sequence[int]) -> TokenProbabilities:
        """The probabilities of the sentences at ``indices`` of this list, in that order: the
        retrain reads the served model once and each report and round takes its sentences."""
        indices = np.asarray(indices, dtype=np.int64)
        ends = np.append(self.offsets[1:], self.probs.shape[0])
        lengths = ends[indices] - self.offsets[indices]
        offsets = np.cumsum(lengths) - lengths
        rows = np.repeat(self.offsets[indices] - offsets, lengths) + np.arange(lengths.sum())
        return TokenProbabilities(probs=self.probs[rows], offsets=offsets)

    def window_expectations(self, observations: Observations) -> tuple[np.ndarray, np.ndarray]:
        """Model mean and variance of every observation's counts, (n, K) each."""
        first = self.offsets[observations.sentence] + observations.start
        positions = np.arange(int(observations.length.max()) if len(observations) else 0)
        windows = np.where(
            positions[None, :] < observations.length[:, None], first[:, None] + positions, -1
        )
        return expected_counts(self.probs, windows)


def evaluation_report(
    tagger,
    sentences: Sequence[Sequence[str]],
    tags: Sequence[Sequence[str]],
    probs: np.ndarray | None = None,
) -> dict:
    """Accuracy, per-tag precision/recall/F1 and the confusion matrix on gold ``sentences``
    (``probs``: their tokens' served probabilities, when already computed)."""
    tagset = tagger.tagset_
    if not sentences:
        return {"accuracy": None, "evaluation": None, "per_tag": [], "confusion": None}
    best = (tagger.token_proba(sentences) if probs is None else probs).argmax(axis=1)
    ends = np.cumsum([len(sentence) for sentence in sentences])
    predicted = [[tagset[k] for k in row] for row in np.split(best, ends[:-1])]
    scores = per_tag_scores(tags, predicted, tagset)
    return {
        "accuracy": accuracy(tags, predicted),
        "evaluation": {"sentences": len(sentences), "tokens": sum(len(s) for s in sentences)},
        "per_tag": [{"tag": tag, **scores[tag]} for tag in tagset],
        "confusion": {
            "tags": list(tagset),
            "matrix": confusion_matrix(tags, predicted, tagset).tolist(),
        },
    }


def cost_evaluation(
    tagger,
    sentences: Sequence[Sequence[str]],
    tags: Sequence[Sequence[str]],
    cost: np.ndarray,
    probs: np.ndarray | None = None,
) -> dict:
    """The loss-aware decisions of ``tagger`` on gold ``sentences`` in the currency of ``cost``
    (K × K over ``tagger.tagset_``): cost and expected cost per token, accuracy, expected
    calibration error of its probabilities, the cost-weighted confusion and each gold tag's
    share of the cost (:func:`.cost.cost_report`); every figure None without gold. ``probs``:
    the tokens' served probabilities, when already computed."""
    keys = ("cost_per_token", "expected_cost_per_token", "accuracy", "calibration_error")
    if not sentences:
        return {**dict.fromkeys(keys), "cost_confusion": None, "cost_share": None}
    index = {tag: k for k, tag in enumerate(tagger.tagset_)}
    gold = np.array([index[t] for sentence in tags for t in sentence], dtype=np.int64)
    if probs is None:
        probs = tagger.token_proba(sentences)
    decided = bayes_decision(probs, cost)
    report = cost_report(gold, decided, cost, tagger.tagset_, probs)
    report["accuracy"] = float(np.mean(decided == gold))
    report["calibration_error"] = expected_calibration_error(probs, gold)
    return report


MIN_GOLD_TOKENS = 200


def gold_calibrates(sentences: Sequence[Sequence[str]]) -> bool:
    """Whether ``sentences`` hold enough gold tokens for :func:`gold_calibration`."""
    return sum(len(sentence) for sentence in sentences) >= MIN_GOLD_TOKENS


def gold_calibration(
    tagger,
    sentences: Sequence[Sequence[str]],
    tags: Sequence[Sequence[str]],
    raw: np.ndarray | None = None,
):
    """Temperatures of ``tagger`` fitted to gold ``sentences`` (one for the words its answers
    covered, one for the others: the gold log-likelihood separates by token, so each is its own
    one-dimensional fit), or None with fewer than ``MIN_GOLD_TOKENS`` tokens. Also the expected
    calibration error on those sentences at the tagger's own temperatures (``ece_before``) and
    at gold temperatures fitted on the other half of the sentences (``ece_after``: the report
    is then not scored on what was fitted to it). ``raw``: the tokens' uncalibrated
    probabilities, when already computed."""
    if not gold_calibrates(sentences):
        return None
    flat = [form for sentence in sentences for form in sentence]
    index = {tag: k for k, tag in enumerate(tagger.tagset_)}
    gold = np.array([index[t] for sentence in tags for t in sentence], dtype=np.int64)
    if raw is None:
        raw = tagger.token_proba(sentences, calibrated=False)
    groups = (~tagger.seen(flat)).astype(np.int64)
    half = np.repeat(np.arange(len(sentences)) % 2, [len(s) for s in sentences])

    def fit(mask):
        temperatures = []
        for g in (0, 1):
            mine = mask & (groups == g)
            both = mask if mine.sum() < MIN_GOLD_TOKENS // 4 else mine
            temperatures.append(fit_temperature_gold(raw[both], gold[both]))
        return temperatures

    crossed = np.empty_like(raw)
    for h in (0, 1):
        other = fit(half != h)
        mine = half == h
        crossed[mine] = tempered_groups(raw[mine], groups[mine], other)
    temperature, unseen = fit(np.ones(gold.size, dtype=bool))
    return {
        "source": "gold",
        "temperature": temperature,
        "unseen_temperature": unseen,
        "ece_before": expected_calibration_error(tagger.calibrated(raw, flat), gold),
        "ece_after": expected_calibration_error(crossed, gold),
        "tokens": int(gold.size),
    }


def held_out_consistency(probs: TokenProbabilities, held_out: Observations) -> float | None:
    """Count consistency (:func:`.evaluate.count_consistency`) of held-out answers, or None."""
    if len(held_out) == 0:
        return None
    mean, _ = probs.window_expectations(held_out)
    return count_consistency(mean, held_out.counts, held_out.tag_mask)


def annotator_table(
    probs: TokenProbabilities,
    judged: Observations,
    *,
    annotators: np.ndarray,
    answers: np.ndarray,
    median_seconds: np.ndarray,
    flag_threshold: float,
    min_observations: int,
    mechanism: Mechanism | None = None,
) -> list[dict]:
    """One row per annotator (``annotators``, with their number of ``answers`` and median
    seconds per answer): reliability against the model over their ``judged`` answers (those not
    held out, flagged annotators' included, so a flag is lifted once their answers agree with the
    model), the weight their answers get, and whether and why they are flagged.

    ``mechanism``: the answers are releases of this privacy mechanism; as in the fit's own
    reliability step, they are debiased and the mechanism's known noise is taken out of the
    residuals, so that its noise alone flags nobody."""
    estimates = {}
    if len(judged):
        mean, var = probs.window_expectations(judged)
        counts, noise = judged.counts, None
        if mechanism is not None:
            counts = mechanism.debiased_counts(judged)
            noise = mechanism.expected_noise(judged, mean)
        estimates = estimate_reliability(
            judged.annotator,
            judged.tag_mask,
            counts,
            judged.length,
            mean,
            var,
            known_noise=noise,
            flag_threshold=flag_threshold,
            min_observations=min_observations,
        ).as_dict()
    table = []
    for annotator, count, median in zip(annotators, answers, median_seconds, strict=True):
        estimate = estimates.get(int(annotator))
        judged_enough = estimate is not None and estimate["n_observations"] >= min_observations
        flagged = bool(judged_enough and estimate["flagged"])
        reason = ""
        if flagged:
            reason = (
                f"Counts no better than chance (skill {estimate['skill']:.2f} < "
                f"{flag_threshold:.2f} over {estimate['n_observations']} answers); "
                "their answers no longer count."
            )
        table.append(
            {
                "annotator": int(annotator),
                "answers": int(count),
                "median_seconds": None if np.isnan(median) else round(float(median), 2),
                "reliability": round(float(estimate["skill"]), 4) if judged_enough else None,
                "noise_variance": float(estimate["noise_variance"]) if estimate else None,
                "weight": float(estimate["weight"]) if estimate else None,
                "flagged": flagged,
                "flag_reason": reason,
            }
        )
    return table
