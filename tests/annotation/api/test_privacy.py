"""Private projects (issue 13), the platform side: the setting and its rules, the release
distribution each private task carries, and answers that hold released values only."""

import numpy as np
import pytest

from annotation import services
from annotation.models import Observation
from common.exceptions import InvalidInput
from learning.core.privacy import (
    DEFAULT_MECHANISM,
    MAX_ALPHA,
    MAX_PRIVATE_TAGS,
    MECHANISMS,
    Mechanism,
)
from tests.support.factories import TAGS, client_for, import_jsonl, make_project, member, next_task


@pytest.fixture
def private(manager):
    project = make_project(owner=manager, private=True, alpha=2.0, tags_per_task=2)
    import_jsonl(project, manager, filename="c.jsonl", max_bytes=10**6, seed=1)
    return project


@pytest.fixture
def phone(private):
    return client_for(member(private, username="phone"))


def released_answer(client, task, key="key-1", values=None, **overrides):
    """A private project's answer to `task`: released values (every one 0 unless given) and the
    task's mechanism parameters."""
    privacy = task["privacy"]
    body = {
        "assignment": task["assignment"],
        "released": values or {t["name"]: 0 for t in task["tags"]},
        "privacy": {"mechanism": privacy["mechanism"], "alpha": privacy["alpha"]},
        "seconds_on_device": 1.5,
        "idempotency_key": key,
        **overrides,
    }
    return client.post("/api/observations/", body, format="json")


def create(client, **fields):
    body = {"name": "P", "tags": TAGS, "window_size": 3, **fields}
    return client.post("/api/projects/", body, format="json")


# The setting ---------------------------------------------------------------------------------


def test_a_private_project_gets_the_default_level_and_mechanism(manager):
    response = create(client_for(manager), private=True, tags_per_task=1)
    assert response.status_code == 201, response.json()
    data = response.json()
    assert (data["private"], data["alpha"], data["mechanism"]) == (True, 3.0, DEFAULT_MECHANISM)
    plain = create(client_for(manager), tags_per_task=1).json()
    assert (plain["private"], plain["alpha"], plain["mechanism"]) == (False, None, None)


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"private": True, "tags_per_task": MAX_PRIVATE_TAGS + 1}, "tags_per_task"),
        ({"private": True}, "tags_per_task"),  # all 4 tags of the set
        ({"private": True, "tags_per_task": 1, "alpha": 0.01}, "alpha"),
        ({"private": True, "tags_per_task": 1, "alpha": 100}, "alpha"),
        ({"private": True, "tags_per_task": 1, "mechanism": "laplace"}, "mechanism"),
        ({"alpha": 2.0, "tags_per_task": 1}, "alpha"),
        ({"mechanism": "krr", "tags_per_task": 1}, "mechanism"),
    ],
)
def test_the_combination_is_checked(manager, fields, field):
    response = create(client_for(manager), **fields)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid"
    assert field in error["fields"], error


def test_alpha_is_capped_where_privacy_still_means_something(manager):
    """Issue 24: at α = 20 krr sent the true count with probability 0.99999999. Above MAX_ALPHA
    a level is refused with a 400 that names the limit, at creation and later."""
    client = client_for(manager)
    for alpha in (MAX_ALPHA + 0.1, 20):
        response = create(client, private=True, tags_per_task=1, alpha=alpha)
        assert response.status_code == 400
        error = response.json()["error"]
        limit = (
            f"α is at most {MAX_ALPHA:g}: above it the phone sends the true count almost every "
            "time, so the answers would no longer be private."
        )
        assert error["fields"]["alpha"] == [limit]
    made = create(client, private=True, tags_per_task=1, alpha=MAX_ALPHA)
    assert made.status_code == 201
    url = f"/api/projects/{made.json()['id']}/"
    response = client.patch(url, {"alpha": 12}, format="json")
    assert response.status_code == 400
    assert "at most 8" in response.json()["error"]["fields"]["alpha"][0]
    # The domain rule holds for every caller, not only the API.
    with pytest.raises(InvalidInput, match="at most 8"):
        make_project(owner=manager, private=True, tags_per_task=1, alpha=9.0)


def test_a_project_made_before_the_cap_keeps_its_level(manager):
    project = make_project(owner=manager, private=True, tags_per_task=1, alpha=3.0)
    type(project).objects.filter(pk=project.pk).update(alpha=20.0)  # made when 20 was allowed
    project.refresh_from_db()
    updated = services.project_update(project=project, redundancy=4)
    assert (updated.alpha, updated.redundancy) == (20.0, 4)


def test_the_phone_refuses_the_same_levels_as_the_server():
    """The annotator page's own cap (privacy.js) is the server's: a server that sent a higher
    level would find its tasks refused, a lower one would refuse the server's own tasks."""
    from django.conf import settings

    source = (settings.BASE_DIR / "frontend/static/frontend/js/annotate/privacy.js").read_text(
        encoding="utf-8"
    )
    assert f"export const MAX_ALPHA = {MAX_ALPHA:g};" in source
    assert f"export const MECHANISMS = {list(MECHANISMS)!r};".replace("'", '"') in source


def test_the_privacy_settings_are_fixed_once_the_first_answer_exists(private, phone, manager):
    client = client_for(manager)
    url = f"/api/projects/{private.pk}/"
    # Before any answer: they may change (and a private project may stop being private).
    assert client.patch(url, {"alpha": 4.0}, format="json").json()["alpha"] == 4.0
    assert client.patch(url, {"mechanism": "krr"}, format="json").json()["mechanism"] == "krr"
    assert "alpha" not in client.get(url).json()["frozen"]
    task = next_task(phone, private).json()
    assert released_answer(phone, task).status_code == 201
    for change in ({"alpha": 5.0}, {"mechanism": "geometric"}, {"private": False}):
        response = client.patch(url, change, format="json")
        assert response.status_code == 409, change
        error = response.json()["error"]
        assert error["code"] == "conflict"
        assert "answers" in error["message"]
        assert set(error["fields"]) <= {"private", "alpha", "mechanism"}
    data = client.get(url).json()
    assert (data["private"], data["alpha"], data["mechanism"]) == (True, 4.0, "krr")
    assert {"private", "alpha", "mechanism"} <= set(data["frozen"])
    # Other settings stay editable, within the private limit on tags per task.
    assert client.patch(url, {"redundancy": 5}, format="json").status_code == 200
    assert client.patch(url, {"tags_per_task": 4}, format="json").status_code == 400


def test_the_annotator_sees_that_the_project_is_private(private, phone):
    data = phone.get(f"/api/projects/{private.pk}/").json()
    assert (data["private"], data["alpha"], data["mechanism"]) == (True, 2.0, DEFAULT_MECHANISM)


# The task ------------------------------------------------------------------------------------


def test_a_private_task_carries_the_release_distribution_of_its_window(private, phone):
    task = next_task(phone, private).json()
    privacy = task["privacy"]
    assert (privacy["mechanism"], privacy["alpha"]) == (DEFAULT_MECHANISM, 2.0)
    length, asked = task["window"]["length"], len(task["tags"])
    release = np.array(privacy["release"])
    assert release.shape == (length + 1, length + 1)
    expected = Mechanism(DEFAULT_MECHANISM, 2.0, len(TAGS)).channel(length, asked)
    np.testing.assert_allclose(release, expected.T, rtol=0, atol=1e-15)
    np.testing.assert_allclose(release.sum(axis=1), 1.0)


def test_a_task_of_a_project_that_is_not_private_has_no_privacy(project, corpus, annotator):
    assert "privacy" not in next_task(client_for(annotator), project).json()


# Answers -------------------------------------------------------------------------------------


def test_a_released_answer_is_stored_with_its_mechanism(private, phone):
    task = next_task(phone, private).json()
    length = task["window"]["length"]
    names = [t["name"] for t in task["tags"]]
    values = dict.fromkeys(names, length)  # each at most the window; their sum may exceed it
    response = released_answer(phone, task, values=values)
    assert response.status_code == 201, response.json()
    data = response.json()
    assert data["released"] == values
    assert "counts" not in data
    assert data["privacy"] == {"mechanism": DEFAULT_MECHANISM, "alpha": 2.0}
    stored = Observation.objects.get(pk=data["id"])
    assert stored.counts == [length] * len(names)
    assert (stored.mechanism, stored.alpha) == (DEFAULT_MECHANISM, 2.0)
    # Replayed as today: the same body is the stored answer, another body is refused.
    again = released_answer(phone, task, values=values)
    assert again.status_code == 200 and again.json()["replayed"] is True
    assert again.json()["id"] == data["id"]
    another = next(m for m in MECHANISMS if m != DEFAULT_MECHANISM)
    other = released_answer(
        phone, task, values=values, privacy={"mechanism": another, "alpha": 2.0}
    )
    assert other.status_code == 409
    assert other.json()["error"]["code"] == "idempotency_key_reused"
    assert Observation.objects.filter(project=private).count() == 1


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ("true counts", "counts"),
        ("no privacy", "privacy"),
        ("other alpha", "privacy"),
        ("other mechanism", "privacy"),
        ("value beyond the window", "released"),
    ],
)
def test_an_answer_without_the_projects_release_is_refused(private, phone, change, field):
    task = next_task(phone, private).json()
    names = [t["name"] for t in task["tags"]]
    privacy = {"mechanism": task["privacy"]["mechanism"], "alpha": task["privacy"]["alpha"]}
    body = {
        "assignment": task["assignment"],
        "released": dict.fromkeys(names, 0),
        "privacy": privacy,
        "idempotency_key": "k",
    }
    if change == "true counts":
        body["counts"] = body.pop("released")
        del body["privacy"]
    elif change == "no privacy":
        del body["privacy"]
    elif change == "other alpha":
        body["privacy"] = {**privacy, "alpha": 8.0}
    elif change == "other mechanism":
        body["privacy"] = {**privacy, "mechanism": "classic"}
    else:
        body["released"][names[0]] = task["window"]["length"] + 1
    response = phone.post("/api/observations/", body, format="json")
    assert response.status_code == 400, response.json()
    error = response.json()["error"]
    assert error["code"] == "invalid"
    assert field in error["fields"], error
    assert not Observation.objects.filter(project=private).exists()
    # The lease is still open: the right answer is stored.
    assert released_answer(phone, task, key="k2").status_code == 201


def test_a_project_that_is_not_private_refuses_released_values(project, corpus, annotator):
    client = client_for(annotator)
    task = next_task(client, project).json()
    body = {
        "assignment": task["assignment"],
        "released": {t["name"]: 0 for t in task["tags"]},
        "privacy": {"mechanism": DEFAULT_MECHANISM, "alpha": 3.0},
        "idempotency_key": "k",
    }
    response = client.post("/api/observations/", body, format="json")
    assert response.status_code == 400
    assert "released" in response.json()["error"]["fields"]


@pytest.mark.parametrize(
    "body",
    [
        {"counts": {"NOUN": 0}, "released": {"NOUN": 0}},
        {"released": [0]},
        {"released": {"NOUN": 0}, "privacy": {"mechanism": "geometric"}},
        {"released": {"NOUN": 0}, "privacy": {"mechanism": "geometric", "alpha": True}},
        {"released": {"NOUN": 0}, "privacy": "geometric"},
    ],
)
def test_malformed_private_answers_are_refused_before_the_lease_is_read(phone, body):
    response = phone.post(
        "/api/observations/", {"assignment": 1, "idempotency_key": "k", **body}, format="json"
    )
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid"
    assert set(response.json()["error"]["fields"]) & {"released", "privacy"}


def test_exports_carry_the_released_values_and_the_mechanism(private, phone, manager):
    task = next_task(phone, private).json()
    names = [t["name"] for t in task["tags"]]
    assert released_answer(phone, task, values=dict.fromkeys(names, 1)).status_code == 201
    client = client_for(manager)
    row = client.get(f"/api/projects/{private.pk}/observations/").json()["results"][0]
    assert (row["counts"], row["mechanism"], row["alpha"]) == ([1, 1], DEFAULT_MECHANISM, 2.0)
    jsonl_export = b"".join(
        client.get(f"/api/projects/{private.pk}/exports/observations.jsonl").streaming_content
    )
    assert f'"mechanism": "{DEFAULT_MECHANISM}", "alpha": 2.0'.encode() in jsonl_export
    csv_export = b"".join(
        client.get(f"/api/projects/{private.pk}/exports/observations.csv").streaming_content
    ).decode()
    header, line = csv_export.splitlines()[:2]
    columns = header.split(",")
    row = dict(zip(columns, line.split(","), strict=True))
    assert (row["mechanism"], row["alpha"]) == (DEFAULT_MECHANISM, "2.0")
