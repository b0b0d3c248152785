"""Webhooks and their deliveries: where a project's events go, and what became of each."""

from django.db import models

from annotation.models import Project


class Webhook(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="webhooks")
    url = models.URLField(max_length=500)
    secret = models.CharField(max_length=200)
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "learning_webhook"  # the table from before the app was split off
        ordering = ["project", "id"]

    def __str__(self) -> str:
        return self.url


class WebhookDelivery(models.Model):
    """One event to one webhook, with every attempt's outcome. Written in the same transaction as
    the version it announces (an outbox), so a broker outage delays deliveries but loses none."""

    class Status(models.TextChoices):
        PENDING = "pending"
        RETRYING = "retrying"
        SUCCEEDED = "succeeded"
        FAILED = "failed"

    webhook = models.ForeignKey(Webhook, on_delete=models.CASCADE, related_name="deliveries")
    event = models.CharField(max_length=40)
    version_number = models.PositiveIntegerField(null=True, blank=True)
    payload = models.JSONField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    response_code = models.PositiveSmallIntegerField(null=True, blank=True)
    error = models.CharField(max_length=500, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "learning_webhookdelivery"
        ordering = ["webhook", "-id"]
        verbose_name_plural = "webhook deliveries"
        indexes = [
            models.Index(
                fields=["next_attempt_at"],
                condition=models.Q(status__in=["pending", "retrying"]),
                name="delivery_due_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"delivery {self.pk} ({self.status})"
