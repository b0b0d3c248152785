"""Synthetic corpora with a known word→tag distribution w*, for consistency tests."""

from __future__ import annotations

import numpy as np


def make_corpus(
    rng: np.random.Generator,
    *,
    n_sentences: int,
    n_words: int = 40,
    n_tags: int = 4,
    sentence_length: tuple[int, int] = (3, 9),
    concentration: float = 0.3,
):
    """Sentences of words ``w0..w{n_words-1}`` (Zipf-like frequencies) whose tags are drawn from
    ``w_star[word]``. Returns (sentences, gold tag indices per sentence, w_star, tagset)."""
    w_star = rng.dirichlet(np.full(n_tags, concentration), size=n_words)
    frequency = 1.0 / np.arange(1, n_words + 1) ** 0.8
    frequency /= frequency.sum()
    lengths = rng.integers(sentence_length[0], sentence_length[1] + 1, size=n_sentences)
    words = rng.choice(n_words, size=int(lengths.sum()), p=frequency)
    cumulative = np.cumsum(w_star[words], axis=1)
    tags = np.minimum((rng.random(words.shape[0])[:, None] > cumulative).sum(axis=1), n_tags - 1)
    names = np.array([f"w{a}" for a in range(n_words)])
    bounds = np.cumsum(lengths)[:-1]
    sentences = [list(s) for s in np.split(names[words], bounds)]
    gold = [t.tolist() for t in np.split(tags, bounds)]
    tagset = [f"T{k}" for k in range(n_tags)]
    return sentences, gold, w_star, tagset


def random_cost(rng: np.random.Generator, k: int) -> np.ndarray:
    """A random K × K cost matrix of the kind a manager sets: non-negative, zero diagonal, at a
    random scale."""
    cost = rng.random((k, k)) * rng.uniform(0.5, 3)
    np.fill_diagonal(cost, 0.0)
    return cost
