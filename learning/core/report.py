"""What a retrain reports about its model: accuracy on gold sentences, count consistency on
held-out answers, and every annotator's reliability with the reason for a flag.

Plain functions over a fitted tagger of either kind and arrays; the retrain service stores what
they return. Every number is computed from the served model, each token read in its sentence.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .counts import expected_counts
from .crowd import estimate_reliability
from .design import encode_corpus
from .em import window_token_index
from .evaluate import accuracy, confusion_matrix, count_consistency, per_tag_scores
from .observations import Observations

__all__ = ["annotator_table", "evaluation_report", "held_out_consistency", "window_expectations"]


def window_expectations(
    tagger, sentences: Sequence[Sequence[str]], observations: Observations
) -> tuple[np.ndarray, np.ndarray]:
    """Model mean and variance of every observation's counts, (n, K) each (the sentences that
    hold a window are tagged whole)."""
    n, k = len(observations), len(tagger.tagset_)
    if n == 0:
        return np.zeros((0, k)), np.zeros((0, k))
    used, local = np.unique(observations.sentence, return_inverse=True)
    chosen = [sentences[s] for s in used]
    corpus = encode_corpus(chosen)
    placed = Observations.create(
        sentence=local.ravel(),
        start=observations.start,
        length=observations.length,
        tag_mask=observations.tag_mask,
        counts=observations.counts,
        annotator=observations.annotator,
        sentence_lengths=corpus.lengths,
    )
    return expected_counts(tagger.token_proba(chosen), window_token_index(corpus, placed))


def evaluation_report(
    tagger, sentences: Sequence[Sequence[str]], tags: Sequence[Sequence[str]]
) -> dict:
    """Accuracy, per-tag precision/recall/F1 and the confusion matrix on gold ``sentences``."""
    tagset = tagger.tagset_
    if not sentences:
        return {"accuracy": None, "evaluation": None, "per_tag": [], "confusion": None}
    predicted = tagger.predict(sentences)
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


def held_out_consistency(
    tagger, sentences: Sequence[Sequence[str]], held_out: Observations
) -> float | None:
    """Count consistency (:func:`.evaluate.count_consistency`) of held-out answers, or None."""
    if len(held_out) == 0:
        return None
    mean, _ = window_expectations(tagger, sentences, held_out)
    return count_consistency(mean, held_out.counts, held_out.tag_mask)


def annotator_table(
    tagger,
    sentences: Sequence[Sequence[str]],
    judged: Observations,
    *,
    annotators: np.ndarray,
    answers: np.ndarray,
    median_seconds: np.ndarray,
    flag_threshold: float,
    min_observations: int,
) -> list[dict]:
    """One row per annotator (``annotators``, with their number of ``answers`` and median
    seconds per answer): reliability against the model over their ``judged`` answers (those not
    held out, flagged annotators' included, so a flag is lifted once their answers agree with the
    model), the weight their answers get, and whether and why they are flagged."""
    estimates = {}
    if len(judged):
        mean, var = window_expectations(tagger, sentences, judged)
        estimates = estimate_reliability(
            judged.annotator,
            judged.tag_mask,
            judged.counts,
            judged.length,
            mean,
            var,
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
