"""Reads of the learning app: current versions, reports, due projects, runs (webhooks:
`delivery.webhooks.selectors`)."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import F, OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from annotation.models import Observation, Project
from learning import adapter, locks
from learning.models import (
    AccuracyReport,
    AnnotatorQuality,
    LiveModel,
    ModelVersion,
    RetrainRun,
    RetrainSchedule,
)

LEARNING_CURVE_POINTS = 200
RECENT_RUNS = 10


def flagged_annotator_ids(project_id: int) -> set[int]:
    """Ids of the annotators whose answers the last retrain found no better than chance.

    Their answers get zero weight in the next retrain; the task scheduler may stop serving them.
    """
    return set(
        AnnotatorQuality.objects.filter(project_id=project_id, flagged=True).values_list(
            "annotator_id", flat=True
        )
    )


def current_version(*, project_id: int) -> ModelVersion | None:
    """The version predictions use: the newest one (every stored version is complete)."""
    return ModelVersion.objects.filter(project_id=project_id).order_by("-number").first()


def version_get(*, project_id: int, number: int) -> ModelVersion | None:
    return (
        ModelVersion.objects.filter(project_id=project_id, number=number)
        .select_related("report")
        .first()
    )


def versions_of_project(*, project_id: int) -> QuerySet[ModelVersion]:
    return (
        ModelVersion.objects.filter(project_id=project_id)
        .select_related("report")
        .order_by("-number")
    )


def learning_curve(*, project_id: int) -> list[dict]:
    rows = (
        AccuracyReport.objects.filter(version__project_id=project_id)
        .order_by("-version__number")
        .values_list(
            "version__number",
            "version__observations_count",
            "accuracy",
            "count_consistency",
            "version__created_at",
            "version__cost_report__cost_per_token",
        )[:LEARNING_CURVE_POINTS]
    )
    return [
        {
            "version": number,
            "observations": observations,
            "accuracy": accuracy,
            "count_consistency": consistency,
            "created_at": created_at,
            "cost_per_token": cost,
        }
        for number, observations, accuracy, consistency, created_at, cost in reversed(list(rows))
    ]


def _newest_observation_subquery():
    return Subquery(
        Observation.objects.filter(project=OuterRef("pk")).order_by("-id").values("id")[:1]
    )


def _modelled_subquery():
    return Subquery(
        ModelVersion.objects.filter(project=OuterRef("pk"))
        .order_by("-number")
        .values("newest_observation")[:1]
    )


def projects_due(*, now: datetime | None = None) -> list[int]:
    """Projects with observations newer than their current model whose retrain interval has
    passed (and whose schedule is enabled). The interval runs from the sweep's last enqueue of
    the project, or before its first one from the project's newest model version (`./tally up`'s
    demo, trained as it is made, was retrained by the first sweep, a minute after start). A
    project without any model is due at once: its first model is the one most worth having, and
    a retrain asked while the broker was down is caught up by the next sweep."""
    now = now or timezone.now()
    default_interval = settings.TALLY_RETRAIN_INTERVAL_MINUTES
    schedules = RetrainSchedule.objects.filter(project=OuterRef("pk"))
    newest_version = ModelVersion.objects.filter(project=OuterRef("pk")).order_by("-number")
    candidates = (
        Project.objects.annotate(
            newest=_newest_observation_subquery(),
            modelled=Coalesce(_modelled_subquery(), 0),
            enabled=Coalesce(Subquery(schedules.values("enabled")[:1]), True),
            interval=Coalesce(Subquery(schedules.values("interval_minutes")[:1]), default_interval),
            since=Coalesce(
                Subquery(schedules.values("last_enqueued_at")[:1]),
                Subquery(newest_version.values("created_at")[:1]),
            ),
        )
        .filter(newest__gt=F("modelled"), enabled=True)
        .values_list("pk", "interval", "since")
    )
    return [
        pk
        for pk, interval, since in candidates
        if since is None or since <= now - timedelta(minutes=interval)
    ]


def projects_live_due() -> list[int]:
    """Projects with a model and observations after their live model's watermark (or, before
    its first update, after the current version's)."""
    live = LiveModel.objects.filter(project=OuterRef("pk"))
    return list(
        Project.objects.annotate(
            newest=_newest_observation_subquery(),
            applied=Coalesce(Subquery(live.values("watermark")[:1]), _modelled_subquery()),
        )
        .filter(applied__isnull=False, newest__gt=F("applied"))
        .values_list("pk", flat=True)
    )


def retrain_due(*, project_id: int) -> tuple[bool, int]:
    """(has observations newer than the current model, how many)."""
    current = current_version(project_id=project_id)
    modelled = current.newest_observation if current else 0
    pending = Observation.objects.filter(project_id=project_id, id__gt=modelled).count()
    return pending > 0, pending


def schedule_of(*, project_id: int) -> dict:
    schedule = RetrainSchedule.objects.filter(project_id=project_id).first()
    if schedule is None:
        return {"interval_minutes": settings.TALLY_RETRAIN_INTERVAL_MINUTES, "enabled": True}
    return {"interval_minutes": schedule.interval_minutes, "enabled": schedule.enabled}


def run_status_shown(run: RetrainRun, *, locked: bool) -> str:
    """A run left `running` by a dead worker is shown as failed once the lock is free."""
    if run.status == RetrainRun.Status.RUNNING and not locked:
        return RetrainRun.Status.FAILED
    return run.status


def retrain_status(*, project_id: int) -> dict:
    """Lock, due-ness and the recent runs (with the status to show), plus the newest failure."""
    locked_until = locks.lock_state(project_id=project_id)
    runs = list(RetrainRun.objects.filter(project_id=project_id).order_by("-id")[:RECENT_RUNS])
    shown = [(run, run_status_shown(run, locked=locked_until is not None)) for run in runs]
    failures = [run for run, status in shown if status == RetrainRun.Status.FAILED]
    if not failures:
        failures = list(
            RetrainRun.objects.filter(
                project_id=project_id, status=RetrainRun.Status.FAILED
            ).order_by("-id")[:1]
        )
    due, pending = retrain_due(project_id=project_id)
    current = current_version(project_id=project_id)
    return {
        "locked_until": locked_until,
        "due": due,
        "pending_observations": pending,
        "current_version": current.number if current else None,
        "runs": shown,
        "last_failed": failures[0] if failures else None,
    }


def report_summary(*, version: ModelVersion) -> dict:
    """The short form of a report sent to dashboards and webhooks."""
    report = version.report
    return {
        "event": "report.created",
        "project": version.project_id,
        "version": version.number,
        "created_at": version.created_at,
        "observations": version.observations_count,
        "accuracy": report.accuracy,
        "count_consistency": report.count_consistency,
        "flagged_annotators": sum(1 for row in report.annotators if row.get("flagged")),
        "report_url": f"/api/projects/{version.project_id}/reports/{version.number}/",
    }


def tagger_of(*, version: ModelVersion):
    """The version's tagger (cached per process; model files never change)."""
    return adapter.model_load(version.file.name)


def served_tagger(*, version: ModelVersion):
    """(tagger, live number or None): the live model that follows ``version`` once it has
    published (`learning.live`), else the version's own tagger."""
    live = (
        LiveModel.objects.filter(
            project_id=version.project_id, base_version=version.number, number__gt=0
        )
        .values_list("number", "file")
        .first()
    )
    if live is not None:
        try:
            return adapter.model_load(live[1]), live[0]
        except FileNotFoundError:  # replaced by a newer publication meanwhile
            pass
    return tagger_of(version=version), None


def live_model_summary(*, project_id: int) -> dict | None:
    """The live model as the dashboard shows it: which batch version it follows, its updates,
    the answers applied and the progressive-validation curve (None before the first update)."""
    fields = ("base_version", "number", "answers_applied", "watermark", "published_at",
              "progressive")  # fmt: skip
    return LiveModel.objects.filter(project_id=project_id).values(*fields).first()
