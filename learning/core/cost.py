"""A manager's cost matrix over the tag set, and the decisions and reports that use it.

``cost[i, j]`` is what it costs to predict tag ``j`` when the truth is tag ``i`` (rows gold, as
in :func:`.evaluate.confusion_matrix`): K × K, finite, non-negative, zero on the diagonal.

Under token marginals ``p`` (n × K) the expected cost of deciding ``j`` for token ``t`` is
``(p @ cost)[t, j]``; the **Bayes decision** takes its minimum. With the 0/1 matrix the expected
cost is ``1 − p[t, j]`` and the decision is the argmax (computed as such, so ties break alike).

Presets (:data:`PRESETS`): ``zero-one`` (every error costs 1), ``near-classes`` (a confusion
inside one of :data:`NEAR_CLASSES` costs :data:`NEAR_COST`, any other 1), ``ordinal`` (the
paper's cost-sensitive matrix: tags in a fixed random order, seed 0, cost the distance in that
order, divided by its mean over the off-diagonal cells so that, as with the two others, an error
drawn uniformly among the confusions costs 1 on average and a cost per token reads like an
error rate).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from pathlib import Path

import numpy as np

__all__ = [
    "NEAR_CLASSES",
    "NEAR_COST",
    "PRESETS",
    "CostMatrixError",
    "bayes_decision",
    "check_cost_matrix",
    "cost_matrix_preset",
    "cost_report",
    "cost_matrix_named",
    "expected_cost",
    "is_zero_one",
    "read_cost_csv",
    "realised_cost",
    "write_cost_csv",
]

PRESETS = ("zero-one", "near-classes", "ordinal")
# UPOS confusions a search index or a summary hardly notices (issue 28).
NEAR_CLASSES = (
    ("NOUN", "PROPN"),
    ("VERB", "AUX"),
    ("DET", "PRON"),
    ("ADP", "SCONJ"),
    ("PUNCT", "SYM"),
)
NEAR_COST = 0.2
ORDINAL_SEED = 0


class CostMatrixError(ValueError):
    """A cost matrix that cannot be used; ``cell`` is the offending (row, column) or None."""

    def __init__(self, message: str, cell: tuple[int, int] | None = None) -> None:
        super().__init__(message)
        self.cell = cell


def cost_matrix_preset(name: str, tagset: Sequence[str]) -> np.ndarray:
    """The preset ``name`` (one of :data:`PRESETS`) for ``tagset``."""
    k = len(tagset)
    if k < 1:
        raise ValueError("the tag set is empty")
    if name == "zero-one":
        return 1.0 - np.eye(k)
    if name == "near-classes":
        cost = 1.0 - np.eye(k)
        index = {tag: i for i, tag in enumerate(tagset)}
        for group in NEAR_CLASSES:
            members = [index[t] for t in group if t in index]
            for a in members:
                for b in members:
                    if a != b:
                        cost[a, b] = NEAR_COST
        return cost
    if name == "ordinal":
        if k == 1:
            return np.zeros((1, 1))
        rank = np.empty(k)
        rank[np.random.default_rng(ORDINAL_SEED).permutation(k)] = np.arange(k)
        distance = np.abs(rank[:, None] - rank[None, :])
        return distance / (distance.sum() / (k * (k - 1)))
    raise ValueError(f"unknown cost matrix preset {name!r}: one of {', '.join(PRESETS)}")


def check_cost_matrix(cost, tagset: Sequence[str]) -> np.ndarray:
    """``cost`` as a float (K, K) array, or :class:`CostMatrixError` naming the first bad cell
    by its tags (``row`` is the true tag, ``column`` the predicted one)."""
    k = len(tagset)
    try:
        array = np.asarray(cost, dtype=np.float64)
    except (TypeError, ValueError):
        array = None
    if array is None or array.ndim != 2 or array.shape != (k, k):
        shape = "not a table of numbers" if array is None else f"of shape {array.shape}"
        raise CostMatrixError(f"the cost matrix must be {k} × {k} (one row and one column per "
                              f"tag), it is {shape}")  # fmt: skip
    checks = (
        (~np.isfinite(array), "is not a finite number"),
        (array < 0, "is negative"),
        (np.eye(k, dtype=bool) & (array != 0), "must be 0 (a right tag costs nothing)"),
    )
    for bad, what in checks:
        if bad.any():
            i, j = (int(v) for v in np.argwhere(bad)[0])
            raise CostMatrixError(
                f"cell (true {tagset[i]}, predicted {tagset[j]}) {what}: {array[i, j]!r}", (i, j)
            )
    return array


def read_cost_csv(text: str, tagset: Sequence[str]) -> np.ndarray:
    """A cost matrix from CSV text as :func:`write_cost_csv` writes it: a header row (any first
    cell, then the predicted tags), then one row per true tag (its name, then its costs). Rows
    and columns may come in any order; every tag must be there once. Checked by
    :func:`check_cost_matrix`; a tag name not in ``tagset`` is a :class:`CostMatrixError`."""
    rows = [row for row in csv.reader(io.StringIO(text)) if any(cell.strip() for cell in row)]
    if not rows:
        raise CostMatrixError("the CSV file is empty")
    columns = [cell.strip() for cell in rows[0][1:]]
    names = [row[0].strip() for row in rows[1:]]
    index = {tag: k for k, tag in enumerate(tagset)}
    for where, tags in (("column", columns), ("row", names)):
        for tag in tags:
            if tag not in index:
                raise CostMatrixError(f"unknown tag {tag!r} in the CSV's {where} names "
                                      f"(the project's tags: {', '.join(tagset)})")  # fmt: skip
        if sorted(tags) != sorted(tagset):
            missing = sorted(set(tagset) - set(tags)) or sorted(
                {t for t in tags if tags.count(t) > 1}
            )
            raise CostMatrixError(
                f"the CSV's {where} names must list every tag once: {', '.join(missing)}"
            )
    k = len(tagset)
    cost = np.zeros((k, k))
    for r, row in enumerate(rows[1:], start=2):
        if len(row) != k + 1:
            raise CostMatrixError(
                f"CSV line {r} ({names[r - 2]}) has {len(row) - 1} costs, not {k}"
            )
        for c, cell in enumerate(row[1:]):
            i, j = index[names[r - 2]], index[columns[c]]
            try:
                cost[i, j] = float(cell)
            except ValueError:
                raise CostMatrixError(
                    f"cell (true {tagset[i]}, predicted {tagset[j]}) is not a number: {cell!r}",
                    (i, j),
                ) from None
    return check_cost_matrix(cost, tagset)


def write_cost_csv(cost: np.ndarray, tagset: Sequence[str]) -> str:
    """The cost matrix as CSV: header ``true \\ predicted`` and the tags, a row per true tag."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["true \\ predicted", *tagset])
    for tag, row in zip(tagset, np.asarray(cost), strict=True):
        writer.writerow([tag, *(f"{v:g}" for v in row)])
    return out.getvalue()


def cost_matrix_named(spec: str, tagset: Sequence[str]) -> np.ndarray:
    """A preset's name, or the path of a CSV file (:func:`read_cost_csv`)."""
    if spec in PRESETS:
        return cost_matrix_preset(spec, tagset)
    path = Path(spec)
    if not path.is_file():
        raise ValueError(f"{spec!r} is neither a preset ({', '.join(PRESETS)}) nor a CSV file")
    return read_cost_csv(path.read_text(encoding="utf-8"), tagset)


def is_zero_one(cost: np.ndarray) -> bool:
    """Whether ``cost`` charges every error the same positive amount (argmax is then Bayes)."""
    off = cost[~np.eye(cost.shape[0], dtype=bool)]
    return off.size == 0 or (off[0] > 0 and bool(np.all(off == off[0])))


def expected_cost(probs: np.ndarray, cost: np.ndarray) -> np.ndarray:
    """(n, K) expected cost of deciding each tag for each token under marginals ``probs``."""
    return np.asarray(probs) @ cost


def bayes_decision(probs: np.ndarray, cost: np.ndarray | None = None) -> np.ndarray:
    """(n,) the tag of least expected cost of each token; the argmax when ``cost`` is None or
    charges every error alike."""
    probs = np.asarray(probs)
    if cost is None or is_zero_one(cost):
        return probs.argmax(axis=1) if probs.shape[0] else np.zeros(0, dtype=np.int64)
    return expected_cost(probs, cost).argmin(axis=1)


def realised_cost(gold: np.ndarray, predicted: np.ndarray, cost: np.ndarray) -> float:
    """Mean cost per token of the tag indices ``predicted`` against ``gold``."""
    gold = np.asarray(gold, dtype=np.int64)
    if gold.size == 0:
        raise ValueError("no tokens to score")
    return float(cost[gold, np.asarray(predicted, dtype=np.int64)].mean())


def cost_report(
    gold: np.ndarray, predicted: np.ndarray, cost: np.ndarray, tagset: Sequence[str],
    probs: np.ndarray | None = None,
) -> dict:  # fmt: skip
    """A report in the manager's currency: ``cost_per_token``, the cost-weighted confusion
    ``cost_confusion[i][j]`` (tokens of gold ``i`` predicted ``j``, times their cost, per token),
    each gold tag's ``cost_share`` of the total, and with ``probs`` the model's own
    ``expected_cost_per_token`` of its decisions (what it believes they cost)."""
    gold = np.asarray(gold, dtype=np.int64)
    predicted = np.asarray(predicted, dtype=np.int64)
    k = len(tagset)
    confusion = np.bincount(gold * k + predicted, minlength=k * k).reshape(k, k)
    weighted = confusion * cost / max(gold.size, 1)
    total = float(weighted.sum())
    by_tag = weighted.sum(axis=1)
    report = {
        "cost_per_token": total,
        "cost_confusion": weighted.tolist(),
        "cost_share": {
            tag: (float(by_tag[i] / total) if total > 0 else 0.0) for i, tag in enumerate(tagset)
        },
    }
    if probs is not None:
        believed = expected_cost(probs, cost)[np.arange(predicted.size), predicted]
        report["expected_cost_per_token"] = float(believed.mean()) if believed.size else 0.0
    return report
