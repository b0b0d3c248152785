"""The HTTP contract of annotation/API.md, and what a malicious client would try."""

import csv
import io
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from annotation.models import Assignment, Membership, Observation, Project, Sentence
from common.api.output import iso
from learning.core.conllu import iter_conllu
from tests.support.factories import (
    TAGS,
    UserFactory,
    answer,
    client_for,
    jsonl,
    make_project,
    next_task,
)

# Annotating ---------------------------------------------------------------------------------


def test_next_task_shape_has_no_gold(project, corpus, annotator):
    response = next_task(client_for(annotator), project)
    assert response.status_code == 200
    task = response.json()
    assert set(task) == {"assignment", "expires_at", "tokens", "window", "tags", "max_count"} | {
        "kind"
    }
    assert set(task["window"]) == {"start", "length"}
    assert set(task["tags"][0]) == {"index", "name", "guideline", "examples"}
    assert task["max_count"] == task["window"]["length"]
    assert "gold" not in response.content.decode()
    # The values are the lease's: its sentence, its window, its tags as the project defines them.
    lease = Assignment.objects.select_related("task__sentence").get(pk=task["assignment"])
    assert lease.annotator == annotator and lease.status == "leased"
    assert task["expires_at"] == iso(lease.expires_at)
    assert task["tokens"] == lease.task.sentence.tokens
    assert task["window"] == {"start": lease.task.start, "length": lease.task.length}
    assert task["tags"] == [
        {"index": i, "name": TAGS[i]["name"], "guideline": TAGS[i]["guideline"],
         "examples": TAGS[i]["examples"]}
        for i in lease.task.tags
    ]  # fmt: skip


def test_gold_check_tasks_look_like_the_others(project, manager, annotator):
    client = client_for(manager)
    client.post(
        f"/api/projects/{project.pk}/corpus/",
        {
            "file": SimpleUploadedFile("c.jsonl", jsonl()),
            "format": "jsonl",
            "gold_check_fraction": "1.0",
        },
        format="multipart",
    )
    client.patch(f"/api/projects/{project.pk}/", {"gold_fraction": 1.0}, format="json")
    response = next_task(client_for(annotator), project)
    assert response.status_code == 200
    task = response.json()
    assert set(task) == {"assignment", "expires_at", "tokens", "window", "tags", "max_count"} | {
        "kind"
    }
    sentence = Sentence.objects.get(tasks__assignments__pk=task["assignment"])
    assert sentence.split == "gold_check"
    assert answer(client_for(annotator), task).status_code == 201
    stats = client_for(annotator).get(f"/api/projects/{project.pk}/stats/me/").json()
    assert set(stats) == {
        "observations", "observations_today", "seconds_on_device", "live_lease", "check_score",
        "check_score_estimated",
    }  # fmt: skip
    assert stats["check_score"] is None  # the answer just given reveals nothing


def test_no_task_is_204_and_paused_is_409(project, annotator):
    client = client_for(annotator)
    assert next_task(client, project).status_code == 204
    Project.objects.filter(pk=project.pk).update(status="paused")
    response = next_task(client, project)
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "project_not_active"


def test_submit_replay_and_conflict(project, corpus, annotator):
    client = client_for(annotator)
    task = next_task(client, project).json()
    first = answer(client, task)
    assert first.status_code == 201
    body = first.json()
    assert body["replayed"] is False and body["assignment"] == task["assignment"]
    assert body["counts"] == {t["name"]: 0 for t in task["tags"]}
    replay = answer(client, task)
    assert replay.status_code == 200 and replay.json()["replayed"] is True
    assert replay.json()["id"] == body["id"]
    assert Observation.objects.count() == 1
    conflict = answer(client, task, key="key-2")
    assert conflict.status_code == 409 and conflict.json()["error"]["code"] == "conflict"
    other = next_task(client, project).json()
    reused = answer(client, other)  # key-1 again, for another assignment
    assert reused.status_code == 409
    assert reused.json()["error"]["code"] == "idempotency_key_reused"


def test_reusing_a_key_with_a_different_answer_is_409_and_keeps_the_first(
    project, corpus, annotator
):
    """Issue 17: a key resent with other counts answered 200 replayed with the old counts, so
    the phone believed its new answer was stored."""
    client = client_for(annotator)
    task = next_task(client, project).json()
    assert answer(client, task).status_code == 201
    name = task["tags"][0]["name"]
    other = {t["name"]: 0 for t in task["tags"]} | {name: 1}
    response = answer(client, task, counts=other)
    assert response.status_code == 409
    error = response.json()["error"]
    assert error["code"] == "idempotency_key_reused"
    assert "different answer" in error["message"]
    assert answer(client, task, seconds_on_device=9.0).status_code == 409
    assert Observation.objects.get().counts == [0] * len(task["tags"])
    assert answer(client, task).status_code == 200  # the same body is still a replay


def test_counts_out_of_range_give_field_errors(project, corpus, annotator):
    client = client_for(annotator)
    task = next_task(client, project).json()
    name = task["tags"][0]["name"]
    response = answer(client, task, counts={t["name"]: 0 for t in task["tags"]} | {name: 99})
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid" and "counts" in error["fields"]
    assert Observation.objects.count() == 0


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"assignment": "1", "counts": {}, "idempotency_key": "k"},
        {"assignment": 1, "counts": [], "idempotency_key": "k"},
        {"assignment": 1, "counts": {}, "idempotency_key": "k" * 65},
        {"assignment": 1, "counts": {}, "idempotency_key": "k", "seconds_on_device": -1},
    ],
)
def test_malformed_submissions(annotator, body):
    response = client_for(annotator).post("/api/observations/", body, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid"


def test_non_json_body_is_a_clean_error(annotator):
    response = client_for(annotator).post(
        "/api/observations/", "{oops", content_type="application/json"
    )
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "parse_error"


# Projects and corpus ------------------------------------------------------------------------


def test_create_project_with_preset_and_validation_errors(manager):
    client = client_for(manager)
    created = client.post(
        "/api/projects/",
        {"name": "UPOS", "tag_preset": "ud_upos", "tags_per_task": 2},
        format="json",
    )
    assert created.status_code == 201
    body = created.json()
    assert len(body["tags"]) == 17 and body["role"] == "manager" and body["invite_code"]
    bad = client.post("/api/projects/", {"name": "", "window_size": 0}, format="json")
    assert bad.status_code == 400
    assert {"name", "window_size"} <= set(bad.json()["error"]["fields"])
    ptb = client.post("/api/projects/", {"name": "PTB", "tag_preset": "ptb"}, format="json")
    assert ptb.status_code == 201
    names = [tag["name"] for tag in ptb.json()["tags"]]
    assert len(names) == len(set(names)) == 51 and {"NN", "VBZ", "-LRB-", "``"} <= set(names)
    unknown = client.post("/api/projects/", {"name": "?", "tag_preset": "penn"}, format="json")
    assert unknown.status_code == 400
    assert "tag_preset" in unknown.json()["error"]["fields"]


def test_tags_frozen_after_import_is_409(project, corpus, manager):
    response = client_for(manager).patch(
        f"/api/projects/{project.pk}/", {"tags": [{"name": "X"}]}, format="json"
    )
    assert response.status_code == 409


def test_broken_upload_names_the_line_and_imports_nothing(project, manager):
    data = jsonl() + b'{"tokens": ["a", "b"], "tags": ["NOUN"]}\n'
    response = client_for(manager).post(
        f"/api/projects/{project.pk}/corpus/",
        {"file": SimpleUploadedFile("c.jsonl", data), "format": "jsonl"},
        format="multipart",
    )
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid_corpus" and error["line"] == 13
    assert error["message"].startswith("line 13:")
    assert not Sentence.objects.exists()


def test_oversized_upload_is_413(project, manager, settings):
    settings.TALLY_MAX_UPLOAD_BYTES = 1024
    response = client_for(manager).post(
        f"/api/projects/{project.pk}/corpus/",
        {"file": SimpleUploadedFile("c.txt", b"word " * 1000), "format": "text"},
        format="multipart",
    )
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "payload_too_large"
    assert not Sentence.objects.exists()


def test_upload_with_unknown_format_or_url_field_is_rejected(project, manager):
    client = client_for(manager)
    response = client.post(
        f"/api/projects/{project.pk}/corpus/",
        {"url": "http://169.254.169.254/", "format": "jsonl"},
        format="multipart",
    )
    assert response.status_code == 400 and "file" in response.json()["error"]["fields"]
    response = client.post(
        f"/api/projects/{project.pk}/corpus/",
        {"file": SimpleUploadedFile("c.xml", b"<a/>"), "format": "xml"},
        format="multipart",
    )
    assert response.status_code == 400 and "format" in response.json()["error"]["fields"]


def test_imports_are_listed_with_their_splits_in_one_query(project, manager):
    client = client_for(manager)
    url = f"/api/projects/{project.pk}/corpus/"

    def upload(evaluation: str, gold_check: str) -> dict:
        body = {"file": SimpleUploadedFile("c.jsonl", jsonl()), "format": "jsonl", "seed": "0",
                "evaluation_fraction": evaluation, "gold_check_fraction": gold_check,
                "allow_duplicate": "true"}  # fmt: skip
        response = client.post(url, body, format="multipart")
        assert response.status_code == 201
        return response.json()

    first = upload("0.0", "0.0")
    assert first["splits"] == {"train": 12, "evaluation": 0, "gold_check": 0}
    second = upload("0.5", "0.5")
    assert second["splits"]["train"] == 0 and sum(second["splits"].values()) == 12
    assert second["splits"] == {
        split: Sentence.objects.filter(corpus_import_id=second["id"], split=split).count()
        for split in ("train", "evaluation", "gold_check")
    }
    with CaptureQueriesContext(connection) as queries:
        listed = client.get(url).json()["results"]
    assert [row["splits"] for row in listed] == [first["splits"], second["splits"]]
    upload("1.0", "0.0")
    with CaptureQueriesContext(connection) as more:
        assert len(client.get(url).json()["results"]) == 3
    assert len(more) == len(queries)  # not one more query per import


def test_an_upload_holds_out_as_the_form_does_by_default(project, manager):
    """Issue 26, item 8: over the API `evaluation_fraction` defaulted to 0, the form to 0.1."""
    from annotation.models import DEFAULT_EVALUATION_FRACTION
    from tests.support.factories import SENTENCES

    gold = [(tokens, tags) for tokens, tags in SENTENCES] * 10  # gold-tagged: may be held out
    body = {"file": SimpleUploadedFile("c.jsonl", jsonl(gold)), "format": "jsonl", "seed": "0"}
    response = client_for(manager).post(
        f"/api/projects/{project.pk}/corpus/", body, format="multipart"
    )
    assert response.status_code == 201, response.json()
    splits = response.json()["splits"]
    held = splits["evaluation"] / sum(splits.values())
    assert DEFAULT_EVALUATION_FRACTION == 0.1
    assert 0.04 <= held <= 0.2, splits


def test_pagination(project, corpus, manager):
    page = client_for(manager).get(f"/api/projects/{project.pk}/sentences/?limit=5&offset=5")
    body = page.json()
    assert body["count"] == 12 and len(body["results"]) == 5
    assert body["next"] and body["previous"]
    assert body["results"][0]["position"] == 5


def test_filter_parameters_are_ignored(project, other_project, manager):
    body = client_for(manager).get(f"/api/projects/?id={other_project.pk}&owner=1").json()
    assert [p["id"] for p in body["results"]] == [project.pk]


def test_join_by_code(project):
    user = UserFactory()
    client = client_for(user)
    response = client.post("/api/join/", {"code": project.invite_code}, format="json")
    assert response.status_code == 201 and response.json()["role"] == "annotator"
    assert "invite_code" not in response.json()["project"]
    assert client.post("/api/join/", {"code": project.invite_code}).status_code == 200
    assert client.post("/api/join/", {"code": "wrong"}).status_code == 404
    Project.objects.filter(pk=project.pk).update(status="archived")
    other = client_for(UserFactory())
    response = other.post("/api/join/", {"code": project.invite_code})
    assert response.status_code == 409


# Exports ------------------------------------------------------------------------------------


def test_exports_stream_observations_and_gold_corpus(project, corpus, manager, annotator):
    client = client_for(annotator)
    for i in range(3):
        assert answer(client, next_task(client, project).json(), key=f"k{i}").status_code == 201
    m = client_for(manager)
    response = m.get(f"/api/projects/{project.pk}/exports/observations.jsonl")
    assert response.streaming and "attachment" in response["Content-Disposition"]
    rows = [json.loads(line) for line in b"".join(response.streaming_content).splitlines()]
    assert len(rows) == 3 and rows[0]["annotator_username"] == "annotator"
    assert len(rows[0]["tags"]) == len(rows[0]["counts"])
    csv_text = b"".join(
        m.get(f"/api/projects/{project.pk}/exports/observations.csv").streaming_content
    ).decode()
    assert csv_text.splitlines()[0].startswith("id,annotator,annotator_username,sentence")
    assert len(csv_text.strip().splitlines()) == 4
    conllu = b"".join(
        m.get(f"/api/projects/{project.pk}/exports/corpus.conllu").streaming_content
    ).decode()
    sentences = list(iter_conllu(conllu.splitlines(keepends=True)))
    assert len(sentences) == 12
    assert sentences[0].tokens == ["the", "big", "dog", "runs"]
    assert sentences[0].upos == ["DET", "ADJ", "NOUN", "VERB"]


def test_csv_export_defuses_formulas_in_every_cell(manager, annotator):
    """Issue 16 (7): tag names starting a formula came out as formulas in the `tags` cells."""
    names = ['=HYPERLINK("//evil.example")', "+1+1", "-1+1", "@SUM(1)"]
    project = make_project(
        owner=manager, tags=[{"name": n} for n in names], window_size=2, redundancy=1
    )
    Membership.objects.create(project=project, user=annotator, role=Membership.Role.ANNOTATOR)
    client_for(manager).post(
        f"/api/projects/{project.pk}/corpus/",
        {"file": SimpleUploadedFile("c.txt", b"a b c\n"), "format": "text"},
        format="multipart",
    )
    client = client_for(annotator)
    answer(client, next_task(client, project).json())
    text = b"".join(
        client_for(manager)
        .get(f"/api/projects/{project.pk}/exports/observations.csv")
        .streaming_content
    ).decode()
    rows = list(csv.reader(io.StringIO(text)))
    assert len(rows) == 2
    for cell in rows[1]:
        assert not cell.startswith(("=", "+", "-", "@", "\t", "\r")), cell
    assert rows[1][rows[0].index("tags")].startswith("'=HYPERLINK")


def test_csv_export_defuses_formulas_in_semicolon_separated_locales(manager, annotator):
    """Issue 24: a spreadsheet set to `;`-separated files splits `X;=2+2` into `X` and a
    formula `=2+2`. Whichever separator the spreadsheet takes, no cell starts a formula."""
    names = ["X;=2+2", 'Y; "+1', "Z;-1;@SUM(1)"]
    project = make_project(
        owner=manager, tags=[{"name": n} for n in names], window_size=2, redundancy=1
    )
    Membership.objects.create(project=project, user=annotator, role=Membership.Role.ANNOTATOR)
    annotator.username = "ann;=cmd"
    annotator.save()
    client_for(manager).post(
        f"/api/projects/{project.pk}/corpus/",
        {"file": SimpleUploadedFile("c.txt", b"a b c\n"), "format": "text"},
        format="multipart",
    )
    client = client_for(annotator)
    answer(client, next_task(client, project).json())
    text = b"".join(
        client_for(manager)
        .get(f"/api/projects/{project.pk}/exports/observations.csv")
        .streaming_content
    ).decode()
    formula = ("=", "+", "-", "@", "\t", "\r")
    for delimiter in (",", ";"):
        rows = list(csv.reader(io.StringIO(text), delimiter=delimiter))
        cells = [cell.lstrip(' "') for row in rows[1:] for cell in row]
        assert not [cell for cell in cells if cell.startswith(formula)], (delimiter, cells)
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[1][rows[0].index("annotator_username")] == "ann;'=cmd"
    assert "X;'=2+2" in rows[1][rows[0].index("tags")]


def test_csv_export_defuses_formulas(project, corpus, annotator, manager):
    annotator.username = "=cmd|x"
    annotator.save()
    client = client_for(annotator)
    answer(client, next_task(client, project).json())
    text = b"".join(
        client_for(manager)
        .get(f"/api/projects/{project.pk}/exports/observations.csv")
        .streaming_content
    ).decode()
    assert "'=cmd|x" in text


# Accounts, sessions, docs -------------------------------------------------------------------


def test_register_login_logout(db):
    client = APIClient()
    created = client.post(
        "/api/auth/register/", {"username": "newbie", "password": "a long pass 42"}
    )
    assert created.status_code == 201
    assert (
        client.post("/api/auth/register/", {"username": "newbie", "password": "x"}).status_code
        == 400
    )
    login = client.post("/api/auth/login/", {"username": "newbie", "password": "a long pass 42"})
    assert login.status_code == 200
    token = login.json()["token"]
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    assert client.get("/api/me/").json()["username"] == "newbie"
    assert client.post("/api/auth/logout/").status_code == 204
    assert client.get("/api/me/").status_code == 401


def test_wrong_password_and_login_throttle(db):
    UserFactory(username="victim")
    client = APIClient()
    codes = []
    for i in range(12):
        # A forged X-Forwarded-For must not buy a fresh allowance.
        response = client.post(
            "/api/auth/login/",
            {"username": "victim", "password": "guess"},
            HTTP_X_FORWARDED_FOR=f"10.0.0.{i}",
        )
        codes.append(response.status_code)
    assert codes[0] == 400
    assert codes[-1] == 429
    assert response.json()["error"]["code"] == "throttled"


@pytest.mark.parametrize("body", ['"victim"', "[1, 2]", "17"])
def test_login_with_a_body_that_is_not_an_object_is_a_clear_error(db, body):
    response = APIClient().post("/api/auth/login/", body, content_type="application/json")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid"
    assert "Expected a dictionary" in response.json()["error"]["fields"]["non_field_errors"][0]


def test_session_auth_requires_csrf(project, annotator):
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(annotator)
    assert client.get(f"/api/projects/{project.pk}/").status_code == 200
    response = client.post(f"/api/projects/{project.pk}/tasks/next/")
    assert response.status_code == 403
    assert "CSRF" in response.json()["error"]["message"]


def test_schema_and_docs(manager):
    client = client_for(manager)
    schema = client.get("/api/schema/?format=json")
    assert schema.status_code == 200
    document = json.loads(schema.content)
    paths, bodies = document["paths"], document["components"]["schemas"]
    # The annotator's cycle is served by plain views; the schema documents them all the same.
    next_task = paths["/api/projects/{project_id}/tasks/next/"]
    assert list(next_task) == ["post"]
    # Every error status they can answer is documented with the API's error body (issue 24).
    error = {"$ref": "#/components/schemas/Error"}
    responses = next_task["post"]["responses"]
    assert set(responses) == {"200", "204", "400", "401", "403", "404", "409", "413", "415"}
    assert responses["200"]["content"]["application/json"]["schema"]["$ref"].endswith("/TaskOut")
    assert responses["409"]["content"]["application/json"]["schema"] == error
    assert next_task["post"]["security"] == [{"tokenAuth": []}, {"cookieAuth": []}]
    assert bodies["NextTaskRequest"]["properties"]["holding"]["maxItems"] == 3
    submit = paths["/api/observations/"]
    assert list(submit) == ["post"]
    assert {"200", "201", "400", "401", "404", "409"} <= set(submit["post"]["responses"])
    # `counts`, or in a private project `released` with `privacy` (issue 13); a verification
    # task is answered with Yes / No and the wrong word (issue 15).
    # Exactly one of them (issue 24).
    variants = [
        bodies[ref["$ref"].rsplit("/", 1)[1]] for ref in bodies["ObservationSubmitRequest"]["oneOf"]
    ]
    assert [set(variant["required"]) for variant in variants] == [
        {"assignment", "idempotency_key", "counts"},
        {"assignment", "idempotency_key", "released", "privacy"},
        {"assignment", "idempotency_key", "answer"},
    ]
    assert "wrong" in variants[2]["properties"]
    assert {"private", "alpha", "mechanism", "verification_share"} <= set(
        bodies["ProjectWriteRequest"]["properties"]
    )
    assert client.get("/api/docs/").status_code == 200


def test_ping_needs_nothing(db):
    assert APIClient().get("/api/ping/").json() == {"ok": True}


def test_numbers_too_large_for_an_id_name_nothing(project, corpus, annotator, manager):
    """Ids beyond 64 bits never reach the database (which could not hold them): 404 in a URL,
    400 in a body."""
    huge = 10**30
    for path in (
        f"/api/projects/{huge}/",
        f"/api/projects/{huge}/tasks/next/",
        f"/api/projects/{project.pk}/members/{2**63}/",
        f"/api/projects/{project.pk}/models/{huge}/download",
        f"/projects/{huge}/",
        f"/annotate/{huge}/",
    ):
        response = (
            client_for(manager).post(path) if "tasks" in path else client_for(manager).get(path)
        )
        assert response.status_code == 404, path
    response = answer(client_for(annotator), {"assignment": huge, "tags": []})
    assert response.status_code == 400
    assert "assignment" in response.json()["error"]["fields"]


def test_json_nested_too_deeply_is_a_parse_error_everywhere(project, corpus, annotator, manager):
    """Python's JSON decoder gives up on deep nesting with a RecursionError, not a ValueError:
    still a 400 on every JSON endpoint, and a line-numbered error in a JSON-lines corpus."""
    deep = "[" * 100_000 + "]" * 100_000
    calls = [
        (annotator, "post", f"/api/projects/{project.pk}/tasks/next/"),
        (annotator, "post", "/api/observations/"),
        (manager, "post", "/api/projects/"),
        (manager, "patch", f"/api/projects/{project.pk}/"),
        (manager, "post", f"/api/projects/{project.pk}/predict/"),
        (manager, "post", f"/api/projects/{project.pk}/webhooks/"),
    ]
    for user, method, path in calls:
        response = getattr(client_for(user), method)(path, deep, content_type="application/json")
        assert response.status_code == 400, path
        assert response.json()["error"]["code"] == "parse_error", path
    data = jsonl() + deep.encode() + b"\n"
    response = client_for(manager).post(
        f"/api/projects/{project.pk}/corpus/",
        {"file": SimpleUploadedFile("c.jsonl", data), "format": "jsonl"},
        format="multipart",
    )
    assert response.status_code == 400
    assert response.json()["error"]["message"] == "line 13: not valid JSON (nested too deeply)."


def test_api_docs_load_swagger_ui_from_this_server(client):
    """Issue 17: /api/docs/ was blank without internet access (Swagger UI from a CDN)."""
    import re

    from django.contrib.staticfiles import finders

    page = client.get("/api/docs/").content.decode()
    sources = re.findall(r'(?:src|href)="([^"]+)"', page)
    assert sources and not [url for url in sources if url.startswith(("http:", "https:", "//"))]
    bundle = [url for url in sources if url.endswith("swagger-ui-bundle.js")]
    assert bundle and bundle[0].startswith("/static/drf_spectacular_sidecar/")
    assert finders.find(bundle[0].removeprefix("/static/"))
