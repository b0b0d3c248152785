"""Node-only tagger: the tag of a token from its word form alone (the paper's model).

``p_θ(b | a) = softmax_b(f(a)ᵀ W[:, b] + c_b)`` with ``f(a)`` the hashed features of word form ``a``
(:mod:`.features`). Because the features depend on the form alone, the soft-label log-likelihood
of all tokens aggregates over word types: with ``Q[a, b]`` the (soft) number of tokens of type
``a`` labelled ``b``, the fit is :mod:`.softmax`'s objective with one row per type, about 20k rows
for 200k tokens. This is what the moment stage fits (``Q = n_a ŵ(a, ·)``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .features import FeatureConfig, featurize
from .softmax import softmax_rows
from .tagger_base import LinearTagger, check_soft_labels

__all__ = ["NodeFeatures", "NodeTagger", "aggregate_by_type"]


@dataclass(frozen=True)
class NodeFeatures:
    """Features of a list of tokens for :class:`NodeTagger`: ``x`` has one row per distinct
    form (``forms``), ``type_ids`` maps every token to its row."""

    forms: list[str]
    type_ids: np.ndarray
    x: sp.csr_matrix

    @property
    def n_tokens(self) -> int:
        return int(self.type_ids.shape[0])


def aggregate_by_type(
    type_ids: np.ndarray, n_types: int, labels: np.ndarray, token_weight: np.ndarray | None = None
) -> np.ndarray:
    """``Q[a, b] = Σ_{j : type_ids[j] = a} token_weight[j] · labels[j, b]`` (n_types, K)."""
    weighted = labels if token_weight is None else labels * token_weight[:, None]
    q = np.zeros((n_types, labels.shape[1]))
    for b in range(labels.shape[1]):
        q[:, b] = np.bincount(type_ids, weights=weighted[:, b], minlength=n_types)
    return q


class NodeTagger(LinearTagger):
    """Multinomial logistic regression of tag given word form.

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

    kind = "node"

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

    @property
    def word_features_(self) -> FeatureConfig:
        """The word-form features (the columns a contextual model shares with this one)."""
        return self.feature_config_

    # ------------------------------------------------------------------ the tagger interface
    def featurize(
        self, sentences: Sequence[Sequence[str]], tokens: np.ndarray | None = None
    ) -> NodeFeatures:
        """Features of every token of ``sentences`` (or of the flat token indices ``tokens``)."""
        flat = [form for sentence in sentences for form in sentence]
        if tokens is not None:
            flat = [flat[j] for j in np.asarray(tokens)]
        index: dict[str, int] = {}
        type_ids = np.fromiter(
            (index.setdefault(form, len(index)) for form in flat), dtype=np.int64, count=len(flat)
        )
        forms = list(index)
        return NodeFeatures(
            forms=forms, type_ids=type_ids, x=featurize(forms, self.feature_config_)
        )

    def fit(
        self,
        sentences: Sequence[Sequence[str]] | None,
        token_counts: np.ndarray,
        tagset: Sequence[str],
        *,
        warm_start=None,
        features: NodeFeatures | None = None,
    ) -> NodeTagger:
        """Fit to token-level soft labels ``token_counts`` (n_tokens × K, rows in the order of
        the tokens of ``sentences`` or of ``features``; all-zero rows carry no weight)."""
        if features is None:
            features = self.featurize(sentences)
        token_counts = np.asarray(token_counts, dtype=np.float64)
        if token_counts.ndim != 2 or token_counts.shape[0] != features.n_tokens:
            raise ValueError("token_counts must have one row per token")
        soft = aggregate_by_type(features.type_ids, len(features.forms), token_counts)
        return self.fit_types(features.forms, soft, tagset, warm_start=warm_start, x=features.x)

    def token_proba(
        self,
        sentences: Sequence[Sequence[str]] | None,
        *,
        features: NodeFeatures | None = None,
        calibrated: bool = True,
    ) -> np.ndarray:
        """(n_tokens, K) tag probabilities; words never seen get them from their features.
        ``calibrated=False``: at temperature 1, as fitted (what EM reads)."""
        if features is None:
            features = self.featurize(sentences)
        if features.n_tokens == 0:
            return np.zeros((0, len(self.tagset_)))
        scores = self.decision_function(features.x)
        return self.served_proba(scores, calibrated, features.forms)[features.type_ids]

    # ------------------------------------------------------------------ per word type
    def fit_types(
        self,
        forms: Sequence[str],
        soft_counts: np.ndarray,
        tagset: Sequence[str],
        *,
        warm_start=None,
        x: sp.csr_matrix | None = None,
    ) -> NodeTagger:
        """Fit to per-type ``soft_counts`` (len(forms) × K, non-negative); ``x`` may pass
        precomputed features of ``forms``. ``warm_start``: a fitted tagger with the same word
        features, of either kind (tags are matched by name; new tags start at zero)."""
        soft_counts = np.asarray(soft_counts, dtype=np.float64)
        tagset = tuple(tagset)
        config = self.feature_config_
        if soft_counts.shape != (len(forms), len(tagset)):
            raise ValueError(
                f"soft_counts must have shape (n_forms={len(forms)}, n_tags={len(tagset)})"
            )
        check_soft_labels(soft_counts, self.alpha)
        keep = soft_counts.sum(axis=1) > 0
        if x is None:
            x = featurize([f for f, k in zip(forms, keep, strict=True) if k], config)
        else:
            x = sp.csr_matrix(x)[keep]
        self._fit_rows(x, soft_counts[keep], tagset, warm_start, stop_below=self.stop_below)
        return self

    def predict_proba_forms(self, forms: Sequence[str]) -> np.ndarray:
        """``p_θ(b | form)`` for distinct forms (rows) — featurizes each form once."""
        x = featurize(list(forms), self.feature_config_)
        return softmax_rows(self.decision_function(x))
