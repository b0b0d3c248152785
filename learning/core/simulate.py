"""A seeded simulated crowd answering region-count tasks on a gold-tagged corpus.

Tasks follow the paper's supervision ``S(o | y)``: for each sentence, ``obs_per_sentence`` windows
of ``window`` tokens with a uniformly random start (the whole sentence when it is shorter), and a
uniformly random subset ``B`` of ``tags_per_task`` tags (or all tags). Each task goes to an
annotator drawn uniformly from the crowd, whose kind decides the answer:

* ``exact``   — the true counts ``N[b] = #{j ∈ r : y_j = b}``;
* ``noisy``   — the true counts, but with probability ``noise_rate`` one asked count is off by one
  (direction random, kept valid: ``0 ≤ N[b]`` and ``Σ N ≤ w``);
* ``spammer`` — a count vector drawn uniformly from all valid answers (a uniform composition of
  ``w`` into the asked tags plus "other"), independent of the sentence.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .observations import Observations

__all__ = ["SimulatedCrowd", "simulate_crowd", "simulated_answer", "ANNOTATOR_KINDS"]

ANNOTATOR_KINDS = ("exact", "noisy", "spammer")


@dataclass(frozen=True)
class SimulatedCrowd:
    """The observations and the hidden kind of every annotator (``annotator_kind[a]`` for id
    ``a`` in ``0..n_annotators-1``)."""

    observations: Observations
    annotator_kind: np.ndarray

    def annotators_of_kind(self, kind: str) -> np.ndarray:
        return np.flatnonzero(self.annotator_kind == kind)


def simulate_crowd(
    gold_tags: Sequence[Sequence[int]],
    n_tags: int,
    *,
    window: int,
    obs_per_sentence: int = 1,
    tags_per_task: int | None = None,
    n_annotators: int = 20,
    spam_fraction: float = 0.0,
    noisy_fraction: float = 0.0,
    noise_rate: float = 0.2,
    random_state: int | np.random.Generator | None = None,
) -> SimulatedCrowd:
    """Simulate answers. ``gold_tags[s]`` are the tag indices (0..n_tags-1) of sentence ``s``;
    ``tags_per_task=None`` asks all tags. Annotator kinds are assigned at random with
    ``round(spam_fraction · n_annotators)`` spammers and ``round(noisy_fraction · n_annotators)``
    noisy annotators."""
    if window < 1:
        raise ValueError("window must be at least 1")
    if obs_per_sentence < 1:
        raise ValueError("obs_per_sentence must be at least 1")
    if tags_per_task is not None and not 1 <= tags_per_task <= n_tags:
        raise ValueError(f"tags_per_task must be between 1 and {n_tags}")
    if n_annotators < 1:
        raise ValueError("n_annotators must be at least 1")
    if not (0 <= spam_fraction <= 1 and 0 <= noisy_fraction <= 1):
        raise ValueError("spam_fraction and noisy_fraction must be in [0, 1]")
    if spam_fraction + noisy_fraction > 1:
        raise ValueError("spam_fraction + noisy_fraction must not exceed 1")
    rng = np.random.default_rng(random_state)

    lengths = np.array([len(t) for t in gold_tags], dtype=np.int64)
    usable = np.flatnonzero(lengths > 0)
    flat = np.concatenate([np.asarray(t, dtype=np.int64) for t in gold_tags] + [np.zeros(0, int)])
    if flat.size and (flat.min() < 0 or flat.max() >= n_tags):
        raise ValueError("gold tag index outside 0..n_tags-1")
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    cumulative = np.zeros((flat.shape[0] + 1, n_tags), dtype=np.int32)
    np.cumsum(np.eye(n_tags, dtype=np.int32)[flat], axis=0, out=cumulative[1:])

    sentence = np.repeat(usable, obs_per_sentence)
    n = sentence.shape[0]
    sentence_length = lengths[sentence]
    length = np.minimum(window, sentence_length)
    start = (rng.random(n) * (sentence_length - length + 1)).astype(np.int64)
    first = offsets[sentence] + start
    true_counts = (cumulative[first + length] - cumulative[first]).astype(np.int64)

    if tags_per_task is None:
        mask = np.ones((n, n_tags), dtype=bool)
    else:
        chosen = np.argsort(rng.random((n, n_tags)), axis=1)[:, :tags_per_task]
        mask = np.zeros((n, n_tags), dtype=bool)
        np.put_along_axis(mask, chosen, True, axis=1)

    n_spam = int(round(spam_fraction * n_annotators))
    n_noisy = int(round(noisy_fraction * n_annotators))
    kinds = np.array(
        ["spammer"] * n_spam + ["noisy"] * n_noisy + ["exact"] * (n_annotators - n_spam - n_noisy)
    )
    kinds = kinds[rng.permutation(n_annotators)]
    annotator = rng.integers(0, n_annotators, size=n)

    counts = np.where(mask, true_counts, 0)
    kind_of = kinds[annotator]
    # Spammers first, then noisy annotators: the order the random draws are made in.
    for kind in ("spammer", "noisy"):
        for i in np.flatnonzero(kind_of == kind):
            counts[i] = simulated_answer(
                kind, counts[i], mask[i], int(length[i]), rng, noise_rate=noise_rate
            )

    observations = Observations.create(
        sentence=sentence,
        start=start,
        length=length,
        tag_mask=mask,
        counts=counts,
        annotator=annotator,
        sentence_lengths=lengths,
        allow_empty=True,
    )
    return SimulatedCrowd(observations=observations, annotator_kind=kinds)


def simulated_answer(
    kind: str,
    true_counts: np.ndarray,
    mask: np.ndarray,
    window: int,
    rng: np.random.Generator,
    *,
    noise_rate: float = 0.2,
) -> np.ndarray:
    """The answer an annotator of ``kind`` gives to one task whose true counts over all tags are
    ``true_counts`` (entries outside ``mask`` are ignored and come back as 0)."""
    if kind not in ANNOTATOR_KINDS:
        raise ValueError(f"unknown annotator kind {kind!r}; expected one of {ANNOTATOR_KINDS}")
    counts = np.where(mask, true_counts, 0)
    if kind == "spammer":
        return _uniform_answer(mask, window, rng)
    if kind == "noisy" and rng.random() < noise_rate:
        return _off_by_one(counts, mask, window, rng)
    return counts


def _uniform_answer(mask: np.ndarray, w: int, rng: np.random.Generator) -> np.ndarray:
    """A uniformly random composition of ``w`` into the asked tags (+ "other" unless all)."""
    asked = np.flatnonzero(mask)
    m = asked.shape[0] + (0 if mask.all() else 1)
    bars = np.sort(rng.choice(w + m - 1, size=m - 1, replace=False))
    parts = np.diff(np.concatenate([[-1], bars, [w + m - 1]])) - 1
    answer = np.zeros(mask.shape[0], dtype=np.int64)
    answer[asked] = parts[: asked.shape[0]]
    return answer


def _off_by_one(counts: np.ndarray, mask: np.ndarray, w: int, rng: np.random.Generator):
    answer = counts.copy()
    b = rng.choice(np.flatnonzero(mask))
    step = int(rng.choice((-1, 1)))
    for delta in (step, -step):
        if answer[b] + delta >= 0 and answer.sum() + delta <= w:
            answer[b] += delta
            break
    return answer
