"""Webhook CRUD and delivery log (managers)."""

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response

from common.api.base import ManagerView, paginated
from common.api.errors import ErrorSerializer
from common.api.typed import TypedSerializer
from common.exceptions import NotFound
from delivery.webhooks import selectors, services
from learning.api.schemas import DeliveryOut, WebhookCreatedOut, WebhookOut
from learning.api.shapes import delivery_out, webhook_out


class WebhookSerializer(TypedSerializer):
    url = serializers.CharField(max_length=500, trim_whitespace=True)
    secret = serializers.CharField(required=False, trim_whitespace=False)
    active = serializers.BooleanField(required=False, default=True)


class WebhookListView(ManagerView):
    @extend_schema(responses={200: WebhookOut(many=True)})
    def get(self, request, project_id):
        return paginated(
            self,
            selectors.webhooks_of_project(project_id=self.project.pk),
            webhook_out,
        )

    @extend_schema(
        request=WebhookSerializer,
        responses={
            201: WebhookCreatedOut,
            409: OpenApiResponse(ErrorSerializer, description="The project has the most allowed."),
        },
    )
    def post(self, request, project_id):
        data = WebhookSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        hook = services.webhook_create(project=self.project, **data.validated_data)
        shown = selectors.webhook_get(project_id=self.project.pk, webhook_id=hook.pk)
        return Response(
            {**webhook_out(shown), "secret": hook.secret}, status=status.HTTP_201_CREATED
        )


class _WebhookView(ManagerView):
    def webhook(self, webhook_id: int):
        hook = selectors.webhook_get(project_id=self.project.pk, webhook_id=webhook_id)
        if hook is None:
            raise NotFound("No such webhook.")
        return hook


class WebhookDetailView(_WebhookView):
    @extend_schema(responses={200: WebhookOut})
    def get(self, request, project_id, webhook_id):
        return Response(webhook_out(self.webhook(webhook_id)))

    @extend_schema(request=WebhookSerializer(partial=True), responses={200: WebhookOut})
    def patch(self, request, project_id, webhook_id):
        hook = self.webhook(webhook_id)
        data = WebhookSerializer(data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        hook = services.webhook_update(webhook=hook, **data.validated_data)
        return Response(webhook_out(hook))  # read with its last delivery, which is unchanged

    @extend_schema(responses={204: None})
    def delete(self, request, project_id, webhook_id):
        services.webhook_delete(webhook=self.webhook(webhook_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


class DeliveryListView(_WebhookView):
    @extend_schema(responses={200: DeliveryOut(many=True)})
    def get(self, request, project_id, webhook_id):
        hook = self.webhook(webhook_id)
        return paginated(self, selectors.deliveries_of_webhook(webhook=hook), delivery_out)
