"""Cross-fitting by sentence: each token's prior from a model that never saw its sentence.

A model fitted on a token's own soft labels can nearly memorise them and give them back as its
prior, so EM would confirm its first beliefs' errors. With the tokens split into folds by
sentence, fold ``f``'s priors come from a model fitted on the other folds' labels only
(docs/decisions/006-cross-fitting.md).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from .softmax import blas_one_thread

__all__ = ["cross_fitted_priors", "sentence_folds"]


def sentence_folds(sentence: np.ndarray, n_folds: int) -> np.ndarray | None:
    """Fold ``s mod n_folds`` of each token whose sentence index is ``sentence[j]``; None when
    ``n_folds < 2`` or a fold would be empty (nothing to cross-fit)."""
    if n_folds < 2:
        return None
    folds = np.asarray(sentence, dtype=np.int64) % n_folds
    return folds if np.unique(folds).shape[0] == n_folds else None


def cross_fitted_priors(
    fit: Callable[[int, np.ndarray, Any], Any],
    predict: Callable[[Any, int], np.ndarray],
    labels: np.ndarray,
    folds: np.ndarray,
    starts: Sequence[Any],
) -> tuple[list, np.ndarray]:
    """One model per fold ``f``, ``fit(f, labels with fold f's rows zeroed, starts[f])``, and the
    out-of-fold priors: ``predict(model, f)`` gives those of the rows ``folds == f`` (in order).
    Returns (models, priors).

    The folds' fits are independent and spend their time in sparse products, which release the
    GIL: one thread per fold, BLAS on one thread for all of them."""
    labels = np.asarray(labels)

    def fit_fold(f: int):
        return fit(f, np.where((folds == f)[:, None], 0.0, labels), starts[f])

    n_threads = max(1, min(len(starts), os.cpu_count() or 1))
    with blas_one_thread(), ThreadPoolExecutor(n_threads) as pool:
        models = list(pool.map(fit_fold, range(len(starts))))
    priors = np.empty(labels.shape)
    for f, model in enumerate(models):
        priors[folds == f] = predict(model, f)
    return models, priors
