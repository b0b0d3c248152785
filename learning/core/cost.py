"""A manager's cost matrix over the tag set, and the decisions and reports that use it.

``cost[i, j]`` is what it costs to predict tag ``j`` when the truth is tag ``i`` (rows gold, as
in :func:`.evaluate.confusion_matrix`): K × K, each cell from 0 to :data:`MAX_COST`, zero on the
diagonal, not every cell zero (:func:`check_cost_matrix`). A matrix keyed by tag names is a
:class:`TagCosts`, checked when made; its :meth:`TagCosts.over` is the one reorder onto a tag set
that every reader goes through (a model's decisions, a report, the command-line tagger).

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
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .csvsafe import SafeCsvWriter, text_cell

__all__ = [
    "NEAR_CLASSES",
    "MAX_COST",
    "NEAR_COST",
    "PRESETS",
    "CostMatrixError",
    "TagCosts",
    "bayes_decision",
    "check_cost_matrix",
    "cost_matrix_preset",
    "cost_report",
    "cost_matrix_named",
    "expected_cost",
    "is_zero_one",
    "number_text",
    "read_cost_csv",
    "read_cost_table",
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
# The most a cell may cost. Only the ratios between costs change a decision, so a bound loses
# nothing, and it keeps every sum of a report (a cost per token, a share) far from overflow.
MAX_COST = 1e6
TOO_LARGE = (f"is more than {MAX_COST:,.0f}, the most a cost may be (only the ratios between "
             "costs matter: divide them all by the same number)")  # fmt: skip


class CostMatrixError(ValueError):
    """A cost matrix that cannot be used. ``cell`` is the offending (row, column) or None;
    ``names`` is whether the tag names are what is wrong (not a cell)."""

    def __init__(self, message: str, cell: tuple[int, int] | None = None, *,
                 names: bool = False) -> None:  # fmt: skip
        super().__init__(message)
        self.cell = cell
        self.names = names


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


def number_text(value) -> str:
    """A number as a person writes it (``-1``, ``0.25``, ``1e+308``, ``inf``): what messages
    show, never ``np.float64(-1.0)``."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return f"{float(value):g}"
    return repr(value)


def check_cost_matrix(cost, tagset: Sequence[str]) -> np.ndarray:
    """``cost`` as a float (K, K) array, or :class:`CostMatrixError` naming the first bad cell
    by its tags (``row`` is the true tag, ``column`` the predicted one): every cell a finite
    number from 0 to :data:`MAX_COST`, the diagonal 0, and (K > 1) some error costing more than
    nothing."""
    k = len(tagset)
    try:
        array = np.asarray(cost, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        array = None
    if array is None or array.ndim != 2 or array.shape != (k, k):
        shape = "not a table of numbers" if array is None else f"of shape {array.shape}"
        raise CostMatrixError(f"the cost matrix must be {k} × {k} (one row and one column per "
                              f"tag), it is {shape}")  # fmt: skip
    with np.errstate(invalid="ignore"):
        checks = (
            (~np.isfinite(array), "is not a finite number"),
            (array < 0, "is negative"),
            (array > MAX_COST, TOO_LARGE),
            (np.eye(k, dtype=bool) & (array != 0), "must be 0 (a right tag costs nothing)"),
        )  # fmt: skip
    for bad, what in checks:
        if bad.any():
            i, j = (int(v) for v in np.argwhere(bad)[0])
            raise CostMatrixError(
                f"cell (true {tagset[i]}, predicted {tagset[j]}) {what}: "
                f"{number_text(array[i, j])}",
                (i, j),
            )
    if k > 1 and not array.any():
        raise CostMatrixError("every cost is 0, so every tag would be as good a decision as any "
                              "other: give the errors that matter a cost above 0")  # fmt: skip
    return array


@dataclass(frozen=True, eq=False)
class TagCosts:
    """A checked cost matrix keyed by tag names: ``matrix[i, j]`` is what it costs to predict
    ``tags[j]`` when the truth is ``tags[i]``. Made only through :func:`check_cost_matrix` (a
    ``TagCosts`` is always usable; its matrix is read-only). :meth:`table` reads one whose rows
    and columns come in any order; :meth:`over` is the one reorder onto a tag set, which every
    reader of a matrix (a model's decisions, a report, the command-line tagger) goes through."""

    tags: tuple[str, ...]
    matrix: np.ndarray

    def __post_init__(self) -> None:
        tags = tuple(self.tags)
        repeated = sorted({tag for tag in tags if tags.count(tag) > 1})
        if repeated:
            raise CostMatrixError(f"the cost matrix names a tag twice: {', '.join(repeated)}",
                                  names=True)  # fmt: skip
        matrix = check_cost_matrix(self.matrix, tags).copy()
        matrix.flags.writeable = False
        object.__setattr__(self, "tags", tags)
        object.__setattr__(self, "matrix", matrix)

    @classmethod
    def preset(cls, name: str, tagset: Sequence[str]) -> TagCosts:
        return cls(tuple(tagset), cost_matrix_preset(name, tagset))

    @classmethod
    def table(
        cls, values, *, rows: Sequence[str], columns: Sequence[str] | None = None,
        tagset: Sequence[str], where: str = "the matrix's tags",
    ) -> TagCosts:  # fmt: skip
        """The matrix of ``values`` (a list of rows of numbers: row ``r`` for the true tag
        ``rows[r]``, column ``c`` for the predicted ``columns[c]``, default ``rows``) over
        ``tagset``: the names must list each of its tags once (``where`` says, in a message,
        which names are wrong); a cell that is not a number, or a wrong shape, is refused
        naming it."""
        columns = rows if columns is None else columns
        if isinstance(values, np.ndarray):
            values = values.tolist()
        for names in (rows, columns):
            _check_names(names, tagset, where)
        k = len(tagset)
        if (
            not isinstance(values, list | tuple)
            or len(values) != k
            or not all(isinstance(row, list | tuple) and len(row) == k for row in values)
        ):
            raise CostMatrixError(f"the cost matrix must be {k} × {k}: one row and one column "
                                  "per tag")  # fmt: skip
        array = np.empty((k, k))
        for r, row in enumerate(values):
            for c, cell in enumerate(row):
                if isinstance(cell, bool) or not isinstance(cell, numbers.Real):
                    raise CostMatrixError(f"cell (true {rows[r]}, predicted {columns[c]}) is not "
                                          f"a number: {cell!r}", (r, c))  # fmt: skip
                try:
                    array[r, c] = float(cell)
                except OverflowError:  # an integer past any float
                    raise CostMatrixError(f"cell (true {rows[r]}, predicted {columns[c]}) "
                                          f"{TOO_LARGE}: a number of {len(str(cell))} digits",
                                          (r, c)) from None  # fmt: skip
        return cls(tuple(tagset), _reordered(array, rows, columns, tagset))

    def applies_to(self, tagset: Sequence[str]) -> bool:
        """Whether ``tagset`` holds the same tags (in any order)."""
        return sorted(tagset) == sorted(self.tags)

    def over(self, tagset: Sequence[str]) -> np.ndarray:
        """The matrix with its rows and columns in the order of ``tagset``, which must hold the
        same tags (:class:`CostMatrixError` otherwise)."""
        tagset = tuple(tagset)
        if tagset == self.tags:
            return self.matrix
        if not self.applies_to(tagset):
            raise CostMatrixError(f"the cost matrix is over the tags {', '.join(self.tags)}, "
                                  f"not {', '.join(tagset)}", names=True)  # fmt: skip
        return _reordered(self.matrix, self.tags, self.tags, tagset)

    def rows(self) -> list[list[float]]:
        """The matrix as JSON stores it."""
        return self.matrix.tolist()


def _check_names(names: Sequence[str], tagset: Sequence[str], where: str) -> None:
    if not isinstance(names, list | tuple) or not all(isinstance(t, str) for t in names):
        raise CostMatrixError(f"{where} must be a list of tag names", names=True)
    known = set(tagset)
    for tag in names:
        if tag not in known:
            raise CostMatrixError(f"unknown tag {tag!r} in {where} (the project's tags: "
                                  f"{', '.join(tagset)})", names=True)  # fmt: skip
    if sorted(names) != sorted(tagset):
        missing = sorted(known - set(names)) or sorted({t for t in names if names.count(t) > 1})
        raise CostMatrixError(f"{where} must list every tag once: {', '.join(missing)}",
                              names=True)  # fmt: skip


def _reordered(array: np.ndarray, rows, columns, tagset) -> np.ndarray:
    """``array`` (rows named ``rows``, columns ``columns``) in the order of ``tagset``."""
    row_at = {tag: i for i, tag in enumerate(rows)}
    column_at = {tag: j for j, tag in enumerate(columns)}
    return np.asarray(array)[
        np.ix_([row_at[tag] for tag in tagset], [column_at[tag] for tag in tagset])
    ]


def read_cost_csv(text: str, tagset: Sequence[str]) -> np.ndarray:
    """A cost matrix over ``tagset`` from CSV text as :func:`write_cost_csv` writes it (see
    :func:`read_cost_table`)."""
    return read_cost_table(text, tagset).matrix


def read_cost_table(text: str, tagset: Sequence[str]) -> TagCosts:
    """A cost matrix from CSV text as :func:`write_cost_csv` writes it: a header row (any first
    cell, then the predicted tags), then one row per true tag (its name, then its costs). Rows
    and columns may come in any order; every tag must be there once; a name escaped for
    spreadsheets (:mod:`.csvsafe`) is read as the tag it escapes. A bad cell, an unknown tag or
    a file that is not CSV is a :class:`CostMatrixError` that says so."""
    rows = []
    reader = csv.reader(io.StringIO(text))
    try:
        for row in reader:
            if any(cell.strip() for cell in row):
                rows.append(row)
    except csv.Error as exc:
        if "field limit" in str(exc):
            raise CostMatrixError(f"line {reader.line_num} of the CSV file has a cell longer "
                                  f"than {csv.field_size_limit():,} characters: a cost matrix's "
                                  "cells are tag names and numbers") from None  # fmt: skip
        raise CostMatrixError(f"line {reader.line_num} of the CSV file is not CSV: "
                              f"{exc}") from None  # fmt: skip
    if not rows:
        raise CostMatrixError("the CSV file is empty")
    known = set(tagset)

    def name(cell: str) -> str:
        cell = cell.strip()
        return cell if cell in known else text_cell(cell)

    columns = [name(cell) for cell in rows[0][1:]]
    names = [name(row[0]) for row in rows[1:]]
    k = len(tagset)
    values = []
    for r, row in enumerate(rows[1:], start=2):
        if len(row) != k + 1:
            label = names[r - 2] if len(names[r - 2]) <= 40 else names[r - 2][:40] + "…"
            raise CostMatrixError(f"CSV line {r} ({label}) has {len(row) - 1} costs, not {k}")
        values.append([_parsed(cell) for cell in row[1:]])
    where = "the CSV's {} names"
    _check_names(columns, tagset, where.format("column"))
    return TagCosts.table(values, rows=names, columns=columns, tagset=tagset,
                          where=where.format("row"))  # fmt: skip


def _parsed(cell: str):
    """A CSV cell as a number, or as the text it is (refused, by name, as not a number)."""
    text = cell.strip()
    try:
        if "_" not in text:  # float() would read "1_0" as 10
            return float(text)
    except ValueError:
        pass
    return text if len(text) <= 40 else text[:40] + "…"


def write_cost_csv(cost: np.ndarray, tagset: Sequence[str]) -> str:
    """The cost matrix as CSV: header ``true \\ predicted`` and the tags, a row per true tag;
    every cell written by :class:`.csvsafe.SafeCsvWriter`, so a tag named like a formula
    (``=HYPERLINK(…)``) is shown as text."""
    out = io.StringIO()
    writer = SafeCsvWriter(out, lineterminator="\n")
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
    scale = float(np.max(cost, initial=0.0)) or 1.0  # a mean, without overflow
    return float((cost[gold, np.asarray(predicted, dtype=np.int64)] / scale).mean()) * scale


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
    # Every sum is taken in units of the largest cost and of shares of the tokens, never of
    # counts times costs: no intermediate overflows, whatever the cells (the figures are means,
    # at most the largest cost).
    scale = float(np.max(cost, initial=0.0)) or 1.0
    weighted = confusion / max(gold.size, 1) * (cost / scale)
    total = float(weighted.sum())
    by_tag = weighted.sum(axis=1)
    report = {
        "cost_per_token": total * scale,
        "cost_confusion": (weighted * scale).tolist(),
        "cost_share": {
            tag: (float(by_tag[i] / total) if total > 0 else 0.0) for i, tag in enumerate(tagset)
        },
    }
    if probs is not None:
        believed = expected_cost(probs, cost / scale)[np.arange(predicted.size), predicted]
        report["expected_cost_per_token"] = float(believed.mean()) * scale if believed.size else 0.0
    return report
