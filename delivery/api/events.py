"""GET events/: the server-sent event stream of new reports (managers; see delivery/push.py).

Served by whichever server receives the request: under ASGI (the production event server that
the events path is routed to) the stream is asynchronous and waits without a thread; under WSGI
(the embedded default's runserver) it is the synchronous stream, one thread each. Either way a
user holds at most `TALLY_SSE_STREAMS_PER_USER` streams at once (429 `too_many_streams` beyond).
"""

from collections.abc import AsyncIterator, Iterator

from django.conf import settings
from django.core.handlers.asgi import ASGIRequest
from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.exceptions import APIException
from rest_framework.renderers import BaseRenderer, JSONRenderer

from common.api.base import ManagerView
from common.api.errors import ErrorSerializer, JsonErrors
from delivery import push
from delivery.stream_slots import stream_slot_acquire, stream_slot_release


class TooManyStreams(APIException):
    """The user holds `TALLY_SSE_STREAMS_PER_USER` event streams already."""

    status_code = 429
    default_code = "too_many_streams"
    default_detail = "Too many event streams open."


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


class _Slotted:
    """A stream's content that gives its slot back when the server closes the response: at the
    stream's end, or when the client went away, even before the stream was first read."""

    def __init__(self, content, user_id: int, slot: str) -> None:
        self.content = content
        self.user_id = user_id
        self.slot: str | None = slot

    def close(self) -> None:
        if hasattr(self.content, "close"):
            self.content.close()
        if self.slot is not None:
            slot, self.slot = self.slot, None
            stream_slot_release(user_id=self.user_id, slot=slot)


class _SlottedStream(_Slotted):
    def __iter__(self) -> Iterator[str]:
        return iter(self.content)


class _SlottedAsyncStream(_Slotted):
    """Django's ASGI handler closes the async generator itself, then calls `close()` in its
    thread for synchronous code, off the event loop."""

    def __aiter__(self) -> AsyncIterator[str]:
        return aiter(self.content)


class EventsView(JsonErrors, ManagerView):
    renderer_classes = [JSONRenderer, EventStreamRenderer]

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "since",
                str,
                description="Replay the reports after this event id (or send `Last-Event-ID`).",
            )
        ],
        responses={
            (200, "text/event-stream"): OpenApiTypes.STR,
            429: OpenApiResponse(
                ErrorSerializer, description="`too_many_streams`: close a dashboard tab."
            ),
        },
    )
    def get(self, request, project_id):
        user_id = request.user.pk
        slot = stream_slot_acquire(user_id=user_id, seconds=settings.TALLY_SSE_STREAM_SECONDS)
        if slot is None:
            raise TooManyStreams(
                f"You have {settings.TALLY_SSE_STREAMS_PER_USER} event streams open already "
                "(TALLY_SSE_STREAMS_PER_USER); close a dashboard tab."
            )
        arguments = {"project_id": self.project.pk, "since": _since(request)}
        if isinstance(request._request, ASGIRequest):
            content = _SlottedAsyncStream(push.event_stream_async(**arguments), user_id, slot)
        else:
            content = _SlottedStream(push.event_stream(**arguments), user_id, slot)
        response = StreamingHttpResponse(content, content_type="text/event-stream; charset=utf-8")
        response["Cache-Control"] = "no-cache"
        response["X-Accel-Buffering"] = "no"  # no proxy buffering (nginx)
        return response
