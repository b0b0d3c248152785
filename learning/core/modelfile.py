"""Model files: plain arrays in an ``.npz`` archive plus a JSON header — never pickle.

Layout (format version 2)::

    header      uint8 array: UTF-8 JSON {"format": "tally-tagger", "format_version": 2,
                "kind": "node" | "context", "tagset": [...],
                "features": {...FeatureConfig (node) or ContextConfig (context)...},
                "alpha": ..., "word_classes": {"sizes": [...]} or null, "metadata": {...}}
    coef_rows   int64 (r,): the non-zero rows of coef_ (features that occur)
    coef_values float64 (r, K)
    intercept   float64 (K,)
    class_forms, class_form_ends, class_ids    only with word classes: the lower-case forms
                (UTF-8 bytes, uint8, with the end offset of each form, int64) and their class at
                each level (int32, n_forms × n_levels)

Format version 1 (node-only models, no ``kind``, no word classes) is still read. Loading uses
``np.load(allow_pickle=False)``: object arrays and pickled data are refused, so a model file can
never run code. Every field is checked and a bad file raises :class:`ModelFileError` (a
``ValueError``).
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import IO

import numpy as np

from .context_tagger import ContextTagger
from .features import ContextConfig, FeatureConfig
from .node_tagger import NodeTagger
from .wordclasses import WordClasses

__all__ = ["FORMAT_VERSION", "ModelFileError", "save_tagger", "load_tagger"]

FORMAT_NAME = "tally-tagger"
FORMAT_VERSION = 2
_ARRAYS = {"header", "coef_rows", "coef_values", "intercept"}
_CLASS_ARRAYS = {"class_forms", "class_form_ends", "class_ids"}


class ModelFileError(ValueError):
    """The file is not a valid Tally model file."""


def save_tagger(
    tagger: NodeTagger | ContextTagger,
    file: str | Path | IO[bytes],
    *,
    metadata: dict | None = None,
) -> None:
    """Write a fitted tagger of either kind (and JSON-serializable ``metadata``) to ``file``."""
    classes = getattr(tagger, "word_classes", None)
    header = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "kind": tagger.kind,
        "tagset": list(tagger.tagset_),
        "features": tagger.feature_config_.to_dict(),
        "alpha": float(tagger.alpha),
        "word_classes": {"sizes": list(classes.sizes)} if classes is not None else None,
        "metadata": metadata or {},
    }
    rows = np.flatnonzero(np.any(tagger.coef_ != 0, axis=1)).astype(np.int64)
    arrays = {
        "header": np.frombuffer(json.dumps(header).encode("utf-8"), dtype=np.uint8),
        "coef_rows": rows,
        "coef_values": np.ascontiguousarray(tagger.coef_[rows], dtype=np.float64),
        "intercept": np.asarray(tagger.intercept_, dtype=np.float64),
    }
    if classes is not None:
        encoded = [form.encode("utf-8") for form in classes.forms]
        arrays["class_forms"] = np.frombuffer(b"".join(encoded), dtype=np.uint8)
        arrays["class_form_ends"] = np.cumsum([len(b) for b in encoded], dtype=np.int64)
        arrays["class_ids"] = np.ascontiguousarray(classes.classes, dtype=np.int32)
    np.savez_compressed(file, **arrays)


def load_tagger(file: str | Path | IO[bytes]) -> tuple[NodeTagger | ContextTagger, dict]:
    """Read a model file; returns ``(tagger, metadata)``. Raises :class:`ModelFileError`."""
    try:
        with np.load(file, allow_pickle=False) as archive:
            if not isinstance(archive, np.lib.npyio.NpzFile):
                raise ModelFileError("not a model file: expected an .npz archive")
            names = set(archive.files)
            if names != _ARRAYS and names != _ARRAYS | _CLASS_ARRAYS:
                raise ModelFileError(f"unexpected arrays in model file: {sorted(names)}")
            arrays = {name: archive[name] for name in names}
    except ModelFileError:
        raise
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
        raise ModelFileError(f"cannot read model file: {exc}") from exc
    except AttributeError as exc:  # np.load returned a bare array
        raise ModelFileError("not a model file: expected an .npz archive") from exc

    header = _header(arrays["header"])
    version = header.get("format_version")
    kind = "node" if version == 1 else header.get("kind")
    if kind not in ("node", "context"):
        raise ModelFileError(f"unknown model kind {kind!r}")
    tagset = header.get("tagset")
    if not isinstance(tagset, list) or not tagset or not all(isinstance(t, str) for t in tagset):
        raise ModelFileError("malformed tag set")
    try:
        config_class = FeatureConfig if kind == "node" else ContextConfig
        config = config_class.from_dict(header["features"])
        alpha = float(header["alpha"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ModelFileError(f"malformed feature configuration: {exc}") from exc
    metadata = header.get("metadata", {})
    classes = _word_classes(header.get("word_classes"), arrays)
    if kind == "node" and classes is not None:
        raise ModelFileError("a node-only model has no word classes")

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

    if kind == "node":
        tagger = NodeTagger(alpha=alpha, features=config)
    else:
        tagger = ContextTagger(alpha=alpha, features=config, word_classes=classes)
    coef = np.zeros((config.n_features, n_tags))
    coef[rows] = values
    tagger.tagset_ = tuple(tagset)
    tagger.coef_ = coef
    tagger.intercept_ = intercept.copy()
    return tagger, metadata


def _header(header_bytes: np.ndarray) -> dict:
    if header_bytes.dtype != np.uint8 or header_bytes.ndim != 1:
        raise ModelFileError("malformed header")
    try:
        header = json.loads(header_bytes.tobytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise ModelFileError(f"malformed header: {exc}") from exc
    if not isinstance(header, dict) or header.get("format") != FORMAT_NAME:
        raise ModelFileError("not a Tally tagger file")
    if header.get("format_version") not in (1, FORMAT_VERSION):
        raise ModelFileError(
            f"unsupported format version {header.get('format_version')!r} "
            f"(this version reads 1 and {FORMAT_VERSION})"
        )
    return header


def _word_classes(spec, arrays: dict) -> WordClasses | None:
    present = set(arrays) >= _CLASS_ARRAYS
    if spec is None:
        if present:
            raise ModelFileError("word class arrays without word classes in the header")
        return None
    if not present:
        raise ModelFileError("word classes named in the header are missing")
    sizes = spec.get("sizes") if isinstance(spec, dict) else None
    if not (isinstance(sizes, list) and sizes and all(isinstance(k, int) and k > 0 for k in sizes)):
        raise ModelFileError("malformed word classes")
    blob, ends, ids = arrays["class_forms"], arrays["class_form_ends"], arrays["class_ids"]
    if blob.dtype != np.uint8 or blob.ndim != 1 or ends.dtype != np.int64 or ends.ndim != 1:
        raise ModelFileError("malformed word class forms")
    if ends.size and (np.any(np.diff(ends) < 0) or ends[0] < 0 or ends[-1] != blob.size):
        raise ModelFileError("malformed word class forms")
    if ids.dtype != np.int32 or ids.shape != (ends.shape[0], len(sizes)):
        raise ModelFileError("word class ids have the wrong type or shape")
    if ids.size and (ids.min() < 0 or np.any(ids.max(axis=0) >= np.asarray(sizes))):
        raise ModelFileError("word class ids outside their range")
    data = blob.tobytes()
    starts = np.concatenate([[0], ends[:-1]])
    try:
        forms = tuple(data[a:b].decode("utf-8") for a, b in zip(starts, ends, strict=True))
    except UnicodeDecodeError as exc:
        raise ModelFileError(f"malformed word class forms: {exc}") from exc
    return WordClasses(forms=forms, classes=ids.astype(np.int64), sizes=tuple(sizes))
