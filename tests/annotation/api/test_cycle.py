"""The annotator's cycle through the API (annotation/api/cycle.py): tokens and sessions, the
cases outside the plain one (which on PostgreSQL leave the one-statement path for the scheduler
and the service), and leases held ahead. Runs on SQLite and PostgreSQL."""

import io
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone
from rest_framework.test import APIClient

from annotation import cycle, hotpath, kinds, scheduler, services
from annotation.models import Assignment, Membership, Observation, Project, Task
from tests.support.factories import answer, client_for, make_project, member, next_task


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


def test_session_user_without_csrf_token_is_refused_as_drf_refuses_it(project, corpus, annotator):
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(annotator)
    for url in (f"/api/projects/{project.pk}/tasks/next/", "/api/observations/"):
        response = client.post(url, {}, format="json")
        assert response.status_code == 403
        error = response.json()["error"]
        assert error["code"] == "permission_denied"
        assert error["message"].startswith("CSRF Failed: CSRF cookie not set")
    assert not Assignment.objects.exists()


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_lease_and_an_answer_both_wait_for_the_wal_flush(project, corpus, annotator):
    """Neither statement turns synchronous_commit off: a lease lost in a crash made the answer
    a phone gave to it (held ahead, answered offline) a 404, which the phone drops."""
    assert "synchronous_commit" not in hotpath.statements.NEXT_TASK
    assert "synchronous_commit" not in kinds.count.SUBMIT
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


def test_a_flagged_member_is_served_as_the_others_through_the_api(project, corpus, annotator):
    """No gold check sentences in this corpus: a flagged annotator gets the usual tasks, as the
    others (it once got nothing, 204: being flagged showed), and takes no slot of them."""
    Membership.objects.filter(project=project, user=annotator).update(flagged=True)
    task = next_task(client_for(annotator), project)
    assert task.status_code == 200
    assert not Assignment.objects.get(pk=task.json()["assignment"]).holds_slot
    Membership.objects.filter(project=project, user=annotator).update(flagged=False)
    assert next_task(client_for(annotator), project).status_code == 200


# Leases held ahead: `tasks/next` with `{"holding": [...]}` leases one more task, up to
# `scheduler.MAX_LEASES`, so the page can prefetch and a phone can answer offline what it holds.


def test_holding_leases_one_more_up_to_the_cap(project, corpus, annotator):
    client = client_for(annotator)
    held = []
    for _ in range(scheduler.MAX_LEASES):
        task = next_task(client, project, held).json()
        assert task["assignment"] not in held
        held.append(task["assignment"])
    response = next_task(client, project, held)
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "lease_limit"
    assert "answer one of them first" in response.json()["error"]["message"]
    live = Assignment.objects.filter(annotator=annotator, status="leased")
    assert sorted(live.values_list("id", flat=True)) == sorted(held)
    # Each lease is on its own region, and each took one of its task's slots.
    tasks = Task.objects.filter(assignments__in=live)
    assert tasks.distinct().count() == scheduler.MAX_LEASES
    assert all(task.open_slots == project.redundancy - 1 for task in tasks)


def test_a_lease_not_named_is_handed_back_before_a_new_one(project, corpus, annotator):
    """A reloaded page knows of no lease: it gets the ones it held again, oldest first."""
    client = client_for(annotator)
    first_task = next_task(client, project).json()
    first = first_task["assignment"]
    second = next_task(client, project, [first]).json()["assignment"]
    assert second != first
    assert next_task(client, project).json()["assignment"] == first
    assert next_task(client, project, [first]).json()["assignment"] == second
    assert next_task(client, project, [second]).json()["assignment"] == first
    # Ids that are not live leases of the caller (answered, someone else's, made up) change
    # nothing: they are only what the caller already has.
    assert answer(client, first_task).status_code == 201
    assert next_task(client, project, [first, 10**9]).json()["assignment"] == second
    assert Assignment.objects.filter(annotator=annotator).count() == 2


def test_answering_a_held_lease_frees_room_for_another(project, corpus, annotator):
    client = client_for(annotator)
    held = [next_task(client, project, []).json()]
    while len(held) < scheduler.MAX_LEASES:
        held.append(next_task(client, project, [t["assignment"] for t in held]).json())
    assert answer(client, held[0], key="a-0").status_code == 201
    ids = [t["assignment"] for t in held[1:]]
    fourth = next_task(client, project, ids)
    assert fourth.status_code == 200
    assert fourth.json()["assignment"] not in [t["assignment"] for t in held]


def test_expired_held_leases_do_not_count(project, corpus, annotator):
    client = client_for(annotator)
    held = []
    for _ in range(scheduler.MAX_LEASES):
        held.append(next_task(client, project, held).json()["assignment"])
    long_ago = timezone.now() - timedelta(hours=2)
    Assignment.objects.filter(pk__in=held).update(expires_at=long_ago)
    Project.objects.filter(pk=project.pk).update(leases_reclaimed_at=long_ago)
    response = next_task(client, project, held)
    assert response.status_code == 200
    assert response.json()["assignment"] not in held


def test_three_leases_answered_later_are_all_stored_once(project, corpus, annotator):
    """What a phone does offline: take three tasks ahead, answer them, send when back (twice)."""
    client = client_for(annotator)
    held = []
    for _ in range(scheduler.MAX_LEASES):
        held.append(next_task(client, project, [t["assignment"] for t in held]).json())
    for attempt in range(2):
        for i, task in enumerate(held):
            assert answer(client, task, key=f"k-{i}").status_code == (201, 200)[attempt]
    assert Observation.objects.filter(annotator=annotator).count() == scheduler.MAX_LEASES


def test_bad_holding_is_refused_with_what_is_wrong(project, corpus, annotator):
    client = client_for(annotator)
    for holding in ("12", [1, 2, 3, 4], ["1"], [True], [1.5], {"a": 1}, [0], [-1], [2**63]):
        response = next_task(client, project, holding)
        assert response.status_code == 400, holding
        error = response.json()["error"]
        assert error["code"] == "invalid"
        assert "at most 3 assignment ids" in error["fields"]["holding"][0]
    response = client.post(
        f"/api/projects/{project.pk}/tasks/next/", "[1]", content_type="application/json"
    )
    assert response.status_code == 400
    response = client.post(
        f"/api/projects/{project.pk}/tasks/next/", "{", content_type="application/json"
    )
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "parse_error"
    response = client.post(
        f"/api/projects/{project.pk}/tasks/next/", "holding=1", content_type="text/plain"
    )
    assert response.status_code == 415
    assert not Assignment.objects.exists()


def test_holding_is_checked_after_who_is_asking(project, corpus, annotator):
    response = next_task(APIClient(), project, "not a list")
    assert response.status_code == 401


def test_removing_a_member_releases_their_leases_and_a_rejoin_starts_clean(
    project, corpus, annotator, manager
):
    """Regression (issue 16, finding 9): a removed annotator who rejoined with the unrotated
    invite code submitted the assignment they held before their removal: 201."""
    client = client_for(annotator)
    held = [next_task(client, project).json()]
    held.append(next_task(client, project, holding=[held[0]["assignment"]]).json())
    tasks = [Task.objects.get(assignments__pk=t["assignment"]) for t in held]
    slots_before = [t.open_slots for t in tasks]
    # One of the leases expired (its slot was given back then), the other is live.
    Assignment.objects.filter(pk=held[1]["assignment"]).update(
        expires_at=timezone.now() - timedelta(minutes=1)
    )
    scheduler.assignments_expire(project=project)
    removed = client_for(manager).delete(f"/api/projects/{project.pk}/members/{annotator.pk}/")
    assert removed.status_code == 204
    assert not Assignment.objects.filter(annotator=annotator, project=project).exists()
    for task, before in zip(tasks, slots_before, strict=True):
        task.refresh_from_db()
        assert task.open_slots == before + 1  # each slot given back once
    # They rejoin with the same code: nothing of before can be answered.
    assert client.post("/api/join/", {"code": project.invite_code}).status_code == 201
    for task in held:
        response = answer(client, task)
        assert response.status_code == 404, response.content
        assert response.json()["error"]["code"] == "lease_not_yours"
    assert not Observation.objects.exists()
    fresh = next_task(client, project)
    assert fresh.status_code == 200
    assert answer(client, fresh.json()).status_code == 201


# One round trip per answer: the next task with the answer (issue 29) ---------------------------


def test_an_answer_that_asks_for_the_next_task_carries_it(project, corpus, annotator):
    client = client_for(annotator)
    first = next_task(client, project).json()
    response = answer(client, first, next={"holding": []})
    assert response.status_code == 201
    out = response.json()
    assert out["counts"] == dict.fromkeys((t["name"] for t in first["tags"]), 0)
    following = out["next"]
    assert following["assignment"] != first["assignment"]
    assert following["kind"] == "count" and following["tags"] and following["tokens"]
    assert "next_error" not in out
    assert Assignment.objects.get(pk=first["assignment"]).status == "submitted"
    assert Assignment.objects.get(pk=following["assignment"]).status == "leased"
    # Without `next`, an answer's response is as it always was.
    assert "next" not in answer(client, following, key="key-2").json()


def test_the_next_task_with_an_answer_counts_the_leases_named(project, corpus, annotator):
    """Holding two besides the one answered, the phone gets a third; an answer that names every
    live lease it holds and asks for more at the cap gets none, with the reason, and is stored."""
    client = client_for(annotator)
    a = next_task(client, project).json()
    b = client.post(
        f"/api/projects/{project.pk}/tasks/next/", {"holding": [a["assignment"]]}, format="json"
    ).json()
    c = client.post(
        f"/api/projects/{project.pk}/tasks/next/",
        {"holding": [a["assignment"], b["assignment"]]},
        format="json",
    ).json()
    out = answer(client, a, next={"holding": [b["assignment"], c["assignment"]]}).json()
    d = out["next"]
    assert d["assignment"] not in (a["assignment"], b["assignment"], c["assignment"])
    response = answer(client, b, key="key-2", next={"holding": [c["assignment"], d["assignment"]]})
    assert response.status_code == 201
    assert response.json()["next"]["assignment"] not in {x["assignment"] for x in (a, b, c, d)}


def test_a_resent_answer_with_next_gets_the_same_next_task(project, corpus, annotator):
    """The response was lost: the phone sends the answer again (same key), and is handed back
    the lease the first copy made (a live lease it does not name), not a second one."""
    client = client_for(annotator)
    first = next_task(client, project).json()
    sent = answer(client, first, next={"holding": []}).json()
    again = answer(client, first, next={"holding": []})
    assert again.status_code == 200 and again.json()["replayed"]
    assert again.json()["next"]["assignment"] == sent["next"]["assignment"]
    assert Assignment.objects.filter(annotator=annotator).count() == 2


def test_the_next_task_failing_never_loses_the_answer(project, corpus, annotator):
    client = client_for(annotator)
    first = next_task(client, project).json()
    Project.objects.filter(pk=project.pk).update(status=Project.Status.PAUSED)
    response = answer(client, first, next={"holding": []})
    assert response.status_code == 201
    out = response.json()
    assert out["next"] is None
    assert out["next_error"]["code"] == "project_not_active"
    assert Observation.objects.filter(assignment_id=first["assignment"]).exists()


def test_no_task_left_is_a_null_next(manager):
    """A corpus of one region (a sentence as long as the window, every tag asked): once the
    annotator has answered it there is nothing for them, and the answer's `next` says so."""
    project = make_project(owner=manager, window_size=3, tags_per_task=None)
    services.corpus_import(
        project=project, user=manager, file=io.BytesIO(b"a b c\n"), format="tokenized",
        max_bytes=99,
    )  # fmt: skip
    user = member(project)
    client = client_for(user)
    first = next_task(client, project).json()
    out = answer(client, first, next={"holding": []}).json()
    assert out["next"] is None and "next_error" not in out


@pytest.mark.parametrize(
    "value", ["x", [], {"holding": "x"}, {"holding": [0]}, {"holding": [1, 2, 3, 4]}]
)
def test_a_bad_next_is_refused_and_nothing_is_stored(project, corpus, annotator, value):
    client = client_for(annotator)
    first = next_task(client, project).json()
    response = answer(client, first, next=value)
    assert response.status_code == 400
    assert list(response.json()["error"]["fields"]) == ["next"]
    assert not Observation.objects.exists()


def test_the_schema_documents_the_submission_as_it_is_parsed(manager):
    """The submission's limits in the schema are those `Submission.parse` applies, `next`
    included (issue 29), so a generated client sends what the server takes."""
    document = client_for(manager).get("/api/schema/?format=json").json()
    schemas = document["components"]["schemas"]
    # Request bodies are `…Request` components, and the submission is exactly one of a count,
    # a private count and a verification answer (issue 24): each says the same of these.
    variants = schemas["ObservationSubmitRequest"]["oneOf"]
    assert len(variants) == 3
    for variant in variants:
        body = schemas[variant["$ref"].rsplit("/", 1)[1]]["properties"]
        assert body["idempotency_key"]["maxLength"] == cycle.MAX_KEY
        assert body["seconds_on_device"]["maximum"] == cycle.submission.MAX_SECONDS
        assert body["next"]["allOf"] == [{"$ref": "#/components/schemas/NextTaskRequest"}]
        assert body["next"]["nullable"] is True
    following = schemas["NextTaskRequest"]
    assert following["properties"]["holding"]["maxItems"] == scheduler.MAX_LEASES


@pytest.mark.parametrize("header", ["Token", "Token a b", "token " + "0" * 40])
def test_a_bad_token_header_is_answered_as_the_drf_views_answer_it(project, corpus, header):
    """The plain views read the header with DRF's own token authentication: the same status,
    code and message as any other API view."""
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=header)
    drf_view = client.get("/api/projects/")
    for response in (next_task(client, project), answer(client, {"assignment": 1, "tags": []})):
        assert response.status_code == drf_view.status_code == 401
        assert response.json() == drf_view.json()
        assert response["WWW-Authenticate"] == "Token"
