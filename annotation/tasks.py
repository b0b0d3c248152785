"""Celery tasks of the annotation app: a thin shell around `services.import_job_run`.

A job is claimed by a conditional update, so a duplicate delivery does nothing; `acks_late` with
`reject_on_worker_lost` redelivers the task of a worker that died, and the next delivery takes
over a job whose worker stopped reporting (`services.uploads.JOB_STALE`). Its rows were written
in one transaction, rolled back with the worker: nothing half-imported is left.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from annotation import selectors, services
from annotation.services.uploads import JOB_STALE
from common.queue import enqueue, task_options

logger = logging.getLogger(__name__)


@shared_task(
    **task_options(
        name="annotation.import_run",
        seconds=settings.CELERY_TASK_TIME_LIMIT,
        reject_on_worker_lost=True,
    )
)
def import_run(job_id: int) -> str:
    return services.import_job_run(job_id=job_id)


def import_enqueue(*, job_id: int) -> bool:
    """Queue an import job; False (logged) when the broker is unreachable: the job stays
    queued, and `import_sweep` queues it again."""
    return enqueue(import_run, args=[job_id], what="an import job", job_id=job_id)


# A queued job's message is looked for this long before the sweep sends it again.
QUEUED_GRACE = timedelta(minutes=1)


@shared_task(**task_options(name="annotation.import_sweep", seconds=60))
def import_sweep() -> list[int]:
    """Queue again the jobs whose message was lost or whose worker died (see
    `selectors.import_jobs_due`); a job sent twice runs once (its claim)."""
    due = selectors.import_jobs_due(now=timezone.now(), grace=QUEUED_GRACE, stale=JOB_STALE)
    queued = [job_id for job_id in due if import_enqueue(job_id=job_id)]
    if queued:
        logger.info("import sweep", extra={"queued": queued})
    return queued
