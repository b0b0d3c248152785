"""Settings come from the environment and refuse bad values."""

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.processes import child_env

ROOT = Path(__file__).resolve().parent.parent


def _check(env: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env=child_env(TALLY_DATA_DIR=str(tmp_path), **env),
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_development_default_needs_no_environment(tmp_path):
    result = _check({}, tmp_path)
    assert result.returncode == 0, result.stderr
    # The generated key is kept next to the data, not in the repository.
    assert (tmp_path / "secret_key").stat().st_mode & 0o077 == 0


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"TALLY_ENV": "production", "ALLOWED_HOSTS": "x"}, "SECRET_KEY must be set"),
        ({"TALLY_ENV": "production", "SECRET_KEY": "short", "ALLOWED_HOSTS": "x"}, "50 random"),
        ({"TALLY_ENV": "production", "SECRET_KEY": "k" * 60, "ALLOWED_HOSTS": "x"}, "50 random"),
        ({"TALLY_ENV": "production", "SECRET_KEY": "a1b2c3d4e5" * 6}, "ALLOWED_HOSTS"),
        ({"TALLY_ENV": "staging"}, "TALLY_ENV='staging' must be one of"),
        ({"DJANGO_DEBUG": "maybe"}, "is not a boolean"),
        ({"REDIS_URL": "http://localhost"}, "REDIS_URL must start with"),
        ({"DB_CONN_MAX_AGE": "forever", "DATABASE_URL": "postgres://x@h/db"}, "not a whole number"),
        ({"TALLY_LOGIN_RATE": "ten a minute"}, "is not a rate like 10/min"),
        ({"TALLY_LOGIN_ADDRESS_RATE": "0/min"}, "is not a rate like 10/min"),
        ({"TALLY_TRUSTED_PROXIES": "10.0.0.0/8, proxy.local"}, "'proxy.local' is not an address"),
    ],
)
def test_bad_settings_fail_loudly(tmp_path, env, message):
    result = _check(env, tmp_path)
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert message in result.stderr
