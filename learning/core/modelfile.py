"""Model files: plain arrays in an ``.npz`` archive plus a JSON header — never pickle.

Layout (format version 1)::

    header      uint8 array: UTF-8 JSON {"format": "tally-tagger", "format_version": 1,
                "tagset": [...], "features": {...FeatureConfig...}, "alpha": ...,
                "metadata": {...}}
    coef_rows   int64 (r,): the non-zero rows of coef_ (features that occur)
    coef_values float64 (r, K)
    intercept   float64 (K,)

Loading uses ``np.load(allow_pickle=False)``: object arrays and pickled data are refused, so a
model file can never run code. Every field is checked and a bad file raises
:class:`ModelFileError` (a ``ValueError``).
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import IO

import numpy as np

from .features import FeatureConfig
from .tagger import LogLinearTagger

__all__ = ["FORMAT_VERSION", "ModelFileError", "save_tagger", "load_tagger"]

FORMAT_NAME = "tally-tagger"
FORMAT_VERSION = 1
_ARRAYS = {"header", "coef_rows", "coef_values", "intercept"}


class ModelFileError(ValueError):
    """The file is not a valid Tally model file."""


def save_tagger(
    tagger: LogLinearTagger, file: str | Path | IO[bytes], *, metadata: dict | None = None
) -> None:
    """Write a fitted tagger (and JSON-serializable ``metadata``) to ``file``."""
    config = tagger.feature_config_
    header = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "tagset": list(tagger.tagset_),
        "features": config.to_dict(),
        "alpha": float(tagger.alpha),
        "metadata": metadata or {},
    }
    rows = np.flatnonzero(np.any(tagger.coef_ != 0, axis=1)).astype(np.int64)
    encoded = np.frombuffer(json.dumps(header).encode("utf-8"), dtype=np.uint8)
    np.savez_compressed(
        file,
        header=encoded,
        coef_rows=rows,
        coef_values=np.ascontiguousarray(tagger.coef_[rows], dtype=np.float64),
        intercept=np.asarray(tagger.intercept_, dtype=np.float64),
    )


def load_tagger(file: str | Path | IO[bytes]) -> tuple[LogLinearTagger, dict]:
    """Read a model file; returns ``(tagger, metadata)``. Raises :class:`ModelFileError`."""
    try:
        with np.load(file, allow_pickle=False) as archive:
            if not isinstance(archive, np.lib.npyio.NpzFile):
                raise ModelFileError("not a model file: expected an .npz archive")
            names = set(archive.files)
            if names != _ARRAYS:
                raise ModelFileError(f"unexpected arrays in model file: {sorted(names)}")
            arrays = {name: archive[name] for name in _ARRAYS}
    except ModelFileError:
        raise
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
        raise ModelFileError(f"cannot read model file: {exc}") from exc
    except AttributeError as exc:  # np.load returned a bare array
        raise ModelFileError("not a model file: expected an .npz archive") from exc

    header_bytes = arrays["header"]
    if header_bytes.dtype != np.uint8 or header_bytes.ndim != 1:
        raise ModelFileError("malformed header")
    try:
        header = json.loads(header_bytes.tobytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise ModelFileError(f"malformed header: {exc}") from exc
    if not isinstance(header, dict) or header.get("format") != FORMAT_NAME:
        raise ModelFileError("not a Tally tagger file")
    if header.get("format_version") != FORMAT_VERSION:
        raise ModelFileError(
            f"unsupported format version {header.get('format_version')!r} "
            f"(this version reads {FORMAT_VERSION})"
        )
    tagset = header.get("tagset")
    if not isinstance(tagset, list) or not tagset or not all(isinstance(t, str) for t in tagset):
        raise ModelFileError("malformed tag set")
    try:
        config = FeatureConfig.from_dict(header["features"])
        alpha = float(header["alpha"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ModelFileError(f"malformed feature configuration: {exc}") from exc
    metadata = header.get("metadata", {})

    n_tags = len(tagset)
    rows, values, intercept = arrays["coef_rows"], arrays["coef_values"], arrays["intercept"]
    if rows.dtype.kind not in "iu" or rows.ndim != 1:
        raise ModelFileError("coef_rows must be a 1-D integer array")
    if values.dtype != np.float64 or values.shape != (rows.shape[0], n_tags):
        raise ModelFileError("coef_values has the wrong type or shape")
    if intercept.dtype != np.float64 or intercept.shape != (n_tags,):
        raise ModelFileError("intercept has the wrong type or shape")
    if rows.size and (rows.min() < 0 or rows.max() >= config.n_features):
        raise ModelFileError("coef_rows outside the feature range")
    if not (np.all(np.isfinite(values)) and np.all(np.isfinite(intercept))):
        raise ModelFileError("non-finite parameters")

    tagger = LogLinearTagger(alpha=alpha, features=config)
    coef = np.zeros((config.n_features, n_tags))
    coef[rows] = values
    tagger.tagset_ = tuple(tagset)
    tagger.coef_ = coef
    tagger.intercept_ = intercept.copy()
    return tagger, metadata
