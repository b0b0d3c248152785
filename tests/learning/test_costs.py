"""A project's cost matrix: its API (every error a 400 naming the cell or the tag), re-scoring
the versions' cost reports without a retrain, and loss-aware predictions everywhere."""

import io
import re
from datetime import timedelta

import numpy as np
import pytest
from django.core.files.storage import default_storage
from django.utils import timezone

from learning import adapter, costs, selectors, services
from learning.core.cost import cost_matrix_preset
from learning.core.modelfile import load_tagger
from learning.core.report import cost_evaluation
from learning.models import CostMatrix, CostReport, ModelVersion
from tests.support.crowd import answer_tasks
from tests.support.factories import client_for

pytestmark = pytest.mark.django_db

TAGS = ["NOUN", "VERB", "DET", "ADJ"]


@pytest.fixture
def trained(project, crowd):
    answer_tasks(project, crowd, 80)
    services.retrain_run(project_id=project.pk, trigger="manual")
    return project


def url(project, tail=""):
    return f"/api/projects/{project.pk}/cost-matrix/{tail}"


def test_the_default_is_zero_one_and_a_preset_is_saved(project, manager):
    client = client_for(manager)
    body = client.get(url(project)).json()
    assert body["tags"] == TAGS and body["preset"] == "zero-one" and body["revision"] == 0
    np.testing.assert_array_equal(body["matrix"], 1 - np.eye(4))
    assert body["presets"] == ["zero-one", "near-classes", "ordinal"]
    body = client.put(url(project), {"preset": "ordinal"}, format="json").json()
    assert body["preset"] == "ordinal" and body["revision"] == 1
    np.testing.assert_allclose(body["matrix"], cost_matrix_preset("ordinal", TAGS))
    mine = [[0, 1, 2, 3], [1, 0, 1, 2], [2, 1, 0, 1], [0.5, 2, 1, 0]]
    body = client.put(url(project), {"matrix": mine}, format="json").json()
    assert body["preset"] == "" and body["revision"] == 2 and body["matrix"] == mine
    # Rows and columns in the client's own order are put in the project's.
    order = ["ADJ", "NOUN", "VERB", "DET"]
    shuffled = [[mine[TAGS.index(a)][TAGS.index(b)] for b in order] for a in order]
    body = client.put(url(project), {"matrix": shuffled, "tags": order}, format="json").json()
    assert body["matrix"] == mine and body["tags"] == TAGS


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ({"matrix": [[0, 1], [1, 0]]}, "matrix", "must be 4 × 4"),
        ({"matrix": [[0, 1, 1, 1]] * 3 + [[1, 1, 1]]}, "matrix", "must be 4 × 4"),
        ({"matrix": "0,1"}, "matrix", "must be 4 × 4"),
        (
            {"matrix": [[0, 1, 1, 1], [1, 0, -2, 1], [1, 1, 0, 1], [1, 1, 1, 0]]},
            "matrix",
            r"Cell \(true VERB, predicted DET\) is negative",
        ),
        (
            {"matrix": [[0, 1, 1, 1], [1, 0, 1, 1], [1, "x", 0, 1], [1, 1, 1, 0]]},
            "matrix",
            r"Cell \(true DET, predicted VERB\) is not a number: 'x'",
        ),
        (
            {"matrix": [[0, 1, 1, 1], [1, 0, 1, 1], [1, 1, 0, 1], [1, 1, True, 0]]},
            "matrix",
            r"Cell \(true ADJ, predicted DET\) is not a number: True",
        ),
        (
            {"matrix": [[0, 1, 1, 1], [1, 0, 1, 1], [1, 1, 0, 1], [1, 1, 1, 0.5]]},
            "matrix",
            r"Cell \(true ADJ, predicted ADJ\) must be 0",
        ),
        (
            {"matrix": [[0] * 4] * 4, "tags": ["NOUN", "VERB", "DET", "ADV"]},
            "tags",
            "Unknown tag 'ADV'",
        ),
        ({"matrix": [[0] * 4] * 4, "tags": ["NOUN", "VERB", "DET"]}, "tags", "once: ADJ"),
        ({"preset": "hamming"}, "preset", "not a valid choice"),
        ({}, "matrix", "required"),
    ],
)
def test_a_wrong_matrix_is_a_400_naming_what_is_wrong(project, manager, body, field, message):
    response = client_for(manager).put(url(project), body, format="json")
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert field in error["fields"]
    assert any(re.search(message, m) for m in error["fields"][field]), error
    assert not CostMatrix.objects.filter(project=project).exists()


def test_csv_export_and_import(project, manager):
    client = client_for(manager)
    client.put(url(project), {"preset": "near-classes"}, format="json")
    response = client.get(url(project, "csv"))
    assert response["Content-Type"].startswith("text/csv")
    text = response.content.decode()
    assert text.splitlines()[0] == "true \\ predicted,NOUN,VERB,DET,ADJ"
    changed = text.replace("DET,1,1,0,1", "DET,1,3,0,1")
    response = client.put(url(project, "csv"), {"file": io.BytesIO(changed.encode())})
    assert response.status_code == 200, response.content
    assert response.json()["matrix"][2] == [1, 3, 0, 1] and response.json()["revision"] == 2
    for bad, message in [
        (changed.replace("DET,1,3,0,1", "DET,1,three,0,1"), "(true DET, predicted VERB) is not"),
        (changed.replace("ADJ,", "ADV,"), "Unknown tag 'ADV'"),
        (changed.replace("DET,1,3,0,1", "DET,1,3,2,1"), "(true DET, predicted DET) must be 0"),
        ("\xff\xfe".encode("latin-1").decode("latin-1"), "not UTF-8"),
    ]:
        payload = bad.encode("latin-1") if bad.startswith("\xff") else bad.encode()
        response = client.put(url(project, "csv"), {"file": io.BytesIO(payload)})
        assert response.status_code == 400
        assert message in response.json()["error"]["fields"]["file"][0], response.json()


def test_rescored_reports_equal_a_fresh_computation(trained, crowd):
    answer_tasks(trained, crowd, 20, seed=3)
    services.retrain_run(project_id=trained.pk, trigger="manual")
    versions = list(ModelVersion.objects.filter(project=trained).order_by("number"))
    assert len(versions) == 2
    first = CostReport.objects.get(version=versions[0])
    assert first.revision == 0 and first.cost_per_token == pytest.approx(1 - first.accuracy)
    mine = np.array([[0, 0.1, 4, 4], [2, 0, 4, 4], [3, 3, 0, 0.2], [1, 1, 0.2, 0]])
    costs.cost_matrix_set(project_id=trained.pk, matrix=mine)
    assert costs.cost_reports_rescore(project_id=trained.pk) == 2
    sentences, tags = adapter.evaluation_gold(project_id=trained.pk)
    assert sentences
    for version in versions:
        stored = costs.cost_report_of(version=version)
        fresh = cost_evaluation(adapter.model_load(version.file.name), sentences, tags, mine)
        assert stored["revision"] == 1
        assert stored["cost_share"] == pytest.approx(fresh.pop("cost_share"))
        for key, value in fresh.items():
            np.testing.assert_allclose(stored[key], value)
    assert costs.cost_reports_rescore(project_id=trained.pk) == 0  # nothing new to do
    # The report and the learning curve say it in the manager's currency.
    client = client_for(trained.owner)
    report = client.get(f"/api/projects/{trained.pk}/reports/latest/").json()
    assert report["cost"]["revision"] == 1
    assert set(report["cost"]["cost_share"]) == set(TAGS)
    curve = report["learning_curve"]
    assert [p["cost_per_token"] for p in curve] == [
        costs.cost_report_of(version=v)["cost_per_token"] for v in versions
    ]


def test_a_changed_matrix_makes_a_retrain_due_whose_file_carries_it(trained):
    outcome = services.retrain_run(project_id=trained.pk, trigger="manual")
    assert outcome.status == "skipped"  # nothing new
    costs.cost_matrix_set(project_id=trained.pk, preset="ordinal")
    outcome = services.retrain_run(project_id=trained.pk, trigger="manual")
    assert outcome.status == "succeeded"
    version = outcome.version
    assert version.hyperparameters["cost_revision"] == 1
    assert version.hyperparameters["calibration"]["temperature"] > 0
    assert CostReport.objects.get(version=version).revision == 1

    with default_storage.open(version.file.name, "rb") as handle:
        _, metadata = load_tagger(io.BytesIO(handle.read()))
    assert metadata["cost_matrix"]["preset"] == "ordinal"
    np.testing.assert_allclose(
        metadata["cost_matrix"]["matrix"], cost_matrix_preset("ordinal", TAGS)
    )


def test_a_change_whose_messages_were_lost_is_caught_up_by_the_sweep(trained, eager):
    """The re-scoring and the retrain a change queues are lost if the broker is down then; the
    sweep finds the project behind its matrix and queues both (after the change's grace, and
    the project's retrain interval)."""
    from learning import tasks

    # In a test's transaction the change's on-commit messages are never sent: as if lost.
    costs.cost_matrix_set(project_id=trained.pk, preset="ordinal")
    now = timezone.now()
    assert costs.projects_behind_their_matrix(now=now) == {}  # its messages may be on the way
    CostMatrix.objects.filter(project=trained).update(updated_at=now - timedelta(minutes=3))
    assert costs.projects_behind_their_matrix(now=now) == {trained.pk: True}
    assert tasks.retrain_sweep()["queued"] == []  # retrained just now: not before its interval
    ModelVersion.objects.filter(project=trained).update(created_at=now - timedelta(minutes=11))
    swept = tasks.retrain_sweep()
    assert swept["queued"] == [trained.pk] and swept["rescored"] == [trained.pk]
    version = selectors.current_version(project_id=trained.pk)
    assert version.number == 2 and version.hyperparameters["cost_revision"] == 1
    reports = CostReport.objects.filter(version__project=trained)
    assert sorted(reports.values_list("version__number", "revision")) == [(1, 1), (2, 1)]
    assert costs.projects_behind_their_matrix(now=now) == {}
    # A matrix saved for other tag names no longer applies: nothing to catch up with.
    CostMatrix.objects.filter(project=trained).update(
        tags=["A", "B", "C", "D"], revision=2, updated_at=now - timedelta(minutes=3)
    )
    assert costs.projects_behind_their_matrix(now=now) == {}


def test_predictions_and_exports_are_the_decisions_of_least_cost(trained, manager):
    """A matrix where ADJ costs nothing whatever the truth: every tag returned is ADJ."""
    client = client_for(manager)
    free_adj = [[0, 1, 1, 0], [1, 0, 1, 0], [1, 1, 0, 0], [1, 1, 1, 0]]
    before = client.post(
        f"/api/projects/{trained.pk}/predict/", {"text": "the dog runs"}, format="json"
    ).json()
    assert set(before["tags"]) != {"ADJ"}
    client.put(url(trained), {"matrix": free_adj}, format="json")
    after = client.post(
        f"/api/projects/{trained.pk}/predict/", {"text": "the dog runs"}, format="json"
    ).json()
    assert set(after["tags"]) == {"ADJ"}
    version = selectors.current_version(project_id=trained.pk)
    tags, _, _ = selectors.predict_sentences(version=version, sentences=[["a", "cat"]])
    assert tags == ["ADJ", "ADJ"]
    export = b"".join(
        client.get(f"/api/projects/{trained.pk}/exports/predictions.conllu").streaming_content
    ).decode()
    words = [line.split("\t") for line in export.splitlines() if line[:1].isdigit()]
    assert words and {w[3] for w in words} == {"ADJ"}
