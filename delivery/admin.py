"""Admin of webhooks (editable) and their deliveries (read-only)."""

from django.contrib import admin
from django.db.models import URLField

from common.admin import ReadOnlyAdmin
from delivery import models


class DeliveryInline(admin.TabularInline):
    model = models.WebhookDelivery
    extra = 0
    can_delete = False
    fields = ["event", "version_number", "status", "attempts", "response_code", "error",
              "last_attempt_at", "delivered_at"]  # fmt: skip
    readonly_fields = fields
    ordering = ["-id"]

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(models.Webhook)
class WebhookAdmin(admin.ModelAdmin):
    """Admin edits bypass the target check of the API; prefer the API."""

    list_display = ["id", "project", "url", "active", "created_at"]
    list_filter = ["active"]
    formfield_overrides = {URLField: {"assume_scheme": "https"}}
    raw_id_fields = ["project"]
    inlines = [DeliveryInline]


@admin.register(models.WebhookDelivery)
class WebhookDeliveryAdmin(ReadOnlyAdmin):
    list_display = ["id", "webhook", "event", "status", "attempts", "response_code", "created_at"]
    list_filter = ["status"]
    list_select_related = ["webhook"]
