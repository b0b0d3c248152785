"""The asynchronous event stream (delivery.push.event_stream_async) and the caps on streams per
user, per address and in all (delivery.stream_slots), without a server: see test_events_asgi for
uvicorn."""

import asyncio
import json
import time

import pytest

from annotation.models import Membership
from delivery import push, push_hub
from tests.support.factories import UserFactory, client_for


@pytest.fixture
def versions(monkeypatch):
    """The project's newest version number, as the stream reads it, set by the test."""
    state = {"current": None, "reads": 0}

    def current(project_id):
        state["reads"] += 1
        return state["current"]

    monkeypatch.setattr(push, "_current_number", current)
    monkeypatch.setattr(
        push, "_report_event", lambda project_id, number: f"event: report\nid: {number}\n\n"
    )
    return state


async def _collect(stream, until: str, within: float) -> list[str]:
    seen = []
    started = time.monotonic()
    async for event in stream:
        seen.append(event)
        if event.startswith(until):
            return seen
        assert time.monotonic() - started < within, f"no {until!r} within {within} s: {seen}"
    raise AssertionError(f"stream ended without {until!r}: {seen}")


def test_async_stream_polls_without_redis(versions, settings):
    settings.REDIS_URL = ""

    async def scenario():
        stream = push.event_stream_async(project_id=1, since=None, duration=10, poll_seconds=0.1)
        opening = await _collect(stream, "event: hello", 2)
        versions["current"] = 3
        report = await _collect(stream, "event: report", 2)
        await stream.aclose()
        return opening, report

    opening, report = asyncio.run(scenario())
    assert opening == ["retry: 2000\n\n", 'event: hello\ndata: {"version": null}\n\n']
    assert report == ["event: report\nid: 3\n\n"]


def test_async_stream_sends_a_missed_report_and_ends_on_time(versions, settings):
    settings.REDIS_URL = ""
    versions["current"] = 2

    async def scenario():
        started = time.monotonic()
        events = [e async for e in push.event_stream_async(project_id=1, since=1, duration=0.3)]
        return events, time.monotonic() - started

    events, seconds = asyncio.run(scenario())
    assert events[2] == "event: report\nid: 2\n\n"  # after retry and hello
    assert seconds < 1.5


def test_many_async_streams_share_the_loop(versions, settings):
    """200 streams wait together on one loop: each poll is a short read, not a held thread."""
    settings.REDIS_URL = ""

    async def scenario():
        streams = [
            push.event_stream_async(project_id=1, since=None, duration=10, poll_seconds=0.2)
            for _ in range(200)
        ]
        await asyncio.gather(*(_collect(s, "event: hello", 5) for s in streams))
        versions["current"] = 1
        started = time.monotonic()
        await asyncio.gather(*(_collect(s, "event: report", 5) for s in streams))
        for stream in streams:
            await stream.aclose()
        return time.monotonic() - started

    # Waiting in turn, 200 streams polling every 0.2 s would take 40 s; together, one round of
    # reads (2 s was measured on a machine shared by several test runs, 0.3 s on a quiet one).
    assert asyncio.run(scenario()) < 10


@pytest.mark.redis
def test_async_streams_get_published_reports_through_one_subscription(versions, settings):
    assert settings.REDIS_URL

    async def scenario():
        streams = [
            push.event_stream_async(project_id=7, since=None, duration=10, poll_seconds=60)
            for _ in range(20)
        ]
        await asyncio.gather(*(_collect(s, "event: hello", 5) for s in streams))
        reads_before = versions["reads"]
        hub = push_hub._hubs[asyncio.get_running_loop()]
        assert len(hub.queues[7]) == 20
        push.report_publish(project_id=7, summary={"version": 4})
        started = time.monotonic()
        events = await asyncio.gather(*(_collect(s, "event: report", 3) for s in streams))
        seconds = time.monotonic() - started
        for stream in streams:
            await stream.aclose()
        assert 7 not in hub.queues  # closed streams leave the hub
        return events, seconds, versions["reads"] - reads_before

    events, seconds, reads = asyncio.run(scenario())
    assert all(e == ["event: report\nid: 4\n\n"] for e in events)
    # Pushed, not polled: no database read, and far sooner than the 60 s poll (1.3 s was seen
    # on a loaded machine, where the 20 streams' wake-ups queue behind other processes).
    assert seconds < 3 and reads == 0


@pytest.mark.redis
def test_async_stream_falls_back_to_polling_when_redis_goes(versions, settings, monkeypatch):
    assert settings.REDIS_URL

    async def scenario():
        stream = push.event_stream_async(project_id=8, since=None, duration=10, poll_seconds=0.1)
        await _collect(stream, "event: hello", 5)
        hub = push_hub._hubs[asyncio.get_running_loop()]
        for queue in hub.queues[8]:
            queue.put_nowait(push_hub.LOST)  # what the hub does when its connection fails
        versions["current"] = 5
        report = await _collect(stream, "event: report", 3)
        await stream.aclose()
        return report

    assert asyncio.run(scenario()) == ["event: report\nid: 5\n\n"]


def test_without_a_reachable_redis_the_stream_polls(versions, settings):
    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens on port 1

    async def scenario():
        stream = push.event_stream_async(project_id=9, since=None, duration=10, poll_seconds=0.1)
        await _collect(stream, "event: hello", 5)
        versions["current"] = 1
        report = await _collect(stream, "event: report", 3)
        await stream.aclose()
        return report

    assert asyncio.run(scenario()) == ["event: report\nid: 1\n\n"]


def _cap_is_enforced_and_released(project, manager, settings):
    settings.TALLY_SSE_STREAMS_PER_USER = 3
    settings.TALLY_SSE_STREAM_SECONDS = 1
    client = client_for(manager)
    url = f"/api/projects/{project.pk}/events/"
    held = [client.get(url, HTTP_ACCEPT="text/event-stream") for _ in range(3)]
    assert [r.status_code for r in held] == [200, 200, 200]
    refused = client.get(url, HTTP_ACCEPT="text/event-stream")
    assert refused.status_code == 429
    error = json.loads(refused.content)["error"]
    assert error["code"] == "too_many_streams"
    assert "TALLY_SSE_STREAMS_PER_USER" in error["message"]
    b"".join(held.pop().streaming_content)  # a stream that ends gives its slot back
    again = client.get(url, HTTP_ACCEPT="text/event-stream")
    assert again.status_code == 200
    for response in [*held, again]:
        b"".join(response.streaming_content)


@pytest.mark.django_db
def test_streams_per_user_are_capped_without_redis(project, manager, settings):
    settings.REDIS_URL = ""
    _cap_is_enforced_and_released(project, manager, settings)


@pytest.mark.redis
@pytest.mark.django_db
def test_streams_per_user_are_capped_across_processes_with_redis(project, manager, settings):
    assert settings.REDIS_URL
    _cap_is_enforced_and_released(project, manager, settings)


def _address_and_total_caps(project, settings):
    """Regression (issue 44, item 9): streams were capped per user only, and accounts are free
    to make: one address with many accounts, or many addresses, could hold the event server."""
    settings.TALLY_SSE_STREAMS_PER_USER = 2
    settings.TALLY_SSE_STREAMS_PER_ADDRESS = 3
    settings.TALLY_SSE_STREAMS_TOTAL = 5
    settings.TALLY_SSE_STREAM_SECONDS = 1
    url = f"/api/projects/{project.pk}/events/"
    managers = [UserFactory() for _ in range(4)]
    for user in managers:
        Membership.objects.create(project=project, user=user, role=Membership.Role.MANAGER)

    def open_stream(user, address):
        return client_for(user).get(url, HTTP_ACCEPT="text/event-stream", REMOTE_ADDR=address)

    held = [open_stream(managers[0], "192.0.2.1"), open_stream(managers[1], "192.0.2.1")]
    held.append(open_stream(managers[2], "192.0.2.1"))
    assert [r.status_code for r in held] == [200] * 3
    refused = open_stream(managers[3], "192.0.2.1")  # a fresh account, the same address
    assert refused.status_code == 429
    error = json.loads(refused.content)["error"]
    assert (
        error["code"] == "too_many_streams" and "TALLY_SSE_STREAMS_PER_ADDRESS" in error["message"]
    )
    held += [open_stream(managers[3], "192.0.2.2"), open_stream(managers[3], "192.0.2.3")]
    assert [r.status_code for r in held[3:]] == [200, 200]
    full = open_stream(managers[2], "192.0.2.4")  # five open: all the event server may hold
    assert full.status_code == 503
    assert full["Retry-After"] == "1"
    error = json.loads(full.content)["error"]
    assert error["code"] == "streams_full" and "TALLY_SSE_STREAMS_TOTAL" in error["message"]
    b"".join(held.pop(0).streaming_content)  # a stream that ends gives its places back
    again = open_stream(managers[2], "192.0.2.1")
    assert again.status_code == 200
    for response in [*held, again]:
        b"".join(response.streaming_content)


@pytest.mark.django_db
def test_streams_per_address_and_in_all_are_capped_without_redis(project, settings):
    settings.REDIS_URL = ""
    _address_and_total_caps(project, settings)


@pytest.mark.redis
@pytest.mark.django_db
def test_streams_per_address_and_in_all_are_capped_with_redis(project, settings):
    assert settings.REDIS_URL
    from delivery import stream_slots

    stream_slots._client().delete("tally:streams:total")  # other tests' leases, if any
    _address_and_total_caps(project, settings)
