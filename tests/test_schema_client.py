"""A client generated from `/api/schema/` by openapi-python-client runs a manager's whole flow and
an annotator's cycle against a live server, as it comes out of the generator (issue 24).

Before, the generated package had modules that failed on import (operations documented with
three request content types), uploads typed as URLs, the multipart project form as flat fields,
untyped bodies, lists without `limit`/`offset`, and exports as `application/octet-stream`.
"""

import gzip
import importlib
import io
import json
import subprocess
import sys
import uuid
from pathlib import Path

import httpx
import pytest

from tests.conftest import REQUIRE_SERVICES
from tests.support.servers import ROOT, gunicorn_scratch

pytestmark = pytest.mark.slow

EWT_DEV = ROOT / "data/ud-english-ewt/en_ewt-ud-dev.conllu.gz"
PACKAGE = "tally_client"


def _generator() -> list[str]:
    """The openapi-python-client command; a clear failure in CI's full mode when it is missing."""
    try:
        importlib.import_module("openapi_python_client")
    except ImportError:
        message = (
            "needs openapi-python-client to generate the client: "
            "pip install -e '.[dev]' (or pip install openapi-python-client)"
        )
        if REQUIRE_SERVICES:
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    command = Path(sys.executable).with_name("openapi-python-client")
    return [str(command)]


def _conllu_sentences(n: int, skip: int = 0) -> tuple[bytes, dict[tuple[str, ...], list[str]]]:
    """The first `n` sentences of EWT dev after `skip`, as CoNLL-U bytes, and their UPOS tags
    by their words (what an annotator who is always right would count)."""
    blocks = gzip.decompress(EWT_DEV.read_bytes()).decode().split("\n\n")[skip : skip + n]
    gold = {}
    for block in blocks:
        rows = [line.split("\t") for line in block.splitlines() if line and line[0].isdigit()]
        rows = [row for row in rows if row[0].isdigit()]  # no multiword or empty nodes
        gold[tuple(row[1] for row in rows)] = [row[3] for row in rows]
    return ("\n\n".join(blocks) + "\n\n").encode(), gold


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    """gunicorn serving a scratch SQLite platform whose Celery tasks run in the web process (a
    retrain is done when its request has been answered)."""
    tmp = tmp_path_factory.mktemp("schema-client")
    with gunicorn_scratch(tmp, CELERY_TASK_ALWAYS_EAGER="1") as (url, _):
        yield url


@pytest.fixture(scope="module")
def client_package(live, tmp_path_factory):
    """The client package generated from the live server's schema, imported."""
    command = _generator()
    out = tmp_path_factory.mktemp("generated")
    schema = out / "schema.json"
    schema.write_bytes(httpx.get(f"{live}/api/schema/?format=json").raise_for_status().content)
    done = subprocess.run(
        [*command, "generate", "--path", str(schema), "--output-path", str(out / PACKAGE),
         "--meta", "none"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    sys.path.insert(0, str(out))
    try:
        # Every module, as a user's code would import it: none may fail.
        modules = {}
        for path in sorted((out / PACKAGE).rglob("*.py")):
            name = ".".join(path.relative_to(out).with_suffix("").parts)
            modules[name.removesuffix(".__init__")] = importlib.import_module(
                name.removesuffix(".__init__")
            )
        yield modules
    finally:
        sys.path.remove(str(out))
        for name in [name for name in sys.modules if name.split(".")[0] == PACKAGE]:
            del sys.modules[name]


def _op(modules, name: str):
    tag = {"auth": "auth", "join": "join", "observations": "observations", "ping": "ping"}.get(
        name.split("_")[0], "projects"
    )
    return modules[f"{PACKAGE}.api.{tag}.{name}"]


def test_every_generated_module_imports(client_package):
    operations = [name for name in client_package if ".api." in name and name.count(".") == 3]
    assert len(operations) >= 40, operations
    assert f"{PACKAGE}.api.projects.projects_create_with_corpus" in client_package
    # Lists are lists, paged by limit and offset.
    assert f"{PACKAGE}.api.projects.projects_sentences_list" in client_package
    assert not [name for name in operations if name.endswith("_list_retrieve")]


def test_a_manager_and_an_annotator_run_their_flows_with_the_generated_client(live, client_package):
    m = client_package
    models = m[f"{PACKAGE}.models"]
    types = m[f"{PACKAGE}.types"]
    Client = m[f"{PACKAGE}.client"].Client
    AuthenticatedClient = m[f"{PACKAGE}.client"].AuthenticatedClient
    anonymous = Client(base_url=live)

    assert _op(m, "ping_retrieve").sync(client=anonymous).ok is True

    def register(username):
        body = models.CredentialsRequest(username=username, password="correct horse 42")
        out = _op(m, "auth_register_create").sync(client=anonymous, body=body)
        assert isinstance(out, models.TokenOut), out
        return AuthenticatedClient(base_url=live, token=out.token, prefix="Token")

    manager = register(f"manager-{uuid.uuid4().hex[:8]}")
    annotator = register(f"annotator-{uuid.uuid4().hex[:8]}")

    # The manager creates a project with its corpus in one request (multipart, settings as JSON).
    corpus, gold = _conllu_sentences(40)
    created = _op(m, "projects_create_with_corpus").sync(
        client=manager,
        body=models.ProjectWithCorpusRequest(
            project=models.ProjectWriteRequest(
                name="Generated client", tag_preset=models.TagPresetEnum("ud_upos"), window_size=4
            ),
            file=types.File(payload=io.BytesIO(corpus), file_name="dev.conllu"),
            format_=models.FormatEnum("conllu"),
            evaluation_fraction=0.25,
        ),
    )
    # The project with its corpus's import (a small corpus is imported at once: 201).
    assert isinstance(created, models.ProjectWithImportOut), created
    assert created.role == models.RoleEnum("manager") and len(created.tags) == 17
    assert created.import_.sentences == 40
    project_id = created.id

    # … adds sentences, and lists them a page at a time.
    more, more_gold = _conllu_sentences(20, skip=40)
    gold |= more_gold
    imported = _op(m, "projects_corpus_create").sync_detailed(
        client=manager,
        project_id=project_id,
        body=models.CorpusUploadRequest(
            file=types.File(payload=io.BytesIO(more), file_name="more.conllu"),
            format_=models.FormatEnum("conllu"),
        ),
    )
    assert imported.status_code == 201 and imported.parsed.sentences == 20, imported.content
    page = _op(m, "projects_sentences_list").sync(
        client=manager, project_id=project_id, limit=7, offset=50
    )
    assert page.count == 60 and len(page.results) == 7 and page.results[0].position == 50

    # A bad request comes back as the typed error body.
    refused = _op(m, "projects_retrain_schedule_update").sync_detailed(
        client=manager,
        project_id=project_id,
        body=models.ScheduleWriteRequest(interval_minutes=0),
    )
    assert refused.status_code == 400
    assert refused.parsed.error.code == "invalid"
    assert "interval_minutes" in refused.parsed.error.fields.additional_properties
    schedule = _op(m, "projects_retrain_schedule_update").sync(
        client=manager,
        project_id=project_id,
        body=models.ScheduleWriteRequest(interval_minutes=30, enabled=True),
    )
    assert (schedule.interval_minutes, schedule.enabled) == (30, True)

    # The annotator joins with the invite code and answers tasks: next task, submit, again.
    joined = _op(m, "join_create").sync_detailed(
        client=annotator, body=models.JoinRequest(code=created.invite_code)
    )
    assert joined.status_code == 201 and joined.parsed.role == models.RoleEnum("annotator")
    answered = 0
    for number in range(60):
        task = _op(m, "projects_tasks_next_create").sync(client=annotator, project_id=project_id)
        if task is None:
            break
        assert isinstance(task, models.TaskOut), task
        window = gold[tuple(task.tokens)][task.window.start :][: task.window.length]
        counts = models.CountAnswerRequestCounts.from_dict(
            {tag.name: window.count(tag.name) for tag in task.tags}
        )
        stored = _op(m, "observations_create").sync_detailed(
            client=annotator,
            body=models.CountAnswerRequest(
                assignment=task.assignment,
                counts=counts,
                idempotency_key=f"answer-{number}",
                seconds_on_device=3.5,
            ),
        )
        assert stored.status_code == 201, stored.content
        assert stored.parsed.counts.additional_properties == counts.additional_properties
        answered += 1
    assert answered >= 30
    mine = _op(m, "projects_stats_me_retrieve").sync(client=annotator, project_id=project_id)
    assert mine.observations == answered

    # The manager retrains (the job runs in the web process here), reads the report, exports.
    retrain = _op(m, "projects_retrain_create").sync_detailed(client=manager, project_id=project_id)
    assert retrain.status_code == 202 and retrain.parsed.queued is True, retrain.content
    status = _op(m, "projects_retrain_status_retrieve").sync(client=manager, project_id=project_id)
    assert status.current_version == 1, status
    report = _op(m, "projects_reports_latest_retrieve").sync(client=manager, project_id=project_id)
    assert isinstance(report, models.ReportOut), report
    assert report.version == 1 and report.observations == answered and 0 < report.accuracy <= 1
    versions = _op(m, "projects_models_list").sync(client=manager, project_id=project_id)
    assert [v.version for v in versions.results] == [1] and versions.results[0].current
    stats = _op(m, "projects_stats_retrieve").sync(client=manager, project_id=project_id)
    assert stats.observations == answered

    conllu = _op(m, "projects_exports_corpus_conllu_retrieve").sync(
        client=manager, project_id=project_id
    )
    assert conllu.count("\n\n") == 60 and conllu.startswith("# ")
    predicted = _op(m, "projects_exports_predictions_conllu_retrieve").sync(
        client=manager, project_id=project_id
    )
    assert predicted.count("\n\n") == 60
    csv = _op(m, "projects_exports_observations_csv_retrieve").sync(
        client=manager, project_id=project_id
    )
    assert len(csv.strip().splitlines()) == answered + 1
    jsonl = _op(m, "projects_exports_observations_jsonl_retrieve").sync_detailed(
        client=manager, project_id=project_id
    )
    assert jsonl.status_code == 200
    assert [json.loads(line)["kind"] for line in jsonl.content.splitlines()] == ["count"] * answered
    model = _op(m, "projects_models_download_retrieve").sync(
        client=manager, project_id=project_id, number=1
    )
    assert model.payload.read(2) == b"PK"  # an .npz is a zip file
