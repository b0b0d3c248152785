"""What the API accepts from a request (`common.inputs`, `common.middleware`, the parsers and the
paging): each case here answered 500 or silently did something else before (issues 16 and 17)."""

import json

import pytest
from django.contrib.sessions.middleware import SessionMiddleware
from django.db import OperationalError
from django.db.transaction import TransactionManagementError
from django.test import Client
from rest_framework.request import Request

from annotation import hotpath, selectors
from annotation.models import Observation, Project
from common.api.pagination import Pagination
from common.api.plain import Caller
from tests.support.factories import client_for, next_task

pytestmark = pytest.mark.django_db

LISTS = [
    "/api/projects/",
    "/api/projects/{p}/members/",
    "/api/projects/{p}/corpus/",
    "/api/projects/{p}/sentences/",
    "/api/projects/{p}/observations/",
    "/api/projects/{p}/models/",
    "/api/projects/{p}/webhooks/",
]


def _error(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.content
    error = response.json()["error"]
    assert error["code"] == code, error
    return error


# Paging (issue 16, 1; issue 17) -------------------------------------------------------------


@pytest.mark.parametrize("path", LISTS)
def test_a_huge_limit_is_capped(manager, project, corpus, path):
    url = path.format(p=project.pk) + "?limit=99999999999999999999"
    response = client_for(manager).get(url)
    assert response.status_code == 200, response.content
    assert len(response.json()["results"]) <= 500


def test_the_cap_is_500(rf):
    request = Request(rf.get("/api/anything/?limit=100000&offset=10"))
    page = Pagination().paginate_queryset(list(range(2000)), request)
    assert page == list(range(10, 510))


@pytest.mark.parametrize(
    ("query", "name"),
    [("limit=abc", "limit"), ("limit=-1", "limit"), ("limit=0", "limit"), ("limit=1e3", "limit"),
     ("offset=-5", "offset"), ("offset=x", "offset")],
)  # fmt: skip
def test_a_bad_paging_parameter_is_a_400_naming_it(manager, project, query, name):
    response = client_for(manager).get(f"/api/projects/{project.pk}/sentences/?{query}")
    error = _error(response, 400, "invalid")
    assert list(error["fields"]) == [name]
    assert "whole number" in error["fields"][name][0]


def test_an_offset_past_the_end_is_an_empty_page(manager, project, corpus):
    url = f"/api/projects/{project.pk}/sentences/?offset=99999999999999999999"
    response = client_for(manager).get(url)
    assert response.status_code == 200 and response.json()["results"] == []


# Strings that cannot be stored (issue 16, 2) ----------------------------------------------------


def _post_json(client, url: str, text: str, method: str = "post"):
    return getattr(client, method)(url, text, content_type="application/json")


def test_a_lone_surrogate_at_login_is_a_parse_error(db):
    body = '{"username": "\\ud800", "password": "x"}'
    error = _error(_post_json(client_for(None), "/api/auth/login/", body), 400, "parse_error")
    assert "lone surrogate" in error["message"]


@pytest.mark.parametrize(
    ("method", "field"),
    [("post", "tag_preset"), ("post", "status"), ("post", "name"), ("patch", "status")],
)
def test_a_lone_surrogate_in_a_project_field_is_a_parse_error(manager, project, method, field):
    url = "/api/projects/" if method == "post" else f"/api/projects/{project.pk}/"
    body = json.dumps({"name": "P", "tag_preset": "ud_upos", field: "a\ud800b"})
    response = _post_json(client_for(manager), url, body, method)
    assert "lone surrogate" in _error(response, 400, "parse_error")["message"]
    assert Project.objects.count() == 1


@pytest.mark.parametrize("key", ["a\x00b", "\ud800"])
def test_an_unstorable_idempotency_key_is_a_parse_error(project, corpus, annotator, key):
    client = client_for(annotator)
    task = next_task(client, project).json()
    body = {"assignment": task["assignment"], "idempotency_key": key,
            "counts": {t["name"]: 0 for t in task["tags"]}}  # fmt: skip
    response = _post_json(client, "/api/observations/", json.dumps(body))
    _error(response, 400, "parse_error")
    assert not Observation.objects.exists()


def test_a_nul_in_a_key_of_an_object_is_refused_too(manager):
    response = _post_json(client_for(manager), "/api/projects/", '{"na\\u0000me": "x"}')
    assert "NUL" in _error(response, 400, "parse_error")["message"]


@pytest.mark.parametrize(
    "path", ["/api/projects/?limit=%00", "/api/projects/%00/", "/join/a%00b", "/login/?next=%00"]
)
def test_a_nul_in_the_path_or_the_query_is_a_400(manager, path):
    response = client_for(manager).get(path)
    assert response.status_code == 400
    if path.startswith("/api/"):
        assert "NUL" in _error(response, 400, "parse_error")["message"]


def test_a_nul_in_a_header_is_a_400(db):
    response = client_for(None).get("/api/me/", HTTP_AUTHORIZATION="Token a\x00b")
    assert "header" in _error(response, 400, "parse_error")["message"]


def test_a_nul_in_a_form_field_is_a_parse_error(manager, project):
    response = client_for(manager).post(
        f"/api/projects/{project.pk}/corpus/",
        "format=%00",
        content_type="application/x-www-form-urlencoded",
    )
    assert response.status_code in (400, 415)


# Numbers that are not numbers (issue 16, 3) -----------------------------------------------------


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "1e999", "-1e999"])
@pytest.mark.parametrize("method", ["post", "patch"])
def test_a_non_finite_number_is_a_parse_error(manager, project, value, method):
    url = "/api/projects/" if method == "post" else f"/api/projects/{project.pk}/"
    body = f'{{"name": "P", "tag_preset": "ud_upos", "gold_fraction": {value}}}'
    if method == "patch":
        body = f'{{"gold_fraction": {value}}}'
    _error(_post_json(client_for(manager), url, body, method), 400, "parse_error")
    project.refresh_from_db()
    assert project.gold_fraction == 0.0


def test_a_non_finite_number_in_a_submission_is_a_parse_error(project, corpus, annotator):
    client = client_for(annotator)
    task = next_task(client, project).json()
    body = json.dumps(
        {
            "assignment": task["assignment"],
            "idempotency_key": "k",
            "counts": {t["name"]: 0 for t in task["tags"]},
            "seconds_on_device": 1.5,
        }
    )
    body = body.replace("1.5", "NaN")  # fmt: skip
    _error(_post_json(client, "/api/observations/", body), 400, "parse_error")


def test_a_body_too_large_is_a_413_in_the_error_shape(annotator, project, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    big = json.dumps({"holding": [], "pad": "x" * 2000})
    for url in (f"/api/projects/{project.pk}/tasks/next/", "/api/projects/"):
        _error(_post_json(client_for(annotator), url, big), 413, "payload_too_large")


# Every API URL answers in the error shape (issue 17) --------------------------------------------


def test_an_api_url_without_its_trailing_slash_is_served(project, corpus, annotator):
    client = client_for(annotator)
    task = client.post(f"/api/projects/{project.pk}/tasks/next").json()
    body = {"assignment": task["assignment"], "idempotency_key": "k",
            "counts": {t["name"]: 0 for t in task["tags"]}}  # fmt: skip
    response = client.post("/api/observations", body, format="json")
    assert response.status_code == 201, response.content
    again = client.post("/api/observations/", body, format="json")
    assert again.status_code == 200 and again.json()["replayed"]  # the same, with the slash


def test_an_unknown_api_url_is_a_404_in_the_error_shape(annotator):
    _error(client_for(annotator).post("/api/nothing-here", {}, format="json"), 404, "not_found")


@pytest.mark.parametrize("path", ["/api/projects//corpus/", "/api/nothing-here", "/api/x/"])
def test_an_unknown_api_url_is_a_404_in_the_error_shape_in_development_too(
    annotator, settings, path
):
    """With DEBUG (what ./tally up runs) Django answered its HTML "Page not found" (issue 17)."""
    settings.DEBUG = True
    _error(client_for(annotator).get(path), 404, "not_found")


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [("post", "/api/schema/", 405), ("options", "/api/docs/", 405), ("post", "/api/docs/", 405),
     ("get", "/api/schema/?format=xml", 404)],
)  # fmt: skip
def test_the_schema_and_the_docs_answer_errors_in_the_error_shape(db, method, path, status):
    response = getattr(client_for(None), method)(path)
    assert response.status_code == status
    assert response.json()["error"]["code"]


# The database away (benchmark_faults) -----------------------------------------------------------


def _unreachable(*args, **kwargs):
    raise OperationalError("connection failed: the database system is starting up")


def test_a_database_outage_is_a_503_with_retry_after(annotator, project, monkeypatch):
    monkeypatch.setattr(selectors, "memberships_of_user", _unreachable)
    response = client_for(annotator).get("/api/projects/")
    error = _error(response, 503, "service_unavailable")
    assert "try again" in error["message"]
    assert response["Retry-After"] == "2"


def test_a_database_outage_is_a_503_on_the_annotators_cycle_too(annotator, project, monkeypatch):
    monkeypatch.setattr(hotpath, "next_task", _unreachable)
    monkeypatch.setattr(Caller, "user", _unreachable)
    response = next_task(client_for(annotator), project)
    _error(response, 503, "service_unavailable")
    assert response["Retry-After"] == "2"


def _lost_then_cleanup_fails(*args, **kwargs):
    try:
        _unreachable()
    except OperationalError:
        raise TransactionManagementError("queries are refused until the block ends")  # noqa: B904


def test_an_error_while_cleaning_up_after_a_lost_connection_is_a_503(
    annotator, project, monkeypatch
):
    monkeypatch.setattr(selectors, "memberships_of_user", _lost_then_cleanup_fails)
    response = client_for(annotator).get("/api/projects/")
    _error(response, 503, "service_unavailable")


def test_the_database_lost_outside_any_view_is_a_503_too(annotator, project, monkeypatch):
    """Raised in a middleware on the way out (a session saved as the database goes), it reaches
    the site's 500 handler, not the view's exception handling."""
    monkeypatch.setattr(SessionMiddleware, "process_response", _unreachable)
    client = client_for(annotator)
    client.raise_request_exception = False
    response = client.get("/api/projects/")
    _error(response, 503, "service_unavailable")
    assert response["Retry-After"] == "2"
    page = Client(raise_request_exception=False).get("/login/")
    assert page.status_code == 503 and page["Retry-After"] == "2"


def test_other_errors_outside_views_stay_500s(annotator, project, monkeypatch):
    monkeypatch.setattr(SessionMiddleware, "process_response", _broken)
    client = client_for(annotator)
    client.raise_request_exception = False
    _error(client.get("/api/projects/"), 500, "server_error")


def _broken(*args, **kwargs):
    raise ValueError("a bug")
