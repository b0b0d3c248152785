"""A project's cost matrix: its API (every error a 400 naming the cell or the tag), re-scoring
the versions' cost reports without a retrain (a change queues nothing else), its one home (the
database; a model file carries it only when exported), and loss-aware predictions everywhere,
the matrix read once per revision."""

import io
import re
from datetime import timedelta
from unittest.mock import patch

import numpy as np
import pytest
from django.core.files.storage import default_storage
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from learning import adapter, costs, selectors, services
from learning.core.cost import cost_matrix_preset
from learning.core.modelfile import load_tagger
from learning.core.report import cost_evaluation
from learning.core.tag import model_cost_matrix
from learning.models import CostMatrix, CostReport, ModelVersion, RetrainRun
from tests.support.crowd import answer_tasks
from tests.support.factories import client_for

pytestmark = pytest.mark.django_db

TAGS = ["NOUN", "VERB", "DET", "ADJ"]


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


def test_a_put_reads_the_tags_once_and_checks_the_matrix_once(project, manager, monkeypatch):
    """Issue 43.3: a PUT checked the matrix twice and read the tag set three times."""
    from learning.core import cost

    checks = []
    check = cost.check_cost_matrix
    monkeypatch.setattr(cost, "check_cost_matrix", lambda *a: checks.append(1) or check(*a))
    client = client_for(manager)
    mine = [[0, 1, 2, 3], [1, 0, 1, 2], [2, 1, 0, 1], [0.5, 2, 1, 0]]
    csv_text = "t,NOUN,VERB,DET,ADJ\n" + "".join(
        f"{tag},{','.join(map(str, row))}\n" for tag, row in zip(TAGS, mine, strict=True)
    )
    for path, body in [
        (url(project), {"json": {"matrix": mine}}),
        (url(project, "csv"), {"data": {"file": io.BytesIO(csv_text.encode())}}),
    ]:
        checks.clear()
        with CaptureQueriesContext(connection) as captured:
            if "json" in body:
                response = client.put(path, body["json"], format="json")
            else:
                response = client.put(path, body["data"])
        assert response.status_code == 200 and response.json()["matrix"] == mine
        queries = [query["sql"] for query in captured.captured_queries]
        assert len(_reads(queries, "annotation_tag")) == 1 and len(checks) == 1


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


@pytest.fixture
def queued(monkeypatch):
    """The names of the tasks queued (each still runs: `eager` runs them at once)."""
    from celery.app.task import Task

    names = []
    apply_async = Task.apply_async

    def record(self, *args, **kwargs):
        names.append(self.name)
        return apply_async(self, *args, **kwargs)

    monkeypatch.setattr(Task, "apply_async", record)
    return names


def test_a_matrix_change_rescores_every_report_and_queues_no_retrain(
    trained, crowd, manager, eager, queued, django_capture_on_commit_callbacks
):
    """Issue 43.3: the fit never reads the matrix; a change used to queue a full retrain too
    (and the sweep another, to catch a lost one)."""
    answer_tasks(trained, crowd, 20, seed=3)
    services.retrain_run(project_id=trained.pk, trigger="manual")
    runs = RetrainRun.objects.filter(project=trained).count()
    client = client_for(manager)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.put(url(trained), {"preset": "ordinal"}, format="json")
    assert response.status_code == 200 and response.json()["revision"] == 1
    assert queued == ["learning.cost_reports_rescore"]
    reports = CostReport.objects.filter(version__project=trained)
    assert sorted(reports.values_list("version__number", "revision")) == [(1, 1), (2, 1)]
    assert RetrainRun.objects.filter(project=trained).count() == runs
    assert ModelVersion.objects.filter(project=trained).count() == 2
    # A CSV upload alike; and the sweep, minutes later, finds nothing to catch up with.
    csv_text = client.get(url(trained, "csv")).content.decode().replace("0.", "1.")
    with django_capture_on_commit_callbacks(execute=True):
        response = client.put(url(trained, "csv"), {"file": io.BytesIO(csv_text.encode())})
    assert response.status_code == 200 and response.json()["revision"] == 2
    assert queued == ["learning.cost_reports_rescore"] * 2
    assert set(reports.values_list("revision", flat=True)) == {2}
    later = timezone.now() + timedelta(minutes=30)
    ModelVersion.objects.filter(project=trained).update(created_at=later - timedelta(hours=1))
    from learning import tasks

    with patch.object(timezone, "now", return_value=later):
        assert tasks.retrain_sweep() == {"queued": [], "rescored": [], "redelivered": []}
    assert queued == ["learning.cost_reports_rescore"] * 2
    # Nothing new to learn from: a retrain asked now has nothing to do, matrix or not.
    assert services.retrain_run(project_id=trained.pk, trigger="manual").status == "skipped"


def test_a_model_file_carries_a_matrix_only_when_exported(trained, manager):
    """The stored file has no matrix (the database has it); the file downloaded for the
    command-line tagger carries the project's matrix of the moment, and tags with it."""
    version = selectors.current_version(project_id=trained.pk)
    with default_storage.open(version.file.name, "rb") as handle:
        stored = handle.read()
    assert "cost_matrix" not in load_tagger(io.BytesIO(stored))[1]
    client = client_for(manager)
    free_adj = [[0, 1, 1, 0], [1, 0, 1, 0], [1, 1, 0, 0], [1, 1, 1, 0]]
    client.put(url(trained), {"matrix": free_adj}, format="json")
    download = b"".join(
        client.get(f"/api/projects/{trained.pk}/models/{version.number}/download").streaming_content
    )
    tagger, metadata = load_tagger(io.BytesIO(download))
    assert (
        metadata["cost_matrix"]["matrix"] == free_adj and metadata["cost_matrix"]["revision"] == 1
    )
    assert metadata["version"] == version.number  # the rest of the metadata kept
    np.testing.assert_array_equal(tagger.coef_, adapter.model_load(version.file.name).coef_)
    np.testing.assert_array_equal(model_cost_matrix(tagger, metadata), free_adj)
    with default_storage.open(version.file.name, "rb") as handle:
        assert handle.read() == stored  # the stored file is never rewritten


def test_a_change_whose_rescoring_was_lost_is_caught_up_by_the_sweep(trained, eager, queued):
    """The re-scoring a change queues is lost if the broker is down then; the sweep finds the
    project's reports behind its matrix and queues the re-scoring (after the change's grace),
    and never a retrain."""
    from learning import tasks

    # Saved without the API: as if its message were lost.
    costs.cost_matrix_set(project_id=trained.pk, preset="ordinal")
    now = timezone.now()
    assert costs.projects_behind_their_matrix(now=now) == []  # its message may be on the way
    CostMatrix.objects.filter(project=trained).update(updated_at=now - timedelta(minutes=3))
    assert costs.projects_behind_their_matrix(now=now) == [trained.pk]
    swept = tasks.retrain_sweep()
    assert swept["queued"] == [] and swept["rescored"] == [trained.pk]
    assert queued == ["learning.cost_reports_rescore"]
    reports = CostReport.objects.filter(version__project=trained)
    assert list(reports.values_list("revision", flat=True)) == [1]
    assert costs.projects_behind_their_matrix(now=now) == []
    # A matrix saved for other tag names no longer applies: nothing to catch up with.
    CostMatrix.objects.filter(project=trained).update(
        tags=["A", "B", "C", "D"], revision=2, updated_at=now - timedelta(minutes=3)
    )
    assert costs.projects_behind_their_matrix(now=now) == []


def _queries(client, path, body):
    with CaptureQueriesContext(connection) as captured:
        response = client.post(path, body, format="json")
    assert response.status_code == 200, response.content
    return [query["sql"] for query in captured.captured_queries], response.json()


def _reads(queries, table):
    return [sql for sql in queries if sql.startswith(f'SELECT "{table}"')]


def test_predict_reads_the_matrix_once_per_revision(trained, manager):
    """Issue 43.3: every prediction read the project's tags and its matrix (and the live model
    twice). The matrix's revision comes with the version's row; the matrix is read once per
    revision and process."""
    client = client_for(manager)
    path, body = f"/api/projects/{trained.pk}/predict/", {"text": "the dog runs"}
    _queries(client, path, body)  # the model loaded
    without, _ = _queries(client, path, body)
    client.put(url(trained), {"preset": "ordinal"}, format="json")
    first, _ = _queries(client, path, body)
    assert len(_reads(first, "learning_costmatrix")) == 1  # a new revision: read once
    again, _ = _queries(client, path, body)
    assert len(again) == len(without)
    assert _reads(again, "learning_costmatrix") == _reads(again, "annotation_tag") == []
    assert len(_reads(again, "learning_livemodel")) == 1
    # A change is seen by the next prediction, in every process (the revision is read fresh).
    free_adj = [[0, 1, 1, 0], [1, 0, 1, 0], [1, 1, 0, 0], [1, 1, 1, 0]]
    client.put(url(trained), {"matrix": free_adj}, format="json")
    first, after = _queries(client, path, body)
    assert set(after["tags"]) == {"ADJ"} and len(_reads(first, "learning_costmatrix")) == 1
    again, after = _queries(client, path, body)
    assert set(after["tags"]) == {"ADJ"} and len(again) == len(without)


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
    export = b"".join(
        client.get(f"/api/projects/{trained.pk}/exports/predictions.conllu").streaming_content
    ).decode()
    words = [line.split("\t") for line in export.splitlines() if line[:1].isdigit()]
    assert words and {w[3] for w in words} == {"ADJ"}


HUGE = [[0, 1e308, 1, 1], [1, 0, 1, 1], [1, 1, 0, 1], [1, 1, 1, 0]]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"matrix": HUGE}, r"^Cell \(true NOUN, predicted VERB\) is more than 1,000,000, the most "
         r"a cost may be \(only the ratios between costs matter.*\): 1e\+308\.$"),
        ({"matrix": [[0, 10**400, 1, 1]] + HUGE[1:]}, r"predicted VERB\) is more than 1,000,000"),
        ({"matrix": [[0, -1.0, 1, 1]] + HUGE[1:]}, r"predicted VERB\) is negative: -1\.$"),
        ({"matrix": [[0] * 4] * 4}, r"^Every cost is 0, so every tag would be as good"),
    ],
)  # fmt: skip
def test_extreme_cells_are_refused_in_plain_words(project, manager, body, message):
    """Issue 44.3 and 44.5: cells near 1e308 were accepted (then every retrain failed), a matrix
    of zeros made every decision the first tag, and messages showed `np.float64(-1.0)`."""
    response = client_for(manager).put(url(project), body, format="json")
    assert response.status_code == 400, response.content
    messages = response.json()["error"]["fields"]["matrix"]
    assert re.search(message, messages[0]), messages
    assert "np." not in response.content.decode() and "ErrorDetail" not in response.content.decode()
    assert not CostMatrix.objects.filter(project=project).exists()


def test_a_csv_is_refused_in_plain_words_never_a_500(project, manager):
    """Issue 44.5: a cell over csv's field limit (131,072 characters, the file under the size
    cap) was a 500; a negative cell said `np.float64(-1.0)`; a matrix of zeros was taken."""
    client = client_for(manager)
    header = "t,NOUN,VERB,DET,ADJ\n"
    rows = ["NOUN,0,1,1,1", "VERB,1,0,1,1", "DET,1,1,0,1", "ADJ,1,1,1,0"]
    for text, message in [
        (header + "\n".join(rows[:3] + ["ADJ,1,1,1," + "9" * 140_000]), "Line 5 of the CSV file "
         "has a cell longer than 131,072 characters"),
        (header + "\n".join(["NOUN,0,-1,1,1", *rows[1:]]), "(true NOUN, predicted VERB) is "
         "negative: -1."),
        (header + "\n".join(["NOUN,0,1e308,1,1", *rows[1:]]), "is more than 1,000,000"),
        (header + "\n".join(["NOUN,0,1_0,1,1", *rows[1:]]), "is not a number: '1_0'"),
        (header + "\n".join(f"{r[:r.index(',')]},0,0,0,0" for r in rows), "Every cost is 0"),
    ]:  # fmt: skip
        response = client.put(url(project, "csv"), {"file": io.BytesIO(text.encode())})
        assert response.status_code == 400, response.content[:300]
        assert message in response.json()["error"]["fields"]["file"][0], response.json()
        assert "np." not in response.content.decode()
    assert not CostMatrix.objects.filter(project=project).exists()


@pytest.mark.parametrize("cell", [1e308, 1e6])
def test_a_matrix_of_extreme_cells_keeps_the_project_learning(trained, crowd, cell):
    """Issue 44.3: with cells near 1e308 stored (as the API took them before its bound), every
    retrain failed on the report's NaN; at the bound the figures are finite. Either way the next
    retrain and the re-scoring work."""
    matrix = [[0.0, cell, 1.0, 1.0], [cell, 0.0, 1.0, cell], [1, 1, 0, 1], [cell, cell, cell, 0]]
    CostMatrix.objects.create(project=trained, tags=TAGS, matrix=matrix, preset="")
    answer_tasks(trained, crowd, 20, seed=5)
    outcome = services.retrain_run(project_id=trained.pk, trigger="manual")
    assert outcome.status == "succeeded", outcome.message
    costs.cost_reports_rescore(project_id=trained.pk)
    client = client_for(trained.owner)
    report = client.get(f"/api/projects/{trained.pk}/reports/latest/").json()["cost"]
    assert all(np.isfinite(report[key]) for key in ("cost_per_token", "expected_cost_per_token"))
    assert np.isfinite(report["cost_confusion"]).all()
    if cell <= 1e6:  # usable: the report is in its currency
        assert report["revision"] == 1 and report["cost_per_token"] > 0
    else:  # not usable any more: read as the default until the manager saves another
        assert report["revision"] == 0
        assert client.get(url(trained)).json()["preset"] == "zero-one"


FORMULAS = ['=HYPERLINK("http://x.y","z")', "+1+1", "@SUM(1)", "-2", "NOUN;=1+1"]


def test_the_cost_csv_shows_formula_like_tag_names_as_text(manager):
    """Issue 44.4: the download wrote tag names such as `=HYPERLINK(…)` raw, where the
    observations CSV escapes them; one policy now, and the file reads back as it was."""
    from tests.support.factories import make_project

    project = make_project(owner=manager, tags=[{"name": name} for name in FORMULAS])
    client = client_for(manager)
    client.put(url(project), {"preset": "ordinal"}, format="json")
    text = client.get(url(project, "csv")).content.decode()
    header = next(iter(__import__("csv").reader(io.StringIO(text))))
    assert header[1:] == [
        "'=HYPERLINK(\"http://x.y\",\"z\")", "'+1+1", "'@SUM(1)", "'-2", "NOUN;'=1+1"
    ]  # fmt: skip
    for line in text.splitlines()[1:]:
        assert line[0] not in "=+-@" and ";=" not in line
    response = client.put(url(project, "csv"), {"file": io.BytesIO(text.encode())})
    assert response.status_code == 200, response.content
    assert response.json()["tags"] == FORMULAS and response.json()["preset"] == ""
    np.testing.assert_allclose(response.json()["matrix"], cost_matrix_preset("ordinal", FORMULAS),
                               rtol=1e-5)  # fmt: skip


def test_costs_imports_no_task_module():
    """Issue 43.3: `costs` imported `tasks` inside a function (`tasks` imports `costs`): the
    API view queues the re-scoring, and `costs` has no import below its top."""
    import ast
    from pathlib import Path

    tree = ast.parse(Path(costs.__file__).read_text(encoding="utf-8"))
    imports = [node for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom)]
    assert all(node in tree.body for node in imports)  # none inside a function
    names = {alias.name for node in imports for alias in node.names}
    names |= {node.module for node in imports if isinstance(node, ast.ImportFrom)}
    assert "tasks" not in names and "learning.tasks" not in names
