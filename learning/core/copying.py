"""Annotators who give back the served model's answers instead of reading the words.

An annotator can read the model's answer (predict, the tags a verification task shows) and
answer with it. Judged only against the model, such answers look perfect: their residuals are
small and their skill near 1. What gives them away is how often they agree with the model where
it is unsure. For a count the served model predicts as the Poisson-binomial ``N_b = Σ_{j∈r}
Bernoulli(p_j(b))``, its expected count rounded, ``ĉ_b = round(μ_b)``, is the true count with
probability ``q_b = P(N_b = ĉ_b)``. An annotator who reads the words agrees with ``ĉ`` on about
``Σ q`` of their entries (a calibrated model's own doubt); one who copies it agrees on all.

Only answers given while that model was served are tested: the ones it was fitted on agree with
it more than its probabilities say, whoever gave them. An annotator is said to follow the model
when, on at least ``min_entries`` entries where ``q < unsure_below``, they agree with ``ĉ`` more
often than expected by more than ``margin`` beyond the crowd's median excess and by ``z``
standard deviations of the count of agreements (a binomial with the entries' ``q``): the
crowd's median takes out a model that is merely under-confident
(docs/decisions/046-copying-the-model.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["ModelFollowing", "count_pmf", "model_following"]

_CHUNK = 65_536  # entries whose count distributions are built at once


@dataclass(frozen=True)
class ModelFollowing:
    """Per annotator (sorted ``annotators``): ``entries`` tested (asked tags the served model was
    unsure of), ``agreed`` (answers equal to its rounded expected count), ``expected`` (Σ q) and
    ``variance`` (Σ q(1 − q)) of the agreements of an annotator who reads the words."""

    annotators: np.ndarray
    entries: np.ndarray
    agreed: np.ndarray
    expected: np.ndarray
    variance: np.ndarray

    def follows(self, *, min_entries: int = 20, margin: float = 0.15, z: float = 4.0) -> np.ndarray:
        """Whether each annotator follows the model (module docstring)."""
        entries = np.maximum(self.entries, 1)
        excess = (self.agreed - self.expected) / entries
        enough = self.entries >= min_entries
        baseline = float(np.median(excess[enough])) if enough.any() else 0.0
        beyond = self.agreed - self.expected - baseline * self.entries
        spread = np.sqrt(np.maximum(self.variance, 1e-12))
        return enough & (excess - baseline > margin) & (beyond > z * spread)

    def rates(self) -> tuple[np.ndarray, np.ndarray]:
        """Share of tested entries that agreed, and the share expected (nan when none)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return self.agreed / self.entries, self.expected / self.entries


def count_pmf(probs: np.ndarray) -> np.ndarray:
    """Poisson-binomial distribution of ``Σ_j Bernoulli(probs[e, j])`` for each row ``e``
    (entries past a window's end are 0): shape (E, w + 1)."""
    n_entries, width = probs.shape
    pmf = np.zeros((n_entries, width + 1))
    pmf[:, 0] = 1.0
    for j in range(width):
        p = probs[:, j : j + 1]
        pmf[:, 1:] = pmf[:, 1:] * (1.0 - p) + pmf[:, :-1] * p
        pmf[:, :1] *= 1.0 - p
    return pmf


def model_following(
    annotator: np.ndarray,
    tag_mask: np.ndarray,
    counts: np.ndarray,
    windows: np.ndarray,
    token_probs: np.ndarray,
    *,
    answered: np.ndarray,
    unsure_below: float = 0.9,
) -> ModelFollowing:
    """How often each annotator's count answers ``answered`` while the model of ``token_probs``
    was served agree with its rounded expected counts, and how often they would by chance
    (module docstring). ``windows``: (n, w_max) rows of ``token_probs``, −1 past the end."""
    answered = np.asarray(answered, dtype=bool)
    rows, tags = np.nonzero(tag_mask & answered[:, None])
    annotators = np.unique(annotator[answered])
    which = np.searchsorted(annotators, annotator[rows])
    size = annotators.shape[0]
    sums = np.zeros((4, size))
    for at in range(0, rows.shape[0], _CHUNK):
        r, b, a = rows[at : at + _CHUNK], tags[at : at + _CHUNK], which[at : at + _CHUNK]
        cells = windows[r]
        probs = np.where(cells >= 0, token_probs[np.maximum(cells, 0), b[:, None]], 0.0)
        guess = np.rint(probs.sum(axis=1)).astype(np.int64)
        q = np.take_along_axis(count_pmf(probs), guess[:, None], axis=1)[:, 0]
        tested = q < unsure_below
        agreed = counts[r, b] == guess
        for k, values in enumerate((tested, tested & agreed, q * tested, q * (1 - q) * tested)):
            sums[k] += np.bincount(a, weights=values.astype(np.float64), minlength=size)
    return ModelFollowing(
        annotators=annotators,
        entries=sums[0].astype(np.int64),
        agreed=sums[1],
        expected=sums[2],
        variance=sums[3],
    )
