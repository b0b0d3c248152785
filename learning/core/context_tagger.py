"""Contextual tagger: a token-level log-linear model whose features read the neighbours.

``p_θ(y_j = b | x) = softmax_b(f(x, j)ᵀ W[:, b] + c_b)`` with ``f(x, j)`` the token's own word
features plus its neighbours' and its word classes (:func:`.features.featurize_tokens`). Fitted to
token-level soft labels ``Q[j, b]`` (all-zero rows carry no weight) by :mod:`.softmax`'s objective
with one row per token. Tokens are still tagged independently given the sentence, so the exact
E-steps written for node-only models apply unchanged.

The token's own features are hashed into the same columns as the node-only tagger's, so a node-only
model is a valid starting point: its weights, with zero weights on the context.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

from .features import ContextConfig, FeatureConfig, featurize_tokens
from .softmax import softmax_rows
from .tagger_base import LinearTagger, check_soft_labels
from .wordclasses import WordClasses

__all__ = ["ContextTagger"]


class ContextTagger(LinearTagger):
    """Token-level log-linear tagger with context features (see the module docstring).

    Parameters
    ----------
    alpha : L2 strength on the feature weights.
    features : :class:`ContextConfig`.
    word_classes : :class:`WordClasses` learned from the corpus' own text, or None.
    max_iter, tol, ftol, memory : L-BFGS settings (as :class:`.node_tagger.NodeTagger`).

    Attributes (after ``fit``): tagset_, coef_ (n_features, K), intercept_ (K,), n_iter_,
    objective_.
    """

    kind = "context"

    def __init__(
        self,
        *,
        alpha: float = 1.0,
        features: ContextConfig | None = None,
        word_classes: WordClasses | None = None,
        max_iter: int = 200,
        tol: float = 1e-5,
        ftol: float = 1e-9,
        memory: int = 5,
    ) -> None:
        self.alpha = alpha
        self.features = features
        self.word_classes = word_classes
        self.max_iter = max_iter
        self.tol = tol
        self.ftol = ftol
        self.memory = memory

    @property
    def feature_config_(self) -> ContextConfig:
        return self.features if self.features is not None else ContextConfig()

    @property
    def word_features_(self) -> FeatureConfig:
        return self.feature_config_.word

    def featurize(
        self, sentences: Sequence[Sequence[str]], tokens: np.ndarray | None = None
    ) -> sp.csr_matrix:
        """(n_tokens, n_features) features of every token of ``sentences`` in order, or of the
        flat token indices ``tokens`` only (each still read in its whole sentence)."""
        x = featurize_tokens(sentences, self.feature_config_, self.word_classes)
        return x if tokens is None else x[np.asarray(tokens)]

    def fit(
        self,
        sentences: Sequence[Sequence[str]] | None,
        token_counts: np.ndarray,
        tagset: Sequence[str],
        *,
        warm_start=None,
        features: sp.csr_matrix | None = None,
    ) -> ContextTagger:
        """Fit to ``token_counts`` (n_tokens × K soft labels, rows in the order of the tokens of
        ``sentences`` or of ``features``). ``warm_start``: a fitted tagger of either kind with the
        same word features."""
        token_counts = np.asarray(token_counts, dtype=np.float64)
        tagset = tuple(tagset)
        if token_counts.ndim != 2 or token_counts.shape[1] != len(tagset):
            raise ValueError(f"token_counts must have shape (n_tokens, n_tags={len(tagset)})")
        check_soft_labels(token_counts, self.alpha)
        x = self.featurize(sentences) if features is None else features
        if x.shape[0] != token_counts.shape[0]:
            raise ValueError("token_counts must have one row per token")
        keep = token_counts.sum(axis=1) > 0
        self._fit_rows(x[keep], token_counts[keep], tagset, warm_start, dtype=np.float32)
        return self

    def token_proba(
        self,
        sentences: Sequence[Sequence[str]] | None,
        *,
        features: sp.csr_matrix | None = None,
    ) -> np.ndarray:
        """(n_tokens, K) tag probabilities of every token, each read in its whole sentence."""
        x = self.featurize(sentences) if features is None else features
        if x.shape[0] == 0:
            return np.zeros((0, len(self.tagset_)))
        return softmax_rows(self.decision_function(x))
