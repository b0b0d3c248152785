"""Corpus encoding and the sparse design matrix of word-type counts per window.

A corpus is a list of sentences (lists of word forms). :func:`encode_corpus` maps every token to a
word-type id so that the rest of the core works on flat integer arrays. :func:`design_matrix` builds
``A`` (observations × word types) with ``A[i, a]`` = number of tokens of type ``a`` inside the
window of observation ``i``; the linear system of the method is ``A w_b ≈ N_b`` for each tag ``b``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .observations import Observations

__all__ = ["Corpus", "encode_corpus", "design_matrix", "coverage"]


@dataclass(frozen=True)
class Corpus:
    """Flat token arrays of a corpus.

    ``type_ids[offsets[s] + j]`` is the type of token ``j`` of sentence ``s``;
    ``vocabulary[a]`` is the form of type ``a`` (forms are case-sensitive).
    """

    type_ids: np.ndarray
    offsets: np.ndarray
    lengths: np.ndarray
    vocabulary: list[str]

    @property
    def n_types(self) -> int:
        return len(self.vocabulary)

    @property
    def n_tokens(self) -> int:
        return int(self.type_ids.shape[0])


def encode_corpus(sentences: Sequence[Sequence[str]]) -> Corpus:
    """Encode sentences (lists of forms) as flat type ids, in order of first appearance."""
    index: dict[str, int] = {}
    lengths = np.fromiter((len(s) for s in sentences), dtype=np.int64, count=len(sentences))
    type_ids = np.fromiter(
        (index.setdefault(form, len(index)) for sentence in sentences for form in sentence),
        dtype=np.int64,
        count=int(lengths.sum()),
    )
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    return Corpus(type_ids=type_ids, offsets=offsets, lengths=lengths, vocabulary=list(index))


def design_matrix(corpus: Corpus, observations: Observations) -> sp.csr_matrix:
    """``A`` (n_observations × n_types, float64 CSR): type counts inside each window."""
    obs, token = observations.token_index(corpus.offsets)
    values = np.ones(obs.shape[0])
    a = sp.csr_matrix(
        (values, (obs, corpus.type_ids[token])), shape=(len(observations), corpus.n_types)
    )
    a.sum_duplicates()
    return a


def coverage(corpus: Corpus, observations: Observations, weight: np.ndarray | None = None):
    """Per-type coverage ``n_a``: tokens of type ``a`` inside at least one window.

    A token covered by several windows counts once. With ``weight`` (one value per observation in
    [0, 1]) a token counts with the largest weight among the windows covering it. Returns
    ``(n_a per type, token weight per flat token)``.
    """
    obs, token = observations.token_index(corpus.offsets)
    token_weight = np.zeros(corpus.n_tokens)
    w = np.ones(len(observations)) if weight is None else np.asarray(weight, dtype=float)
    np.maximum.at(token_weight, token, w[obs])
    n_a = np.bincount(corpus.type_ids, weights=token_weight, minlength=corpus.n_types)
    return n_a, token_weight
