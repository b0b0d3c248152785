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
    MIN_GOLD_TOKENS,
    expected_calibration_error,
    gold_calibrates,
    gold_calibration,
)
from .cost import bayes_decision, cost_report
from .counts import expected_counts
from .crowd import Reliability
from .evaluate import accuracy, confusion_matrix, count_consistency, per_tag_scores
from .observations import Observations
from .settings import CrowdSettings

__all__ = [
    "MIN_GOLD_TOKENS",
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


def held_out_consistency(probs: TokenProbabilities, held_out: Observations) -> float | None:
    """Count consistency (:func:`.evaluate.count_consistency`) of held-out answers, or None."""
    if len(held_out) == 0:
        return None
    mean, _ = probs.window_expectations(held_out)
    return count_consistency(mean, held_out.counts, held_out.tag_mask)


def annotator_table(
    reliability: Reliability | None,
    verification: dict[int, dict],
    *,
    annotators: np.ndarray,
    answers: np.ndarray,
    median_seconds: np.ndarray,
    crowd: CrowdSettings,
    min_observations: int,
) -> list[dict]:
    """One row per annotator (``annotators``, with their number of ``answers`` and median
    seconds per answer) from the fit's one estimate of the crowd: the count answerers'
    ``reliability`` (:class:`.crowd.Reliability`) and the verification answerers' table
    (``CountTagger.verification_reliability_``), over every answer not held out, the excluded
    annotators' included (so a flag is lifted once their answers agree with the model): the
    skill, the weight their answers get, and whether and why they are flagged. An annotator is
    judged after ``min_observations`` answers of a kind (``CountTagger.min_flag_observations_``).
    """
    estimates = {} if reliability is None else reliability.as_dict()
    threshold = crowd.flag_threshold
    table = []
    for annotator, count, median in zip(annotators, answers, median_seconds, strict=True):
        estimate = estimates.get(int(annotator))
        judged_enough = estimate is not None and estimate["n_observations"] >= min_observations
        flagged = bool(judged_enough and estimate["flagged"])
        follows = bool(estimate is not None and estimate.get("follows_model"))
        reasons = []
        if follows:
            flagged = True
            agreement = estimate["model_agreement"]
            reasons.append(
                f"Counts follow the model rather than the words (they match its expected count "
                f"on {agreement['agreed']:.0%} of {agreement['entries']} words it was unsure of, "
                f"where true counts match it on about {agreement['expected']:.0%}); their answers "
                "no longer count."
            )
        if flagged and estimate["skill"] < threshold:
            reasons.append(
                f"Counts no better than chance (skill {estimate['skill']:.2f} < "
                f"{threshold:.2f} over {estimate['n_observations']} answers); "
                "their answers no longer count."
            )
        checks = verification.get(int(annotator))
        if checks is not None and checks["flagged"]:
            flagged = True
            reasons.append(
                f"Yes / No answers no better than chance (skill {checks['skill']:.2f} < "
                f"{threshold:.2f} over {checks['n_observations']} answers, "
                f"{checks['yes_rate']:.0%} Yes); their answers no longer count."
            )
        skill = None if checks is None else checks["skill"]
        table.append(
            {
                "annotator": int(annotator),
                "answers": int(count),
                "median_seconds": None if np.isnan(median) else round(float(median), 2),
                "reliability": round(float(estimate["skill"]), 4) if judged_enough else None,
                "noise_variance": float(estimate["noise_variance"]) if estimate else None,
                "weight": float(estimate["weight"]) if estimate else None,
                "flagged": flagged,
                # Both reasons when counts and Yes / No both fail; the quality table holds 300.
                "flag_reason": " ".join(reasons)[:300],
                "verification_answers": 0 if checks is None else int(checks["n_observations"]),
                "verification_skill": None if skill is None else round(float(skill), 4),
                "verification_yes_rate": (
                    None if checks is None else round(float(checks["yes_rate"]), 4)
                ),
            }
        )
    return table
