from django.apps import AppConfig


class DeliveryConfig(AppConfig):
    """Event delivery: new reports pushed to open dashboards (server-sent events) and to
    webhooks."""

    name = "delivery"
