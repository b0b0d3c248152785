"""What the OpenAPI schema promises a generated client, and the answers schemathesis found
breaking it (issue 24). The client itself: tests/test_schema_client.py; schemathesis:
tests/test_schemathesis.py."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from tests.support.factories import client_for, make_project, member

METHODS = ("get", "put", "post", "patch", "delete")
PRESET = {"name": "P", "tag_preset": "ud_upos"}


@pytest.fixture
def schema(db):
    response = APIClient().get("/api/schema/?format=json")
    assert response.status_code == 200
    return json.loads(response.content)


def _operations(schema):
    for path, item in schema["paths"].items():
        for method in METHODS:
            if method in item:
                yield path, method, item[method]


def test_one_request_type_per_operation_and_files_are_bytes(schema):
    """Two or three request types made openapi-python-client write modules that fail on import;
    a FileField was documented as `format: uri`."""
    uploads = set()
    for path, method, operation in _operations(schema):
        content = operation.get("requestBody", {}).get("content", {})
        assert len(content) <= 1, (method, path, list(content))
        if "multipart/form-data" in content:
            uploads.add(path)
            ref = content["multipart/form-data"]["schema"]["$ref"].rsplit("/", 1)[1]
            assert schema["components"]["schemas"][ref]["properties"]["file"] == {
                "type": "string",
                "format": "binary",
            }
    assert uploads == {
        "/api/projects/with-corpus/",
        "/api/corpus/preview/",
        "/api/projects/{project_id}/corpus/",
        "/api/projects/{project_id}/cost-matrix/csv",
    }


def test_the_project_form_with_its_corpus_sends_its_settings_as_json(schema):
    body = schema["paths"]["/api/projects/with-corpus/"]["post"]["requestBody"]
    multipart = body["content"]["multipart/form-data"]
    assert multipart["encoding"] == {"project": {"contentType": "application/json"}}
    form = schema["components"]["schemas"]["ProjectWithCorpusRequest"]
    assert {"project", "file", "format"} <= set(form["required"])
    assert form["properties"]["project"]["allOf"] == [
        {"$ref": "#/components/schemas/ProjectWriteRequest"}
    ]


def test_every_answer_and_error_is_typed(schema):
    error = {"$ref": "#/components/schemas/Error"}
    for path, method, operation in _operations(schema):
        for code, response in operation["responses"].items():
            content = response.get("content", {})
            if code.startswith("4"):
                assert content["application/json"]["schema"] == error, (method, path, code)
            elif "application/json" in content:
                body = content["application/json"]["schema"]
                assert body.get("$ref") or body.get("type") == "array", (method, path, code)
        if method != "get" and path != "/api/auth/register/":
            public = (
                "/api/auth/login/",
                "/api/auth/password/reset/",
                "/api/auth/password/reset/confirm/",
            )
            assert "401" in operation["responses"] or path in public, path
    error_body = schema["components"]["schemas"]["ErrorDetail"]
    assert set(error_body["required"]) == {"code", "message"}


def test_lists_are_paged_and_named_as_lists(schema):
    lists = [
        (path, operation)
        for path, method, operation in _operations(schema)
        if method == "get" and "limit" in {p["name"] for p in operation.get("parameters", [])}
    ]
    assert len(lists) == 10  # import jobs (issue 24 item 3) the ninth, API tokens (44) the tenth
    for path, operation in lists:
        assert operation["operationId"].endswith("_list"), path
        parameters = {p["name"]: p["schema"] for p in operation["parameters"]}
        assert parameters["limit"]["minimum"] == 1 and parameters["offset"]["minimum"] == 0
        page = operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
        assert page.rsplit("/", 1)[1].startswith("Paginated")


def test_exports_say_what_they_are(schema):
    media = {
        path.rsplit("/", 1)[1]: list(item["get"]["responses"]["200"]["content"])
        for path, item in schema["paths"].items()
        if "/exports/" in path or path.endswith("/download")
    }
    assert media == {
        "observations.jsonl": ["application/x-ndjson"],
        "observations.csv": ["text/csv"],
        "corpus.conllu": ["text/plain"],
        "predictions.conllu": ["text/plain"],
        "download": ["application/octet-stream"],
    }


def test_constraints_the_server_enforces_are_in_the_schema(schema):
    bodies = schema["components"]["schemas"]
    schedule = bodies["ScheduleWriteRequest"]["properties"]["interval_minutes"]
    assert (schedule["type"], schedule["minimum"], schedule["maximum"]) == ("integer", 1, 10080)
    assert bodies["ProjectWriteRequest"]["properties"]["name"]["minLength"] == 1
    assert bodies["ProjectWriteRequest"]["properties"]["name"]["maxLength"] == 200
    assert bodies["CredentialsRequest"]["properties"]["username"]["maxLength"] == 150
    # Exactly one of counts, released (with privacy), answer.
    variants = bodies["ObservationSubmitRequest"]["oneOf"]
    assert len(variants) == 3
    seconds = bodies["CountAnswerRequest"]["properties"]["seconds_on_device"]
    assert (seconds["maximum"], seconds["exclusiveMaximum"]) == (1e7, True)


def test_ping_is_documented_and_public(schema):
    ping = schema["paths"]["/api/ping/"]
    assert list(ping) == ["get"]
    assert ping["get"]["security"] == [{}]
    assert ping["get"]["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Ping"
    }


# Answers schemathesis found off the schema ------------------------------------------------------


@pytest.fixture
def project(db):
    return make_project()


@pytest.mark.parametrize("persona", ["anonymous", "outsider", "annotator", "manager"])
@pytest.mark.parametrize(
    "path, allowed",
    [
        ("/api/projects/{id}/corpus/", "GET, POST, HEAD, OPTIONS"),
        ("/api/projects/{id}/stats/", "GET, HEAD, OPTIONS"),
        ("/api/projects/{id}/tasks/next/", "POST"),
        ("/api/observations/", "POST"),
        ("/api/ping/", "GET, HEAD"),
    ],
)
def test_a_method_a_url_does_not_serve_is_405_with_allow_whoever_asks(
    project, persona, path, allowed
):
    """Anonymous it was a 401 (credentials asked first), as an outsider a 404; the plain views'
    405 had no `Allow`, and ping answered any method (QUERY: CSRF's HTML 403)."""
    users = {
        "anonymous": None,
        "outsider": member(make_project(name="Other"), username="outsider"),
        "annotator": member(project, username="annotator"),
        "manager": project.owner,
    }
    client = client_for(users[persona])
    response = client.generic("TRACE", path.format(id=project.pk))
    assert response.status_code == 405, response.content
    assert response["Content-Type"] == "application/json"
    assert response.json()["error"]["code"] == "method_not_allowed"
    assert set(response["Allow"].split(", ")) == set(allowed.split(", "))
    if path == "/api/ping/":
        assert client.generic("QUERY", path).status_code == 405


def test_an_event_stream_error_is_json(project):
    """Asked as `text/event-stream`, a refusal came labelled as an event stream."""
    annotator = member(project, username="annotator")
    for client in (client_for(None), client_for(annotator)):
        response = client.get(
            f"/api/projects/{project.pk}/events/?format=event-stream",
            HTTP_ACCEPT="text/event-stream",
        )
        assert response.status_code in (401, 403)
        assert response["Content-Type"] == "application/json"
        assert response.json()["error"]["code"] in ("not_authenticated", "permission_denied")


def test_a_json_null_is_not_a_next_task_request(project):
    """The schema says an object (or no body); `null` was taken as no body."""
    client = client_for(member(project, username="annotator"))
    url = f"/api/projects/{project.pk}/tasks/next/"
    response = client.generic("POST", url, "null", content_type="application/json")
    assert response.status_code == 400
    assert response.json()["error"]["message"] == "Expected a JSON object."
    assert client.post(url).status_code in (200, 204)  # no body: no lease held


def test_an_unknown_invite_code_is_a_documented_404(schema, project):
    client = client_for(member(make_project(name="Other"), username="someone"))
    response = client.post("/api/join/", {"code": "no-such-code"}, format="json")
    assert response.status_code == 404
    assert {"404", "409"} <= set(schema["paths"]["/api/join/"]["post"]["responses"])


@pytest.mark.parametrize(
    "url, body, field",
    [
        ("/api/projects/", {"name": 0, "tag_preset": "ud_upos"}, "name"),
        ("/api/projects/", {**PRESET, "window_size": "5"}, "window_size"),
        ("/api/projects/", {**PRESET, "window_size": 5.0}, "window_size"),
        ("/api/projects/", {**PRESET, "private": 1}, "private"),
        ("/api/projects/", {"name": "P", "tags": [{"name": 7}]}, "tags"),
        ("/api/projects/", {"name": "P", "tags": [{"name": "X", "examples": [1]}]}, "tags"),
        ("/api/join/", {"code": 12345}, "code"),
    ],
)
def test_a_json_value_of_another_type_is_refused(project, url, body, field):
    """DRF took "5" and 5.0 as 5, 0 as "0", 1 as true: schemathesis's wrong-typed bodies were
    accepted. Now a 400 that names the field."""
    response = client_for(project.owner).post(url, body, format="json")
    assert response.status_code == 400, response.content
    assert field in response.json()["error"]["fields"]


def test_form_fields_are_still_read_as_text(project):
    """Multipart fields are text by nature: a corpus upload's numbers still come as text."""
    response = client_for(project.owner).post(
        f"/api/projects/{project.pk}/corpus/",
        {
            "file": SimpleUploadedFile("corpus.txt", b"a b c\n", content_type="text/plain"),
            "format": "tokenized",
            "evaluation_fraction": "0.5",
        },
        format="multipart",
    )
    assert response.status_code == 201, response.content


def test_the_answer_to_a_submission_documents_the_next_task(schema):
    """An answer may ask for the next task (`next`, issue 29): its reply carries it."""
    submit = schema["paths"]["/api/observations/"]["post"]["responses"]
    for code in ("200", "201"):
        ref = submit[code]["content"]["application/json"]["schema"]["$ref"]
        assert ref == "#/components/schemas/ObservationSubmittedOut"
    reply = schema["components"]["schemas"]["ObservationSubmittedOut"]["properties"]
    assert reply["next"]["allOf"] == [{"$ref": "#/components/schemas/TaskOut"}]
    assert reply["next"]["nullable"] is True
    assert reply["next_error"]["allOf"] == [{"$ref": "#/components/schemas/ErrorDetail"}]


def test_a_large_upload_s_job_is_typed(schema):
    """A large upload answers 202 with its import job (issue 24 item 3), typed like the job's
    own URL."""
    job = {"$ref": "#/components/schemas/ImportJobOut"}
    upload = schema["paths"]["/api/projects/{project_id}/corpus/"]["post"]["responses"]
    assert upload["202"]["content"]["application/json"]["schema"] == job
    detail = schema["paths"]["/api/projects/{project_id}/corpus/jobs/{job_id}/"]["get"]
    assert detail["responses"]["200"]["content"]["application/json"]["schema"] == job
    created = schema["paths"]["/api/projects/with-corpus/"]["post"]["responses"]
    assert created["202"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/ProjectWithImportJobOut"
    }
    body = schema["components"]["schemas"]["ImportJobOut"]
    assert {"import", "url", "status", "progress", "error"} <= set(body["required"])
    with_job = schema["components"]["schemas"]["ProjectWithImportJobOut"]
    assert "import_job" in with_job["required"]
    assert "import" in schema["components"]["schemas"]["ProjectWithImportOut"]["required"]
