"""`benchmark_retrain` runs end to end on a slice of EWT (scratch database, seeding, full and warm
retrain, a cost-matrix change, simulate_crowd's path on the same answers) and prints its
figures; a check that the command works, not a measurement."""

import json
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.support.ewt import ewt_folder
from tests.support.processes import child_env

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


def test_benchmark_retrain_seeds_simulate_crowds_answers_and_prints_both_accuracies(tmp_path):
    admin = urlsplit(os.environ["DATABASE_URL"])._replace(path="/postgres").geturl()
    ewt_folder(tmp_path, train=300, dev=40, test=60)
    command = [sys.executable, "manage.py", "benchmark_retrain", "--json", "--data", str(tmp_path)]
    # Enough answers that a tenth more go on warm (`schedule.WARM_MIN_ASKED`).
    command += ["--obs-per-sentence", "3", "--tags-per-task", "3", "--admin-database-url", admin]
    env = {**child_env(), "TALLY_DATA_DIR": str(tmp_path / "state")}
    done = subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=True
    )
    result = json.loads(done.stdout)
    assert result["schedule_full"] == result["schedule_simulate_crowd"] == "weak"
    assert result["schedule_warm"] == "warm"
    assert result["answers_stored"] + result["answers_not_stored"] >= 900
    assert result["answers_added_for_warm"] > 0
    assert 0.3 < result["accuracy_test"] <= 1 and 0.3 < result["accuracy_simulate_crowd"] <= 1
    assert result["seconds_full_retrain"] > 0 and result["seconds_warm_retrain"] > 0
    # A cost-matrix change queues the re-scoring of the two versions' reports, and no retrain.
    assert [task["task"] for task in result["cost_change"]["tasks"]] == [
        "learning.cost_reports_rescore"
    ]
