"""A project's cost matrix: reading it, changing it, and the cost reports that follow from it.

The matrix is stored in `CostMatrix` (absent: every error costs 1). Changing it re-scores the
cost report of every existing version at once, from the versions' model files and the
evaluation sentences (no retrain: the decisions change, not the model), and queues a retrain so
that the next version, and its model file, are made for the new matrix. The decisions every
prediction returns are the loss-aware ones of `decide` (`learning.core.cost.bayes_decision`).
"""

from __future__ import annotations

import logging
import numbers
from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np
from django.db import transaction
from django.db.models import Exists, IntegerField, OuterRef, Subquery
from django.db.models.fields.json import KT
from django.db.models.functions import Cast

from common.exceptions import InvalidInput
from learning import adapter
from learning.core import report
from learning.core.cost import (
    PRESETS,
    CostMatrixError,
    bayes_decision,
    check_cost_matrix,
    cost_matrix_preset,
    read_cost_csv,
)
from learning.models import CostMatrix, CostReport, ModelVersion

logger = logging.getLogger(__name__)

DEFAULT_PRESET = "zero-one"
# How long the sweep leaves a change's own messages (re-scoring, retrain) to arrive.
SWEEP_GRACE = timedelta(minutes=2)


@dataclass(frozen=True)
class CostSetting:
    """The matrix in the order of the project's tags, its preset ('' if custom) and revision
    (0: the default, never saved)."""

    tags: tuple[str, ...]
    matrix: np.ndarray
    preset: str
    revision: int

    def as_dict(self) -> dict:
        return {
            "tags": list(self.tags),
            "matrix": self.matrix.tolist(),
            "preset": self.preset,
            "presets": list(PRESETS),
            "revision": self.revision,
        }


# Reads ----------------------------------------------------------------------------------------


def cost_matrix_get(*, project_id: int) -> CostSetting:
    """The project's cost matrix over its current tags. A matrix saved for other tag names
    (they can change until the first sentence is imported) no longer applies: the default."""
    tags = adapter.project_tagset(project_id=project_id)
    row = CostMatrix.objects.filter(project_id=project_id).first()
    if row is None or sorted(row.tags) != sorted(tags):
        return CostSetting(tags, cost_matrix_preset(DEFAULT_PRESET, tags), DEFAULT_PRESET, 0)
    order = [row.tags.index(tag) for tag in tags]
    matrix = np.asarray(row.matrix, dtype=np.float64)[np.ix_(order, order)]
    return CostSetting(tags, matrix, row.preset, row.revision)


def decide(probs: np.ndarray, setting: CostSetting, tagset) -> np.ndarray:
    """Loss-aware tag indices (into `tagset`, a model's) of token probabilities `probs`."""
    if tuple(tagset) != setting.tags:
        order = [setting.tags.index(tag) for tag in tagset]
        return bayes_decision(probs, setting.matrix[np.ix_(order, order)])
    return bayes_decision(probs, setting.matrix)


COST_REPORT_FIELDS = ("revision", "cost_per_token", "expected_cost_per_token", "accuracy",
                      "calibration_error", "cost_confusion", "cost_share")  # fmt: skip


def cost_report_of(*, version: ModelVersion) -> dict | None:
    """The version's cost report as the API gives it, or None before its matrix existed."""
    return CostReport.objects.filter(version=version).values(*COST_REPORT_FIELDS).first()


# Writes ---------------------------------------------------------------------------------------


def matrix_from_input(*, tags: tuple[str, ...], matrix, matrix_tags=None) -> np.ndarray:
    """A matrix as a client sends it (a list of rows of numbers, optionally with the tag names
    of its rows and columns in its own order) checked and put in the order of `tags`; an
    `InvalidInput` naming the cell or the tag otherwise."""
    given = list(tags) if matrix_tags is None else matrix_tags
    if not isinstance(given, list) or not all(isinstance(t, str) for t in given):
        raise _invalid("tags", "The tags must be a list of tag names.")
    for tag in given:
        if tag not in tags:
            raise _invalid(
                "tags", f"Unknown tag {tag!r}: the project's tags are {', '.join(tags)}."
            )
    if sorted(given) != sorted(tags):
        missing = sorted(set(tags) - set(given)) or sorted({t for t in given if given.count(t) > 1})
        raise _invalid(
            "tags", f"The tags must list each of the project's tags once: {', '.join(missing)}."
        )
    k = len(tags)
    if (
        not isinstance(matrix, list)
        or len(matrix) != k
        or not all(isinstance(row, list) and len(row) == k for row in matrix)
    ):
        raise _invalid("matrix", f"The matrix must be {k} × {k}: one row and one column per tag.")
    for i, row in enumerate(matrix):
        for j, cell in enumerate(row):
            if isinstance(cell, bool) or not isinstance(cell, numbers.Real):
                raise _invalid(
                    "matrix",
                    f"Cell (true {given[i]}, predicted {given[j]}) is not a number: {cell!r}.",
                )
    order = [given.index(tag) for tag in tags]
    array = np.asarray(matrix, dtype=np.float64)[np.ix_(order, order)]
    try:
        return check_cost_matrix(array, tags)
    except CostMatrixError as exc:
        raise _invalid("matrix", _sentence(str(exc))) from None


def matrix_from_csv(*, tags: tuple[str, ...], text: str) -> np.ndarray:
    try:
        return read_cost_csv(text, tags)
    except CostMatrixError as exc:
        raise _invalid("file", _sentence(str(exc))) from None


def cost_matrix_set(
    *, project_id: int, matrix: np.ndarray | None = None, preset: str | None = None
) -> CostSetting:
    """Save the project's matrix (checked, in its tags' order) or a preset; then, once
    committed, re-score every version's cost report and queue a retrain."""
    tags = adapter.project_tagset(project_id=project_id)
    if preset is not None:
        if preset not in PRESETS:
            raise _invalid("preset", f"Unknown preset {preset!r}: one of {', '.join(PRESETS)}.")
        matrix = cost_matrix_preset(preset, tags)
    elif matrix is None:
        raise _invalid("matrix", "Give a matrix or a preset.")
    else:
        matrix = check_cost_matrix(matrix, tags)
    with transaction.atomic():
        row, created = CostMatrix.objects.select_for_update().get_or_create(
            project_id=project_id,
            defaults={"tags": list(tags), "matrix": matrix.tolist(), "preset": preset or ""},
        )
        if not created:
            row.tags, row.matrix, row.preset = list(tags), matrix.tolist(), preset or ""
            row.revision += 1
            row.save(update_fields=["tags", "matrix", "preset", "revision", "updated_at"])
        transaction.on_commit(lambda: _after_change(project_id))
    return cost_matrix_get(project_id=project_id)


def _after_change(project_id: int) -> None:
    from learning import tasks  # the task module imports this one

    tasks.cost_reports_rescore_enqueue(project_id=project_id)
    tasks.retrain_enqueue(project_id=project_id, trigger="manual")


def projects_behind_their_matrix(*, now: datetime) -> dict[int, bool]:
    """Projects whose matrix changed more than `SWEEP_GRACE` ago and whose current model file
    or some version's cost report is not yet of its revision: the retrain or the re-scoring the
    change queued was lost (the broker was down). Each with whether its reports are behind."""
    versions = ModelVersion.objects.filter(project=OuterRef("project"))
    of_revision = CostReport.objects.filter(
        version=OuterRef("pk"), revision=OuterRef(OuterRef("revision"))
    )
    file_revision = Cast(KT("hyperparameters__cost_revision"), IntegerField())
    rows = (
        CostMatrix.objects.filter(updated_at__lte=now - SWEEP_GRACE)
        .filter(Exists(versions))
        .annotate(
            reports_behind=Exists(versions.filter(~Exists(of_revision))),
            model_revision=Subquery(
                versions.order_by("-number").annotate(of=file_revision).values("of")[:1]
            ),
        )
        .values_list("project_id", "revision", "reports_behind", "model_revision")
    )
    behind = {}
    for project_id, revision, reports_behind, model_revision in rows:
        if not reports_behind and (model_revision or 0) == revision:
            continue
        # A matrix saved for other tag names no longer applies (`cost_matrix_get`): nothing
        # to catch up with.
        if cost_matrix_get(project_id=project_id).revision == revision:
            behind[project_id] = reports_behind
    return behind


def cost_report_store(*, version: ModelVersion, setting: CostSetting, figures: dict) -> None:
    CostReport.objects.update_or_create(
        version=version, defaults={"revision": setting.revision, **figures}
    )


def cost_figures(*, tagger, setting: CostSetting, sentences, tags, probs=None) -> dict:
    """`learning.core.report.cost_evaluation` of `tagger` with the matrix in its tags' order
    (``probs``: the served probabilities of the sentences' tokens, when already computed)."""
    order = [setting.tags.index(tag) for tag in tagger.tagset_]
    matrix = setting.matrix[np.ix_(order, order)]
    return report.cost_evaluation(tagger, sentences, tags, matrix, probs=probs)


def cost_reports_rescore(*, project_id: int) -> int:
    """Rewrite every version's cost report with the project's matrix as it is now; returns
    how many were written. A report already of this revision is left as it is."""
    setting = cost_matrix_get(project_id=project_id)
    sentences, tags = adapter.evaluation_gold(project_id=project_id)
    written = 0
    for version in ModelVersion.objects.filter(project_id=project_id).order_by("number"):
        current = CostReport.objects.filter(version=version).values_list("revision", flat=True)
        if list(current) == [setting.revision] and setting.revision:
            continue
        tagger = adapter.model_load(version.file.name)
        figures = cost_figures(tagger=tagger, setting=setting, sentences=sentences, tags=tags)
        cost_report_store(version=version, setting=setting, figures=figures)
        written += 1
    logger.info("cost reports re-scored", extra={"project_id": project_id, "written": written})
    return written


def _sentence(message: str) -> str:
    return message[:1].upper() + message[1:] + ("" if message.endswith(".") else ".")


def _invalid(field: str, message: str) -> InvalidInput:
    return InvalidInput(message, fields={field: [message]})
