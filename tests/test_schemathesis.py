"""Schemathesis, every check, as each persona, against a live server: 0 failures (issue 24).

The run is bounded for CI (`TALLY_SCHEMATHESIS_EXAMPLES` examples per operation, 5 by default,
a fixed seed); docs/api.md's *Schemathesis* gives the longer run, which is
this test with more examples. What the checks may not expect of a schema is configured, with the
reason, in tests/schemathesis.toml.
"""

import io
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.conftest import REQUIRE_SERVICES
from tests.support.servers import gunicorn_scratch
from tests.test_schema_client import _conllu_sentences

pytestmark = pytest.mark.slow

CONFIG = Path(__file__).with_name("schemathesis.toml")
EXAMPLES = int(os.environ.get("TALLY_SCHEMATHESIS_EXAMPLES", "5"))
PASSWORD = "correct horse 42"


@dataclass(frozen=True)
class World:
    url: str
    project: int  # the manager's project, which the annotator annotates
    tokens: dict[str, str | None]  # persona -> API token (None: anonymous)


def _schemathesis() -> str:
    try:
        import schemathesis  # noqa: F401
    except ImportError:
        message = "needs schemathesis: pip install -e '.[dev]' (or pip install schemathesis)"
        if REQUIRE_SERVICES:
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return str(Path(sys.executable).with_name("st"))


def build_world(url: str) -> World:
    """A manager's project with a corpus, answers and a model; its annotator; an outsider (an
    annotator of another project), all made through the API."""
    http = httpx.Client(base_url=url, timeout=120)

    def register(username: str) -> dict:
        response = http.post(
            "/api/auth/register/", json={"username": username, "password": PASSWORD}
        )
        assert response.status_code == 201, response.text
        return {"Authorization": f"Token {response.json()['token']}"}

    def project(headers: dict, name: str, sentences: int) -> dict:
        corpus, _ = _conllu_sentences(sentences)
        response = http.post(
            "/api/projects/with-corpus/",
            headers=headers,
            data={"project": f'{{"name": "{name}", "tag_preset": "ud_upos"}}', "format": "conllu",
                  "evaluation_fraction": "0.2"},
            files={"file": ("corpus.conllu", io.BytesIO(corpus), "text/plain")},
        )  # fmt: skip
        assert response.status_code == 201, response.text
        return response.json()

    _, gold = _conllu_sentences(50)
    manager, annotator = register("st-manager"), register("st-annotator")
    other_manager, outsider = register("st-other-manager"), register("st-outsider")
    mine, other = project(manager, "Schemathesis", 50), project(other_manager, "Other", 5)
    for headers, code in ((annotator, mine["invite_code"]), (outsider, other["invite_code"])):
        assert http.post("/api/join/", headers=headers, json={"code": code}).status_code == 201
    for number in range(40):  # right answers: the project gets a model, the exports rows
        task = http.post(f"/api/projects/{mine['id']}/tasks/next/", headers=annotator)
        if task.status_code != 200:
            break
        task = task.json()
        window = gold[tuple(task["tokens"])][task["window"]["start"] :][: task["window"]["length"]]
        answer = {
            "assignment": task["assignment"],
            "counts": {tag["name"]: window.count(tag["name"]) for tag in task["tags"]},
            "idempotency_key": f"world-{number}",
        }
        assert http.post("/api/observations/", headers=annotator, json=answer).status_code == 201
    assert http.post(f"/api/projects/{mine['id']}/retrain/", headers=manager).status_code == 202
    report = http.get(f"/api/projects/{mine['id']}/reports/latest/", headers=manager)
    assert report.status_code == 200, report.text
    tokens = {
        "manager": manager["Authorization"],
        "annotator": annotator["Authorization"],
        "outsider": outsider["Authorization"],
        "anonymous": None,
    }
    return World(url=url, project=mine["id"], tokens=tokens)


def run_schemathesis(world: World, persona: str, *, examples: int, report: Path) -> tuple[int, str]:
    """`st run` with every check as `persona`, on the world's project; (exit code, output)."""
    config = report.with_name("schemathesis.toml")
    config.write_text(CONFIG.read_text().replace('"TALLY_ST_PROJECT"', str(world.project)))
    command = [
        _schemathesis(), "--config-file", str(config), "run",
        f"{world.url}/api/schema/?format=json", "--url", world.url,
        "--checks", "all", "--max-examples", str(examples),
        "--seed", "24", "--workers", "1", "--no-shrink", "--report", "json",
        "--report-json-path", str(report),
    ]  # fmt: skip
    if world.tokens[persona]:
        command += ["--header", f"Authorization: {world.tokens[persona]}"]
    # In the report's directory: schemathesis keeps a cache of its own where it runs.
    done = subprocess.run(command, capture_output=True, text=True, timeout=1800, cwd=report.parent)
    return done.returncode, done.stdout + done.stderr


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("schemathesis")
    with gunicorn_scratch(
        tmp,
        CELERY_TASK_ALWAYS_EAGER="1",
        # The run signs in and registers far more often than a person: not what it tests.
        TALLY_LOGIN_RATE="100000/min",
        TALLY_REGISTER_RATE="100000/min",
    ) as (url, _):
        yield build_world(url)


def findings(report: Path) -> tuple[list[str], list[str]]:
    """(failed checks and errors, schemathesis's own crashes) in the JSON report of `st run`.
    A crash is a traceback inside schemathesis or Hypothesis (one worker makes them rare); an
    error reaching the server (a connection refused, a time-out) is a finding."""
    run = json.loads(report.read_text())
    failures = [json.dumps(failure, indent=1) for failure in run["failures"]]
    crashes = []
    for error in map(json.dumps, run["errors"]):
        inside = re.search(r"site-packages/(schemathesis|hypothesis)/", error)
        network = re.search(r"Connection|Timeout|timed out|Network", error)
        (crashes if inside and not network else failures).append(error)
    return failures, crashes


@pytest.mark.parametrize("persona", ["manager", "annotator", "outsider", "anonymous"])
def test_schemathesis_every_check_finds_nothing(world, persona, tmp_path):
    report = tmp_path / "report.json"
    code, output = run_schemathesis(world, persona, examples=EXAMPLES, report=report)
    assert report.exists(), output[-5000:]
    failures, crashes = findings(report)
    for crash in crashes:
        print(f"schemathesis crashed (not a finding): {crash[:2000]}")
    assert not failures, "\n\n".join(failures)[:20000] + "\n\n" + output[-5000:]
    assert code == 0 or crashes, output[-20000:]
