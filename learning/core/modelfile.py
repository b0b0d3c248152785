"""Model files: plain arrays in an ``.npz`` archive plus a JSON header — never pickle.

Layout (format version 3)::

    header      uint8 array: UTF-8 JSON {"format": "tally-tagger", "format_version": 3,
                "kind": "node" | "context", "tagset": [...],
                "features": {...FeatureConfig (node) or ContextConfig (context)...},
                "alpha": ..., "word_classes": {"sizes": [...]} or null, "metadata": {...},
                "temperature": ... (optional, default 1.0: the calibration of the served
                probabilities, :mod:`.calibration`; readers before it ignore it),
                "unseen_temperature": ... or null (of words outside the answered windows)}
    seen_forms, seen_form_ends    optional: the lower-case forms inside answered windows
                (UTF-8 bytes and end offsets, as the class forms)
    coef_rows   int64 (r,): the non-zero rows of coef_ (features that occur)
    coef_values float64 (r, K)
    intercept   float64 (K,)
    tag_coef_rows, tag_coef_values, tag_intercept    only for a contextual model whose features
                have ``tag_offsets``: its second stage, stored as the first
    class_forms, class_form_ends, class_ids    only with word classes: the lower-case forms
                (UTF-8 bytes, uint8, with the end offset of each form, int64) and their class at
                each level (int32, n_forms × n_levels)

Format version 2 (contextual models of one stage: their features have no ``tag_offsets``) and
version 1 (node-only models, no ``kind``, no word classes) are still read. Loading uses
``np.load(allow_pickle=False)``: object arrays and pickled data are refused, so a model file can
never run code. Every field is checked and a bad file raises :class:`ModelFileError` (a
``ValueError``).
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import IO

import numpy as np

from .context_tagger import ContextTagger
from .features import ContextConfig, FeatureConfig
from .node_tagger import NodeTagger
from .wordclasses import WordClasses

__all__ = ["FORMAT_VERSION", "ModelFileError", "load_tagger", "save_tagger", "with_metadata"]

FORMAT_NAME = "tally-tagger"
FORMAT_VERSION = 3
_ARRAYS = {"header", "coef_rows", "coef_values", "intercept"}
_STAGE2_ARRAYS = {"tag_coef_rows", "tag_coef_values", "tag_intercept"}
_CLASS_ARRAYS = {"class_forms", "class_form_ends", "class_ids"}
_SEEN_ARRAYS = {"seen_forms", "seen_form_ends"}


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
        "temperature": float(tagger.temperature_),
        "unseen_temperature": (
            None if tagger.unseen_temperature_ is None else float(tagger.unseen_temperature_)
        ),
        "word_classes": {"sizes": list(classes.sizes)} if classes is not None else None,
        "metadata": metadata or {},
    }
    arrays = {
        "header": np.frombuffer(json.dumps(header).encode("utf-8"), dtype=np.uint8),
        **_stage_arrays("", tagger.coef_, tagger.intercept_),
    }
    if getattr(tagger, "tag_coef_", None) is not None:
        arrays |= _stage_arrays("tag_", tagger.tag_coef_, tagger.tag_intercept_)
    if classes is not None:
        encoded = [form.encode("utf-8") for form in classes.forms]
        arrays["class_forms"] = np.frombuffer(b"".join(encoded), dtype=np.uint8)
        arrays["class_form_ends"] = np.cumsum([len(b) for b in encoded], dtype=np.int64)
        arrays["class_ids"] = np.ascontiguousarray(classes.classes, dtype=np.int32)
    if tagger.seen_forms_ is not None:
        arrays["seen_forms"], arrays["seen_form_ends"] = _pack_forms(sorted(tagger.seen_forms_))
    # Stored, not deflated: the weights are floats, which deflate by 8 % in 25 times the time
    # (EWT's contextual model: 1.1 s against 0.04 s; np.load reads both).
    np.savez(file, **arrays)


def _pack_forms(forms) -> tuple[np.ndarray, np.ndarray]:
    encoded = [form.encode("utf-8") for form in forms]
    return (
        np.frombuffer(b"".join(encoded), dtype=np.uint8),
        np.cumsum([len(b) for b in encoded], dtype=np.int64),
    )


def _unpack_forms(blob: np.ndarray, ends: np.ndarray, what: str) -> tuple[str, ...]:
    if blob.dtype != np.uint8 or blob.ndim != 1 or ends.dtype != np.int64 or ends.ndim != 1:
        raise ModelFileError(f"malformed {what}")
    if ends.size and (np.any(np.diff(ends) < 0) or ends[0] < 0 or ends[-1] != blob.size):
        raise ModelFileError(f"malformed {what}")
    data = blob.tobytes()
    starts = np.concatenate([[0], ends[:-1]]).astype(np.int64)
    try:
        return tuple(data[a:b].decode("utf-8") for a, b in zip(starts, ends, strict=True))
    except UnicodeDecodeError as exc:
        raise ModelFileError(f"malformed {what}: {exc}") from exc


def load_tagger(file: str | Path | IO[bytes]) -> tuple[NodeTagger | ContextTagger, dict]:
    """Read a model file; returns ``(tagger, metadata)``. Raises :class:`ModelFileError`."""
    try:
        with np.load(file, allow_pickle=False) as archive:
            if not isinstance(archive, np.lib.npyio.NpzFile):
                raise ModelFileError("not a model file: expected an .npz archive")
            names = set(archive.files)
            if (
                names - _STAGE2_ARRAYS - _SEEN_ARRAYS not in (_ARRAYS, _ARRAYS | _CLASS_ARRAYS)
                or (names & _STAGE2_ARRAYS not in (set(), _STAGE2_ARRAYS))
                or names & _SEEN_ARRAYS not in (set(), _SEEN_ARRAYS)
            ):
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
        if kind == "node":
            config = FeatureConfig.from_dict(header["features"])
        else:
            settings = dict(header["features"])
            if version == 2:  # one stage: no neighbours' tags
                settings.setdefault("tag_offsets", [])
                settings.setdefault("tag_pairs", False)
            config = ContextConfig.from_dict(settings)
        alpha = float(header["alpha"])
        temperature = float(header.get("temperature", 1.0))
        unseen = header.get("unseen_temperature")
        unseen = None if unseen is None else float(unseen)
    except (KeyError, TypeError, ValueError) as exc:
        raise ModelFileError(f"malformed feature configuration: {exc}") from exc
    stacked = kind == "context" and bool(config.tag_offsets)
    if stacked != (set(arrays) >= _STAGE2_ARRAYS):
        raise ModelFileError(
            "a second stage's arrays must be there exactly when the features read neighbours' tags"
        )
    metadata = header.get("metadata", {})
    classes = _word_classes(header.get("word_classes"), arrays)
    if kind == "node" and classes is not None:
        raise ModelFileError("a node-only model has no word classes")

    if kind == "node":
        tagger = NodeTagger(alpha=alpha, features=config)
    else:
        tagger = ContextTagger(alpha=alpha, features=config, word_classes=classes)
        tagger.tag_coef_ = tagger.tag_intercept_ = None
    for value in (temperature, 1.0 if unseen is None else unseen):
        if not (np.isfinite(value) and value > 0):
            raise ModelFileError("a temperature must be a positive number")
    tagger.tagset_ = tuple(tagset)
    tagger.temperature_, tagger.unseen_temperature_ = temperature, unseen
    tagger.seen_forms_ = (
        frozenset(_unpack_forms(arrays["seen_forms"], arrays["seen_form_ends"], "seen forms"))
        if set(arrays) >= _SEEN_ARRAYS
        else None
    )
    tagger.coef_, tagger.intercept_ = _read_stage("", arrays, len(tagset), config.n_features)
    if stacked:
        tagger.tag_coef_, tagger.tag_intercept_ = _read_stage(
            "tag_", arrays, len(tagset), config.n_features
        )
    return tagger, metadata


def with_metadata(data: bytes, metadata: dict) -> bytes:
    """The model file ``data`` with ``metadata`` merged into its header's (a key given replaces
    the file's); every array is copied as it is, byte for byte, so an export that adds a key (the
    cost matrix of the moment, :mod:`.tag`) costs a copy of the file, not a load and a save."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as source:
            with source.open("header.npy") as handle:
                header = _header(np.lib.format.read_array(handle, allow_pickle=False))
            header["metadata"] = {**header.get("metadata", {}), **metadata}
            encoded = io.BytesIO()
            np.lib.format.write_array(
                encoded, np.frombuffer(json.dumps(header).encode("utf-8"), dtype=np.uint8)
            )
            out = io.BytesIO()
            with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED, allowZip64=True) as target:
                for info in source.infolist():
                    if info.filename == "header.npy":
                        target.writestr(info, encoded.getvalue())
                    else:
                        target.writestr(info, source.read(info))
    except ModelFileError:
        raise
    except (KeyError, ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
        raise ModelFileError(f"cannot read model file: {exc}") from exc
    return out.getvalue()


def _stage_arrays(prefix: str, coef: np.ndarray, intercept: np.ndarray) -> dict:
    rows = np.flatnonzero(np.any(coef != 0, axis=1)).astype(np.int64)
    return {
        f"{prefix}coef_rows": rows,
        f"{prefix}coef_values": np.ascontiguousarray(coef[rows], dtype=np.float64),
        f"{prefix}intercept": np.asarray(intercept, dtype=np.float64),
    }


def _read_stage(prefix: str, arrays: dict, n_tags: int, n_features: int):
    """``(coef, intercept)`` of one stage, checked."""
    rows = arrays[f"{prefix}coef_rows"]
    values = arrays[f"{prefix}coef_values"]
    intercept = arrays[f"{prefix}intercept"]
    if rows.dtype.kind not in "iu" or rows.ndim != 1:
        raise ModelFileError(f"{prefix}coef_rows must be a 1-D integer array")
    if values.dtype != np.float64 or values.shape != (rows.shape[0], n_tags):
        raise ModelFileError(f"{prefix}coef_values has the wrong type or shape")
    if intercept.dtype != np.float64 or intercept.shape != (n_tags,):
        raise ModelFileError(f"{prefix}intercept has the wrong type or shape")
    if rows.size and (rows.min() < 0 or rows.max() >= n_features):
        raise ModelFileError(f"{prefix}coef_rows outside the feature range")
    if not (np.all(np.isfinite(values)) and np.all(np.isfinite(intercept))):
        raise ModelFileError("non-finite parameters")
    coef = np.zeros((n_features, n_tags))
    coef[rows] = values
    return coef, intercept.copy()


def _header(header_bytes: np.ndarray) -> dict:
    if header_bytes.dtype != np.uint8 or header_bytes.ndim != 1:
        raise ModelFileError("malformed header")
    try:
        header = json.loads(header_bytes.tobytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise ModelFileError(f"malformed header: {exc}") from exc
    if not isinstance(header, dict) or header.get("format") != FORMAT_NAME:
        raise ModelFileError("not a Tally tagger file")
    if header.get("format_version") not in (1, 2, FORMAT_VERSION):
        raise ModelFileError(
            f"unsupported format version {header.get('format_version')!r} "
            f"(this version reads 1 to {FORMAT_VERSION})"
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
