"""The HTTP contract of learning/API.md and its permission rules (every endpoint, every persona)."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from annotation.models import Sentence
from common.api.output import iso
from delivery.models import Webhook, WebhookDelivery
from delivery.webhooks import services as webhook_services
from learning.models import ModelVersion
from tests.support.crowd import add_annotators, answer_tasks, import_corpus, toy_sentences
from tests.support.factories import client_for, make_project
from tests.support.learning import retrain

pytestmark = pytest.mark.django_db


@pytest.fixture
def hook(trained, settings):
    settings.TALLY_WEBHOOK_ALLOW_INTERNAL = True
    return webhook_services.webhook_create(project=trained, url="http://127.0.0.1:9/hook")


@pytest.fixture
def short_streams(settings):
    settings.TALLY_SSE_STREAM_SECONDS = 1
    settings.TALLY_SSE_POLL_SECONDS = 1


def endpoints(project_id: int, hook_id: int):
    base = f"/api/projects/{project_id}/"
    return [
        ("get", base + "models/", None, 200),
        ("get", base + "models/1/download", None, 200),
        ("get", base + "reports/latest/", None, 200),
        ("get", base + "reports/1/", None, 200),
        ("post", base + "retrain/", None, 200),
        ("get", base + "retrain-schedule/", None, 200),
        ("put", base + "retrain-schedule/", {"interval_minutes": 5, "enabled": True}, 200),
        ("get", base + "retrain-status/", None, 200),
        ("post", base + "predict/", {"text": "the dog runs"}, 200),
        ("get", base + "cost-matrix/", None, 200),
        ("put", base + "cost-matrix/", {"preset": "near-classes"}, 200),
        ("get", base + "cost-matrix/csv", None, 200),
        ("get", base + "exports/predictions.conllu", None, 200),
        ("get", base + "webhooks/", None, 200),
        ("post", base + "webhooks/", {"url": "http://127.0.0.1:9/other"}, 201),
        ("get", base + f"webhooks/{hook_id}/", None, 200),
        ("patch", base + f"webhooks/{hook_id}/", {"active": False}, 200),
        ("get", base + f"webhooks/{hook_id}/deliveries/", None, 200),
        ("get", base + "events/", None, 200),
        ("delete", base + f"webhooks/{hook_id}/", None, 204),
    ]


MEMBERS_MAY: set[str] = set()  # predict/ too: annotators only where the managers opt in


@pytest.mark.parametrize("persona", ["anonymous", "outsider", "annotator", "manager"])
def test_permissions_on_every_endpoint(persona, personas, trained, hook, short_streams):
    client = personas[persona]
    for method, url, body, ok in endpoints(trained.pk, hook.pk):
        response = getattr(client, method)(url, body, format="json")
        if persona == "manager" or (persona == "annotator" and url.endswith(tuple(MEMBERS_MAY))):
            expected = ok
        else:
            expected = {"anonymous": 401, "outsider": 404, "annotator": 403}[persona]
        assert response.status_code == expected, (persona, method, url, response.content[:300])
        if expected >= 400:
            assert set(response.json()["error"]) >= {"code", "message"}
        if hasattr(response, "streaming_content"):
            b"".join(response.streaming_content)


def test_unknown_project_is_404_for_everyone(personas):
    for persona in ("manager", "annotator"):
        response = personas[persona].get("/api/projects/999999/reports/latest/")
        assert response.status_code == 404


def test_no_model_yet(project, manager):
    client = client_for(manager)
    base = f"/api/projects/{project.pk}/"
    response = client.get(base + "reports/latest/")
    assert response.status_code == 404 and response.json()["error"]["code"] == "no_model"
    # `no_model` is always 404 (it was 409 on these two until issue 18: one code, one status).
    response = client.post(base + "predict/", {"text": "the dog"}, format="json")
    assert response.status_code == 404 and response.json()["error"]["code"] == "no_model"
    response = client.get(base + "exports/predictions.conllu")
    assert response.status_code == 404 and response.json()["error"]["code"] == "no_model"
    response = client.post(base + "retrain/")
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "no_observations"
    assert client.get(base + "models/").json()["count"] == 0
    assert client.get(base + "models/1/download").status_code == 404
    assert client.get(base + "reports/1/").json()["error"]["code"] == "not_found"


def test_retrain_now_runs_and_reports(project, crowd, manager, eager):
    client = client_for(manager)
    base = f"/api/projects/{project.pk}/"
    answer_tasks(project, crowd, 80)
    response = client.post(base + "retrain/")
    assert response.status_code == 202 and response.json() == {"queued": True, "due": True}
    assert ModelVersion.objects.filter(project=project).count() == 1
    response = client.post(base + "retrain/")
    assert response.status_code == 200 and response.json()["due"] is False
    answer_tasks(project, crowd, 20, seed=4)
    assert client.post(base + "retrain/").status_code == 202

    report = client.get(base + "reports/latest/").json()
    assert report["version"] == 2
    assert set(report) == {
        "version", "created_at", "observations", "newest_observation", "tags", "evaluation",
        "accuracy", "per_tag", "confusion", "count_consistency", "held_out_observations",
        "learning_curve", "annotators", "skipped_observations", "timings", "model_kind",
        "effort", "forecast", "cost",
    }  # fmt: skip
    # What the report says is what the version and its report stored.
    version = ModelVersion.objects.select_related("report").get(project=project, number=2)
    stored = version.report
    assert report["created_at"] == iso(version.created_at)
    assert report["observations"] == version.observations_count == 100
    assert report["newest_observation"] == version.newest_observation
    assert report["newest_observation"] == project.observations.latest("id").pk
    assert report["accuracy"] == stored.accuracy and report["accuracy"] > 0.6
    assert report["evaluation"] == stored.evaluation and report["evaluation"]["sentences"] > 0
    assert report["per_tag"] == stored.per_tag
    assert [row["tag"] for row in report["per_tag"]] == ["NOUN", "VERB", "DET", "ADJ"]
    assert report["confusion"] == stored.confusion
    assert sum(map(sum, report["confusion"]["matrix"])) == report["evaluation"]["tokens"]
    assert report["count_consistency"] == stored.count_consistency
    assert report["held_out_observations"] == stored.held_out_observations > 0
    assert report["skipped_observations"] == stored.skipped_observations
    assert report["timings"] == version.timings and report["timings"]["total"] > 0
    assert sum(row["answers"] for row in report["annotators"]) == 100
    assert {row["username"] for row in report["annotators"]} == {u.username for u in crowd}
    assert report["tags"] == ["NOUN", "VERB", "DET", "ADJ"]
    assert [p["version"] for p in report["learning_curve"]] == [1, 2]
    assert set(report["learning_curve"][0]) == {
        "version", "observations", "accuracy", "count_consistency", "created_at", "cost_per_token",
    }  # fmt: skip
    assert report["learning_curve"][1]["observations"] == 100
    row = report["annotators"][0]
    assert set(row) == {
        "annotator", "username", "answers", "median_seconds", "reliability", "flagged",
        "flag_reason", "verification_answers", "verification_skill", "verification_yes_rate",
    }  # fmt: skip
    assert client.get(base + "reports/1/").json()["version"] == 1

    versions = client.get(base + "models/").json()
    assert versions["count"] == 2
    newest, oldest = versions["results"]
    assert newest["current"] and not oldest["current"]
    # A quarter more answers, from the first version's round (chosen by value): fitted afresh.
    assert newest["warm_started_from"] is None and newest["version"] == 2
    assert newest["observations"] == 100 and "fit" in newest["timings"]
    assert newest["model_kind"] == "context" == client.get(base + "reports/2/").json()["model_kind"]

    status = client.get(base + "retrain-status/").json()
    assert status["running"] is False and status["current_version"] == 2
    assert status["due"] is False and status["pending_observations"] == 0
    assert status["last_run"]["status"] == "skipped" or status["last_run"]["version"] == 2
    assert status["last_error"] is None
    assert {r["trigger"] for r in status["recent_runs"]} == {"manual"}


def test_predict(trained, manager):
    client = client_for(manager)
    url = f"/api/projects/{trained.pk}/predict/"
    body = client.post(url, {"text": " the big\tdog  runs \n"}, format="json").json()
    assert body["tokens"] == ["the", "big", "dog", "runs"]  # split on any whitespace
    body = client.post(url, {"text": "the big dog runs"}, format="json").json()
    assert body["version"] == 1
    assert body["tokens"] == ["the", "big", "dog", "runs"]
    assert body["tags"] == ["DET", "ADJ", "NOUN", "VERB"]
    # Each token's tag is its most probable alternative, the alternatives most probable first.
    for tag, probability, alternatives in zip(
        body["tags"], body["probabilities"], body["alternatives"], strict=True
    ):
        assert len(alternatives) == 3
        assert alternatives[0] == {"tag": tag, "probability": probability}
        shown = [a["probability"] for a in alternatives]
        assert shown == sorted(shown, reverse=True) and 0 < sum(shown) <= 1.0001
    assert body["probabilities"][0] > 0.5
    assert client.post(url, {"text": "   "}, format="json").status_code == 400
    assert client.post(url, {}, format="json").status_code == 400
    too_long = client.post(url, {"text": "a " * 6000}, format="json")
    assert too_long.status_code == 413
    assert too_long.json()["error"]["code"] == "payload_too_large"
    assert client.post(url, {"text": "a " * 1001}, format="json").status_code == 413


def test_predictions_export(trained, manager):
    response = client_for(manager).get(f"/api/projects/{trained.pk}/exports/predictions.conllu")
    assert response["Content-Disposition"].startswith("attachment;")
    text = b"".join(response.streaming_content).decode()
    blocks = [b for b in text.split("\n\n") if b.strip()]
    assert len(blocks) == trained.sentences.count()
    first = blocks[0].splitlines()
    assert first[0].startswith("# sent_id = ")
    assert "# model_version = 1" in first
    token_lines = [line.split("\t") for line in first if not line.startswith("#")]
    assert all(len(cols) == 10 for cols in token_lines)
    assert all(cols[3] in {"NOUN", "VERB", "DET", "ADJ"} for cols in token_lines)
    assert all(cols[9].startswith("Prob=") and "Gold=" in cols[9] for cols in token_lines)


def test_model_download(trained, manager):
    response = client_for(manager).get(f"/api/projects/{trained.pk}/models/1/download")
    assert response["Content-Type"] == "application/octet-stream"
    assert b"".join(response.streaming_content)[:2] == b"PK"  # a zip (npz) archive


def test_schedule(project, manager):
    client = client_for(manager)
    url = f"/api/projects/{project.pk}/retrain-schedule/"
    assert client.get(url).json() == {"interval_minutes": 10, "enabled": True}
    body = client.put(url, {"interval_minutes": 30, "enabled": False}, format="json").json()
    assert body == {"interval_minutes": 30, "enabled": False}
    assert client.get(url).json() == body
    bad = client.put(url, {"interval_minutes": 0}, format="json")
    assert bad.status_code == 400 and "interval_minutes" in bad.json()["error"]["fields"]
    assert client.put(url, {"interval_minutes": "5"}, format="json").status_code == 400
    assert client.put(url, {}, format="json").status_code == 400


def test_webhook_crud(project, manager, settings):
    client = client_for(manager)
    url = f"/api/projects/{project.pk}/webhooks/"
    refused = client.post(url, {"url": "http://127.0.0.1:8000/hook"}, format="json")
    assert refused.status_code == 400
    assert "internal address" in refused.json()["error"]["fields"]["url"][0]
    for bad in ("ftp://example.org/x", "http://user:pw@example.org/", "not a url", ""):
        assert client.post(url, {"url": bad}, format="json").status_code == 400
    settings.TALLY_WEBHOOK_ALLOW_INTERNAL = True
    created = client.post(
        url, {"url": "http://127.0.0.1:8000/hook", "secret": "s" * 20}, format="json"
    )
    assert created.status_code == 201
    body = created.json()
    assert body["secret"] == "s" * 20 and body["active"] is True and body["last_delivery"] is None
    generated = client.post(url, {"url": "http://localhost:8000/x"}, format="json").json()
    assert len(generated["secret"]) >= 32
    listed = client.get(url).json()
    assert listed["count"] == 2 and all("secret" not in row for row in listed["results"])
    assert (
        client.post(url, {"url": "http://127.0.0.1/", "secret": "short"}, format="json").status_code
        == 400
    )
    detail = f"{url}{body['id']}/"
    patched = client.patch(detail, {"active": False}, format="json").json()
    assert patched["active"] is False and "secret" not in patched
    assert client.patch(detail, {"url": "gopher://x"}, format="json").status_code == 400
    assert client.get(detail + "deliveries/").json()["count"] == 0
    assert client.delete(detail).status_code == 204
    assert client.get(detail).status_code == 404
    for i in range(9):
        Webhook.objects.create(project=project, url=f"http://127.0.0.1/{i}", secret="x" * 20)
    too_many = client.post(url, {"url": "http://127.0.0.1/11"}, format="json")
    assert too_many.status_code == 409


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("http://127.0.0.1/hook\r\nX-Injected: 1", "control character (U+000D)"),
        ("http://127.0.0.1/a\nb", "control character (U+000A)"),
        ("http://127.0.0.1/a\tb", "control character (U+0009)"),
        ("http://127.0.0.1/a\x0bb", "control character (U+000B)"),
        ("http://127.0.0.1/a\u2028b", "control character (U+2028)"),
        ("http://127.0.0.1/a b", "a space"),
    ],
)
def test_a_webhook_url_with_a_line_break_is_refused(project, manager, settings, url, says):
    """Issue 24: urlsplit drops CR, LF and tab, so the target check passed and the URL was
    stored with them. Refused on create and on change, with what was found."""
    settings.TALLY_WEBHOOK_ALLOW_INTERNAL = True
    client = client_for(manager)
    base = f"/api/projects/{project.pk}/webhooks/"
    kept = client.post(base, {"url": "http://127.0.0.1/ok"}, format="json").json()["id"]
    created = client.post(base, {"url": url}, format="json")
    changed = client.patch(f"{base}{kept}/", {"url": url}, format="json")
    for response in (created, changed):
        assert response.status_code == 400, response.content
        assert says in response.json()["error"]["fields"]["url"][0]
    assert Webhook.objects.get(pk=kept).url == "http://127.0.0.1/ok"
    assert not Webhook.objects.filter(url=url).exists()


def test_webhooks_are_listed_with_their_last_delivery_in_one_query(project, manager):
    client = client_for(manager)
    url = f"/api/projects/{project.pk}/webhooks/"
    hooks = [
        Webhook.objects.create(project=project, url=f"http://127.0.0.1/{i}", secret="x" * 20)
        for i in range(3)
    ]
    at = timezone.now() - timedelta(minutes=5)
    for status, attempted in (("failed", at), ("succeeded", at + timedelta(minutes=1))):
        WebhookDelivery.objects.create(
            webhook=hooks[0], event="report.created", payload={}, status=status,
            last_attempt_at=attempted,
        )  # fmt: skip
    WebhookDelivery.objects.create(webhook=hooks[1], event="report.created", payload={})
    with CaptureQueriesContext(connection) as queries:
        rows = client.get(url).json()["results"]
    first = rows[0]["last_delivery"]
    assert first == {"status": "succeeded", "at": iso(at + timedelta(minutes=1))}
    second = WebhookDelivery.objects.get(webhook=hooks[1])
    assert rows[1]["last_delivery"] == {"status": "pending", "at": iso(second.created_at)}
    assert rows[2]["last_delivery"] is None
    assert client.get(f"{url}{hooks[0].pk}/").json()["last_delivery"] == first
    for i in range(3, 6):
        Webhook.objects.create(project=project, url=f"http://127.0.0.1/{i}", secret="x" * 20)
    with CaptureQueriesContext(connection) as more:
        assert client.get(url).json()["count"] == 6
    assert len(more) == len(queries)  # not one more query per webhook


def test_webhook_of_another_project_is_404(trained, hook, other_project, settings):
    other_manager = other_project.owner
    response = client_for(other_manager).get(
        f"/api/projects/{other_project.pk}/webhooks/{hook.pk}/"
    )
    assert response.status_code == 404


def test_events_stream_says_hello(trained, manager, short_streams):
    response = client_for(manager).get(
        f"/api/projects/{trained.pk}/events/", HTTP_ACCEPT="text/event-stream"
    )
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/event-stream")
    text = b"".join(response.streaming_content).decode()
    assert text.startswith("retry: 2000\n\n")
    assert 'event: hello\ndata: {"version": 1}' in text


def test_report_without_an_evaluation_set(manager, db):
    project = make_project(owner=manager, name="No eval", window_size=3, tags_per_task=None)
    import_corpus(project, manager, toy_sentences(40), evaluation_fraction=0.0)
    crowd = add_annotators(project, 2)
    answer_tasks(project, crowd, 30)
    retrain(project)
    report = client_for(manager).get(f"/api/projects/{project.pk}/reports/latest/").json()
    assert report["tags"] == ["NOUN", "VERB", "DET", "ADJ"]
    assert report["accuracy"] is None and report["evaluation"] is None
    assert report["per_tag"] == [] and report["confusion"] is None
    assert report["count_consistency"] is None  # fewer than 50 observations: none held out
    assert report["learning_curve"][0]["accuracy"] is None


def test_predict_and_export_give_the_core_models_tags(trained, manager):
    """The API and the CoNLL-U export tag each sentence whole, exactly as the core does."""
    from learning import adapter, selectors

    version = selectors.current_version(project_id=trained.pk)
    tagger = adapter.model_load(version.file.name)
    assert tagger.kind == "context"
    sentences = list(trained.sentences.order_by("position").values_list("tokens", flat=True))
    expected = tagger.predict(sentences)
    client = client_for(manager)
    for tokens, tags in list(zip(sentences, expected, strict=True))[:10]:
        body = client.post(
            f"/api/projects/{trained.pk}/predict/", {"text": " ".join(tokens)}, format="json"
        ).json()
        assert body["tags"] == tags
    response = client.get(f"/api/projects/{trained.pk}/exports/predictions.conllu")
    text = b"".join(response.streaming_content).decode()
    exported = [
        [line.split("\t")[3] for line in block.splitlines() if not line.startswith("#")]
        for block in text.split("\n\n")
        if block.strip()
    ]
    assert exported == expected


def test_predict_tokenizes_as_the_import_does(trained, manager):
    """Issue 17: "back!" was one token (tagged PUNCT) and "can't" stayed whole."""
    url = f"/api/projects/{trained.pk}/predict/"
    body = client_for(manager).post(url, {"text": "the dog can't run. a cat runs!"}).json()
    assert body["tokens"] == ["the", "dog", "ca", "n't", "run", ".", "a", "cat", "runs", "!"]
    assert body["sentences"] == [[0, 6], [6, 10]]
    assert len(body["tags"]) == len(body["probabilities"]) == 10
    # Each sentence is tagged whole, as when it is posted alone.
    alone = client_for(manager).post(url, {"text": "a cat runs!"}).json()
    assert alone["probabilities"] == body["probabilities"][6:]


def test_deleting_a_project_deletes_its_model_files(
    trained, manager, django_capture_on_commit_callbacks
):
    from django.core.files.storage import default_storage

    name = ModelVersion.objects.get(project=trained).file.name
    assert default_storage.exists(name)
    with django_capture_on_commit_callbacks(execute=True):
        response = client_for(manager).delete(f"/api/projects/{trained.pk}/")
    assert response.status_code == 204
    assert not default_storage.exists(name)
    assert not ModelVersion.objects.filter(project_id=trained.pk).exists()


def _conllu(sentences) -> str:
    """The toy sentences as CoNLL-U with comments, ids and a multiword token in each."""
    blocks = []
    for i, (tokens, tags) in enumerate(sentences):
        lines = [f"# sent_id = toy-{i:03d}", f"# text = {' '.join(tokens)}", "# note = kept"]
        lines.append(f"1-2\t{tokens[0]}{tokens[1]}\t_\t_\t_\t_\t_\t_\t_\t_")
        for j, (token, tag) in enumerate(zip(tokens, tags, strict=True), start=1):
            lines.append(f"{j}\t{token}\t{token}\t{tag}\tX{tag}\tA=B\t0\tdep\t_\tSpaceAfter=No")
        blocks.append("\n".join(lines) + "\n\n")
    return "".join(blocks)


def test_predictions_of_a_conllu_corpus_diff_against_its_source_line_by_line(manager):
    """Issue 17: exports replaced sent_ids, dropped multiword tokens and rebuilt `# text`."""
    import io

    from annotation import services as annotation_services
    from tests.support.crowd import answer_tasks

    project = make_project(owner=manager, name="C", window_size=3, tags_per_task=None)
    source = _conllu(toy_sentences(80))
    annotation_services.corpus_import(
        project=project, user=manager, file=io.BytesIO(source.encode()), format="conllu",
        evaluation_fraction=0.25, max_bytes=10**7, seed=1,
    )  # fmt: skip
    answer_tasks(project, add_annotators(project, 3), 80)
    retrain(project)
    client = client_for(manager)
    url = f"/api/projects/{project.pk}/exports/predictions.conllu"
    predicted = b"".join(client.get(url).streaming_content).decode()
    old, new = source.splitlines(), predicted.splitlines()
    assert len(new) == len(old)
    changed = 0
    for before, after in zip(old, new, strict=True):
        if before.partition("\t")[0].isdigit():
            b, a = before.split("\t"), after.split("\t")
            assert a[3] in {"NOUN", "VERB", "DET", "ADJ"}
            assert b[:3] + b[4:] == a[:3] + a[4:]
            changed += b[3] != a[3]
        else:
            assert after == before
    assert changed < 20  # a few tags differ, every other character is the source's
    with_misc = b"".join(client.get(url + "?misc=1").streaming_content).decode().splitlines()
    assert with_misc[4].split("\t")[9].startswith("SpaceAfter=No|Prob=")


def test_predict_of_ten_thousand_exclamation_marks_is_quick(trained, annotator):
    """Issue 24 item 2: 10,000 `!` took 29 s (spaCy is quadratic in a run of symbols) and made
    every other member's requests wait."""
    import time

    client = client_for(trained.owner)
    url = f"/api/projects/{trained.pk}/predict/"
    assert client.post(url, {"text": "the dog runs"}, format="json").status_code == 200
    tic = time.perf_counter()
    response = client.post(url, {"text": "!" * 10_000}, format="json")
    seconds = time.perf_counter() - tic
    assert response.status_code == 200 and response.json()["tokens"] == ["!" * 10_000]
    assert seconds <= 0.5, seconds


def test_predict_is_rate_limited_per_user(trained, annotator, crowd):
    """Issue 24 item 2: `predict/` is open to every member and had no limit. 30 a minute per
    user (`TALLY_PREDICT_RATE`); another member is not held by it."""
    trained.annotators_may_predict = True
    trained.save()
    url = f"/api/projects/{trained.pk}/predict/"
    client = client_for(annotator)
    statuses = [client.post(url, {"text": "the dog"}, format="json").status_code for _ in range(30)]
    assert statuses == [200] * 30
    refused = client.post(url, {"text": "the dog"}, format="json")
    assert refused.status_code == 429, refused.content
    assert refused.json()["error"]["code"] == "throttled"
    assert int(refused["Retry-After"]) > 0
    other = client_for(crowd[1]).post(url, {"text": "the dog"}, format="json")
    assert other.status_code == 200


def test_predict_when_nltk_gives_up_is_no_500(trained, annotator, monkeypatch):
    """NLTK's regular expressions run under a time limit; its `TimeoutError` answered a 500."""
    import nltk.redos

    monkeypatch.setattr(nltk.redos, "DEFAULT_TIMEOUT", 1e-9)
    url = f"/api/projects/{trained.pk}/predict/"
    response = client_for(trained.owner).post(
        url, {"text": "The dog runs. It barks."}, format="json"
    )
    assert response.status_code == 400, response.content
    assert "too long to cut into sentences" in response.json()["error"]["message"]


def test_annotators_tag_text_only_where_managers_let_them_and_never_their_tasks(
    trained, annotator, manager
):
    """Regression (issue 44, item 2): any member could post a task's words to `predict/` and
    read the model's answer to it; reliability judged against the model then called a script
    that answers as the model would reliable."""
    url = f"/api/projects/{trained.pk}/predict/"
    task_text = " ".join(Sentence.objects.filter(project=trained, split="train").first().tokens)
    mine = client_for(annotator)
    refused = mine.post(url, {"text": "a river of small books"}, format="json")
    assert refused.status_code == 403, refused.content
    assert refused.json()["error"]["code"] == "permission_denied"
    assert "annotators_may_predict" in refused.json()["error"]["message"]
    assert client_for(manager).post(url, {"text": task_text}, format="json").status_code == 200
    # A manager opts in: annotators may tag text, but not the project's own sentences.
    project_url = f"/api/projects/{trained.pk}/"
    opted = client_for(manager).patch(project_url, {"annotators_may_predict": True}, format="json")
    assert opted.status_code == 200 and opted.json()["annotators_may_predict"] is True
    assert mine.post(url, {"text": "a river of small books"}, format="json").status_code == 200
    words = task_text.split()
    for text in (task_text, " ".join(words[:3]).upper(), f"Look: {' '.join(words[-3:])}!"):
        response = mine.post(url, {"text": text}, format="json")
        assert response.status_code == 403, text
        assert "own sentences" in response.json()["error"]["message"]
