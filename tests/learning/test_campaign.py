"""`simulate_campaign`: rounds chosen by a policy, a retrain after each, one JSON line per round."""

import io
import json

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from learning.experiments.campaign import error_oracle
from tests.support.ewt import ewt_file


@pytest.fixture(scope="module")
def corpora(tmp_path_factory):
    directory = tmp_path_factory.mktemp("ewt")
    train = directory / "train.conllu"
    test = directory / "test.conllu"
    ewt_file(train, 300, "train")
    ewt_file(test, 100, "test")
    return str(train), str(test)


def _rounds(*args) -> list[dict]:
    out = io.StringIO()
    call_command("simulate_campaign", *args, "--json", stdout=out)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_an_adaptive_campaign_with_verification_reports_every_round(corpora):
    train, test = corpora
    rounds = _rounds("--train", train, "--test", test, "--policy", "adaptive", "--rounds", "3",
                     "--start", "1", "--budget", "2", "--verification", "--spam-fraction",
                     "0.2", "--seed", "1")  # fmt: skip
    assert [r["round"] for r in rounds] == [0, 1, 2]
    assert all(r["policy"] == "adaptive" for r in rounds)
    first, _, last = rounds
    assert first["answers"] == 300 and "forecast_final" not in first
    assert last["answers"] > first["answers"]
    assert all(0.3 < r["accuracy"] <= 1.0 for r in rounds)
    # Equal seconds per round: round 0 bought 300 count tasks, each later round as many seconds.
    spent = [sum(r["annotator_seconds"].values()) for r in rounds]
    assert spent[2] - spent[1] == pytest.approx(spent[0] / 2, rel=0.02)
    assert last["forecast_low"] <= last["forecast_final"] <= last["forecast_high"]
    assert len(last["simulated_spammers"]) == 4  # 20 % of 20 annotators


def test_a_uniform_campaign_asks_uniform_tasks(corpora):
    train, test = corpora
    rounds = _rounds("--train", train, "--test", test, "--policy", "uniform", "--rounds", "2",
                     "--start", "0.5", "--budget", "1")  # fmt: skip
    first, second = (r["count_answers"] for r in rounds)
    assert 110 < first < 190 and second - first == 150  # half the sentences, then 150 tasks
    assert all(r["verification_answers"] == 0 for r in rounds)


def test_the_error_oracle_is_unsure_exactly_where_the_model_is_wrong():
    probs = np.array([[0.7, 0.2, 0.1], [0.5, 0.4, 0.1], [0.1, 0.3, 0.6]])
    gold = np.array([0, 1, 2])  # the model is wrong on the second token only
    known = error_oracle(probs, gold)
    np.testing.assert_array_equal(known, [[1, 0, 0], [0.5, 0.5, 0], [0, 0, 1]])


def test_an_oracle_campaign_spends_the_rounds_as_the_others(corpora):
    train, test = corpora
    rounds = _rounds("--train", train, "--test", test, "--policy", "oracle", "--rounds", "2",
                     "--start", "0.5", "--budget", "1")  # fmt: skip
    first, second = (r["count_answers"] for r in rounds)
    assert second - first == 150 and rounds[1]["policy"] == "oracle"
    assert rounds[1]["accuracy"] > rounds[0]["accuracy"]


@pytest.mark.parametrize(
    "change, message",
    [
        ({"--start": "4"}, "--start must be positive and at most --budget"),
        ({"--rounds": "0"}, "--rounds must be at least 1"),
        ({"--exploration": "1.5"}, "--exploration must be between 0 and 1"),
        ({"--policy": "uniform", "--verification": None}, "--verification needs --policy adaptive"),
    ],
)
def test_bad_arguments_are_one_line_errors(corpora, change, message):
    train, test = corpora
    arguments = {"--train": train, "--test": test, **change}
    with pytest.raises(CommandError, match=message):
        _rounds(*[part for pair in arguments.items() for part in pair if part is not None])
