"""An answer names the account it was given as on the device (`device_user`, from the annotator
page's outbox); the server stores it only for that account (issue 44, item 1: after a sign-out
the phone kept the last annotator's outbox, and someone else's answers went in as theirs).
Runs on SQLite and PostgreSQL (the one-statement path and the service's)."""

import pytest
from django.test import Client

from annotation.models import Observation
from tests.support.factories import answer, client_for, member, next_task


@pytest.fixture
def second(project):
    return member(project, username="second_annotator")


def _session_client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_an_answer_given_as_another_account_is_refused_and_not_stored(
    project, corpus, annotator, second
):
    client = client_for(second)
    task = next_task(client, project).json()  # the caller's own lease
    response = answer(client, task, device_user=annotator.pk)
    assert response.status_code == 409
    error = response.json()["error"]
    assert error["code"] == "answered_as_another"
    assert "another account" in error["message"]
    assert not Observation.objects.exists()
    # The same answer as the caller's own is stored.
    assert answer(client, task, device_user=second.pk).status_code == 201
    assert Observation.objects.get().annotator == second


def test_an_outbox_replayed_under_another_session_is_refused(project, corpus, annotator, second):
    """A's answer, as A's page queued it, sent with B's browser session."""
    task = next_task(client_for(annotator), project).json()
    body = {
        "assignment": task["assignment"],
        "counts": {t["name"]: 0 for t in task["tags"]},
        "seconds_on_device": 0.6,
        "idempotency_key": "a-1",
        "device_user": annotator.pk,
    }
    response = _session_client(second).post(
        "/api/observations/", body, content_type="application/json"
    )
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "answered_as_another"
    assert not Observation.objects.exists()
    # A's own session stores it.
    response = _session_client(annotator).post(
        "/api/observations/", body, content_type="application/json"
    )
    assert response.status_code == 201


@pytest.mark.parametrize("bad", ["1", 0, -3, True, 1.5])
def test_device_user_must_be_an_id(project, corpus, annotator, bad):
    client = client_for(annotator)
    task = next_task(client, project).json()
    response = answer(client, task, device_user=bad)
    assert response.status_code == 400
    assert "device_user" in response.json()["error"]["fields"]
