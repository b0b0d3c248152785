"""Celery tasks of event delivery: one webhook delivery attempt, retried with backoff."""

from __future__ import annotations

from celery import shared_task

from common.queue import enqueue, task_options
from delivery.webhooks import outbox


# The task keeps the name it had in the learning app: deliveries queued before the split run.
@shared_task(
    **task_options(
        name="learning.webhook_deliver", seconds=60, bind=True, max_retries=outbox.MAX_ATTEMPTS
    )
)
def webhook_deliver(self, delivery_id: int) -> str:
    outcome = outbox.delivery_attempt(delivery_id=delivery_id)
    if outcome.retry_in is not None:
        raise self.retry(countdown=outcome.retry_in)
    return outcome.status


def webhook_enqueue(*, delivery_id: int) -> bool:
    return enqueue(
        webhook_deliver,
        args=[delivery_id],
        what="a webhook delivery; the sweep will retry it",
        delivery_id=delivery_id,
    )
