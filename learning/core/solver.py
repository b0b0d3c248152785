"""The ŵ solver: per-tag ridge least squares on window counts, projected onto the simplex.

For each tag ``b`` let ``D_b = diag(ω_i · [b ∈ B_i])`` weight the observations that asked about
``b`` (``ω_i`` is the reliability weight of the observation's annotator). With ``A`` the design
matrix (observations × word types) and ``π_b`` the tag's overall rate,

    ŵ_b = argmin_w  ‖D_b^{1/2} (A w − N_b)‖² + λ ‖w − π_b 1‖²,

i.e. with ``u = w − π_b 1`` and ``r_b = N_b − π_b · length`` (``A 1 = length``) the normal equations

    (Aᵀ D_b A + λ I) u_b = Aᵀ D_b r_b.

All ``K`` systems are solved together by a batched Jacobi-preconditioned conjugate-gradient
iteration: each step costs two sparse × dense(``V × K``) products, and the matrix ``AᵀD_bA`` is
never formed (no ``V × V`` matrix, dense or sparse). When every task asks all tags, the ``K``
systems share one operator and this is block CG on ``K`` right-hand sides. Finally each row
``ŵ(a, ·)`` is projected onto the probability simplex.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .simplex import project_rows_to_simplex

__all__ = ["RidgeSolution", "select_ridge", "soft_counts", "solve_word_tag_probs", "tag_prior"]


@dataclass(frozen=True)
class RidgeSolution:
    """``probs``: ŵ projected (V × K); ``raw``: unprojected ``π + u``; ``prior``: π (K,)."""

    probs: np.ndarray
    raw: np.ndarray
    prior: np.ndarray
    ridge: float
    n_iter: int
    converged: bool


def soft_counts(coverage: np.ndarray, word_tag_probs: np.ndarray) -> np.ndarray:
    """The moments ``Q(a, b) = n_a ŵ(a, b)``: each word type's coverage ``n_a`` spread over the
    tags by its row of ŵ (the soft labels the log-linear fit is trained on)."""
    return np.asarray(coverage, dtype=np.float64)[:, None] * word_tag_probs


def tag_prior(counts: np.ndarray, weights: np.ndarray, length: np.ndarray) -> np.ndarray:
    """π_b = Σ_i D_ib N_ib / Σ_i D_ib len_i: each tag's rate in the windows that asked about it.

    ``weights`` is ``D`` (n × K, zero where the tag was not asked). Tags never asked get the
    uniform rate 1/K.
    """
    n_tags = counts.shape[1]
    numerator = (weights * counts).sum(axis=0)
    denominator = (weights * length[:, None]).sum(axis=0)
    prior = np.full(n_tags, 1.0 / n_tags)
    asked = denominator > 0
    prior[asked] = numerator[asked] / denominator[asked]
    return prior


def solve_word_tag_probs(
    a: sp.spmatrix,
    counts: np.ndarray,
    weights: np.ndarray,
    length: np.ndarray,
    ridge: float,
    *,
    x0: np.ndarray | None = None,
    tol: float = 1e-5,
    max_iter: int = 2000,
) -> RidgeSolution:
    """Solve the ``K`` ridge problems above and project onto the simplex.

    Parameters
    ----------
    a : (n, V) sparse design matrix.
    counts : (n, K) observed counts ``N``.
    weights : (n, K) ``D``: reliability weight where the tag was asked, 0 elsewhere.
    length : (n,) window lengths.
    ridge : λ > 0.
    x0 : optional (V, K) starting point for ``w`` (warm start, e.g. a neighbouring λ).
    tol : stop when every column's residual norm is below ``tol`` × its right-hand side norm.
    """
    if ridge <= 0:
        raise ValueError("ridge must be positive")
    a = sp.csr_matrix(a, dtype=np.float64)
    at = a.T.tocsr()
    weights = np.asarray(weights, dtype=np.float64)
    prior = tag_prior(counts, weights, length)
    rhs_resid = counts - length[:, None] * prior[None, :]
    rhs = at @ (weights * rhs_resid)
    diag = (at.multiply(at)) @ weights + ridge

    def operator(x: np.ndarray) -> np.ndarray:
        return at @ (weights * (a @ x)) + ridge * x

    u = np.zeros_like(rhs) if x0 is None else np.asarray(x0, dtype=np.float64) - prior
    u, n_iter, converged = _batched_cg(operator, rhs, diag, u, tol, max_iter)
    raw = u + prior
    return RidgeSolution(
        probs=project_rows_to_simplex(raw),
        raw=raw,
        prior=prior,
        ridge=float(ridge),
        n_iter=n_iter,
        converged=converged,
    )


def _batched_cg(operator, rhs, diag, x, tol, max_iter):
    """Jacobi-preconditioned CG run column-wise in parallel on ``operator(X) = RHS``."""
    r = rhs - operator(x) if np.any(x) else rhs.copy()
    rhs_norm = np.linalg.norm(rhs, axis=0)
    # A warm start worse than none (a residual above the right-hand side's) is dropped, column by
    # column (the K problems are independent). Above all for a right-hand side of 0 (a tag asked
    # but never counted): its solution is 0, while from elsewhere CG would chase a tolerance of
    # 1e-305 that floating point cannot reach, and drift.
    worse = np.linalg.norm(r, axis=0) > rhs_norm
    if worse.any():
        x[:, worse] = 0.0
        r[:, worse] = rhs[:, worse]
    target = tol * np.maximum(rhs_norm, 1e-300)
    z = r / diag
    p = z.copy()
    rz = np.einsum("ij,ij->j", r, z)
    for iteration in range(1, max_iter + 1):
        active = np.linalg.norm(r, axis=0) > target
        if not active.any():
            return x, iteration - 1, True
        q = operator(p)
        pq = np.einsum("ij,ij->j", p, q)
        alpha = np.where(active & (pq > 0), rz / np.where(pq > 0, pq, 1.0), 0.0)
        x += alpha * p
        r -= alpha * q
        z = r / diag
        rz_new = np.einsum("ij,ij->j", r, z)
        beta = np.where(rz > 0, rz_new / np.where(rz > 0, rz, 1.0), 0.0)
        p = z + beta * p
        rz = rz_new
    converged = bool(np.all(np.linalg.norm(r, axis=0) <= target))
    return x, max_iter, converged


def select_ridge(
    a: sp.spmatrix,
    counts: np.ndarray,
    weights: np.ndarray,
    length: np.ndarray,
    grid: Sequence[float],
    *,
    holdout_fraction: float = 0.1,
    rng: np.random.Generator | None = None,
    holdout: np.ndarray | None = None,
    tol: float = 1e-4,
    max_iter: int = 500,
) -> tuple[float, dict[float, float]]:
    """Choose λ from ``grid`` by the count error of held-out observations.

    A random ``holdout_fraction`` of the observations is held out; for each λ (largest first,
    each solve warm-started from the previous) ŵ is fitted on the rest and the held-out squared
    error ``Σ_{i, b} D_ib (Σ_{j∈r_i} ŵ(x_j, b) − N_ib)² / Σ_{i, b} D_ib`` is measured (``D`` =
    ``weights``: ω_i where ``b ∈ B_i``). Returns the best λ and the error of every λ. Uses no
    labels, only observations. ``holdout`` (boolean, one per observation) may be given instead of
    ``holdout_fraction`` and ``rng``.

    The criterion is the loss the ridge problem itself minimizes. The mean *absolute* error was
    used before: it discounts the large errors of windows holding rare word types — exactly the
    errors that λ trades off — and chose λ too small. On EWT UPOS (window 5, one window per
    sentence, all tags, seed 0) it picked λ = 0.01 from the decades 1e-3…10, the squared error
    picks 0.1; the moment tagger fitted to convergence scores 87.4 % vs 87.9 % on test (over
    λ = 1e-3, 0.01, 0.03, 0.1, 0.3, 1: 87.3, 87.4, 87.7, 87.9, 87.7, 87.3 %).
    """
    n = a.shape[0]
    if holdout is None:
        holdout = np.random.default_rng(rng).random(n) < holdout_fraction
    if holdout.sum() == 0 or holdout.sum() == n:
        return float(sorted(grid)[len(grid) // 2]), {}
    a = sp.csr_matrix(a)
    a_fit, a_out = a[~holdout], a[holdout]
    w_out = weights[holdout]
    errors: dict[float, float] = {}
    x0 = None
    for ridge in sorted(grid, reverse=True):
        solution = solve_word_tag_probs(
            a_fit,
            counts[~holdout],
            weights[~holdout],
            length[~holdout],
            ridge,
            x0=x0,
            tol=tol,
            max_iter=max_iter,
        )
        x0 = solution.raw
        predicted = a_out @ solution.probs
        error = (w_out * (predicted - counts[holdout]) ** 2).sum() / max(w_out.sum(), 1e-300)
        errors[float(ridge)] = float(error)
    best = min(errors, key=lambda k: (errors[k], -k))
    return best, errors
