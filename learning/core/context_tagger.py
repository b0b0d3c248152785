"""Contextual tagger: a token-level log-linear model whose features read the neighbours.

Stage 1 reads words: ``p¹(y_j = b | x) = softmax_b(f(x, j)ᵀ W[:, b] + c_b)`` with ``f(x, j)`` the
token's own word features plus its neighbours' and its word classes
(:func:`.features.featurize_tokens`). Stage 2 (when the configuration has ``tag_offsets``) also
reads what stage 1 thinks of the neighbours' tags: ``p(y_j = b | x) = softmax_b((f(x, j) +
g(p¹, j))ᵀ V[:, b] + d_b)``, with ``g`` the neighbours' stage-1 tag probabilities and the pairs of
their most likely tags (:func:`.features.neighbour_tag_features`). Both stages are fitted to
token-level soft labels ``Q[j, b]`` (all-zero rows carry no weight) by :mod:`.softmax`'s objective.

Supervised on the tokens of one 5-word window per sentence, stage 2 gained on every treebank
tried (EWT 93.29 → 93.59 %, Sequoia 94.22 → 94.79 %, Alpino 81.69 → 81.74 %), the pairs of
neighbours' tags about a third of it; offsets ±3 and a third stage did not gain. Stage 2 reads
stage 1's probabilities of the very tokens it was fitted to: cross-fitting them (each half of the
sentences tagged by a stage 1 fitted to the other half) gained 0.1 point supervised but nothing
measurable learned from counts (EWT 93.60 % without, 93.53–93.63 % with; Sequoia 95.90 against
95.92–95.99 %), at two more fits per M-step, so it is not done.

Either way the tags of a sentence are independent given its words (the features are functions of
the words alone), so the exact E-steps written for node-only models apply unchanged. The model
needs the whole sentence to tag a token.

The token's own features are hashed into the same columns as the node-only tagger's, so a node-only
model is a valid starting point: its weights, with zero weights on the context.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

from .features import (
    ContextConfig,
    FeatureConfig,
    featurize_tokens,
    join_rows,
    neighbour_tag_features,
)
from .softmax import softmax_rows
from .tagger_base import LinearTagger, check_soft_labels
from .wordclasses import WordClasses

__all__ = ["ContextTagger"]


class ContextTagger(LinearTagger):
    """Token-level log-linear tagger with context features (see the module docstring).

    Parameters
    ----------
    alpha : L2 strength on the feature weights (both stages).
    features : :class:`ContextConfig` (its ``tag_offsets`` switch stage 2 on).
    word_classes : :class:`WordClasses` learned from the corpus' own text, or None.
    max_iter, tol, ftol, memory : L-BFGS settings (as :class:`.node_tagger.NodeTagger`) of
        stage 1's fit.
    tag_max_iter : L-BFGS iterations of stage 2's fit, which starts from stage 1's weights and
        only adds the neighbours' tags (default ``max_iter // 2``: learned from counts on EWT,
        93.63 % against 93.62 % with ``max_iter``, at 30 % less CPU for the M-step).

    Attributes (after ``fit``): tagset_, coef_ (n_features, K) and intercept_ (K,) of stage 1,
    tag_coef_ and tag_intercept_ of stage 2 (None without ``tag_offsets``), n_iter_ (L-BFGS
    iterations of both stages), objective_ (of the served stage).
    """

    kind = "context"

    def __init__(
        self,
        *,
        alpha: float = 1.0,
        features: ContextConfig | None = None,
        word_classes: WordClasses | None = None,
        max_iter: int = 200,
        tag_max_iter: int | None = None,
        tol: float = 1e-5,
        ftol: float = 1e-9,
        memory: int = 5,
    ) -> None:
        self.alpha = alpha
        self.features = features
        self.word_classes = word_classes
        self.max_iter = max_iter
        self.tag_max_iter = tag_max_iter
        self.tol = tol
        self.ftol = ftol
        self.memory = memory

    @property
    def feature_config_(self) -> ContextConfig:
        return self.features if self.features is not None else ContextConfig()

    @property
    def word_features_(self) -> FeatureConfig:
        return self.feature_config_.word

    @property
    def stacked(self) -> bool:
        """Whether the tagger has a second stage reading the neighbours' tags."""
        return bool(self.feature_config_.tag_offsets)

    def featurize(
        self, sentences: Sequence[Sequence[str]], tokens: np.ndarray | None = None
    ) -> sp.csr_matrix:
        """(n_tokens, n_features) stage-1 features of every token of ``sentences`` in order, or
        of the flat token indices ``tokens`` only (each still read in its whole sentence)."""
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
        lengths: np.ndarray | None = None,
    ) -> ContextTagger:
        """Fit to ``token_counts`` (n_tokens × K soft labels, rows in the order of the tokens of
        ``sentences``, or of ``features``: the stage-1 features of every token of sentences of
        ``lengths``, needed with stage 2, which reads each labelled token's neighbours).
        ``warm_start``: a fitted tagger of either kind with the same word features."""
        token_counts = np.asarray(token_counts, dtype=np.float64)
        tagset = tuple(tagset)
        if token_counts.ndim != 2 or token_counts.shape[1] != len(tagset):
            raise ValueError(f"token_counts must have shape (n_tokens, n_tags={len(tagset)})")
        check_soft_labels(token_counts, self.alpha)
        x, lengths = self._features(sentences, features, lengths)
        if x.shape[0] != token_counts.shape[0]:
            raise ValueError("token_counts must have one row per token")
        # Both stages fit the labelled rows only; the unlabelled ones are read as neighbours.
        labelled = np.flatnonzero(token_counts.sum(axis=1) > 0)
        x_labelled, counts = x[labelled], token_counts[labelled]
        previous_tags = getattr(warm_start, "tag_coef_", None)
        self.tagset_ = tagset
        self.temperature_, self.unseen_temperature_, self.seen_forms_ = 1.0, None, None
        self.coef_, self.intercept_, self.objective_, n_iter = self._fit_stage(
            x_labelled, counts, tagset, warm_start, self.max_iter
        )
        self.tag_coef_ = self.tag_intercept_ = None
        if self.stacked:
            first = softmax_rows(self.decision_function(x))
            extra = neighbour_tag_features(
                first, lengths, tagset, self.feature_config_, rows=labelled
            )
            start = warm_start if previous_tags is not None else self
            tag_max_iter = self.tag_max_iter
            if tag_max_iter is None:
                tag_max_iter = self.max_iter // 2
            self.tag_coef_, self.tag_intercept_, self.objective_, more = self._fit_stage(
                join_rows(x_labelled, extra), counts, tagset, _Stage2(start), tag_max_iter
            )
            n_iter += more
        self.n_iter_ = int(n_iter)
        return self

    def token_proba(
        self,
        sentences: Sequence[Sequence[str]] | None,
        *,
        features: sp.csr_matrix | None = None,
        lengths: np.ndarray | None = None,
        rows: np.ndarray | None = None,
        calibrated: bool = True,
    ) -> np.ndarray:
        """(n_tokens, K) tag probabilities of every token, each read in its whole sentence
        (``features``: stage-1 features of every token of sentences of ``lengths``), or of the
        tokens ``rows`` only; ``calibrated=False``: at temperature 1, as fitted (what EM
        reads)."""
        x, lengths = self._features(sentences, features, lengths)
        if x.shape[0] == 0:
            return np.zeros((0, len(self.tagset_)))
        forms = None
        if sentences is not None and rows is None:
            forms = [form for sentence in sentences for form in sentence]
        if self.tag_coef_ is None:
            scores = self.decision_function(x if rows is None else x[rows])
            return self.served_proba(scores, calibrated, forms)
        stacked = self.served_features(x, lengths)
        if rows is not None:
            stacked = stacked[rows]
        scores = np.asarray(stacked @ self.tag_coef_) + self.tag_intercept_
        return self.served_proba(scores, calibrated, forms)

    def served_features(self, x: sp.csr_matrix, lengths: np.ndarray) -> sp.csr_matrix:
        """The rows the served stage reads: stage-1 features ``x`` of every token of sentences
        of ``lengths``, plus (with stage 2) the neighbours' stage-1 tag probabilities."""
        if self.tag_coef_ is None:
            return x
        first = softmax_rows(self.decision_function(x))
        return join_rows(
            x, neighbour_tag_features(first, lengths, self.tagset_, self.feature_config_)
        )

    # ------------------------------------------------------------------ internals
    def _features(self, sentences, features, lengths) -> tuple[sp.csr_matrix, np.ndarray | None]:
        if features is None:
            lengths = np.fromiter((len(s) for s in sentences), dtype=np.int64)
            return self.featurize(sentences), lengths
        if self.stacked and lengths is None:
            raise ValueError("a stacked tagger needs the sentence lengths of its features' rows")
        return features, lengths

    def _fit_stage(self, x, token_counts, tagset, warm_start, max_iter):
        """One stage's fit on labelled rows: (coef, intercept, objective, iterations)."""
        return self._fit_linear(
            x, token_counts, tagset, warm_start, max_iter=max_iter, dtype=np.float32
        )


class _Stage2:
    """A fitted tagger seen through its second stage (or, without one, its first), as a warm
    start for a second stage: `warm_start_params` reads ``coef_`` and ``intercept_``."""

    def __init__(self, tagger) -> None:
        self.tagset_ = tagger.tagset_
        self.word_features_ = tagger.word_features_
        stacked = getattr(tagger, "tag_coef_", None) is not None
        self.coef_ = tagger.tag_coef_ if stacked else tagger.coef_
        self.intercept_ = tagger.tag_intercept_ if stacked else tagger.intercept_
