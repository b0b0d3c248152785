"""Euclidean projection of the rows of a matrix onto the probability simplex."""

from __future__ import annotations

import numpy as np

__all__ = ["project_rows_to_simplex"]


def project_rows_to_simplex(v: np.ndarray) -> np.ndarray:
    """Return ``P`` with ``P[i] = argmin_{p ≥ 0, Σ p = 1} ‖p − v[i]‖₂`` for every row.

    The sort-based algorithm (Held et al. 1974; Duchi et al. 2008): with ``u`` the row sorted in
    decreasing order, ``ρ = max{j : u_j − (Σ_{k≤j} u_k − 1)/j > 0}`` and
    ``τ = (Σ_{k≤ρ} u_k − 1)/ρ``, the projection is ``max(v − τ, 0)``. O(K log K) per row,
    vectorised over rows. The input is not modified.
    """
    v = np.asarray(v, dtype=np.float64)
    if v.ndim != 2:
        raise ValueError("expected a 2-D array")
    n, k = v.shape
    if k == 0:
        raise ValueError("cannot project onto an empty simplex")
    u = -np.sort(-v, axis=1)
    cumulative = np.cumsum(u, axis=1) - 1.0
    j = np.arange(1, k + 1)
    positive = u - cumulative / j > 0
    rho = k - np.argmax(positive[:, ::-1], axis=1)  # last index where positive (always ≥ 1)
    tau = cumulative[np.arange(n), rho - 1] / rho
    return np.maximum(v - tau[:, None], 0.0)
