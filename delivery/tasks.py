"""Celery tasks of event delivery: one webhook delivery attempt, retried with backoff."""

from __future__ import annotations

import logging

from celery import shared_task
from kombu.exceptions import KombuError, OperationalError
from redis.exceptions import RedisError

from delivery.webhooks import outbox

logger = logging.getLogger(__name__)

BROKER_ERRORS = (OperationalError, KombuError, RedisError, OSError)


# The task keeps the name it had in the learning app: deliveries queued before the split run.
@shared_task(
    bind=True,
    name="learning.webhook_deliver",
    acks_late=True,
    max_retries=outbox.MAX_ATTEMPTS,
    time_limit=60,
    soft_time_limit=50,
)
def webhook_deliver(self, delivery_id: int) -> str:
    outcome = outbox.delivery_attempt(delivery_id=delivery_id)
    if outcome.retry_in is not None:
        raise self.retry(countdown=outcome.retry_in)
    return outcome.status


def webhook_enqueue(*, delivery_id: int) -> bool:
    try:
        webhook_deliver.apply_async(args=[delivery_id], retry=False)
    except BROKER_ERRORS as exc:
        logger.warning(
            "cannot queue a webhook delivery; the sweep will retry it",
            extra={"delivery_id": delivery_id, "error": str(exc)[:200]},
        )
        return False
    return True
