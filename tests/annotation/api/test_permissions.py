"""Every endpoint tried by each persona: the project's manager, an annotator of the project, an
annotator of another project, an anonymous visitor."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from tests.support.factories import client_for, jsonl

PERSONAS = ("manager", "annotator", "outsider", "anonymous")


def upload(project_id):
    return {
        "file": SimpleUploadedFile("c.jsonl", jsonl()),
        "format": "jsonl",
        "allow_duplicate": "true",  # the `corpus` fixture imported the same file
    }


# (method, path template, body, expected status per persona)
MATRIX = [
    ("get", "projects/{p}/", None, (200, 200, 404, 401)),
    ("patch", "projects/{p}/", {"name": "Renamed"}, (200, 403, 404, 401)),
    ("delete", "projects/{p}/", None, (204, 403, 404, 401)),
    ("post", "projects/{p}/invite/", None, (200, 403, 404, 401)),
    ("get", "projects/{p}/members/", None, (200, 403, 404, 401)),
    ("get", "projects/{p}/stats/", None, (200, 403, 404, 401)),
    ("get", "projects/{p}/stats/me/", None, (200, 200, 404, 401)),
    ("get", "projects/{p}/corpus/", None, (200, 403, 404, 401)),
    ("post", "projects/{p}/corpus/", upload, (201, 403, 404, 401)),
    ("get", "projects/{p}/sentences/", None, (200, 403, 404, 401)),
    ("post", "projects/{p}/tasks/next/", None, (200, 200, 404, 401)),
    ("get", "projects/{p}/observations/", None, (200, 403, 404, 401)),
    ("get", "projects/{p}/exports/observations.jsonl", None, (200, 403, 404, 401)),
    ("get", "projects/{p}/exports/observations.csv", None, (200, 403, 404, 401)),
    ("get", "projects/{p}/exports/corpus.conllu", None, (200, 403, 404, 401)),
    ("delete", "projects/{p}/members/{a}/", None, (204, 403, 404, 401)),
    ("get", "projects/", None, (200, 200, 200, 401)),
    ("get", "me/", None, (200, 200, 200, 401)),
    ("post", "auth/logout/", None, (204, 204, 204, 401)),
]


@pytest.mark.parametrize(("method", "template", "body", "expected"), MATRIX)
@pytest.mark.parametrize("persona", PERSONAS)
def test_endpoint_by_persona(
    personas, project, corpus, annotator, persona, method, template, body, expected
):
    path = "/api/" + template.format(p=project.pk, a=annotator.pk)
    if callable(body):
        body = body(project.pk)
    client = personas[persona]
    kwargs = {"format": "multipart" if "corpus" in template else "json"} if body else {}
    response = getattr(client, method)(path, body, **kwargs)
    assert response.status_code == expected[PERSONAS.index(persona)], response.content
    if response.status_code >= 400:
        assert response.json()["error"]["code"]


@pytest.mark.parametrize("persona", PERSONAS)
def test_submitting_to_the_annotators_lease(personas, project, corpus, annotator, persona):
    task = client_for(annotator).post(f"/api/projects/{project.pk}/tasks/next/").json()
    body = {
        "assignment": task["assignment"],
        "counts": {t["name"]: 0 for t in task["tags"]},
        "idempotency_key": "abc",
    }
    response = personas[persona].post("/api/observations/", body, format="json")
    expected = {"manager": 404, "annotator": 201, "outsider": 404, "anonymous": 401}[persona]
    assert response.status_code == expected


def test_project_list_shows_only_the_callers_projects(personas, project, other_project):
    mine = personas["outsider"].get("/api/projects/").json()
    assert [p["id"] for p in mine["results"]] == [other_project.pk]
    assert "invite_code" not in mine["results"][0]


def test_annotator_view_of_a_project_hides_manager_fields(personas, project):
    seen = personas["annotator"].get(f"/api/projects/{project.pk}/").json()
    assert seen["role"] == "annotator"
    for hidden in ("invite_code", "gold_fraction", "redundancy"):
        assert hidden not in seen


def test_nonexistent_project_is_404_like_a_foreign_one(personas):
    response = personas["manager"].get("/api/projects/999999/")
    assert response.status_code == 404
    assert response.json() == {"error": {"code": "not_found", "message": "Not found."}}
