"""Celery tasks of the learning app: thin shells around `learning.services`.

Scheduling: ONE periodic task, `learning.retrain_sweep` (declared in `config/celery.py`, run by
beat with django-celery-beat's database scheduler), enqueues a retrain for every project that has
observations newer than its current model and whose own interval (`RetrainSchedule`, editable in
the admin and through the API, default `TALLY_RETRAIN_INTERVAL_MINUTES`) has passed. We chose a
sweep over one `PeriodicTask` per project because projects are created by the annotation app
(without signals there is no hook to create a beat entry, and a missing entry would silently
never retrain); because a sweep catches up by itself after any outage (Redis down, beat stopped:
the next sweep finds every due project); and because it costs one query per minute whatever the
number of projects. Beat's table still holds the sweep itself, so its period can be changed in the
admin without a deploy.

Reliability: `acks_late` + `reject_on_worker_lost` (a message is redelivered if its worker dies),
time limits below the retrain lock's expiry, bounded retries with backoff for database errors.
A redelivered or duplicate retrain is harmless: the job takes the project's lock and does nothing
when the current model already includes every observation.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from common.queue import enqueue, task_options
from delivery import push
from delivery.tasks import webhook_enqueue
from delivery.webhooks import selectors as webhook_selectors
from learning import costs, live, selectors, services

logger = logging.getLogger(__name__)

DELIVERY_GRACE = timedelta(minutes=2)


def retrain_and_push(
    *, project_id: int, trigger: str, task_id: str = ""
) -> services.RetrainOutcome:
    """Retrain (one transaction), then push the new report to streams and webhooks."""
    outcome = services.retrain_run(project_id=project_id, trigger=trigger, task_id=task_id)
    if outcome.version is not None:
        push.report_publish(project_id=project_id, summary=outcome.summary)
        for delivery_id in outcome.delivery_ids:
            webhook_enqueue(delivery_id=delivery_id)
    return outcome


@shared_task(
    **task_options(
        name="learning.retrain_project",
        seconds=settings.TALLY_RETRAIN_TIME_LIMIT,
        database_backoff=5,
        bind=True,
        reject_on_worker_lost=True,
        retry_backoff_max=300,
        retry_jitter=True,
    )
)
def retrain_project(self, project_id: int, trigger: str = "schedule") -> dict:
    outcome = retrain_and_push(
        project_id=project_id, trigger=trigger, task_id=self.request.id or ""
    )
    return {
        "status": outcome.status,
        "version": outcome.version.number if outcome.version else None,
        "message": outcome.message,
    }


def retrain_enqueue(*, project_id: int, trigger: str) -> bool:
    """Queue a retrain; False (logged) when the broker is unreachable — the sweep catches up."""
    return enqueue(
        retrain_project,
        args=[project_id],
        kwargs={"trigger": trigger},
        what="a retrain; the periodic sweep will catch up",
        project_id=project_id,
    )


@shared_task(**task_options(name="learning.cost_reports_rescore", seconds=600, database_backoff=5))
def cost_reports_rescore(project_id: int) -> dict:
    """Re-score every version of the project in its cost matrix's currency (no retrain)."""
    return {"written": costs.cost_reports_rescore(project_id=project_id)}


def cost_reports_rescore_enqueue(*, project_id: int) -> bool:
    """Queue the re-scoring; False (logged) when the broker is unreachable."""
    return enqueue(
        cost_reports_rescore, args=[project_id], what="the cost re-scoring", project_id=project_id
    )


@shared_task(**task_options(name="learning.retrain_sweep", seconds=120))
def retrain_sweep() -> dict:
    """Queue every due project, the re-scoring of cost reports whose message was lost (a
    cost-matrix change queues only that: no retrain), and webhook deliveries whose task was
    lost."""
    now = timezone.now()
    queued = [
        project_id
        for project_id in selectors.projects_due(now=now)
        if services.sweep_claim(project_id=project_id, now=now)
        and retrain_enqueue(project_id=project_id, trigger="schedule")
    ]
    rescored = [
        project_id
        for project_id in costs.projects_behind_their_matrix(now=now)
        if cost_reports_rescore_enqueue(project_id=project_id)
    ]
    redelivered = [
        delivery_id
        for delivery_id in webhook_selectors.deliveries_overdue(now=now, grace=DELIVERY_GRACE)
        if webhook_enqueue(delivery_id=delivery_id)
    ]
    if queued or rescored or redelivered:
        logger.info(
            "retrain sweep",
            extra={"queued": queued, "rescored": rescored, "redelivered": redelivered},
        )
    return {"queued": queued, "rescored": rescored, "redelivered": redelivered}


@shared_task(
    **task_options(
        name="learning.live_update", seconds=300, database_backoff=2, reject_on_worker_lost=True
    )
)
def live_update(project_id: int) -> dict:
    """One update of the project's live model (`learning.live`): killed anywhere, it applies
    nothing; redelivered or duplicated, the conditional publication applies each answer once."""
    return live.live_model_update(project_id=project_id)


@shared_task(**task_options(name="learning.live_sweep", seconds=60))
def live_sweep() -> dict:
    """Queue a live update of every project with answers after its live model's watermark."""
    queued = []
    for project_id in selectors.projects_live_due():
        if not enqueue(live_update, args=[project_id], what="a live update", project_id=project_id):
            break  # the broker is down: the next sweep tries again
        queued.append(project_id)
    return {"queued": queued}
