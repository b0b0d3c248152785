"""Push new reports to open dashboards as server-sent events.

With `REDIS_URL` the worker publishes each new version's summary on a per-project Redis pub/sub
channel after its transaction committed, and every open stream subscribed to that channel sends
it on at once. Without Redis (the embedded default) the stream polls the database for a newer
version every `TALLY_SSE_POLL_SECONDS`. Either way a stream ends after `TALLY_SSE_STREAM_SECONDS`
with a `retry:` hint and EventSource reconnects by itself; a reconnect sends `Last-Event-ID`, and
a version newer than that is sent at once (nothing published while no stream was open is lost).
If Redis fails mid-stream, the stream falls back to polling.

Two forms of the same stream, carrying out one course (`_course`: what to send, when to wait,
what to read): `event_stream_async`, served by the ASGI process (production routes the events
path there), waits on the event loop and holds no thread, sharing one Redis subscription per
process (delivery/push_hub.py); `event_stream` is the synchronous form a WSGI server (the
embedded default's runserver) serves, one thread and one subscription per stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator, Callable, Generator, Iterator

import redis
from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder

from delivery import push_hub
from learning import selectors

logger = logging.getLogger(__name__)

RETRY_MILLISECONDS = 2000
KEEPALIVE_SECONDS = 15.0


def channel_name(project_id: int) -> str:
    return f"tally:project:{project_id}:reports"


def _client() -> redis.Redis:
    return redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=1, socket_timeout=5)


def report_publish(*, project_id: int, summary: dict) -> bool:
    """Publish a new version's summary (call after the version's transaction committed)."""
    if not settings.REDIS_URL:
        return False  # the streams poll the database
    try:
        _client().publish(channel_name(project_id), json.dumps(summary, cls=DjangoJSONEncoder))
    except redis.RedisError as exc:
        logger.warning(
            "report push failed", extra={"project_id": project_id, "error": str(exc)[:200]}
        )
        return False
    return True


def _event(name: str, data: dict, event_id: int | None = None) -> str:
    lines = [f"event: {name}"]
    if event_id is not None:
        lines.append(f"id: {event_id}")
    lines.append("data: " + json.dumps(data, cls=DjangoJSONEncoder))
    return "\n".join(lines) + "\n\n"


# A new version's event is read once per process for every stream open on its project, not
# once per stream: the reads run one at a time in Django's thread for synchronous code, and 1,000
# streams reading it each took over 10 s to all get it (`manage.py benchmark_streams`).
_REPORT_MEMO_SECONDS = 10.0
_report_memo: dict[tuple[int, int], tuple[float, str]] = {}


def _report_event(project_id: int, number: int) -> str | None:
    key, now = (project_id, number), time.monotonic()
    memo = _report_memo.get(key)
    if memo is not None and now - memo[0] < _REPORT_MEMO_SECONDS:
        return memo[1]
    version = selectors.version_get(project_id=project_id, number=number)
    if version is None:
        return None
    event = _event("report", selectors.report_summary(version=version), number)
    if len(_report_memo) >= 256:
        _report_memo.clear()
    _report_memo[key] = (now, event)
    return event


def _current_number(project_id: int) -> int | None:
    current = selectors.current_version(project_id=project_id)
    return current.number if current else None


def _subscribe(project_id: int):
    if not settings.REDIS_URL:
        return None
    try:
        pubsub = _client().pubsub(ignore_subscribe_messages=True)
        pubsub.subscribe(channel_name(project_id))
    except redis.RedisError as exc:
        logger.warning("push subscribe failed; polling", extra={"error": str(exc)[:200]})
        return None
    return pubsub


def _opening(project_id: int, since: int | None) -> tuple[list[str], int | None]:
    """The events a stream starts with (after `retry:`), and the version it has sent."""
    current = _current_number(project_id)
    events = [_event("hello", {"version": current})]
    sent = since if since is not None else current
    if current is not None and sent is not None and current > sent:
        event = _report_event(project_id, current)
        if event:
            events.append(event)
        sent = current
    return events, sent


def _course(
    project_id: int, since: int | None, deadline: float, clock: Callable[[], float]
) -> Generator[tuple[str, object], object, None]:
    """What a stream does, whoever serves it: yields the next step as ``(kind, value)`` and
    receives its result. ``("send", text)``: send it; ``("opening", None)``: the events a stream
    starts with and the version they sent (:func:`_opening`); ``("wait", seconds)``: wait at most
    that long for a newer version, answer its number or None; ``("report", number)``: that
    version's event, or None. The synchronous and asynchronous streams only carry the steps out."""
    yield "send", f"retry: {RETRY_MILLISECONDS}\n\n"
    opening, sent = yield "opening", None
    for event in opening:
        yield "send", event
    last_output = clock()
    while (remaining := deadline - clock()) > 0:
        keepalive_in = max(0.0, last_output + KEEPALIVE_SECONDS - clock())
        newest = yield "wait", min(remaining, keepalive_in)
        if newest is not None and (sent is None or newest > sent):
            event = yield "report", newest
            if event:
                yield "send", event
                sent, last_output = newest, clock()
        elif clock() - last_output >= KEEPALIVE_SECONDS:
            yield "send", ": keep-alive\n\n"
            last_output = clock()


def event_stream(
    *,
    project_id: int,
    since: int | None,
    duration: float | None = None,
    poll_seconds: float | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> Iterator[str]:
    """The text of one event stream (see the module docstring and learning/API.md), one thread
    and one Redis subscription each."""
    duration = settings.TALLY_SSE_STREAM_SECONDS if duration is None else duration
    poll_seconds = settings.TALLY_SSE_POLL_SECONDS if poll_seconds is None else poll_seconds
    deadline = clock() + duration
    pubsub = _subscribe(project_id)  # before reading the current version: nothing falls between
    course = _course(project_id, since, deadline, clock)
    try:
        result = None
        while (step := _next_step(course, result)) is not None:
            kind, value = step
            result = None
            if kind == "send":
                yield value
            elif kind == "opening":
                result = _opening(project_id, since)
            elif kind == "report":
                result = _report_event(project_id, value)
            elif pubsub is not None:
                try:
                    message = pubsub.get_message(timeout=value)
                except redis.RedisError as exc:
                    logger.warning("push stream lost Redis; polling", extra={"error": str(exc)})
                    pubsub = None
                    continue
                if message and message.get("type") == "message":
                    result = json.loads(message["data"]).get("version")
            else:
                time.sleep(min(value, poll_seconds))
                result = _current_number(project_id)
    finally:
        if pubsub is not None:
            try:
                pubsub.close()
            except redis.RedisError:
                logger.debug("closing a push subscription failed")


async def event_stream_async(
    *,
    project_id: int,
    since: int | None,
    duration: float | None = None,
    poll_seconds: float | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> AsyncIterator[str]:
    """`event_stream` for an ASGI server: the same course, awaiting instead of blocking.

    Database reads run in Django's thread for synchronous code, briefly; the waits between
    events hold no thread.
    """
    duration = settings.TALLY_SSE_STREAM_SECONDS if duration is None else duration
    poll_seconds = settings.TALLY_SSE_POLL_SECONDS if poll_seconds is None else poll_seconds
    deadline = clock() + duration
    subscription = await push_hub.subscribe(project_id)  # before reading the current version
    course = _course(project_id, since, deadline, clock)
    try:
        result = None
        while (step := _next_step(course, result)) is not None:
            kind, value = step
            result = None
            if kind == "send":
                yield value
            elif kind == "opening":
                result = await sync_to_async(_opening)(project_id, since)
            elif kind == "report":
                result = await sync_to_async(_report_event)(project_id, value)
            elif subscription is not None:
                with contextlib.suppress(TimeoutError):
                    result = await asyncio.wait_for(subscription.queue.get(), value)
                if result is push_hub.LOST:
                    logger.warning("push stream lost Redis; polling")
                    subscription.close()
                    subscription, result = None, None
            else:
                await asyncio.sleep(min(value, poll_seconds))
                result = await sync_to_async(_current_number)(project_id)
    finally:
        if subscription is not None:
            subscription.close()


def _next_step(course: Generator, result: object) -> tuple[str, object] | None:
    try:
        return course.send(result)
    except StopIteration:
        return None
