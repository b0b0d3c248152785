"""GET events/: the server-sent event stream of new reports (managers; see delivery/push.py).

Served by whichever server receives the request: under ASGI (the production event server that
the events path is routed to) the stream is asynchronous and waits without a thread; under WSGI
(the embedded default's runserver) it is the synchronous stream, one thread each. Either way a
user holds at most `TALLY_SSE_STREAMS_PER_USER` streams at once and a client address at most
`TALLY_SSE_STREAMS_PER_ADDRESS` (429 `too_many_streams` beyond), and all of them together at most
`TALLY_SSE_STREAMS_TOTAL` (503 `streams_full`, with `Retry-After`): delivery/stream_slots.py.
"""

from collections.abc import AsyncIterator, Iterator

from django.conf import settings
from django.core.handlers.asgi import ASGIRequest
from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.exceptions import APIException
from rest_framework.renderers import BaseRenderer, JSONRenderer

from accounts.signin import client_address
from common.api.base import ManagerView
from common.api.errors import ErrorSerializer, JsonErrors
from delivery import push
from delivery.stream_slots import StreamsFull, StreamSlot, stream_slot_acquire, stream_slot_release


class TooManyStreams(APIException):
    """The user (or their address) holds as many event streams as allowed already."""

    status_code = 429
    default_code = "too_many_streams"
    default_detail = "Too many event streams open."


class StreamsUnavailable(APIException):
    """Every stream the event servers may hold is open (`TALLY_SSE_STREAMS_TOTAL`)."""

    status_code = 503
    default_code = "streams_full"
    default_detail = "The event server holds as many streams as it may."


def _refusal(full: StreamsFull) -> APIException:
    if full.scope == "user":
        return TooManyStreams(
            f"You have {full.cap} event streams open already (TALLY_SSE_STREAMS_PER_USER); "
            "close a dashboard tab."
        )
    if full.scope == "address":
        return TooManyStreams(
            f"{full.cap} event streams are open from your address already "
            "(TALLY_SSE_STREAMS_PER_ADDRESS); close a dashboard tab."
        )
    refused = StreamsUnavailable(
        f"The event server holds {full.cap} streams, as many as it may (TALLY_SSE_STREAMS_TOTAL); "
        f"live updates resume when one ends: try again in {settings.TALLY_SSE_STREAM_SECONDS} "
        "seconds. Nothing is lost meanwhile: the dashboard shows the newest report on reload."
    )
    refused.wait = settings.TALLY_SSE_STREAM_SECONDS  # DRF's handler sends it as Retry-After
    return refused


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

    def __init__(self, content, slot: StreamSlot) -> None:
        self.content = content
        self.slot: StreamSlot | None = slot

    def close(self) -> None:
        if hasattr(self.content, "close"):
            self.content.close()
        if self.slot is not None:
            slot, self.slot = self.slot, None
            stream_slot_release(slot=slot)


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
                ErrorSerializer,
                description="`too_many_streams`: you, or your address, hold as many streams "
                "as allowed; close a dashboard tab.",
            ),
            503: OpenApiResponse(
                ErrorSerializer,
                description="`streams_full`: the event servers hold as many streams as they "
                "may; try again after `Retry-After` seconds.",
            ),
        },
    )
    def get(self, request, project_id):
        try:
            slot = stream_slot_acquire(
                user_id=request.user.pk,
                address=client_address(request),
                seconds=settings.TALLY_SSE_STREAM_SECONDS,
            )
        except StreamsFull as full:
            raise _refusal(full) from full
        arguments = {"project_id": self.project.pk, "since": _since(request)}
        if isinstance(request._request, ASGIRequest):
            content = _SlottedAsyncStream(push.event_stream_async(**arguments), slot)
        else:
            content = _SlottedStream(push.event_stream(**arguments), slot)
        response = StreamingHttpResponse(content, content_type="text/event-stream; charset=utf-8")
        response["Cache-Control"] = "no-cache"
        response["X-Accel-Buffering"] = "no"  # no proxy buffering (nginx)
        return response
