"""GET events/: the server-sent event stream of new reports (managers; see learning/push.py)."""

from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.renderers import BaseRenderer, JSONRenderer

from common.api.base import ManagerView
from learning import push


class EventStreamRenderer(BaseRenderer):
    """Lets DRF accept `Accept: text/event-stream`; errors still render as JSON text."""

    media_type = "text/event-stream"
    format = "event-stream"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        return JSONRenderer().render(data)


def _since(request) -> int | None:
    raw = request.headers.get("Last-Event-ID") or request.query_params.get("since")
    try:
        return int(raw) if raw not in (None, "") else None
    except ValueError:
        return None


class EventsView(ManagerView):
    renderer_classes = [JSONRenderer, EventStreamRenderer]

    @extend_schema(responses={(200, "text/event-stream"): OpenApiTypes.STR})
    def get(self, request, project_id):
        response = StreamingHttpResponse(
            push.event_stream(project_id=self.project.pk, since=_since(request)),
            content_type="text/event-stream; charset=utf-8",
        )
        response["Cache-Control"] = "no-cache"
        response["X-Accel-Buffering"] = "no"  # no proxy buffering (nginx)
        return response
