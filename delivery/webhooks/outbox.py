"""The webhook outbox: deliveries written with what they announce, then attempted one by one.

A delivery row is written in the same transaction as the model version it announces; the
`webhook_deliver` task then makes one attempt per run through `delivery_attempt`, which records
the outcome and says whether (and when) to try again: exponential backoff from
`TALLY_WEBHOOK_BACKOFF_SECONDS`, `MAX_ATTEMPTS` in all.
"""

from __future__ import annotations

import http.client
import json
import logging
import time
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db.models import Q
from django.utils import timezone

from delivery.models import Webhook, WebhookDelivery
from delivery.webhooks import transport

logger = logging.getLogger(__name__)

MAX_ATTEMPTS = 6
CLAIM_SECONDS = 60


def deliveries_create(
    *, project_id: int, event: str, version_number: int | None, summary: dict
) -> list[int]:
    """One pending delivery per active webhook of the project (call inside the transaction that
    writes what the event announces)."""
    now = timezone.now()
    payload = json.loads(json.dumps(summary, cls=DjangoJSONEncoder))
    created = WebhookDelivery.objects.bulk_create(
        WebhookDelivery(
            webhook=webhook,
            event=event,
            version_number=version_number,
            payload=payload,
            next_attempt_at=now,
        )
        for webhook in Webhook.objects.filter(project_id=project_id, active=True)
    )
    return [delivery.pk for delivery in created]


@dataclass(frozen=True)
class AttemptOutcome:
    status: str
    retry_in: float | None  # seconds until the next attempt, or None when done


def _claim(delivery_id: int, now: datetime) -> WebhookDelivery | None:
    """Take the delivery for one attempt (a conditional UPDATE, so a duplicate task message
    cannot attempt it at the same time)."""
    claimed = (
        WebhookDelivery.objects.filter(
            pk=delivery_id,
            status__in=[WebhookDelivery.Status.PENDING, WebhookDelivery.Status.RETRYING],
        )
        .filter(
            Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now + timedelta(seconds=1))
        )
        .update(next_attempt_at=now + timedelta(seconds=CLAIM_SECONDS))
    )
    if claimed != 1:
        return None
    return WebhookDelivery.objects.select_related("webhook").get(pk=delivery_id)


def backoff_seconds(attempts: int) -> float:
    """Wait after the `attempts`-th failed attempt: base · 2^(attempts − 1)."""
    return float(settings.TALLY_WEBHOOK_BACKOFF_SECONDS * 2 ** (attempts - 1))


def delivery_attempt(*, delivery_id: int, now: datetime | None = None) -> AttemptOutcome:
    """Make one attempt of a delivery and record it."""
    now = now or timezone.now()
    delivery = _claim(delivery_id, now)
    if delivery is None:
        return AttemptOutcome(status="not_due", retry_in=None)
    webhook = delivery.webhook
    body = json.dumps(
        {
            **delivery.payload,
            "delivery": delivery.pk,
            "sent_at": int(time.time()),
        },
        separators=(",", ":"),
    ).encode()
    timestamp = str(json.loads(body)["sent_at"])
    code, error = None, ""
    if not webhook.active:
        error = "The webhook is disabled."
    else:
        try:
            address = transport.target_check(webhook.url)[0]
            code = transport.post(
                webhook.url,
                address,
                body,
                {
                    "Content-Type": "application/json",
                    "User-Agent": "Tally-Webhook/1",
                    "X-Tally-Event": delivery.event,
                    "X-Tally-Delivery": str(delivery.pk),
                    "X-Tally-Timestamp": timestamp,
                    transport.SIGNATURE_HEADER: transport.signature(webhook.secret, body),
                },
            )
            if not 200 <= code < 300:
                error = f"HTTP {code}" + (
                    " (redirects are not followed)" if 300 <= code < 400 else ""
                )
        except transport.TargetRefused as exc:
            error = f"Target refused: {exc}"
        except (OSError, http.client.HTTPException) as exc:
            error = f"{type(exc).__name__}: {exc}"
    delivery.attempts += 1
    delivery.last_attempt_at = timezone.now()
    delivery.response_code = code
    delivery.error = error[:500]
    retry_in = None
    if not error:
        delivery.status = WebhookDelivery.Status.SUCCEEDED
        delivery.delivered_at = delivery.last_attempt_at
        delivery.next_attempt_at = None
    elif delivery.attempts >= MAX_ATTEMPTS or not webhook.active:
        delivery.status = WebhookDelivery.Status.FAILED
        delivery.next_attempt_at = None
    else:
        delivery.status = WebhookDelivery.Status.RETRYING
        retry_in = backoff_seconds(delivery.attempts)
        delivery.next_attempt_at = delivery.last_attempt_at + timedelta(seconds=retry_in)
    delivery.save(
        update_fields=[
            "attempts", "last_attempt_at", "response_code", "error", "status", "delivered_at",
            "next_attempt_at",
        ]
    )  # fmt: skip
    log = logger.info if not error else logger.warning
    log(
        "webhook delivery attempt",
        extra={
            "delivery_id": delivery.pk,
            "webhook_id": webhook.pk,
            "attempt": delivery.attempts,
            "status": delivery.status,
            "response_code": code,
            "error": error[:200],
        },
    )
    return AttemptOutcome(status=delivery.status, retry_in=retry_in)
