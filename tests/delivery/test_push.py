"""Server-sent events deliver a new report: through Redis pub/sub, and by polling without Redis."""

import time

import pytest

from learning import tasks
from tests.support.crowd import answer_tasks
from tests.support.factories import client_for
from tests.support.learning import retrain


def open_stream(project, manager, **headers):
    response = client_for(manager).get(
        f"/api/projects/{project.pk}/events/", HTTP_ACCEPT="text/event-stream", **headers
    )
    assert response.status_code == 200
    return iter(response.streaming_content)


def next_event(stream, name: str, within: float) -> tuple[str, float]:
    started = time.monotonic()
    for chunk in stream:
        text = chunk.decode()
        if text.startswith(f"event: {name}\n"):
            return text, time.monotonic() - started
        assert time.monotonic() - started < within, f"no {name} event within {within} s"
    raise AssertionError(f"stream ended without a {name} event")


@pytest.mark.django_db
def test_poll_mode_delivers_a_new_report(project, crowd, manager, settings):
    settings.REDIS_URL = ""
    settings.TALLY_SSE_POLL_SECONDS = 1
    settings.TALLY_SSE_STREAM_SECONDS = 20
    answer_tasks(project, crowd, 60)
    stream = open_stream(project, manager)
    assert next(stream).decode() == "retry: 2000\n\n"
    hello, _ = next_event(stream, "hello", 5)
    assert '"version": null' in hello
    tasks.retrain_and_push(project_id=project.pk, trigger="manual")
    report, seconds = next_event(stream, "report", 10)
    assert "id: 1\n" in report and '"report_url": "/api/projects/' in report
    assert seconds < 3


@pytest.mark.django_db
def test_stream_ends_with_a_retry_hint_and_keeps_threads_free(project, manager, settings):
    settings.REDIS_URL = ""
    settings.TALLY_SSE_STREAM_SECONDS = 1
    started = time.monotonic()
    text = b"".join(open_stream(project, manager)).decode()
    assert time.monotonic() - started < 4
    assert text.startswith("retry: ") and "event: hello" in text


@pytest.mark.django_db
def test_reconnect_with_last_event_id_gets_the_missed_report(project, crowd, manager, settings):
    settings.REDIS_URL = ""
    settings.TALLY_SSE_STREAM_SECONDS = 1
    answer_tasks(project, crowd, 60)
    retrain(project)
    answer_tasks(project, crowd, 10, seed=2)
    retrain(project)
    text = b"".join(open_stream(project, manager, HTTP_LAST_EVENT_ID="1")).decode()
    assert "event: report\nid: 2\n" in text
    up_to_date = b"".join(open_stream(project, manager, HTTP_LAST_EVENT_ID="2")).decode()
    assert "event: report" not in up_to_date


@pytest.mark.redis
@pytest.mark.django_db
def test_redis_mode_delivers_a_new_report_at_once(project, crowd, manager, settings):
    assert settings.REDIS_URL
    settings.TALLY_SSE_POLL_SECONDS = 60  # polling could not deliver it in time
    settings.TALLY_SSE_STREAM_SECONDS = 20
    answer_tasks(project, crowd, 60)
    stream = open_stream(project, manager)
    next_event(stream, "hello", 5)
    tasks.retrain_and_push(project_id=project.pk, trigger="manual")
    report, seconds = next_event(stream, "report", 10)
    assert "id: 1\n" in report and '"event": "report.created"' in report
    assert seconds < 2
