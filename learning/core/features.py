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

__all__ = ["FeatureConfig", "feature_strings", "featurize"]

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
