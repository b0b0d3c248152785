"""The annotator's two hot requests: on PostgreSQL each folds the token lookup (and, for the next
task, membership and lease) into its statements; the cases outside the plain one must still
behave exactly as the scheduler and the service say. Runs on SQLite and PostgreSQL."""

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone
from rest_framework.test import APIClient

from annotation.models import Assignment, Membership, Observation, Project
from tests.factories import answer, client_for, next_task


def test_inactive_users_token_is_refused_on_both_hot_endpoints(project, corpus, annotator):
    client = client_for(annotator)
    task = next_task(client, project).json()
    type(annotator).objects.filter(pk=annotator.pk).update(is_active=False)
    for response in (next_task(client, project), answer(client, task)):
        assert response.status_code == 401
        assert response.json() == {
            "error": {"code": "authentication_failed", "message": "Invalid token."}
        }
    assert not Observation.objects.exists()


def test_unknown_token_and_foreign_project(project, other_project, corpus, annotator):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token " + "0" * 40)
    assert next_task(client, project).status_code == 401
    assert answer(client, {"assignment": 1, "tags": []}).status_code == 401
    response = next_task(client_for(annotator), other_project)
    assert response.status_code == 404
    assert response.json() == {"error": {"code": "not_found", "message": "Not found."}}
    assert not Assignment.objects.exists()


def test_live_lease_is_served_again_and_answered_once(project, corpus, annotator):
    client = client_for(annotator)
    first = next_task(client, project).json()
    assert next_task(client, project).json()["assignment"] == first["assignment"]
    assert answer(client, first).status_code == 201
    second = next_task(client, project).json()
    assert second["assignment"] != first["assignment"]
    assert Assignment.objects.filter(annotator=annotator).count() == 2


def test_expired_leases_are_reclaimed_through_the_api(project, corpus, annotator, manager):
    """The reclaim runs on the first request after it is due (outside the one-statement path)."""
    Project.objects.filter(pk=project.pk).update(redundancy=1)
    project.tasks.update(open_slots=1)
    client = client_for(annotator)
    first = next_task(client, project).json()
    long_ago = timezone.now() - timedelta(hours=2)
    Assignment.objects.filter(pk=first["assignment"]).update(expires_at=long_ago)
    Project.objects.filter(pk=project.pk).update(leases_reclaimed_at=long_ago)
    second = next_task(client, project).json()
    assert second["assignment"] != first["assignment"]
    assert Assignment.objects.get(pk=first["assignment"]).status == "expired"
    lease = Assignment.objects.get(pk=first["assignment"])
    assert lease.task.open_slots == 1  # its slot was given back
    # A late answer to the expired lease is still stored.
    assert answer(client, first, key="late").status_code == 201


def test_session_user_with_csrf_gets_and_answers_tasks(project, corpus, annotator):
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(annotator)
    token = "c" * 32  # a CSRF secret, as the csrftoken cookie carries it
    client.cookies["csrftoken"] = token
    response = client.post(f"/api/projects/{project.pk}/tasks/next/", HTTP_X_CSRFTOKEN=token)
    assert response.status_code == 200
    task = response.json()
    body = {
        "assignment": task["assignment"],
        "counts": {t["name"]: 0 for t in task["tags"]},
        "idempotency_key": "s-1",
    }
    response = client.post("/api/observations/", body, format="json", HTTP_X_CSRFTOKEN=token)
    assert response.status_code == 201
    assert response.json()["replayed"] is False


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_only_the_lease_skips_the_wal_flush(project, corpus, annotator):
    """The lease statement turns synchronous_commit off for its own transaction only: the
    connection (and so the observation's insert) keeps waiting for the WAL flush."""
    client = client_for(annotator)
    task = next_task(client, project).json()
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        assert cursor.fetchone()[0] == "on"
    assert answer(client, task).status_code == 201
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        assert cursor.fetchone()[0] == "on"
    assert Observation.objects.filter(assignment_id=task["assignment"]).exists()


def test_a_flagged_member_is_served_only_gold_checks_through_the_api(project, corpus, annotator):
    """No gold check sentences in this corpus: a flagged annotator gets nothing (204), the others
    their usual tasks."""
    Membership.objects.filter(project=project, user=annotator).update(flagged=True)
    assert next_task(client_for(annotator), project).status_code == 204
    assert not Assignment.objects.filter(annotator=annotator).exists()
    Membership.objects.filter(project=project, user=annotator).update(flagged=False)
    assert next_task(client_for(annotator), project).status_code == 200
