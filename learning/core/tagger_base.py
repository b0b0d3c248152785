"""What both taggers share: fitting feature rows to soft labels with a warm start, the linear
scores, and the most probable tags.

A tagger subclasses :class:`LinearTagger` and says how it featurizes (``featurize``) and which
rows it fits (word types for the node-only tagger, tokens for the contextual one).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

from .features import FeatureConfig
from .softmax import compact_columns, fit_soft_labels, safe_log, softmax_rows

__all__ = ["LinearTagger", "check_soft_labels", "prior_intercept", "warm_start_params"]


class LinearTagger:
    """Base of the taggers: ``coef_`` (n_features, K), ``intercept_`` (K,), ``tagset_``, and
    ``temperature_``, which divides the scores of the probabilities a fitted model serves
    (:mod:`.calibration`; 1.0 until calibrated, the fits themselves never use it), or
    ``unseen_temperature_`` for words outside ``seen_forms_``."""

    temperature_: float = 1.0
    unseen_temperature_: float | None = None  # of words no answer covered (None: temperature_)
    seen_forms_: frozenset[str] | None = None  # lower-case forms inside answered windows

    def served_proba(
        self, scores: np.ndarray, calibrated: bool = True, forms: Sequence[str] | None = None
    ) -> np.ndarray:
        """Probabilities of the final stage's ``scores``, at the model's temperature (or at 1:
        ``calibrated=False``); rows of ``forms`` the fit never saw labelled (:meth:`seen`) at
        ``unseen_temperature_``."""
        if not calibrated:
            return softmax_rows(scores)
        temperature = np.full((scores.shape[0], 1), self.temperature_)
        if self.unseen_temperature_ is not None and forms is not None:
            temperature[~self.seen(forms)] = self.unseen_temperature_
        return softmax_rows(scores / temperature)

    def calibrated(self, raw: np.ndarray, forms: Sequence[str]) -> np.ndarray:
        """The served probabilities of the tokens ``forms`` from their uncalibrated ones
        (``token_proba(..., calibrated=False)``), without reading the sentences again: a log
        probability differs from its score by a constant per row, which the softmax drops."""
        return self.served_proba(safe_log(raw), True, forms)

    def seen(self, forms: Sequence[str]) -> np.ndarray:
        """Whether each word form (in lower case) was inside an answered window of the fit
        (``seen_forms_``; all of them when the model does not know)."""
        known = getattr(self, "seen_forms_", None)
        if known is None:
            return np.ones(len(forms), dtype=bool)
        return np.fromiter((f.lower() in known for f in forms), dtype=bool, count=len(forms))

    def decision_function(self, x: sp.csr_matrix) -> np.ndarray:
        return np.asarray(x @ self.coef_) + self.intercept_

    def predict(self, sentences: Sequence[Sequence[str]]) -> list[list[str]]:
        """The most probable tag of every token of every sentence."""
        n_tokens = sum(len(s) for s in sentences)
        best = self.token_proba(sentences).argmax(axis=1) if n_tokens else np.zeros(0, int)
        out, position = [], 0
        for sentence in sentences:
            out.append([self.tagset_[k] for k in best[position : position + len(sentence)]])
            position += len(sentence)
        return out

    def _fit_rows(
        self,
        x: sp.csr_matrix,
        q: np.ndarray,
        tagset: tuple[str, ...],
        warm_start,
        *,
        stop_below: float | None = None,
        dtype=np.float64,
    ) -> None:
        """Fit the rows ``x`` (labelled ones only) to soft labels ``q``; set the attributes."""
        coef, intercept, value, n_iter = self._fit_linear(
            x, q, tagset, warm_start, max_iter=self.max_iter, stop_below=stop_below, dtype=dtype
        )
        self.tagset_ = tagset
        self.temperature_, self.unseen_temperature_, self.seen_forms_ = 1.0, None, None
        self.coef_ = coef
        self.intercept_ = intercept
        self.n_iter_ = int(n_iter)
        self.objective_ = value

    def _fit_linear(
        self,
        x: sp.csr_matrix,
        q: np.ndarray,
        tagset: tuple[str, ...],
        warm_start,
        *,
        max_iter: int,
        stop_below: float | None = None,
        dtype=np.float64,
    ) -> tuple[np.ndarray, np.ndarray, float, int]:
        """``(coef, intercept, objective, iterations)`` of the rows ``x`` fitted to soft labels
        ``q``, started from ``warm_start`` (a fitted tagger, or None: zero weights and the tag
        frequencies as intercept)."""
        x, active = compact_columns(x, by_frequency=True)
        n_features = self.word_features_.n_features
        if warm_start is not None:
            w0, c0 = warm_start_params(warm_start, self.word_features_, n_features, tagset, active)
        else:
            w0, c0 = np.zeros((active.shape[0], len(tagset))), prior_intercept(q)
        coef_active, intercept, value, n_iter = fit_soft_labels(
            x, q, self.alpha, w0, c0, max_iter=max_iter, tol=self.tol, ftol=self.ftol,
            memory=self.memory, stop_below=stop_below, dtype=dtype,
        )  # fmt: skip
        coef = np.zeros((n_features, len(tagset)))
        coef[active] = coef_active
        return coef, intercept, value, n_iter


def check_soft_labels(soft_counts: np.ndarray, alpha: float) -> None:
    if not np.all(np.isfinite(soft_counts)) or (soft_counts < 0).any():
        raise ValueError("soft labels must be finite and non-negative")
    if alpha <= 0:
        raise ValueError("alpha must be positive")
    if not (soft_counts.sum(axis=1) > 0).any():
        raise ValueError("no labelled tokens: all soft labels are zero")


def prior_intercept(q: np.ndarray) -> np.ndarray:
    """Start from the smoothed tag frequencies: a good intercept saves many iterations."""
    totals = q.sum(axis=0) + 1.0
    return np.log(totals / totals.sum())


def warm_start_params(previous, word_features: FeatureConfig, n_features: int, tagset, active):
    """Initial ``(W, c)`` on columns ``active`` from a fitted tagger of either kind: the weights
    of the columns both share (a node-only model's columns are the word-form features of a
    contextual one, hashed alike). Tags are matched by name; new tags start at zero."""
    if previous.word_features_ != word_features or previous.coef_.shape[0] != n_features:
        raise ValueError("warm_start model has different word features")
    n_tags = len(tagset)
    w0 = np.zeros((active.shape[0], n_tags))
    c0 = np.zeros(n_tags)
    index = {tag: k for k, tag in enumerate(previous.tagset_)}
    mine = np.array([k for k, tag in enumerate(tagset) if tag in index], dtype=np.int64)
    theirs = np.array([index[tag] for tag in tagset if tag in index], dtype=np.int64)
    # One gather of the active rows, then the columns (not a strided gather per tag).
    w0[:, mine] = previous.coef_[active][:, theirs]
    c0[mine] = previous.intercept_[theirs]
    return w0, c0
