"""Queueing a Celery task when the broker may be down: the caller gets False and a log line, and
a sweep queues the work again later (every enqueue of the apps goes through here)."""

from __future__ import annotations

import logging

from kombu.exceptions import KombuError, OperationalError
from redis.exceptions import RedisError

logger = logging.getLogger(__name__)

BROKER_ERRORS = (OperationalError, KombuError, RedisError, OSError)


def enqueue(task, *, args: list, kwargs: dict | None = None, what: str, **context) -> bool:
    """Queue `task`; False when the broker is unreachable, logged as "cannot queue `what`" with
    `context` (ids) and the error."""
    try:
        task.apply_async(args=args, kwargs=kwargs or {}, retry=False)
    except BROKER_ERRORS as exc:
        logger.warning(f"cannot queue {what}", extra={**context, "error": str(exc)[:200]})
        return False
    return True
