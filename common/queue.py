"""Celery tasks of the apps: the options they share (`task_options`), and queueing one when the
broker may be down (`enqueue`: the caller gets False and a log line, and a sweep queues the work
again later; every enqueue of the apps goes through here)."""

from __future__ import annotations

import logging

from django.db import DatabaseError
from kombu.exceptions import KombuError, OperationalError
from redis.exceptions import RedisError

logger = logging.getLogger(__name__)

BROKER_ERRORS = (OperationalError, KombuError, RedisError, OSError)


def task_options(*, seconds: float, database_backoff: float | None = None, **more) -> dict:
    """Options of `shared_task` every task of the apps has: acknowledged when done (a message
    whose worker died is delivered again), stopped after `seconds` and told 10 s before. With
    `database_backoff`, a database error runs it again, up to 3 times, after that many seconds
    and doubling. `more`: its name and any other option."""
    options = {"acks_late": True, "time_limit": seconds, "soft_time_limit": max(seconds - 10, 5)}
    if database_backoff is not None:
        options |= {"autoretry_for": (DatabaseError,), "retry_backoff": database_backoff,
                    "max_retries": 3}  # fmt: skip
    return options | more


def enqueue(task, *, args: list, kwargs: dict | None = None, what: str, **context) -> bool:
    """Queue `task`; False when the broker is unreachable, logged as "cannot queue `what`" with
    `context` (ids) and the error."""
    try:
        task.apply_async(args=args, kwargs=kwargs or {}, retry=False)
    except BROKER_ERRORS as exc:
        logger.warning(f"cannot queue {what}", extra={**context, "error": str(exc)[:200]})
        return False
    return True
