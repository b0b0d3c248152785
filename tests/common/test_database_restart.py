"""A kept database connection that the server has closed (PostgreSQL restarted, the backend
terminated) fails no request and no task: the next use outside a transaction opens a new one
(config/postgresql)."""

import json
import os
import time

import psycopg
import pytest
from django.core.signals import request_started
from django.db import DatabaseError, OperationalError, connection, transaction
from django.test import RequestFactory

from annotation.models import Project, Sentence
from config.postgresql import base
from config.wsgi import application, django_application
from devtools.stack import free_port
from tests.support.factories import client_for, next_task

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

RECHECK_SECONDS = 0.05  # a restart takes seconds; the tests shorten the interval, not the wait


@pytest.fixture(autouse=True)
def _short_recheck(monkeypatch):
    monkeypatch.setattr(base, "RECHECK_SECONDS", RECHECK_SECONDS)


def _terminate_backends_of(database: str) -> int:
    """Terminate the database's other connections, and wait until they are gone and longer than
    the recheck interval (as after a restart, when the next request comes)."""
    admin = os.environ["DATABASE_URL"].rsplit("/", 1)[0] + "/postgres"
    others = "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()"
    with psycopg.connect(admin, autocommit=True) as conn:
        pids = [pid for (pid,) in conn.execute(others, [database]).fetchall()]
        for pid in pids:
            conn.execute("SELECT pg_terminate_backend(%s)", [pid])
        deadline = time.monotonic() + 10
        while conn.execute(others, [database]).fetchall() and time.monotonic() < deadline:
            time.sleep(0.02)
    time.sleep(RECHECK_SECONDS)
    return len(pids)


def test_a_connection_closed_by_the_server_fails_no_request(project, corpus, annotator):
    client = client_for(annotator)
    assert client.get("/api/me/").status_code == 200
    assert next_task(client, project).status_code == 200
    assert connection.connection is not None  # kept between requests
    assert _terminate_backends_of(connection.settings_dict["NAME"]) >= 1
    assert next_task(client, project).status_code == 200  # the hot path's statement
    assert _terminate_backends_of(connection.settings_dict["NAME"]) >= 1
    assert client.get("/api/me/").status_code == 200  # the ORM


def test_a_task_that_outlives_a_restart_writes_on_a_new_connection(project, corpus):
    """A retrain reads, fits for minutes, then writes: a restart meanwhile cost the whole fit."""
    assert Sentence.objects.filter(project=project).count() == 12
    assert _terminate_backends_of(connection.settings_dict["NAME"]) >= 1
    with transaction.atomic():
        Project.objects.filter(pk=project.pk).update(name="written after the restart")
    assert Project.objects.get(pk=project.pk).name == "written after the restart"


def test_a_connection_lost_inside_a_transaction_still_fails_it(project):
    with pytest.raises(DatabaseError), transaction.atomic():
        Project.objects.filter(pk=project.pk).update(name="never written")
        _terminate_backends_of(connection.settings_dict["NAME"])
        Project.objects.filter(pk=project.pk).update(description="nor this")
    assert Project.objects.get(pk=project.pk).name != "never written"


def test_a_healthy_kept_connection_is_kept(project, annotator):
    client = client_for(annotator)
    assert client.get("/api/me/").status_code == 200
    kept = connection.connection
    assert client.get("/api/me/").status_code == 200
    assert connection.connection is kept


def test_a_connection_is_checked_at_most_once_per_interval(project, monkeypatch):
    """The check is a system call, which a busy threaded worker pays for in waits for the
    interpreter lock: a connection checked a moment ago is used without another check."""
    checks = []
    usable = base.DatabaseWrapper.is_usable
    monkeypatch.setattr(
        base.DatabaseWrapper, "is_usable", lambda self: checks.append(1) or usable(self)
    )
    monkeypatch.setattr(base, "RECHECK_SECONDS", 60.0)
    connection.ensure_connection()
    connection.checked_at = 0.0
    for _ in range(20):
        Project.objects.filter(pk=project.pk).exists()
    assert len(checks) == 1
    connection.checked_at -= 61.0
    Project.objects.filter(pk=project.pk).exists()
    assert len(checks) == 2


def _wsgi_get(app, path: str, token: str) -> tuple[str, dict, bytes]:
    """A GET through a WSGI application as gunicorn calls it (the test client skips Django's
    request_started connection handling, which is what these tests are about)."""
    environ = RequestFactory()._base_environ(
        PATH_INFO=path, REQUEST_METHOD="GET", HTTP_AUTHORIZATION=f"Token {token}"
    )
    started = {}

    def start_response(status, headers, exc_info=None):
        started.update(status=status, headers=dict(headers))

    body = b"".join(app(environ, start_response))
    return started["status"], started["headers"], body


def test_a_dead_connection_while_the_database_is_still_away_is_a_503(annotator, monkeypatch):
    """The kept connection died in a restart and the server does not accept connections yet:
    Django's request_started handling drops the connection without reconnecting, and the
    request's own reconnect fails inside the request: 503 with Retry-After (it was a 500)."""
    token = annotator.auth_token.key
    assert _wsgi_get(django_application, "/api/me/", token)[0].startswith("200")
    connection.ensure_connection()
    _terminate_backends_of(connection.settings_dict["NAME"])
    monkeypatch.setitem(connection.settings_dict, "PORT", str(free_port()))  # refuses
    status, headers, body = _wsgi_get(django_application, "/api/me/", token)
    assert status.startswith("503") and headers["Retry-After"] == "2"
    assert json.loads(body)["error"]["code"] == "service_unavailable"


def test_the_wsgi_guard_answers_503_for_a_database_error_django_did_not_handle(
    annotator, monkeypatch
):
    def lost(**kwargs):
        raise OperationalError("server closed the connection unexpectedly")

    request_started.connect(lost)
    try:
        status, headers, body = _wsgi_get(application, "/api/me/", annotator.auth_token.key)
        page_status, _, page = _wsgi_get(application, "/login/", annotator.auth_token.key)
    finally:
        request_started.disconnect(lost)
    assert status.startswith("503") and headers["Retry-After"] == "2"
    assert json.loads(body)["error"]["code"] == "service_unavailable"
    assert page_status.startswith("503") and b"try again" in page
