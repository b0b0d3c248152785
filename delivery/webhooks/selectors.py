"""Reads of webhooks: a project's webhooks with their last delivery, the delivery log,
deliveries overdue."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db.models import OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce

from delivery.models import Webhook, WebhookDelivery


def _with_last_delivery(webhooks: QuerySet[Webhook]) -> QuerySet[Webhook]:
    """Each webhook with its newest delivery's status and time (`last_delivery_status`,
    `last_delivery_at`; None without one), in the same query."""
    newest = WebhookDelivery.objects.filter(webhook=OuterRef("pk")).order_by("-id")
    return webhooks.annotate(
        last_delivery_status=Subquery(newest.values("status")[:1]),
        last_delivery_at=Subquery(
            newest.annotate(at=Coalesce("last_attempt_at", "created_at")).values("at")[:1]
        ),
    )


def webhooks_of_project(*, project_id: int) -> QuerySet[Webhook]:
    return _with_last_delivery(Webhook.objects.filter(project_id=project_id)).order_by("id")


def webhook_get(*, project_id: int, webhook_id: int) -> Webhook | None:
    return _with_last_delivery(Webhook.objects.filter(project_id=project_id, pk=webhook_id)).first()


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
