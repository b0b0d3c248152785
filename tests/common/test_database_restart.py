"""A kept database connection that the server has closed (PostgreSQL restarted, the backend
terminated) fails no request: the next request opens a new one (config/postgresql)."""

import os
import time

import psycopg
import pytest
from django.db import connection

from tests.factories import client_for, next_task

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def _terminate_backends_of(database: str) -> int:
    """Terminate the database's other connections, and wait until they are gone (as after a
    restart, when the next request comes)."""
    admin = os.environ["DATABASE_URL"].rsplit("/", 1)[0] + "/postgres"
    others = "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()"
    with psycopg.connect(admin, autocommit=True) as conn:
        pids = [pid for (pid,) in conn.execute(others, [database]).fetchall()]
        for pid in pids:
            conn.execute("SELECT pg_terminate_backend(%s)", [pid])
        deadline = time.monotonic() + 10
        while conn.execute(others, [database]).fetchall() and time.monotonic() < deadline:
            time.sleep(0.02)
    return len(pids)


def _between_requests() -> None:
    """What the server does when a request ends (the test client leaves it out): the kept
    connection is to be checked before the next request uses it."""
    connection.close_if_unusable_or_obsolete()


def test_a_connection_closed_by_the_server_fails_no_request(project, corpus, annotator):
    client = client_for(annotator)
    assert client.get("/api/me/").status_code == 200
    assert next_task(client, project).status_code == 200
    _between_requests()
    assert connection.connection is not None  # kept between requests
    assert _terminate_backends_of(connection.settings_dict["NAME"]) >= 1
    assert next_task(client, project).status_code == 200  # the hot path's statement
    _between_requests()
    assert _terminate_backends_of(connection.settings_dict["NAME"]) >= 1
    assert client.get("/api/me/").status_code == 200  # the ORM


def test_a_healthy_kept_connection_is_kept(project, annotator):
    client = client_for(annotator)
    assert client.get("/api/me/").status_code == 200
    _between_requests()
    kept = connection.connection
    assert client.get("/api/me/").status_code == 200
    assert connection.connection is kept
