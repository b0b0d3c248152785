"""`benchmark_scale` runs end to end at a tiny size (a slice of EWT, a few hundred answers, a second
of load, a tiny freshness and two-worker phase) and prints every figure issue 27 asks for; a check
that the command works, not a measurement."""

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

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.slow]

FIGURES = [
    "cycles_per_second_10k", "cycles_per_second_1m", "p99_ms_1m", "online_update_seconds_10k",
    "online_update_seconds_1m", "retrain_seconds_1m", "retrain_peak_mb_1m", "export_seconds_1m",
    "export_peak_mb_1m", "freshness_seconds", "seconds_seeding_large", "dashboard_ms_1m",
    "pair_one_at_a_time_seconds", "pair_two_workers_seconds",
]  # fmt: skip


def _benchmark_scale(tmp_path, *arguments: str) -> dict:
    """`benchmark_scale --json` on a slice of EWT in `tmp_path`, with `arguments`: its figures."""
    admin = urlsplit(os.environ["DATABASE_URL"])._replace(path="/postgres").geturl()
    ewt_folder(tmp_path, train=200, dev=20, test=40)
    command = [sys.executable, "manage.py", "benchmark_scale", "--json", "--data", str(tmp_path)]
    command += [*arguments, "--admin-database-url", admin, "--redis-url", os.environ["REDIS_URL"]]
    env = {**child_env(), "TALLY_DATA_DIR": str(tmp_path / "state")}
    done = subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=True
    )
    return json.loads(done.stdout)


def test_benchmark_scale_prints_the_figures_of_issue_27(tmp_path):
    result = _benchmark_scale(
        tmp_path,
        *("--sentences", "400", "--small-answers", "200", "--answers", "2000"),
        *("--annotators", "10", "--clients", "2", "--seconds", "1", "--online-answers", "50"),
        *("--online-repeats", "1", "--live-seconds", "1", "--freshness-samples", "1"),
        *("--pair-answers", "100"),
    )
    assert {key: result[key] for key in FIGURES if not result[key] > 0} == {}
    # The corpus was repeated past the slice, and the answers stored in bulk reached the size.
    assert result["sentences"] == 400
    assert 150 <= result["answers_small"] <= 220 < result["answers_large"]
    assert result["answers_large"] >= 1900
    assert result["cycle_errors_10k"] == result["cycle_errors_1m"] == {}
    assert result["p50_ms_1m"] <= result["p99_ms_1m"]
    # Every answer is exported, the phones' included; the retrain fitted them all.
    assert result["export_finished"] and result["retrain_finished"]
    assert result["export_rows"] == result["retrain_1m"]["observations"] >= result["answers_large"]
    assert result["freshness_caught_up"] and result["freshness_seconds"] < 60
    assert result["pair_answers_per_project"] > 0


def test_only_retrain_seeds_the_answers_and_times_the_cold_retrain(tmp_path):
    result = _benchmark_scale(
        tmp_path, "--only", "retrain", "--sentences", "400", "--answers", "1000",
        "--annotators", "10",
    )  # fmt: skip
    assert result["sentences"] == 400 and result["answers_large"] >= 900
    assert result["retrain_finished"] and result["retrain_seconds_1m"] > 0
    assert result["retrain_peak_mb_1m"] > 0
    retrain = result["retrain_1m"]
    assert retrain["version"] == 1 and retrain["warm_started_from"] is None  # cold
    assert retrain["observations"] == result["answers_large"]
    assert "cycles_per_second_1m" not in result


def test_benchmark_scale_compares_the_learners_memory_with_few_and_many_annotators(tmp_path):
    result = _benchmark_scale(
        tmp_path,
        *("--only", "annotators", "--answers", "3000", "--annotator-ids", "3000"),
        *("--annotator-block", "500"),
    )
    assert result["answers"] >= 2900 and result["annotator_ids"] == result["answers"]
    # Every answer had its own annotator; consecutive ids hash to distinct rows.
    assert result["annotators_table_rows_used"] == result["annotator_ids"]
    assert result["annotators_table_rows_shared"] == 0
    assert result["annotators_peak_mb_50"] > 0 and result["annotators_peak_mb_many"] > 0
    assert result["annotators_state_mb_many"] >= result["annotators_state_mb_50"] > 0
    assert result["annotators_extra_peak_mb"] == round(
        result["annotators_peak_mb_many"] - result["annotators_peak_mb_50"], 1
    )
