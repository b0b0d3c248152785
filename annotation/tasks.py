"""Celery tasks of the annotation app: a thin shell around `services.import_job_run`.

A job is claimed by a conditional update, so a duplicate delivery does nothing; `acks_late` with
`reject_on_worker_lost` redelivers the task of a worker that died, and the next delivery takes
over a job whose worker stopped reporting (`services.corpus.JOB_STALE`). Its rows were written
in one transaction, rolled back with the worker: nothing half-imported is left.
"""

from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings
from kombu.exceptions import KombuError, OperationalError
from redis.exceptions import RedisError

from annotation import services

logger = logging.getLogger(__name__)

_BROKER_ERRORS = (OperationalError, KombuError, RedisError, OSError)


@shared_task(
    name="annotation.import_run",
    acks_late=True,
    reject_on_worker_lost=True,
    time_limit=settings.CELERY_TASK_TIME_LIMIT,
    soft_time_limit=settings.CELERY_TASK_SOFT_TIME_LIMIT,
)
def import_run(job_id: int) -> str:
    return services.import_job_run(job_id=job_id)


def import_enqueue(*, job_id: int) -> bool:
    """Queue an import job; False (logged) when the broker is unreachable: the job stays
    queued, and is run when it is queued again."""
    try:
        import_run.apply_async(args=[job_id], retry=False)
    except _BROKER_ERRORS as exc:
        logger.warning(
            "cannot queue an import job", extra={"job_id": job_id, "error": str(exc)[:200]}
        )
        return False
    return True
