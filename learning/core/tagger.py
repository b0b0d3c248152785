"""Node-factorized log-linear tagger fitted to soft labels aggregated per word type.

The model is ``p_θ(b | a) = softmax_b(f(a)ᵀ W[:, b] + c_b)`` with ``f(a)`` the hashed features of
word form ``a`` (:mod:`.features`). Because features depend on the form alone, the soft-label
log-likelihood of all tokens aggregates over word types: with ``Q[a, b]`` the (soft) number of
tokens of type ``a`` labelled ``b`` and ``n_a = Σ_b Q[a, b]``, the fit minimizes the convex

    F(W, c) = − Σ_a Σ_b Q[a, b] log p_θ(b | a) + α/2 ‖W‖²          (intercept c unpenalized)

with gradient ``∇_W F = Xᵀ (n ∘ P − Q) + α W`` and ``∇_c F = 1ᵀ (n ∘ P − Q)``, where ``X`` stacks
the feature rows and ``P`` the model probabilities. Minimized by L-BFGS with this analytic
gradient (:mod:`.optimize`), over the feature columns that occur (the others are exactly zero at
the optimum).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

from .features import FeatureConfig, featurize
from .optimize import minimize_lbfgs

__all__ = ["LogLinearTagger", "soft_label_objective", "softmax_rows"]


def softmax_rows(scores: np.ndarray) -> np.ndarray:
    """Row-wise softmax with a max shift (no overflow)."""
    shifted = scores - scores.max(axis=1, keepdims=True)
    np.exp(shifted, out=shifted)
    shifted /= shifted.sum(axis=1, keepdims=True)
    return shifted


def soft_label_objective(
    params: np.ndarray,
    x: sp.csr_matrix,
    xt: sp.csr_matrix,
    soft_counts: np.ndarray,
    alpha: float,
) -> tuple[float, np.ndarray]:
    """``F`` and its gradient at ``params = [W.ravel(), c]`` (W is ``x.shape[1] × K``)."""
    n_tags = soft_counts.shape[1]
    w = params[:-n_tags].reshape(x.shape[1], n_tags)
    c = params[-n_tags:]
    scores = x @ w + c
    top = scores.max(axis=1)
    probs = np.exp(scores - top[:, None])
    partition = probs.sum(axis=1)
    probs /= partition[:, None]
    lse = top + np.log(partition)
    totals = soft_counts.sum(axis=1)
    value = float(np.einsum("i,i->", totals, lse) - np.einsum("ij,ij->", soft_counts, scores))
    value += 0.5 * alpha * float(np.einsum("ij,ij->", w, w))
    residual = probs * totals[:, None] - soft_counts
    grad_w = xt @ residual + alpha * w
    grad_c = residual.sum(axis=0)
    return value, np.concatenate([grad_w.ravel(), grad_c])


class LogLinearTagger:
    """Multinomial logistic regression of tag given word form, fitted on per-type soft counts.

    Parameters
    ----------
    alpha : L2 strength on the feature weights (the objective is a sum over tokens).
    features : :class:`FeatureConfig`.
    max_iter : L-BFGS iteration cap.
    tol : stop when ``max|∇F| ≤ tol · Σ_a n_a`` (gradient relative to the number of tokens).
    ftol : or when one iteration lowers ``F`` by less than ``ftol · |F|``.
    stop_below : or as soon as ``F`` is below this value (to time solvers to a common objective).
    memory : L-BFGS history length (5 was fastest per unit of objective on EWT-sized problems:
        the two-loop recursion, not the objective, dominates the cost of an iteration).

    Attributes (after ``fit``)
    --------------------------
    tagset_ : tuple of tag names (columns). coef_ : (n_features, K). intercept_ : (K,).
    n_iter_ : L-BFGS iterations. objective_ : final objective value.
    """

    def __init__(
        self,
        *,
        alpha: float = 1.0,
        features: FeatureConfig | None = None,
        max_iter: int = 500,
        tol: float = 1e-5,
        ftol: float = 1e-9,
        stop_below: float | None = None,
        memory: int = 5,
    ) -> None:
        self.alpha = alpha
        self.features = features
        self.max_iter = max_iter
        self.tol = tol
        self.ftol = ftol
        self.stop_below = stop_below
        self.memory = memory

    @property
    def feature_config_(self) -> FeatureConfig:
        return self.features if self.features is not None else FeatureConfig()

    def fit(
        self,
        forms: Sequence[str],
        soft_counts: np.ndarray,
        tagset: Sequence[str],
        *,
        warm_start: LogLinearTagger | None = None,
        x: sp.csr_matrix | None = None,
    ) -> LogLinearTagger:
        """Fit to ``soft_counts`` (len(forms) × K, non-negative); ``x`` may pass precomputed
        features of ``forms``. ``warm_start``: a fitted tagger with the same feature
        configuration (tags are matched by name; new tags start at zero)."""
        soft_counts = np.asarray(soft_counts, dtype=np.float64)
        tagset = tuple(tagset)
        config = self.feature_config_
        if soft_counts.shape != (len(forms), len(tagset)):
            raise ValueError(
                f"soft_counts must have shape (n_forms={len(forms)}, n_tags={len(tagset)})"
            )
        if not np.all(np.isfinite(soft_counts)) or (soft_counts < 0).any():
            raise ValueError("soft_counts must be finite and non-negative")
        if self.alpha <= 0:
            raise ValueError("alpha must be positive")
        keep = soft_counts.sum(axis=1) > 0
        if not keep.any():
            raise ValueError("no labelled tokens: all soft counts are zero")
        if x is None:
            x = featurize([f for f, k in zip(forms, keep, strict=True) if k], config)
        else:
            x = sp.csr_matrix(x)[keep]
        q = soft_counts[keep]
        active = np.flatnonzero(np.diff(x.tocsc().indptr))
        x_active = x[:, active].tocsr()
        xt = x_active.T.tocsr()
        n_tags = len(tagset)

        w0 = np.zeros((active.shape[0], n_tags))
        c0 = np.zeros(n_tags)
        if warm_start is not None:
            w0, c0 = _warm_start_params(warm_start, config, tagset, active)
        else:
            # Start from the smoothed tag frequencies: a good intercept saves many iterations.
            totals = q.sum(axis=0) + 1.0
            c0 = np.log(totals / totals.sum())
        totals = q.sum(axis=1)
        alpha = float(self.alpha)
        result = minimize_lbfgs(
            lambda params: soft_label_objective(params, x_active, xt, q, alpha),
            np.concatenate([w0.ravel(), c0]),
            max_iter=self.max_iter,
            gtol=self.tol * max(totals.sum(), 1.0),
            ftol=self.ftol,
            stop_below=self.stop_below,
            memory=self.memory,
        )
        coef = np.zeros((config.n_features, n_tags))
        coef[active] = result.x[:-n_tags].reshape(active.shape[0], n_tags)
        self.tagset_ = tagset
        self.coef_ = coef
        self.intercept_ = result.x[-n_tags:].copy()
        self.n_iter_ = int(result.n_iter)
        self.objective_ = float(result.fun)
        return self

    def decision_function(self, x: sp.csr_matrix) -> np.ndarray:
        return np.asarray(x @ self.coef_) + self.intercept_

    def predict_proba_forms(self, forms: Sequence[str]) -> np.ndarray:
        """``p_θ(b | form)`` for distinct forms (rows) — featurizes each form once."""
        x = featurize(list(forms), self.feature_config_)
        return softmax_rows(self.decision_function(x))

    def predict_proba(self, tokens: Sequence[str]) -> np.ndarray:
        """(len(tokens), K) tag probabilities; words never seen get them from their features."""
        unique, inverse = np.unique(np.asarray(list(tokens), dtype=object), return_inverse=True)
        if unique.shape[0] == 0:
            return np.zeros((0, len(self.tagset_)))
        return self.predict_proba_forms(list(unique))[inverse.ravel()]

    def predict(self, sentences: Sequence[Sequence[str]]) -> list[list[str]]:
        """The most probable tag of every token of every sentence."""
        flat = [token for sentence in sentences for token in sentence]
        best = self.predict_proba(flat).argmax(axis=1) if flat else np.zeros(0, dtype=int)
        out, position = [], 0
        for sentence in sentences:
            out.append([self.tagset_[k] for k in best[position : position + len(sentence)]])
            position += len(sentence)
        return out


def _warm_start_params(previous, config, tagset, active):
    if getattr(previous, "feature_config_", None) != config:
        raise ValueError("warm_start model has a different feature configuration")
    n_tags = len(tagset)
    w0 = np.zeros((active.shape[0], n_tags))
    c0 = np.zeros(n_tags)
    previous_index = {tag: k for k, tag in enumerate(previous.tagset_)}
    for k, tag in enumerate(tagset):
        if tag in previous_index:
            w0[:, k] = previous.coef_[active, previous_index[tag]]
            c0[k] = previous.intercept_[previous_index[tag]]
    return w0, c0
