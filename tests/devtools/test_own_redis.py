"""`./tally test` owns its broker (issue 26, item 9): a redis-server of the run's own on a free
port, never a Redis a running Tally uses (whose worker took the tests' retrain jobs)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import redis

from devtools import own_redis

ROOT = Path(__file__).resolve().parents[2]
BINARY = own_redis.redis_server()
needs_redis_server = pytest.mark.skipif(BINARY is None, reason="needs redis-server")


@needs_redis_server
def test_a_private_redis_is_its_own_and_gone_afterwards():
    with own_redis.private_redis(binary=BINARY) as url:
        client = redis.Redis.from_url(url, socket_connect_timeout=1)
        assert client.ping()
        assert not url.startswith("redis://127.0.0.1:6379")
        assert client.dbsize() == 0  # nothing of anyone else's
        client.set("tally-test", "1")
    with pytest.raises(redis.ConnectionError):
        client.ping()


CHILD = """
import os, redis
url = os.environ["REDIS_URL"]
print(url)
print(redis.Redis.from_url(url).ping())
"""


@needs_redis_server
def test_the_command_runs_on_its_own_redis_not_the_one_in_the_environment():
    """A REDIS_URL in the environment (a running Tally's) is not handed to the tests."""
    theirs = "redis://127.0.0.1:6379/15"
    env = {**os.environ, "REDIS_URL": theirs}
    env.pop("TALLY_TEST_REDIS_URL", None)
    done = subprocess.run(
        [sys.executable, "-m", "devtools.own_redis", "--required", "--",
         sys.executable, "-c", CHILD],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    url, answered = done.stdout.split()
    assert url != theirs and answered == "True"
    assert "a Redis of this run's own" in done.stderr
    with pytest.raises(redis.ConnectionError):
        redis.Redis.from_url(url, socket_connect_timeout=1).ping()  # stopped with the run


def test_an_explicit_test_redis_is_used_and_none_is_guessed(monkeypatch, capfd):
    monkeypatch.setenv("REDIS_URL", "redis://127.0.0.1:6379/15")
    monkeypatch.setenv("TALLY_TEST_REDIS_URL", "redis://127.0.0.1:9/3")
    show = [sys.executable, "-c", "import os; print(os.environ.get('REDIS_URL'))"]
    assert own_redis.main(["--", *show]) == 0
    assert capfd.readouterr().out.strip() == "redis://127.0.0.1:9/3"

    monkeypatch.delenv("TALLY_TEST_REDIS_URL")
    monkeypatch.setattr(own_redis, "redis_server", lambda: None)
    assert own_redis.main(["--", *show]) == 0
    out = capfd.readouterr()
    assert out.out.strip() == "None"  # the tests that need Redis are skipped, not pointed at 6379
    assert "redis-server not found" in out.err
    assert own_redis.main(["--required", "--", *show]) == 1
    assert "redis-server is required" in capfd.readouterr().err


@needs_redis_server
@pytest.mark.parametrize("mode", [[], ["--full"]])
def test_tally_test_hands_pytest_a_redis_of_its_own(tmp_path, mode):
    """The script itself, with a stand-in venv whose pytest reports the REDIS_URL it was given:
    never the REDIS_URL of the environment, in either mode."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    stubs = {
        "python": f'exec {sys.executable} "$@"\n',
        "ruff": "exit 0\n",
        "pytest": 'echo "pytest got REDIS_URL=${REDIS_URL:-}"\n',
    }
    for name, body in stubs.items():
        (venv / "bin" / name).write_text("#!/bin/sh\n" + body)
        (venv / "bin" / name).chmod(0o755)
    digest = subprocess.run(
        ["sha256sum", "pyproject.toml"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()[0]
    (venv / ".tally-installed").write_text(f"{digest} [dev]\n")
    theirs = "redis://127.0.0.1:6379/14"
    env = {**os.environ, "TALLY_VENV": str(venv), "REDIS_URL": theirs, "PATH": "/usr/bin:/bin"}
    env.pop("TALLY_TEST_REDIS_URL", None)
    done = subprocess.run(
        ["./tally", "test", *mode], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, (done.stdout[-4000:], done.stderr[-2000:])
    given = [line.split("=", 1)[1] for line in done.stdout.splitlines() if "pytest got" in line]
    assert given[0].startswith("redis://127.0.0.1:") and given[0] != theirs
    assert theirs not in given
    if mode:
        assert given[1] == ""  # the second pass, on SQLite, has no Redis at all
