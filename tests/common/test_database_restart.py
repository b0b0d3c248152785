"""A kept database connection that the server has closed (PostgreSQL restarted, the backend
terminated) fails no request and no task: the next use outside a transaction opens a new one
(config/postgresql)."""

import os
import time

import psycopg
import pytest
from django.db import DatabaseError, connection, transaction

from annotation.models import Project, Sentence
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
