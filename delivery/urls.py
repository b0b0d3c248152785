"""URLs of event delivery, included under /api/: a project's event stream and its webhooks."""

from django.urls import path

from delivery.api import events, webhooks

P = "projects/<id:project_id>/"

urlpatterns = [
    path(P + "webhooks/", webhooks.WebhookListView.as_view(), name="webhook-list"),
    path(
        P + "webhooks/<id:webhook_id>/",
        webhooks.WebhookDetailView.as_view(),
        name="webhook-detail",
    ),
    path(
        P + "webhooks/<id:webhook_id>/deliveries/",
        webhooks.DeliveryListView.as_view(),
        name="webhook-deliveries",
    ),
    path(P + "events/", events.EventsView.as_view(), name="events"),
]
