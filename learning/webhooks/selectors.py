"""Reads of webhooks: a project's webhooks, their delivery log, deliveries overdue."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db.models import QuerySet

from learning.models import Webhook, WebhookDelivery


def webhooks_of_project(*, project_id: int) -> QuerySet[Webhook]:
    return Webhook.objects.filter(project_id=project_id).order_by("id")


def webhook_get(*, project_id: int, webhook_id: int) -> Webhook | None:
    return Webhook.objects.filter(project_id=project_id, pk=webhook_id).first()


def last_delivery(*, webhook: Webhook) -> WebhookDelivery | None:
    return webhook.deliveries.order_by("-id").first()


def deliveries_of_webhook(*, webhook: Webhook) -> QuerySet[WebhookDelivery]:
    return webhook.deliveries.order_by("-id")


def deliveries_overdue(*, now: datetime, grace: timedelta) -> list[int]:
    """Deliveries whose next attempt is long overdue (their task was lost, e.g. the broker was
    down when it should have been queued)."""
    return list(
        WebhookDelivery.objects.filter(
            status__in=[WebhookDelivery.Status.PENDING, WebhookDelivery.Status.RETRYING],
            next_attempt_at__lt=now - grace,
        ).values_list("pk", flat=True)[:500]
    )
