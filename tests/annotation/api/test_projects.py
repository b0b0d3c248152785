"""Projects through the API: created with their corpus or not at all, deleted with everything in
them, and the settings that freeze once the project has sentences (issue 17)."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotation.models import Observation, Project, Sentence
from tests.support.factories import TAGS, client_for, jsonl

pytestmark = pytest.mark.django_db


def _create(client, corpus: bytes, *, fmt="jsonl", **project):
    body = {"name": "From a file", "tags": TAGS, "window_size": 3, **project}
    return client.post(
        "/api/projects/",
        {"project": json.dumps(body), "file": SimpleUploadedFile("c.txt", corpus), "format": fmt},
        format="multipart",
    )


def test_a_project_and_its_corpus_are_created_together(manager):
    response = _create(client_for(manager), jsonl(), language="en")
    assert response.status_code == 201, response.content
    project = Project.objects.get(pk=response.json()["id"])
    assert project.sentences.count() == 12 and project.tasks.exists()
    assert response.json()["language"] == "en"
    assert response.json()["frozen"] == ["language", "tags"]


def test_a_corpus_that_fails_leaves_no_project_behind(manager):
    """Issue 17: a failed first upload kept a project whose settings could no longer change."""
    bad = jsonl() + b'{"tokens": ["a"], "tags": ["DT"]}\n'
    response = _create(client_for(manager), bad)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid_corpus" and error["line"] == 13
    assert error["message"] == "line 13: tag 'DT' is not in the project's tag set."
    assert not Project.objects.exists() and not Sentence.objects.exists()


def test_the_project_field_must_be_json(manager):
    response = client_for(manager).post(
        "/api/projects/",
        {"project": "{name", "file": SimpleUploadedFile("c.jsonl", jsonl()), "format": "jsonl"},
        format="multipart",
    )
    assert response.status_code == 400 and "project" in response.json()["error"]["fields"]
    assert not Project.objects.exists()


def test_plain_text_is_tokenized_in_the_projects_language(manager):
    text = "Je pense que l'UE l'a vu.\nAux États-Unis, non.\n".encode()
    response = _create(client_for(manager), text, fmt="text", language="fr")
    assert response.status_code == 201, response.content
    sentences = Sentence.objects.filter(project_id=response.json()["id"]).order_by("position")
    assert [s.tokens for s in sentences] == [
        ["Je", "pense", "que", "l'", "UE", "l'", "a", "vu", "."],
        ["Aux", "États-Unis", ",", "non", "."],
    ]
    assert sentences[1].text == "Aux États-Unis, non."


def test_language_frozen_once_the_project_has_sentences(manager):
    client = client_for(manager)
    empty = client.post("/api/projects/", {"name": "E", "tags": TAGS}, format="json").json()
    assert empty["language"] == "en" and empty["frozen"] == []
    url = f"/api/projects/{empty['id']}/"
    assert client.patch(url, {"language": "nl"}, format="json").json()["language"] == "nl"
    full = _create(client, jsonl()).json()
    response = client.patch(f"/api/projects/{full['id']}/", {"language": "fr"}, format="json")
    assert response.status_code == 409
    assert response.json()["error"]["fields"] == {
        "language": ["Frozen: the project has sentences."]
    }
    same = client.patch(f"/api/projects/{full['id']}/", {"language": "en"}, format="json")
    assert same.status_code == 200


def test_unknown_language_refused(manager):
    response = client_for(manager).post(
        "/api/projects/", {"name": "E", "tags": TAGS, "language": "klingon"}, format="json"
    )
    assert response.status_code == 400 and "language" in response.json()["error"]["fields"]


def test_a_manager_deletes_a_project_with_everything_in_it(project, corpus, manager, annotator):
    client_for(annotator).post(f"/api/projects/{project.pk}/tasks/next/")
    response = client_for(manager).delete(f"/api/projects/{project.pk}/")
    assert response.status_code == 204
    assert not Project.objects.filter(pk=project.pk).exists()
    assert not Sentence.objects.filter(project_id=project.pk).exists()
    assert not Observation.objects.filter(project_id=project.pk).exists()
    assert client_for(manager).get(f"/api/projects/{project.pk}/").status_code == 404
