"""Count observations ``o = (r, B, N)`` as evidence about the tags: everything that is specific
to this kind of answer, next to the data (:mod:`.observations`).

- **Moment equations** (linear): each observation and asked tag ``b`` gives
  ``Σ_{j∈r} w(x_j, b) ≈ N[b]``; the rows form the design matrix ``A``
  (:func:`.design.design_matrix`) that :mod:`.solver` solves.
- **Exact E-step likelihood**: ``P(y_r | N) ∝ Π_j p_j(y_j) · [counts of y_r on B = N]``, computed by
  the count dynamic program of :mod:`.posterior`.
- **Expected counts** under the model, ``μ_ib = Σ_{j∈r} p_j(b)`` and their variance
  ``Σ_j p_j(b)(1 − p_j(b))``: what annotator reliability (:mod:`.crowd`) and the report's count
  consistency compare the answers with.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .observations import Observations
from .posterior import WindowPosteriors, window_posteriors

__all__ = ["CountEvidence", "count_distribution", "expected_counts"]

# Windows per chunk of `expected_counts`.
_CHUNK = 65536


def expected_counts(
    token_probs: np.ndarray, window_tokens: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Model mean ``μ_ib = Σ_{j∈r_i} p_j(b)`` and variance ``Σ p_j(b)(1 − p_j(b))`` per window
    (``window_tokens``: (n, w_max) rows of ``token_probs``, −1 past the window's end)."""
    n, n_tags = window_tokens.shape[0], token_probs.shape[1]
    mean = np.empty((n, n_tags))
    var = np.empty((n, n_tags))
    for at in range(0, n, _CHUNK):  # the gathered priors of 10^6 windows would take 0.7 GB, twice
        rows = window_tokens[at : at + _CHUNK]
        p = np.where((rows >= 0)[:, :, None], token_probs[np.maximum(rows, 0)], 0.0)
        mean[at : at + _CHUNK] = p.sum(axis=1)
        var[at : at + _CHUNK] = (p * (1.0 - p)).sum(axis=1)
    return mean, var


def count_distribution(tags: Sequence[Sequence[int]], window: int, n_tags: int) -> np.ndarray:
    """The distribution of a count task's true answer when it asks one tag, uniformly among the
    ``n_tags``, about a window of ``window`` tokens placed anywhere a whole window fits in a
    sentence of ``tags`` (tag indices): shape (window + 1,). Shorter sentences are left out."""
    histogram = np.zeros(window + 1)
    for sentence in tags:
        if len(sentence) < window:
            continue
        one_hot = np.eye(n_tags, dtype=np.int64)[np.asarray(sentence, dtype=np.int64)]
        running = np.vstack([np.zeros((1, n_tags), dtype=np.int64), one_hot.cumsum(axis=0)])
        counts = running[window:] - running[:-window]  # (windows, n_tags)
        histogram += np.bincount(counts.ravel(), minlength=window + 1)
    if histogram.sum() == 0:
        raise ValueError(f"no sentence has {window} tokens")
    return histogram / histogram.sum()


@dataclass(frozen=True)
class CountEvidence:
    """Count observations placed on tokens: ``windows[i, j]`` is the row (of the token
    probabilities the E-step is given) of position ``j`` of observation ``i``'s window, −1 past
    its end."""

    observations: Observations
    windows: np.ndarray

    def posteriors(self, cavity: np.ndarray, rows: np.ndarray, floor: float) -> WindowPosteriors:
        """Exact posteriors of the windows ``rows`` given their counts, under token priors
        ``cavity`` (len(rows), w_max, K)."""
        obs = self.observations
        return window_posteriors(
            cavity, obs.length[rows], obs.tag_mask[rows], obs.counts[rows], floor=floor
        )

    def expected_counts(self, token_probs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return expected_counts(token_probs, self.windows)
