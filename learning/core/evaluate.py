"""Evaluation: accuracy, per-tag precision/recall/F1, confusion matrix, count consistency, and
the two reference taggers of the reports (most frequent tag; supervised on given tokens)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = [
    "accuracy",
    "confusion_matrix",
    "per_tag_scores",
    "count_consistency",
    "MostFrequentTagger",
]


def _flat_indices(tags: Sequence[Sequence[str]], tagset: Sequence[str]) -> np.ndarray:
    index = {tag: k for k, tag in enumerate(tagset)}
    try:
        return np.array([index[t] for sentence in tags for t in sentence], dtype=np.int64)
    except KeyError as exc:
        raise ValueError(f"unknown tag {exc.args[0]!r}") from None


def accuracy(gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]]) -> float:
    """Fraction of tokens whose predicted tag equals the gold tag."""
    if len(gold) != len(predicted):
        raise ValueError("gold and predicted have different numbers of sentences")
    correct = total = 0
    for g, p in zip(gold, predicted, strict=True):
        if len(g) != len(p):
            raise ValueError("a gold and a predicted sentence differ in length")
        correct += sum(a == b for a, b in zip(g, p, strict=True))
        total += len(g)
    if total == 0:
        raise ValueError("no tokens to evaluate")
    return correct / total


def confusion_matrix(
    gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]], tagset: Sequence[str]
) -> np.ndarray:
    """``C[i, j]`` = tokens with gold tag ``tagset[i]`` predicted as ``tagset[j]``."""
    g = _flat_indices(gold, tagset)
    p = _flat_indices(predicted, tagset)
    if g.shape != p.shape:
        raise ValueError("gold and predicted differ in length")
    k = len(tagset)
    return np.bincount(g * k + p, minlength=k * k).reshape(k, k)


def per_tag_scores(
    gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]], tagset: Sequence[str]
) -> dict[str, dict[str, float]]:
    """``{tag: {precision, recall, f1, support}}`` (0 where undefined)."""
    c = confusion_matrix(gold, predicted, tagset).astype(np.float64)
    tp = np.diag(c)
    predicted_total = c.sum(axis=0)
    gold_total = c.sum(axis=1)
    precision = np.divide(tp, predicted_total, out=np.zeros_like(tp), where=predicted_total > 0)
    recall = np.divide(tp, gold_total, out=np.zeros_like(tp), where=gold_total > 0)
    denominator = precision + recall
    f1 = np.divide(
        2 * precision * recall, denominator, out=np.zeros_like(tp), where=denominator > 0
    )
    return {
        tag: {
            "precision": float(precision[k]),
            "recall": float(recall[k]),
            "f1": float(f1[k]),
            "support": int(gold_total[k]),
        }
        for k, tag in enumerate(tagset)
    }


def count_consistency(expected: np.ndarray, observed: np.ndarray, tag_mask: np.ndarray) -> float:
    """Label-free score: mean ``|E_θ[N_b] − N_b|`` over held-out observations and asked tags.

    ``expected`` from :func:`learning.core.pipeline.expected_counts`; lower is better.
    """
    mask = np.asarray(tag_mask, dtype=bool)
    if not mask.any():
        raise ValueError("no asked tags to score")
    return float(np.abs(expected - observed)[mask].mean())


class MostFrequentTagger:
    """Baseline: each word form gets its most frequent training tag, unseen forms the most
    frequent tag overall. Attributes: ``tagset_``, ``lexicon_`` (form → tag), ``default_``."""

    def fit(self, sentences: Sequence[Sequence[str]], tags: Sequence[Sequence[str]]):
        counts: dict[str, dict[str, int]] = {}
        overall: dict[str, int] = {}
        for sentence, sentence_tags in zip(sentences, tags, strict=True):
            for form, tag in zip(sentence, sentence_tags, strict=True):
                per_form = counts.setdefault(form, {})
                per_form[tag] = per_form.get(tag, 0) + 1
                overall[tag] = overall.get(tag, 0) + 1
        if not overall:
            raise ValueError("no tagged tokens")
        self.lexicon_ = {
            form: max(sorted(tally), key=lambda t, tally=tally: tally[t])
            for form, tally in counts.items()
        }
        self.default_ = max(sorted(overall), key=lambda t: overall[t])
        self.tagset_ = tuple(sorted(overall))
        return self

    def predict(self, sentences: Sequence[Sequence[str]]) -> list[list[str]]:
        return [[self.lexicon_.get(form, self.default_) for form in s] for s in sentences]
