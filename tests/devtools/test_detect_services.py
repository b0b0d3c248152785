"""`./tally test` finds PostgreSQL on its default port when DATABASE_URL is unset (issue 17: 22
tests were skipped although it answered); Redis it never looks for (test_own_redis.py)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from devtools import detect_services

ROOT = Path(__file__).resolve().parents[2]


def test_nothing_set_when_the_environment_names_the_services():
    environ = {"DATABASE_URL": "sqlite:///x", "REDIS_URL": "redis://elsewhere:1/0"}
    assert detect_services.detected(environ) == {}


def test_a_service_that_does_not_answer_is_left_unset():
    closed = {"TALLY_TEST_DATABASE_URL": "postgres://postgres@127.0.0.1:9/tally"}
    assert detect_services.detected(closed) == {}


@pytest.mark.postgres
@pytest.mark.redis
def test_postgres_on_its_port_is_found_and_redis_never(settings):
    """Runs where the suite itself runs on PostgreSQL and Redis (CI): the same servers. A Redis
    that answers is not taken (issue 26: a running Tally's worker took the tests' jobs)."""
    database = settings.DATABASES["default"]
    url = f"postgres://{database['USER']}@{database['HOST']}:{database['PORT']}/tally"
    environ = {"TALLY_TEST_DATABASE_URL": url, "TALLY_TEST_REDIS_URL": os.environ["REDIS_URL"]}
    assert detect_services.detected(environ) == {"DATABASE_URL": url}
    out = subprocess.run(
        [sys.executable, "-m", "devtools.detect_services"], cwd=ROOT, capture_output=True,
        text=True, env={"PATH": os.environ["PATH"], **environ}, timeout=60,
    )  # fmt: skip
    assert f"export DATABASE_URL={url}" in out.stdout.splitlines()


def test_the_summary_says_how_to_run_the_skipped_tests(pytester_env):
    out = pytester_env
    assert "skipped for want of PostgreSQL: to run them, start PostgreSQL on 127.0.0.1:5432" in out


@pytest.fixture
def pytester_env(tmp_path):
    """A run of one PostgreSQL test without PostgreSQL, in a child pytest."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env.pop("TALLY_REQUIRE_SERVICES", None)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "tests/annotation/test_hotpath.py", "-k", "statement"],
        cwd=ROOT, capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    return done.stdout
