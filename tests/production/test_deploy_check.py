"""`manage.py check --deploy` passes under production settings, with no warning left."""

import secrets
import subprocess
import sys
from pathlib import Path

from tests.support.processes import child_env

ROOT = Path(__file__).resolve().parents[2]


def test_check_deploy_passes_under_production_settings(tmp_path):
    env = child_env(
        TALLY_ENV="production",
        SECRET_KEY=secrets.token_urlsafe(64),
        ALLOWED_HOSTS="tally.example.org",
        TALLY_DATA_DIR=str(tmp_path),
    )
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout
