"""Region-count observations ``o = (r, B, N)`` as validated arrays.

Observation ``i`` says: in sentence ``sentence[i]``, the window ``r`` of ``length[i]`` tokens
starting at token ``start[i]`` (0-based) contains ``counts[i, b]`` tokens tagged ``b`` for every tag
``b`` with ``tag_mask[i, b]`` (the asked subset ``B``); it was given by annotator ``annotator[i]``
(any integer id, e.g. a database primary key). ``counts`` is meaningful only where ``tag_mask``.

Use :meth:`Observations.create` (arrays) or :meth:`Observations.from_records` (tag names) to build
one: both validate and clip windows longer than their sentence to the whole sentence.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["Observations"]


@dataclass(frozen=True)
class Observations:
    """Validated observations; every array has one row per observation.

    Attributes
    ----------
    sentence : (n,) int64 — index into the corpus' sentence list.
    start, length : (n,) int64 — window ``[start, start + length)`` inside the sentence.
    tag_mask : (n, K) bool — the asked tag subset ``B`` (non-empty).
    counts : (n, K) int64 — ``N[b]`` where ``tag_mask``; zero elsewhere.
    annotator : (n,) int64 — annotator id.
    """

    sentence: np.ndarray
    start: np.ndarray
    length: np.ndarray
    tag_mask: np.ndarray
    counts: np.ndarray
    annotator: np.ndarray

    @classmethod
    def create(
        cls,
        *,
        sentence: Sequence[int] | np.ndarray,
        start: Sequence[int] | np.ndarray,
        length: Sequence[int] | np.ndarray,
        tag_mask: np.ndarray,
        counts: np.ndarray,
        annotator: Sequence[int] | np.ndarray | None = None,
        sentence_lengths: Sequence[int] | np.ndarray,
        allow_empty: bool = False,
        released: bool = False,
    ) -> Observations:
        """Validate arrays and return new :class:`Observations` (inputs are not modified).

        ``sentence_lengths[s]`` is the number of tokens of sentence ``s``. A window with
        ``start == 0`` and ``length`` above the sentence length is clipped to the whole sentence;
        any other window reaching outside its sentence is an error. ``released``: the counts are
        a privacy mechanism's releases (:mod:`.privacy`), each within the window but not summing
        to at most its length. Raises ``ValueError`` naming the first offending observation.
        """
        sentence = _int_vector(sentence, "sentence")
        n = sentence.shape[0]
        start = _int_vector(start, "start", n)
        length = _int_vector(length, "length", n)
        annotator = (
            np.zeros(n, dtype=np.int64)
            if annotator is None
            else _int_vector(annotator, "annotator", n)
        )
        tag_mask = np.asarray(tag_mask)
        if tag_mask.dtype != bool:
            raise ValueError("tag_mask must be a boolean array")
        if tag_mask.ndim != 2 or tag_mask.shape[0] != n:
            raise ValueError(f"tag_mask must have shape (n_observations={n}, n_tags)")
        n_tags = tag_mask.shape[1]
        counts = np.asarray(counts)
        if counts.shape != tag_mask.shape:
            raise ValueError(f"counts must have the shape of tag_mask {tag_mask.shape}")
        if counts.size and not np.issubdtype(counts.dtype, np.integer):
            as_int = counts.astype(np.int64)
            if not np.array_equal(as_int, counts):
                raise ValueError("counts must be integers")
            counts = as_int
        counts = np.where(tag_mask, counts, 0).astype(np.int64)
        lengths = _int_vector(sentence_lengths, "sentence_lengths")

        if n == 0 and not allow_empty:
            raise ValueError("no observations: the observation set is empty")
        if n_tags == 0:
            raise ValueError("the tag set is empty")
        _fail_at(
            (sentence < 0) | (sentence >= lengths.shape[0]),
            lambda i: (
                f"sentence index {sentence[i]} is not in the corpus of {lengths.shape[0]} sentences"
            ),
        )
        sentence_length = lengths[sentence]
        _fail_at(length < 1, lambda i: f"window length {length[i]} must be at least 1")
        _fail_at(
            (start < 0) | (start >= sentence_length),
            lambda i: (
                f"window start {start[i]} is outside sentence {sentence[i]} "
                f"of {sentence_length[i]} tokens"
            ),
        )
        whole = (start == 0) & (length > sentence_length)
        length = np.where(whole, sentence_length, length)
        _fail_at(
            start + length > sentence_length,
            lambda i: (
                f"window [{start[i]}, {start[i] + length[i]}) reaches outside "
                f"sentence {sentence[i]} of {sentence_length[i]} tokens"
            ),
        )
        _fail_at(~tag_mask.any(axis=1), lambda i: "the asked tag subset B is empty")
        _fail_at(
            (counts < 0).any(axis=1),
            lambda i: f"negative count {counts[i].min()}",
        )
        _fail_at(
            (counts > length[:, None]).any(axis=1),
            lambda i: f"count {counts[i].max()} is above the window length {length[i]}",
        )
        if not released:  # a privacy mechanism releases each count on its own (.privacy)
            _fail_at(
                counts.sum(axis=1) > length,
                lambda i: f"counts sum to {counts[i].sum()}, above the window length {length[i]}",
            )
        return cls(
            sentence=sentence,
            start=start,
            length=length,
            tag_mask=tag_mask.copy(),
            counts=counts,
            annotator=annotator,
        )

    @classmethod
    def from_records(
        cls,
        records: Iterable[Mapping],
        tagset: Sequence[str],
        sentence_lengths: Sequence[int] | np.ndarray,
    ) -> Observations:
        """Build observations from mappings with tag names.

        Each record has ``sentence``, ``start``, ``length``, ``counts`` (a mapping tag name →
        count; its keys are the asked subset ``B``) and optionally ``annotator``.
        Unknown tag names raise ``ValueError``.
        """
        index = {tag: k for k, tag in enumerate(tagset)}
        rows = list(records)
        n, n_tags = len(rows), len(index)
        mask = np.zeros((n, n_tags), dtype=bool)
        counts = np.zeros((n, n_tags), dtype=np.int64)
        for i, record in enumerate(rows):
            for tag, count in record["counts"].items():
                if tag not in index:
                    raise ValueError(f"observation {i}: unknown tag {tag!r}")
                mask[i, index[tag]] = True
                counts[i, index[tag]] = count
        return cls.create(
            sentence=[r["sentence"] for r in rows],
            start=[r["start"] for r in rows],
            length=[r["length"] for r in rows],
            tag_mask=mask,
            counts=counts,
            annotator=[r.get("annotator", 0) for r in rows],
            sentence_lengths=sentence_lengths,
        )

    def __len__(self) -> int:
        return int(self.sentence.shape[0])

    @property
    def n_tags(self) -> int:
        return int(self.tag_mask.shape[1])

    def joined(self, other: Observations) -> Observations:
        """These observations followed by ``other``'s (both valid on the same sentences)."""
        return Observations(
            **{
                f.name: np.concatenate([getattr(self, f.name), getattr(other, f.name)])
                for f in dataclasses.fields(self)
            }
        )

    def subset(self, index: np.ndarray) -> Observations:
        """The observations selected by an integer or boolean index (already valid)."""
        return rows_of(self, index)

    def token_index(self, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Flat token positions covered by the windows.

        ``offsets[s]`` is the flat index of sentence ``s``'s first token. Returns
        ``(obs, token)``: observation ``obs[k]`` covers flat token ``token[k]``.
        """
        obs = np.repeat(np.arange(len(self)), self.length)
        first = np.repeat(offsets[self.sentence] + self.start, self.length)
        within = np.arange(obs.shape[0]) - np.repeat(
            np.cumsum(self.length) - self.length, self.length
        )
        return obs, first + within


def _int_vector(values, name: str, n: int | None = None) -> np.ndarray:
    array = np.asarray(values)
    if array.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional")
    if array.size and not np.issubdtype(array.dtype, np.integer):
        as_int = array.astype(np.int64)
        if not np.array_equal(as_int, array):
            raise ValueError(f"{name} must be integers")
        array = as_int
    array = array.astype(np.int64)
    if n is not None and array.shape[0] != n:
        raise ValueError(f"{name} has {array.shape[0]} entries, expected {n}")
    return array


def _fail_at(bad: np.ndarray, message) -> None:
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"observation {i}: {message(i)}")


def rows_of(answers, index: np.ndarray):
    """The rows ``index`` selects (integer or boolean) of a frozen dataclass of per-answer
    arrays, every field indexed alike (observations, verification answers)."""
    return type(answers)(
        **{field.name: getattr(answers, field.name)[index] for field in dataclasses.fields(answers)}
    )
