"""Exact posterior of a window's tags given its counts, for a node-factorized model.

Given independent token priors ``p_j(t)`` for the ``w`` tokens of a window, an asked subset ``B``
and counts ``N[b]`` (b ∈ B), the posterior is

    P(y | N) ∝ Π_j p_j(y_j) · [#{j : y_j = b} = N[b] for all b ∈ B].

Merge the tags outside ``B`` into one category "other" with probability ``Σ_{t∉B} p_j(t)`` and
count ``N_o = w − Σ_b N[b]``; drop the categories with count zero (their tags are impossible in the
window). What remains is an assignment of the ``m ≤ w`` categories to positions with exact counts
``c = (c_1..c_m)``, ``Σ c_k = w``. A forward-backward pass over positions whose state is the vector
``s`` of counts so far (``0 ≤ s ≤ c``, ``Σ s = j`` after ``j`` positions, at most
``Π (c_k + 1) ≤ 2^w`` states) gives

    α_j(s) = Σ_k α_{j−1}(s − e_k) P_j(k),      β_{j−1}(s) = Σ_k P_j(k) β_j(s + e_k),
    γ_j(k) = Σ_s α_{j−1}(s) P_j(k) β_j(s + e_k) / Z,      Z = α_w(c) = P(N | x).

A tag ``t ∉ B`` then gets ``γ_j(other) · p_j(t) / Σ_{t'∉B} p_j(t')``. Each step is rescaled to
sum to one and the scale factors ``κ_j`` are kept (``log Z = Σ_j log κ_j``): the usual scaled
forward-backward, equivalent to working in log space with a max shift, so nothing under- or
overflows. Observations are grouped by their sorted count signature ``c`` and each group is run
as one vectorized pass with shared state tables. Observations whose counts cannot be realised
(``Z = 0``, e.g. all tags asked but the counts sum to less than the window) are reported as
infeasible and get zero posteriors.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

__all__ = ["WindowPosteriors", "window_posteriors", "brute_force_posteriors"]

_CHUNK = 4096


@dataclass(frozen=True)
class WindowPosteriors:
    """``marginals`` (n, w_max, K): posterior tag probabilities per window position (zero past
    the window's length and for infeasible observations); ``log_z`` (n,): ``log P(N | x)``
    (``-inf`` when infeasible); ``feasible`` (n,) bool."""

    marginals: np.ndarray
    log_z: np.ndarray
    feasible: np.ndarray


def window_posteriors(
    probs: np.ndarray,
    length: np.ndarray,
    tag_mask: np.ndarray,
    counts: np.ndarray,
    *,
    floor: float = 0.0,
) -> WindowPosteriors:
    """Exact count posteriors for a batch of windows.

    Parameters
    ----------
    probs : (n, w_max, K) token priors ``p_j(t)``; rows past ``length[i]`` are ignored.
    length : (n,) window lengths (≥ 1).
    tag_mask, counts : (n, K) asked subset ``B`` and counts ``N`` (validated observations).
    floor : mix each prior with ``floor`` of the uniform distribution first,
        ``(p + floor) / (1 + K floor)``, so a confident model cannot make observed counts
        impossible; 0 gives the exact posterior of ``probs``.
    """
    probs = np.asarray(probs, dtype=np.float64)
    n, w_max, n_tags = probs.shape
    length = np.asarray(length, dtype=np.int64)
    if floor > 0:
        probs = (probs + floor) / (1.0 + n_tags * floor)
    positions = np.arange(w_max)
    inside = positions[None, :] < length[:, None]
    probs = np.where(inside[:, :, None], probs, 0.0)
    counts = np.where(tag_mask, counts, 0)
    other_count = length - counts.sum(axis=1)
    other_prob = np.einsum("ijk,ik->ij", probs, (~tag_mask).astype(np.float64))

    # Category table: columns 0..K-1 are the tags, column K is "other".
    category_counts = np.concatenate([counts, other_count[:, None]], axis=1)
    order = np.argsort(-category_counts, axis=1, kind="stable")[:, :w_max]
    signature = np.take_along_axis(category_counts, order, axis=1)
    extended = np.concatenate([probs, other_prob[:, :, None]], axis=2)

    marginals = np.zeros((n, w_max, n_tags))
    log_z = np.full(n, -np.inf)
    feasible = np.zeros(n, dtype=bool)
    keys, group_of = np.unique(signature, axis=0, return_inverse=True)
    group_of = group_of.ravel()
    for g, key in enumerate(keys):
        members = np.flatnonzero(group_of == g)
        c = tuple(int(v) for v in key if v > 0)
        m = len(c)
        w = sum(c)
        for chunk in np.array_split(members, max(1, -(-members.shape[0] // _CHUNK))):
            categories = order[chunk, :m]  # (g, m) in 0..K
            cat_probs = np.take_along_axis(
                extended[chunk, :w, :],
                np.broadcast_to(categories[:, None, :], (len(chunk), w, m)),
                2,
            )
            gamma, chunk_log_z, ok = _forward_backward(cat_probs, c)
            log_z[chunk] = chunk_log_z
            feasible[chunk] = ok
            gamma[~ok] = 0.0
            rows = chunk[:, None]
            cols = np.arange(w)[None, :]
            for k in range(m):
                tag = categories[:, k]
                is_tag = tag < n_tags
                if is_tag.any():
                    marginals[rows[is_tag], cols, tag[is_tag][:, None]] += gamma[is_tag, :, k]
                if (~is_tag).any():
                    sel = chunk[~is_tag]
                    share = probs[sel, :w, :] * (~tag_mask[sel])[:, None, :]
                    denominator = other_prob[sel, :w]
                    share /= np.where(denominator > 0, denominator, 1.0)[:, :, None]
                    marginals[sel, :w, :] += gamma[~is_tag, :, k][:, :, None] * share
    return WindowPosteriors(marginals=marginals, log_z=log_z, feasible=feasible)


@lru_cache(maxsize=512)
def _state_tables(c: tuple[int, ...]):
    """States ``0 ≤ s ≤ c`` (mixed radix), split into layers by ``Σ s``, with predecessor and
    successor indices per category (``S`` = sentinel for "no such state")."""
    dims = np.asarray(c) + 1
    n_states = int(np.prod(dims))
    digits = np.indices(dims).reshape(len(c), -1).T  # (S, m), C order
    strides = np.array([int(np.prod(dims[k + 1 :])) for k in range(len(c))])
    index = np.arange(n_states)
    layer = digits.sum(axis=1)
    pred = np.where(digits >= 1, index[:, None] - strides[None, :], n_states)
    succ = np.where(digits < np.asarray(c)[None, :], index[:, None] + strides[None, :], n_states)
    w = int(sum(c))
    layers = [np.flatnonzero(layer == j) for j in range(w + 1)]
    return n_states, layers, [pred[states] for states in layers], [succ[s] for s in layers]


def _forward_backward(cat_probs: np.ndarray, c: tuple[int, ...]):
    """Scaled forward-backward for one count signature. ``cat_probs``: (g, w, m)."""
    g, w, m = cat_probs.shape
    n_states, layers, preds, succs = _state_tables(c)
    alpha = np.zeros((g, n_states + 1))
    alpha[:, 0] = 1.0
    scale = np.ones((g, w))
    ok = np.ones(g, dtype=bool)
    for j in range(1, w + 1):
        values = np.einsum("gsk,gk->gs", alpha[:, preds[j]], cat_probs[:, j - 1, :])
        total = values.sum(axis=1)
        good = total > 0
        ok &= good
        total = np.where(good, total, 1.0)
        scale[:, j - 1] = total
        alpha[:, layers[j]] = values / total[:, None]
    beta = np.zeros((g, n_states + 1))
    beta[:, layers[w]] = 1.0
    gamma = np.empty((g, w, m))
    for j in range(w, 0, -1):
        previous = layers[j - 1]
        following = beta[:, succs[j - 1]]  # (g, |layer j-1|, m)
        weighted = following * cat_probs[:, j - 1, None, :]
        gamma[:, j - 1, :] = (
            np.einsum("gs,gsk->gk", alpha[:, previous], weighted) / scale[:, j - 1, None]
        )
        beta[:, previous] = weighted.sum(axis=2) / scale[:, j - 1, None]
    log_z = np.where(ok, np.log(scale).sum(axis=1), -np.inf)
    return gamma, log_z, ok


def brute_force_posteriors(
    probs: np.ndarray, tag_mask: np.ndarray, counts: np.ndarray
) -> tuple[np.ndarray, float]:
    """Reference for one window by enumerating all ``K^w`` taggings (tests only; tiny ``w``).

    ``probs`` (w, K), ``tag_mask``/``counts`` (K,). Returns (marginals (w, K), Z).
    """
    w, n_tags = probs.shape
    marginals = np.zeros((w, n_tags))
    z = 0.0
    asked = np.flatnonzero(tag_mask)
    for tagging in itertools.product(range(n_tags), repeat=w):
        tally = np.bincount(tagging, minlength=n_tags)
        if np.any(tally[asked] != counts[asked]):
            continue
        weight = float(np.prod(probs[np.arange(w), tagging]))
        z += weight
        marginals[np.arange(w), tagging] += weight
    if z > 0:
        marginals /= z
    return marginals, z
