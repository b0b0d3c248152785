"""Distributional word classes learned from a corpus' own unlabelled text.

Every project uploads its whole corpus, and most of it is never shown to an annotator. Its text
alone says which words occur in similar contexts, and words in similar contexts tend to share a
tag, so classes of such words carry what the annotated windows teach to rare and unseen words.

For each lower-cased word type ``a`` count its left and right neighbours (the ``n_context`` most
frequent types, plus sentence boundaries), weight the counts by positive pointwise mutual
information,

    PPMI(a, c) = max(0, log P(a, c) / (P(a) P(c))),

take a truncated SVD ``M ≈ U S Vᵀ`` and embed ``a`` as the unit-normalized row of ``U S^½``.
K-means with the finest number of classes runs on the types seen at least ``min_count`` times
(weighted by frequency); coarser levels cluster the fine centroids (weighted by their mass), so the
levels nest like the prefixes of Brown clusters. Every type of the corpus, rare ones included,
gets the class of its nearest centroid at each level.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import svds

from .softmax import blas_one_thread

__all__ = ["WordClasses", "learn_word_classes", "kmeans"]

_BOUNDARY = "\x00"  # stands for "before the first / after the last token" in the context counts


@dataclass(frozen=True)
class WordClasses:
    """``forms[i]`` (lower case) has class ``classes[i, level]`` among ``sizes[level]``."""

    forms: tuple[str, ...]
    classes: np.ndarray
    sizes: tuple[int, ...]

    def lookup(self, forms: Sequence[str]) -> np.ndarray:
        """(len(forms), n_levels) class ids of ``forms`` (case-insensitive), −1 if unknown."""
        index = {form: i for i, form in enumerate(self.forms)}
        rows = np.fromiter(
            (index.get(form.lower(), -1) for form in forms), dtype=np.int64, count=len(forms)
        )
        out = np.full((len(forms), len(self.sizes)), -1, dtype=np.int64)
        known = rows >= 0
        out[known] = self.classes[rows[known]]
        return out


def learn_word_classes(
    sentences: Sequence[Sequence[str]],
    *,
    sizes: Sequence[int] = (64, 256, 1024),
    n_context: int = 1000,
    n_components: int = 64,
    min_count: int = 2,
    n_iter: int = 20,
    random_state: int | np.random.Generator | None = 0,
) -> WordClasses:
    """Learn nested word classes (see the module docstring) from ``sentences`` (lists of forms)."""
    with blas_one_thread():
        return _learn(sentences, sizes, n_context, n_components, min_count, n_iter, random_state)


def _learn(sentences, sizes, n_context, n_components, min_count, n_iter, random_state):
    rng = np.random.default_rng(random_state)
    sizes = tuple(sorted(int(k) for k in sizes))
    if not sizes or sizes[0] < 2:
        raise ValueError("sizes must be at least 2")
    index: dict[str, int] = {_BOUNDARY: 0}
    flat: list[int] = []
    bounds = [0]
    for sentence in sentences:
        flat.extend(index.setdefault(form.lower(), len(index)) for form in sentence)
        bounds.append(len(flat))
    forms = list(index)
    tokens = np.asarray(flat, dtype=np.int64)
    n_types = len(forms)
    frequency = np.bincount(tokens, minlength=n_types).astype(np.float64)
    if tokens.size == 0:
        raise ValueError("no tokens to learn word classes from")

    # Neighbour pairs (left and right, boundary-padded).
    starts = np.asarray(bounds[:-1])
    ends = np.asarray(bounds[1:])
    position = np.arange(tokens.shape[0])
    sentence_of = np.repeat(np.arange(starts.shape[0]), ends - starts)
    left = np.where(position > starts[sentence_of], tokens[np.maximum(position - 1, 0)], 0)
    right = np.where(
        position < ends[sentence_of] - 1, tokens[np.minimum(position + 1, tokens.size - 1)], 0
    )
    context_types = np.argsort(-frequency, kind="stable")[:n_context]
    context_types = np.union1d(context_types, [0])  # the boundary is always a context
    column = np.full(n_types, -1)
    column[context_types] = np.arange(context_types.shape[0])
    n_cols = context_types.shape[0]
    rows, cols = [], []
    for neighbour, shift in ((left, 0), (right, n_cols)):
        keep = column[neighbour] >= 0
        rows.append(tokens[keep])
        cols.append(column[neighbour[keep]] + shift)
    counts = sp.csr_matrix(
        (np.ones(sum(r.shape[0] for r in rows)), (np.concatenate(rows), np.concatenate(cols))),
        shape=(n_types, 2 * n_cols),
    )
    counts.sum_duplicates()
    embedding = _ppmi_svd(counts, min(n_components, min(counts.shape) - 1), rng)

    fitted = np.flatnonzero(frequency >= min_count)
    fitted = fitted[fitted != 0]
    if fitted.shape[0] < sizes[-1]:
        fitted = np.flatnonzero(frequency > 0)
    k_fine = min(sizes[-1], fitted.shape[0])
    centroids, _ = kmeans(
        embedding[fitted], k_fine, weights=frequency[fitted], n_iter=n_iter, random_state=rng
    )
    fine = _nearest(embedding, centroids)
    mass = np.bincount(fine, weights=frequency, minlength=k_fine)
    levels = []
    for size in sizes[:-1]:
        coarse_centroids, coarse_of_fine = kmeans(
            centroids, min(size, k_fine), weights=mass + 1e-9, n_iter=n_iter, random_state=rng
        )
        levels.append(coarse_of_fine[fine])
    levels.append(fine)
    classes = np.stack(levels, axis=1)[1:]  # drop the boundary pseudo-type
    return WordClasses(forms=tuple(forms[1:]), classes=classes, sizes=sizes)


def _ppmi_svd(counts: sp.csr_matrix, k: int, rng: np.random.Generator) -> np.ndarray:
    total = counts.sum()
    row = np.asarray(counts.sum(axis=1)).ravel()
    col = np.asarray(counts.sum(axis=0)).ravel() ** 0.75  # context smoothing (Levy et al. 2015)
    col_p = col / col.sum()
    coo = counts.tocoo()
    pmi = np.log(coo.data / total) - np.log(row[coo.row] / total) - np.log(col_p[coo.col])
    keep = pmi > 0
    ppmi = sp.csr_matrix((pmi[keep], (coo.row[keep], coo.col[keep])), shape=counts.shape)
    v0 = rng.standard_normal(min(ppmi.shape))
    u, s, _ = svds(ppmi, k=k, v0=v0)
    embedding = u * np.sqrt(s)
    norm = np.linalg.norm(embedding, axis=1, keepdims=True)
    return embedding / np.where(norm > 0, norm, 1.0)


def _nearest(points: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """Index of the nearest centroid of every point (in float32: a near tie either way is as
    good a class, and the products take half the time)."""
    out = np.empty(points.shape[0], dtype=np.int64)
    c = centroids.astype(np.float32)
    c_sq = (c**2).sum(axis=1)
    for chunk in range(0, points.shape[0], 4096):
        block = points[chunk : chunk + 4096].astype(np.float32)
        out[chunk : chunk + 4096] = np.argmin(c_sq[None, :] - 2.0 * block @ c.T, axis=1)
    return out


def kmeans(
    points: np.ndarray,
    k: int,
    *,
    weights: np.ndarray | None = None,
    n_iter: int = 20,
    random_state: int | np.random.Generator | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Weighted k-means (k-means++ seeding, then Lloyd). Returns ``(centroids, assignment)``."""
    rng = np.random.default_rng(random_state)
    n = points.shape[0]
    if not 1 <= k <= n:
        raise ValueError(f"k must be between 1 and the number of points ({n})")
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
    chosen = [int(rng.choice(n, p=w / w.sum()))]
    distance = ((points - points[chosen[0]]) ** 2).sum(axis=1)
    for _ in range(1, k):
        p = w * distance
        total = p.sum()
        nxt = int(rng.choice(n, p=p / total)) if total > 0 else int(rng.integers(n))
        chosen.append(nxt)
        np.minimum(distance, ((points - points[nxt]) ** 2).sum(axis=1), out=distance)
    centroids = points[chosen].copy()
    assignment = _nearest(points, centroids)
    for _ in range(n_iter):
        mass = np.bincount(assignment, weights=w, minlength=k)
        member = sp.csr_matrix((w, (assignment, np.arange(n))), shape=(k, n))
        sums = member @ points
        empty = mass == 0
        centroids[~empty] = sums[~empty] / mass[~empty, None]
        new = _nearest(points, centroids)
        if np.array_equal(new, assignment):
            break
        assignment = new
    return centroids, assignment
