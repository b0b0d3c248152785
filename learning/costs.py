"""A project's cost matrix: reading it, changing it, and the cost reports that follow from it.

The matrix is stored in `CostMatrix` (absent: every error costs 1), its one home: the model
files do not carry it (the fit never reads it), except a file downloaded for the command-line
tagger, which gets the matrix of the moment (`model_file_export`). Changing it re-scores the cost
report of every existing version, from the versions' model files and the evaluation sentences
(`cost_reports_rescore`, a task the API queues; nothing is retrained: the decisions change, not
the model). The decisions every prediction returns are the loss-aware ones of `decide`
(`learning.core.cost.bayes_decision`), with the stored matrix read once per revision and process
(`served_costs`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np
from django.db import transaction
from django.db.models import Exists, OuterRef, QuerySet, Subquery

from common.exceptions import InvalidInput
from learning import adapter
from learning.core import report
from learning.core.cost import (
    PRESETS,
    CostMatrixError,
    TagCosts,
    bayes_decision,
    read_cost_table,
    write_cost_csv,
)
from learning.core.modelfile import with_metadata
from learning.models import CostMatrix, CostReport, ModelVersion

logger = logging.getLogger(__name__)

DEFAULT_PRESET = "zero-one"
# How long the sweep leaves a change's re-scoring message to arrive before it queues another.
SWEEP_GRACE = timedelta(minutes=2)


@dataclass(frozen=True)
class CostSetting:
    """The project's matrix (`TagCosts` over its tags), its preset ('' if custom) and revision
    (0: the default, never saved)."""

    costs: TagCosts
    preset: str
    revision: int

    @property
    def tags(self) -> tuple[str, ...]:
        return self.costs.tags

    @property
    def matrix(self) -> np.ndarray:
        return self.costs.matrix

    def as_dict(self) -> dict:
        return {
            "tags": list(self.tags),
            "matrix": self.costs.rows(),
            "preset": self.preset,
            "presets": list(PRESETS),
            "revision": self.revision,
        }


def _default(tags: tuple[str, ...]) -> CostSetting:
    return CostSetting(TagCosts.preset(DEFAULT_PRESET, tags), DEFAULT_PRESET, 0)


# Reads ----------------------------------------------------------------------------------------


def _stored(row: tuple | None) -> TagCosts | None:
    """The stored matrix as a value (None: none, or one no longer usable: saved before the
    bounds of `learning.core.cost.check_cost_matrix`, it is read as the default)."""
    if row is None:
        return None
    tags, matrix = row
    try:
        return TagCosts.table(matrix, rows=tags, tagset=tags)
    except CostMatrixError as exc:
        logger.warning("stored cost matrix not usable, read as the default: %s", exc)
        return None


_ROW = ("tags", "matrix", "preset", "revision")


def cost_matrix_get(*, project_id: int, tags: tuple[str, ...] | None = None) -> CostSetting:
    """The project's cost matrix over its current tags (`tags`, when the caller has read them).
    A matrix saved for other tag names (they can change until the first sentence is imported)
    no longer applies: the default."""
    tags = adapter.project_tagset(project_id=project_id) if tags is None else tags
    row = CostMatrix.objects.filter(project_id=project_id).values_list(*_ROW).first()
    stored = _stored(row[:2]) if row else None
    if stored is None or not stored.applies_to(tags):
        return _default(tags)
    return CostSetting(TagCosts(tags, stored.over(tags)), row[2], row[3])


def with_cost_revision(versions: QuerySet[ModelVersion]) -> QuerySet[ModelVersion]:
    """`versions` with their project's cost matrix revision and time of change read in the
    same query (`cost_revision`, `cost_updated`; None without a matrix): the key of
    `served_costs`."""
    row = CostMatrix.objects.filter(project=OuterRef("project"))
    return versions.annotate(
        cost_revision=Subquery(row.values("revision")[:1]),
        cost_updated=Subquery(row.values("updated_at")[:1]),
    )


def served_costs(*, version: ModelVersion) -> TagCosts | None:
    """The stored matrix of the version's project (None: none), read once per revision and
    process: a version read through `with_cost_revision` costs no query after the first. A
    version read otherwise costs one."""
    try:
        revision, updated = version.cost_revision, version.cost_updated
    except AttributeError:
        row = CostMatrix.objects.filter(project_id=version.project_id)
        revision, updated = row.values_list("revision", "updated_at").first() or (None, None)
    if revision is None:
        return None
    return _served_costs(version.project_id, revision, updated)


_SERVED: dict[tuple, TagCosts | None] = {}  # (project, revision, time of change) -> matrix
_SERVED_SIZE = 256


def _served_costs(project_id: int, revision: int, updated: datetime) -> TagCosts | None:
    # Keyed by the time of change too: a revision number alone could name two matrices where a
    # database reuses ids (SQLite's tests roll their sequences back).
    key = (project_id, revision, updated)
    if key in _SERVED:
        return _SERVED[key]
    rows = CostMatrix.objects.filter(project_id=project_id).values_list("tags", "matrix")
    row = rows.filter(revision=revision, updated_at=updated).first()
    if row is None:  # changed since the version was read: the newer one, this once, uncached
        return _stored(rows.first())
    if len(_SERVED) >= _SERVED_SIZE:
        _SERVED.pop(next(iter(_SERVED)), None)
    _SERVED[key] = value = _stored(row)
    return value


def decide(probs: np.ndarray, costs: TagCosts | None, tagset) -> np.ndarray:
    """Loss-aware tag indices (into `tagset`, a model's) of token probabilities `probs` under
    the stored matrix `costs` (`served_costs`); the most probable tags without one, or with one
    saved for other tag names (it no longer applies)."""
    if costs is None or not costs.applies_to(tagset):
        return bayes_decision(probs)
    return bayes_decision(probs, costs.over(tagset))


COST_REPORT_FIELDS = ("revision", "cost_per_token", "expected_cost_per_token", "accuracy",
                      "calibration_error", "cost_confusion", "cost_share")  # fmt: skip


def cost_report_of(*, version: ModelVersion) -> dict | None:
    """The version's cost report as the API gives it, or None before its matrix existed."""
    return CostReport.objects.filter(version=version).values(*COST_REPORT_FIELDS).first()


def cost_matrix_csv(*, project_id: int) -> str:
    """The project's matrix as CSV (`learning.core.cost.write_cost_csv`: the platform's one CSV
    policy, `learning.core.csvsafe`)."""
    setting = cost_matrix_get(project_id=project_id)
    return write_cost_csv(setting.matrix, setting.tags)


def model_file_export(*, version: ModelVersion, data: bytes) -> bytes:
    """The version's model file `data` as the dashboard gives it for the command-line tagger
    (`learning.core.tag`): carrying the project's cost matrix as it is now."""
    setting = cost_matrix_get(project_id=version.project_id)
    carried = {"tags": list(setting.tags), "matrix": setting.costs.rows(),
               "preset": setting.preset, "revision": setting.revision}  # fmt: skip
    return with_metadata(data, {"cost_matrix": carried})


# Writes ---------------------------------------------------------------------------------------


def cost_matrix_set(
    *,
    project_id: int,
    preset: str | None = None,
    matrix=None,
    matrix_tags=None,
    csv_text: str | None = None,
) -> CostSetting:
    """Save the project's matrix, given as one of: a `preset`; a `matrix` as a client sends it
    (a list of rows of numbers, rows the true tag), with the tag names of its rows and columns
    (`matrix_tags`) when they are not in the project's order; the text of a CSV file
    (`learning.core.cost.read_cost_table`). Checked once (an `InvalidInput` naming the cell or
    the tag otherwise). The caller queues `cost_reports_rescore` once this has committed (the
    API does): nothing is retrained."""
    tags = adapter.project_tagset(project_id=project_id)
    if sum(given is not None for given in (preset, matrix, csv_text)) != 1:
        raise _invalid("matrix", "Give a matrix or a preset.")
    if preset is not None:
        if preset not in PRESETS:
            raise _invalid("preset", f"Unknown preset {preset!r}: one of {', '.join(PRESETS)}.")
        costs = TagCosts.preset(preset, tags)
    elif csv_text is not None:
        try:
            costs = read_cost_table(csv_text, tags)
        except CostMatrixError as exc:
            raise _invalid("file", _sentence(str(exc))) from None
    else:
        try:
            costs = TagCosts.table(
                matrix, rows=list(tags) if matrix_tags is None else matrix_tags, tagset=tags
            )
        except CostMatrixError as exc:
            raise _invalid("tags" if exc.names else "matrix", _sentence(str(exc))) from None
    with transaction.atomic():
        row, created = CostMatrix.objects.select_for_update().get_or_create(
            project_id=project_id,
            defaults={"tags": list(tags), "matrix": costs.rows(), "preset": preset or ""},
        )
        if not created:
            row.tags, row.matrix, row.preset = list(tags), costs.rows(), preset or ""
            row.revision += 1
            row.save(update_fields=["tags", "matrix", "preset", "revision", "updated_at"])
    return CostSetting(costs, preset or "", row.revision)


def projects_behind_their_matrix(*, now: datetime) -> list[int]:
    """Projects whose matrix changed more than `SWEEP_GRACE` ago and some of whose versions'
    cost reports are not yet of its revision: the re-scoring the change queued was lost (the
    broker was down), or a retrain under way stored a report of the matrix before."""
    versions = ModelVersion.objects.filter(project=OuterRef("project"))
    of_revision = CostReport.objects.filter(
        version=OuterRef("pk"), revision=OuterRef(OuterRef("revision"))
    )
    rows = (
        CostMatrix.objects.filter(updated_at__lte=now - SWEEP_GRACE)
        .filter(Exists(versions.filter(~Exists(of_revision))))
        .values_list("project_id", "revision")
    )
    # A matrix saved for other tag names, or no longer usable, does not apply: the reports are
    # of the default, and nothing is behind.
    return [
        project_id
        for project_id, revision in rows
        if cost_matrix_get(project_id=project_id).revision == revision
    ]


def cost_report_store(*, version: ModelVersion, setting: CostSetting, figures: dict) -> None:
    CostReport.objects.update_or_create(
        version=version, defaults={"revision": setting.revision, **figures}
    )


def cost_figures(*, tagger, setting: CostSetting, sentences, tags, probs=None) -> dict:
    """`learning.core.report.cost_evaluation` of `tagger` with the matrix in its tags' order
    (``probs``: the served probabilities of the sentences' tokens, when already computed)."""
    matrix = setting.costs.over(tagger.tagset_)
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
