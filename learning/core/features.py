"""Hashed features of a word form alone: form, lower case, prefixes, suffixes and shape.

Each feature string (e.g. ``"s3=ing"``) is mapped to a column by CRC-32 modulo ``n_features``
(a stable hash, unlike Python's salted ``hash``), so the parameter vector has a fixed size, a model
can be warm-started from any earlier version, and words never seen in training still get features.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np
import scipy.sparse as sp

__all__ = [
    "ContextConfig",
    "FeatureConfig",
    "feature_strings",
    "featurize",
    "featurize_tokens",
    "join_rows",
    "neighbour_tag_features",
]

_REPEATS = re.compile(r"(.)\1+")


@dataclass(frozen=True)
class FeatureConfig:
    """Which features to extract, and the hashed dimension. Stored in model files as JSON."""

    n_features: int = 2**18
    prefix_lengths: tuple[int, ...] = (1, 2, 3)
    suffix_lengths: tuple[int, ...] = (1, 2, 3, 4)
    form: bool = True
    lower: bool = True
    shape: bool = True

    def __post_init__(self) -> None:
        if self.n_features < 2:
            raise ValueError("n_features must be at least 2")
        object.__setattr__(self, "prefix_lengths", tuple(int(k) for k in self.prefix_lengths))
        object.__setattr__(self, "suffix_lengths", tuple(int(k) for k in self.suffix_lengths))

    def to_dict(self) -> dict:
        data = asdict(self)
        data["prefix_lengths"] = list(self.prefix_lengths)
        data["suffix_lengths"] = list(self.suffix_lengths)
        return data

    @classmethod
    def from_dict(cls, data: dict) -> FeatureConfig:
        known = {"n_features", "prefix_lengths", "suffix_lengths", "form", "lower", "shape"}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown feature settings: {sorted(unknown)}")
        return cls(**data)


def word_shape(form: str) -> str:
    """``"McDonald's"`` → ``"XxXx'x"``: letters and digits mapped to X/x/d, runs collapsed."""
    shape = "".join(
        "X" if c.isupper() else "x" if c.isalpha() else "d" if c.isdigit() else c for c in form
    )
    return _REPEATS.sub(r"\1", shape)


def feature_strings(form: str, config: FeatureConfig) -> list[str]:
    """The feature names of one word form (before hashing)."""
    lower = form.lower()
    features = []
    if config.form and form != lower:  # for lower-case forms "l=" already says it
        features.append("w=" + form)
    if config.lower:
        features.append("l=" + lower)
    for k in config.prefix_lengths:
        if len(lower) >= k:
            features.append(f"p{k}={lower[:k]}")
    for k in config.suffix_lengths:
        if len(lower) >= k:
            features.append(f"s{k}={lower[-k:]}")
    if config.shape:
        features.append("h=" + word_shape(form))
    return features


def featurize(forms: Sequence[str], config: FeatureConfig) -> sp.csr_matrix:
    """Binary CSR matrix (len(forms) × n_features) of hashed features, one row per form."""
    indptr = [0]
    indices: list[int] = []
    n_features = config.n_features
    for form in forms:
        for name in feature_strings(form, config):
            indices.append(zlib.crc32(name.encode("utf-8")) % n_features)
        indptr.append(len(indices))
    data = np.ones(len(indices), dtype=np.float64)
    matrix = sp.csr_matrix(
        (data, np.asarray(indices, dtype=np.int64), np.asarray(indptr, dtype=np.int64)),
        shape=(len(forms), n_features),
    )
    matrix.sum_duplicates()
    matrix.data[:] = 1.0
    return matrix


# --------------------------------------------------------------------- context (token) features
_MIX_A = np.uint64(0x9E3779B97F4A7C15)
_MIX_B = np.uint64(0xBF58476D1CE4E5B9)
_MIX_C = np.uint64(0x94D049BB133111EB)


def _mix(values: np.ndarray, salt: int) -> np.ndarray:
    """A 64-bit finalizer (splitmix64) of ``values`` combined with ``salt``: positions and
    templates get independent hashes of the same base value."""
    with np.errstate(over="ignore"):
        h = values.astype(np.uint64) * _MIX_A + np.uint64(salt & 0xFFFFFFFF) * _MIX_C
        h ^= h >> np.uint64(30)
        h *= _MIX_B
        h ^= h >> np.uint64(27)
        h *= _MIX_C
        h ^= h >> np.uint64(31)
    return h


def _crc(strings) -> np.ndarray:
    return np.fromiter(
        (zlib.crc32(s.encode("utf-8")) for s in strings), dtype=np.uint64, count=len(strings)
    )


_OFFSET_FIELDS = ("offsets", "neighbour_suffixes", "class_offsets", "tag_offsets")


@dataclass(frozen=True)
class ContextConfig:
    """Features of a token in its sentence: its own word features (:class:`FeatureConfig`, in the
    same hashed space, so a node-only model's weights carry over), its neighbours' lower case,
    suffixes and shape at ``offsets``, the word bigrams with both neighbours, and the word
    classes (:mod:`.wordclasses`) of the tokens at ``class_offsets``. With ``tag_offsets`` the
    tagger has a second stage that also reads its neighbours' likely tags there
    (:func:`neighbour_tag_features`; ``tag_pairs``: and the pairs of them). Stored in model
    files."""

    word: FeatureConfig = FeatureConfig()
    offsets: tuple[int, ...] = (-2, -1, 1, 2)
    neighbour_suffixes: tuple[int, ...] = (1, 2, 3)
    neighbour_lower: bool = True
    neighbour_shape: bool = True
    bigrams: bool = True
    class_offsets: tuple[int, ...] = (-1, 0, 1)
    tag_offsets: tuple[int, ...] = (-2, -1, 1, 2)
    tag_pairs: bool = True

    def __post_init__(self) -> None:
        if isinstance(self.word, dict):
            object.__setattr__(self, "word", FeatureConfig.from_dict(self.word))
        for name in _OFFSET_FIELDS:
            object.__setattr__(self, name, tuple(int(k) for k in getattr(self, name)))
        if 0 in self.offsets or 0 in self.tag_offsets:
            raise ValueError("offsets are the neighbours' positions: 0 is the token itself")

    @property
    def n_features(self) -> int:
        return self.word.n_features

    def to_dict(self) -> dict:
        data = asdict(self)
        data["word"] = self.word.to_dict()
        for name in _OFFSET_FIELDS:
            data[name] = list(getattr(self, name))
        return data

    @classmethod
    def from_dict(cls, data: dict) -> ContextConfig:
        known = {f for f in cls.__dataclass_fields__}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown context feature settings: {sorted(unknown)}")
        return cls(**data)


def featurize_tokens(
    sentences: Sequence[Sequence[str]],
    config: ContextConfig,
    word_classes=None,
) -> sp.csr_matrix:
    """Binary CSR matrix (n_tokens × n_features), one row per token of ``sentences`` in order.

    Work is per word type where it can be (strings are hashed once per type); token rows are then
    gathered and the neighbour features hashed with their offset, all in array arithmetic."""
    vocabulary: dict[str, int] = {}
    lengths = np.fromiter((len(s) for s in sentences), dtype=np.int64, count=len(sentences))
    type_ids = np.fromiter(
        (vocabulary.setdefault(form, len(vocabulary)) for s in sentences for form in s),
        dtype=np.int64,
        count=int(lengths.sum()),
    )
    forms = list(vocabulary)
    n_tokens = type_ids.shape[0]
    n_features = config.n_features
    own = featurize(forms, config.word)[type_ids] if n_tokens else sp.csr_matrix((0, n_features))

    # Base hashes per type and template (row 0 / 1 of each: before / after the sentence).
    lower = [f.lower() for f in forms]
    templates: list[tuple[str, np.ndarray]] = []
    if config.neighbour_lower:
        templates.append(("l", _crc(["l=<s>", "l=</s>"] + ["l=" + w for w in lower])))
    for k in config.neighbour_suffixes:
        templates.append(
            (f"s{k}", _crc([f"s{k}=<s>", f"s{k}=</s>"] + [f"s{k}=" + w[-k:] for w in lower]))
        )
    if config.neighbour_shape:
        templates.append(("h", _crc(["h=<s>", "h=</s>"] + ["h=" + word_shape(f) for f in forms])))
    if word_classes is not None and config.class_offsets:
        classes = word_classes.lookup(forms)
        for level, size in enumerate(word_classes.sizes):
            names = [f"c{size}=<s>", f"c{size}=</s>"] + [
                f"c{size}={c}" if c >= 0 else f"c{size}=?" for c in classes[:, level]
            ]
            templates.append((f"c{size}", _crc(names)))

    offsets_in_sentence = np.arange(n_tokens) - np.repeat(
        np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths
    )
    length_of = np.repeat(lengths, lengths)

    def neighbour_rows(d: int) -> np.ndarray:
        """Row of the base-hash tables for the token at offset ``d``: 0 = before the sentence,
        1 = after it, else 2 + its type."""
        position = offsets_in_sentence + d
        inside = (position >= 0) & (position < length_of)
        target = np.clip(np.arange(n_tokens) + d, 0, max(n_tokens - 1, 0))
        return np.where(inside, type_ids[target] + 2, np.where(position < 0, 0, 1))

    columns: list[np.ndarray] = []
    rows_at = {d: neighbour_rows(d) for d in set(config.offsets) | set(config.class_offsets) | {0}}
    for salt, (name, base) in enumerate(templates):
        is_class = name.startswith("c")
        for d in config.class_offsets if is_class else config.offsets:
            columns.append(_mix(base[rows_at[d]], 1000 * (salt + 1) + d + 50))
    if config.bigrams and config.neighbour_lower:
        base = templates[0][1]
        here = base[rows_at[0]]
        for d in (-1, 1):
            rows_at.setdefault(d, neighbour_rows(d))
            columns.append(_mix(_mix(base[rows_at[d]], 77 + d) ^ here, 99 + d))
    if not columns:
        return own
    context = np.stack(columns, axis=1) % np.uint64(n_features)
    m = context.shape[1]
    extra = sp.csr_matrix(
        (
            np.ones(n_tokens * m),
            context.ravel().astype(np.int64),
            np.arange(0, n_tokens * m + 1, m),
        ),
        shape=(n_tokens, n_features),
    )
    matrix = (own + extra).tocsr()
    matrix.sum_duplicates()
    matrix.data[:] = 1.0
    return matrix


# Pairs of neighbours whose likely tags are read together (both offsets in ``tag_offsets``).
_TAG_PAIRS = ((-1, 1), (-2, -1), (1, 2))


def neighbour_tag_features(
    probs: np.ndarray,
    lengths: np.ndarray,
    tagset: Sequence[str],
    config: ContextConfig,
    rows: np.ndarray | None = None,
) -> sp.csr_matrix:
    """(n_tokens × n_features) features of each token's neighbours' tags, from ``probs``
    (n_tokens, K): a first-stage model's tag probabilities of every token of sentences of
    ``lengths``, in order. For each offset ``d`` in ``config.tag_offsets`` and tag ``b``, the
    feature ``"t{d}={b}"`` has the value ``probs[j + d, b]`` (0 past the sentence's ends; values
    under 1e-3 are left out, they would only fill the matrix); with ``tag_pairs``, the most
    likely tags of the neighbours at ``(−1, +1)``, ``(−2, −1)`` and ``(+1, +2)`` are one binary
    feature each (``<s>``/``</s>`` past the ends). Hashed by tag name into the word features'
    space, so models with other tag sets or orders keep their meaning. ``rows``: those tokens'
    rows only (flat indices, in the order given), their neighbours still read in ``probs``."""
    n_all, n_tags = probs.shape
    n_features = config.n_features
    lengths = np.asarray(lengths, dtype=np.int64)
    if int(lengths.sum()) != n_all:
        raise ValueError("lengths must add up to the number of rows of probs")
    token = np.arange(n_all) if rows is None else np.asarray(rows, dtype=np.int64)
    n_tokens = token.shape[0]
    offsets = config.tag_offsets
    pairs = [p for p in _TAG_PAIRS if config.tag_pairs and set(p) <= set(offsets)]
    if not offsets:
        return sp.csr_matrix((n_tokens, n_features))
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    position = np.arange(n_all) - np.repeat(starts, lengths)
    length_of = np.repeat(lengths, lengths)
    if rows is not None:
        position, length_of = position[token], length_of[token]
    # Built straight into CSR (no COO sort: this runs at every contextual M-step). Each row has
    # a slot per offset and tag, kept when its value reaches 1e-3, then one per pair (always).
    reach = max(abs(d) for d in offsets)
    padded = np.zeros((n_all + 2 * reach, n_tags))
    padded[reach : reach + n_all] = probs
    n_slots = len(offsets) * n_tags
    values = np.ones((n_tokens, n_slots + len(pairs)))
    columns = np.empty((n_tokens, n_slots + len(pairs)), dtype=np.int32)
    columns[:, :n_slots] = np.concatenate(
        [_crc([f"t{d}={name}" for name in tagset]) % np.uint64(n_features) for d in offsets]
    ).astype(np.int32)
    for i, d in enumerate(offsets):
        inside = (position + d >= 0) & (position + d < length_of)
        neighbours = (
            padded[reach + d : reach + d + n_all] if rows is None else padded[reach + d + token]
        )
        np.multiply(neighbours, inside[:, None], out=values[:, i * n_tags : (i + 1) * n_tags])
    if pairs:
        best = probs.argmax(axis=1) if n_all else np.zeros(0, dtype=np.int64)
        names = _crc([*tagset, "<s>", "</s>"])
        padded_best = np.zeros(n_all + 2 * reach, dtype=np.int64)
        padded_best[reach : reach + n_all] = best
        for p, (first, second) in enumerate(pairs):
            pair = []
            for d in (first, second):
                where = position + d
                inside = (where >= 0) & (where < length_of)
                edge = np.where(where < 0, n_tags, n_tags + 1)
                neighbour = padded_best[reach + d + token]
                pair.append(names[np.where(inside, neighbour, edge)])
            salt = 300 + 10 * first + second
            hashed = _mix(_mix(pair[0], salt) ^ pair[1], salt + 1) % np.uint64(n_features)
            columns[:, n_slots + p] = hashed
    kept = values >= 1e-3
    indptr = np.zeros(n_tokens + 1, dtype=np.int64)
    np.cumsum(kept.sum(axis=1), out=indptr[1:])
    # Rows may hold a column twice (hash collisions): products and sums add them up.
    return sp.csr_matrix((values[kept], columns[kept], indptr), shape=(n_tokens, n_features))


def join_rows(x: sp.csr_matrix, extra: sp.csr_matrix) -> sp.csr_matrix:
    """``x + extra`` as products and sums read it: each row holds the entries of both, a column
    possibly twice (as hashed features already may). Built by one C stack of the two side by side,
    without the sorted merge of ``x + extra`` (a fifth of an online update, measured)."""
    if x.shape != extra.shape:
        raise ValueError(f"shapes differ: {x.shape} and {extra.shape}")
    width = x.shape[1]
    joined = sp.hstack([x, extra], format="csr")
    indices = joined.indices
    indices[indices >= width] -= width
    return sp.csr_matrix((joined.data, indices, joined.indptr), shape=x.shape)
