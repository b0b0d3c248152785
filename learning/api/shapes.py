"""Output shapes of the learning API (learning/API.md)."""

from common.api.output import iso
from delivery.models import Webhook, WebhookDelivery
from learning import costs
from learning.models import ModelVersion, RetrainRun


def model_kind(version: ModelVersion) -> str:
    """``context`` (the word and its neighbours) or ``node`` (the word alone; every version
    trained before contextual models was one)."""
    return version.hyperparameters.get("model_kind", "node")


def version_out(version: ModelVersion, *, current_number: int | None) -> dict:
    report = getattr(version, "report", None)
    return {
        "version": version.number,
        "current": version.number == current_number,
        "created_at": iso(version.created_at),
        "observations": version.observations_count,
        "newest_observation": version.newest_observation,
        "accuracy": report.accuracy if report else None,
        "count_consistency": report.count_consistency if report else None,
        "model_kind": model_kind(version),
        "hyperparameters": version.hyperparameters,
        "timings": version.timings,
        "code_version": version.code_version,
        "warm_started_from": version.warm_started_from,
    }


_ANNOTATOR_FIELDS = (
    "annotator", "username", "answers", "median_seconds", "reliability", "flagged", "flag_reason",
    "verification_answers", "verification_skill", "verification_yes_rate",
)  # fmt: skip


def report_out(
    version: ModelVersion, *, tags: list[str], learning_curve: list[dict], forecast: dict
) -> dict:
    report = version.report
    return {
        "version": version.number,
        "created_at": iso(version.created_at),
        "observations": version.observations_count,
        "newest_observation": version.newest_observation,
        "model_kind": model_kind(version),
        "tags": tags,
        "evaluation": report.evaluation,
        "accuracy": report.accuracy,
        "per_tag": report.per_tag,
        "confusion": report.confusion,
        "count_consistency": report.count_consistency,
        "held_out_observations": report.held_out_observations,
        "learning_curve": [
            {**point, "created_at": iso(point["created_at"])} for point in learning_curve
        ],
        "forecast": forecast,
        "annotators": [
            {key: row.get(key) for key in _ANNOTATOR_FIELDS} for row in report.annotators
        ],
        "skipped_observations": report.skipped_observations,
        "effort": report.effort,
        "timings": version.timings,
        "cost": costs.cost_report_of(version=version),
    }


def run_error(run: RetrainRun, status: str) -> str:
    """The run's error; for a run shown failed while still recorded running (its worker died,
    see `selectors.run_status_shown`), why."""
    if run.error:
        return run.error
    return RetrainRun.WORKER_STOPPED if status != run.status else ""


def run_out(run: RetrainRun, status: str) -> dict:
    return {
        "id": run.pk,
        "status": status,
        "trigger": run.trigger,
        "version": run.version_number,
        "started_at": iso(run.started_at),
        "finished_at": iso(run.finished_at),
        "seconds": None if run.seconds is None else round(run.seconds, 3),
        "error": run_error(run, status),
    }


def last_error_out(run: RetrainRun | None) -> dict | None:
    """The newest failed run as `retrain-status/` shows it (a failed run's worker may have died
    before it recorded an error)."""
    if run is None:
        return None
    return {
        "run": run.pk,
        "at": iso(run.finished_at or run.started_at),
        "message": run.error or RetrainRun.WORKER_STOPPED,
    }


def webhook_out(webhook: Webhook) -> dict:
    """`webhook` as read by `delivery.webhooks.selectors` (with its last delivery)."""
    status = webhook.last_delivery_status
    return {
        "id": webhook.pk,
        "url": webhook.url,
        "active": webhook.active,
        "created_at": iso(webhook.created_at),
        "last_delivery": None
        if status is None
        else {"status": status, "at": iso(webhook.last_delivery_at)},
    }


def delivery_out(delivery: WebhookDelivery) -> dict:
    return {
        "id": delivery.pk,
        "event": delivery.event,
        "version": delivery.version_number,
        "status": delivery.status,
        "attempts": delivery.attempts,
        "response_code": delivery.response_code,
        "error": delivery.error,
        "created_at": iso(delivery.created_at),
        "last_attempt_at": iso(delivery.last_attempt_at),
        "next_attempt_at": iso(delivery.next_attempt_at),
        "delivered_at": iso(delivery.delivered_at),
    }


def live_out(live: dict | None) -> dict | None:
    """The live model's summary (`selectors.live_model_summary`) as the API shows it."""
    if live is None:
        return None
    return {**live, "published_at": iso(live["published_at"])}
