import io
import itertools
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from tests.support.ewt import ewt_file


@pytest.fixture(scope="module")
def corpora(tmp_path_factory):
    directory = tmp_path_factory.mktemp("ewt")
    train = ewt_file(directory / "train.conllu", 600, "train")
    test = ewt_file(directory / "test.conllu", 150, "test")
    return train, test


def _run(*args) -> dict:
    out = io.StringIO()
    call_command("simulate_crowd", *args, stdout=out)
    return json.loads(out.getvalue())


def test_simulate_crowd_passes_the_em_schedule(corpora, monkeypatch):
    from learning.management.commands import simulate_crowd

    seen = {}

    def report(train, test, **kwargs):
        seen.update(kwargs["model_params"])
        return {"accuracy_refined": 0.5}, None

    monkeypatch.setattr(simulate_crowd, "simulation_report", report)
    train, test = corpora
    _run("--train", str(train), "--test", str(test), "--json")
    assert seen == {"model": "context", "schedule": "auto"}  # as a retrain: CountTagger's own
    _run("--train", str(train), "--test", str(test), "--schedule", "warm", "--json")
    assert seen["schedule"] == "warm"
    with pytest.raises(CommandError, match="--schedule must be 'auto' or one of informative"):
        _run("--train", str(train), "--test", str(test), "--schedule", "fast", "--json")


def test_simulate_crowd_leaves_the_online_learner_its_defaults(corpora, monkeypatch):
    from learning.management.commands import simulate_crowd

    seen = {}

    def report(train, test, **kwargs):
        seen["params"] = kwargs["online_params"]
        return {"accuracy_refined": 0.5}, None

    monkeypatch.setattr(simulate_crowd, "simulation_report", report)
    train, test = corpora
    _run("--train", str(train), "--test", str(test), "--online", "2", "--json")
    assert seen["params"] == {}
    _run("--train", str(train), "--test", str(test), "--online", "2", "--online-replay", "0",
         "--online-fit-iter", "2", "--json")  # fmt: skip
    assert seen["params"] == {"replay": None, "block_fit_iter": 2}


def test_simulate_crowd_prints_one_json_report(corpora):
    train, test = corpora
    report = _run(
        "--train",
        str(train),
        "--test",
        str(test),
        "--window",
        "5",
        "--obs-per-sentence",
        "1",
        "--tags-per-task",
        "all",
        "--annotators",
        "5",
        "--spam-fraction",
        "0.2",
        "--seed",
        "0",
        "--cost-matrix",
        "zero-one",
        "--json",
    )
    assert report["n_observations"] == 600
    # The references priced in the matrix: under 0/1 a Bayes decision is the argmax, so each
    # costs its error rate.
    for name in ("supervised_same_tokens", "supervised_all_tokens", "supervised_same_tokens_node"):
        assert report[f"cost_{name}_bayes"] == pytest.approx(1 - report[f"accuracy_{name}"])
    assert report["model"] == "context"
    assert report["tokens_shown"] > 0
    # The references bracket what the counts teach, and the contextual model is the better class.
    assert (
        report["accuracy_supervised_all_tokens"]
        > report["accuracy_supervised_same_tokens"]
        > report["accuracy_supervised_same_tokens_node"]
    )
    assert report["accuracy_refined"] > report["accuracy_refined_node"]
    assert report["accuracy_refined"] > report["accuracy_moments"]
    assert report["accuracy_supervised_same_tokens"] > report["accuracy_refined"] > 0.7
    assert report["ratio_refined_to_supervised"] == pytest.approx(
        report["accuracy_refined"] / report["accuracy_supervised_same_tokens"]
    )
    assert report["seconds_total_learning"] == pytest.approx(
        sum(report[f"seconds_{stage}"] for stage in ("solve", "fit", "classes", "refine",
                                                     "reliability", "calibrate"))
    )  # fmt: skip
    assert report["seconds_classes"] > 0 and report["peak_memory_mb"] > 0
    assert report["all_spammers_flagged"] and report["exact_annotators_flagged"] == []
    assert len(report["simulated_spammers"]) == 1


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"--train": "/nonexistent.conllu"}, "train file not found"),
        ({"--window": "0"}, "--window must be at least 1"),
        ({"--tags-per-task": "many"}, "--tags-per-task must be"),
        ({"--spam-fraction": "1.5"}, "--spam-fraction must be between 0 and 1"),
        ({"--online": "0"}, "--online must be a number of blocks, at least 1"),
        ({"--online": "100000"}, "--online must be between 1 and the number of answers"),
    ],
)
def test_bad_arguments_are_one_line_errors(corpora, change, message):
    train, test = corpora
    arguments = {"--train": str(train), "--test": str(test)}
    arguments.update(change)
    with pytest.raises(CommandError, match=message) as info:
        call_command("simulate_crowd", *itertools.chain(*arguments.items()), "--json")
    assert "\n" not in str(info.value)


def test_malformed_corpus_names_the_line(corpora, tmp_path):
    _, test = corpora
    bad = tmp_path / "bad.conllu"
    bad.write_text("1\tword\tword\tNOUN\n", encoding="utf-8")
    with pytest.raises(CommandError, match="line 1: expected 10 tab-separated columns, found 4"):
        call_command("simulate_crowd", "--train", str(bad), "--test", str(test))


def test_simulate_crowd_learns_from_released_answers(corpora):
    """--privacy-alpha releases every count on the simulated phones (krr by default) and reports
    the same tasks learned without privacy beside them."""
    train, test = corpora
    args = ["--train", str(train), "--test", str(test), "--obs-per-sentence", "2",
            "--tags-per-task", "1", "--schedule", "warm",
            "--no-references", "--json"]  # fmt: skip
    private = _run(*args, "--privacy-alpha", "3")
    assert private["mechanism"] == "krr" and private["privacy_alpha"] == 3.0
    assert private["n_observations"] == 1200
    assert 0 < private["accuracy_refined"] <= private["accuracy_refined_without_privacy"] + 0.05
    plain = _run(*args)
    assert private["accuracy_refined_without_privacy"] == pytest.approx(plain["accuracy_refined"])


def test_simulate_crowd_streams_the_answers_through_the_online_learner(corpora):
    train, test = corpora
    report = _run(
        "--train", str(train), "--test", str(test), "--online", "10", "--annotators", "5",
        "--spam-fraction", "0.2", "--no-references", "--json",
    )  # fmt: skip
    curve = report["online_curve"]
    assert [row["fraction"] for row in curve] == [0.1, 0.25, 0.5, 1.0]
    assert [row["answers"] for row in curve] == [60, 180, 300, 600]
    assert curve[-1]["accuracy_batch"] == report["accuracy_refined"]  # the same answers
    assert report["accuracy_online"] == curve[-1]["accuracy_online"] > 0.7
    assert report["accuracy_online"] > curve[0]["accuracy_online"]
    assert report["seconds_online_per_1000"] > 0
    assert report["online_flagged_annotators"] == report["simulated_spammers"]
    progressive = report["online_progressive"]
    assert len(progressive) == 10 and progressive[0]["log_likelihood"] is None
    assert all(row["log_likelihood"] < 0 for row in progressive[1:])


def test_simulate_crowd_scores_the_same_model_in_a_cost_matrix(corpora, tmp_path):
    train, test = corpora
    base = ["--train", str(train), "--test", str(test), "--no-references", "--json"]
    zero_one = _run(*base, "--cost-matrix", "zero-one")
    # 0/1: every decision is the argmax, and the cost is the error rate.
    assert zero_one["cost_served"] == zero_one["cost_bayes"] == zero_one["cost_argmax"]
    assert zero_one["accuracy_served"] == pytest.approx(zero_one["accuracy_refined"])
    assert zero_one["cost_argmax"] == pytest.approx(1 - zero_one["accuracy_refined"])
    assert 0 <= zero_one["calibration_error"] < 0.1 and zero_one["temperature"] > 0
    ordinal = _run(*base, "--cost-matrix", "ordinal")
    assert ordinal["accuracy_refined"] == zero_one["accuracy_refined"]  # the same model
    assert ordinal["cost_served"] > 0 and ordinal["cost_matrix"] == "ordinal"
    # A CSV file of the same matrix scores the same.
    from learning.core.conllu import read_conllu
    from learning.core.cost import cost_matrix_preset, write_cost_csv
    from learning.experiments.crowd_report import gold_indices

    tagset, _ = gold_indices(list(read_conllu(train)))
    path = tmp_path / "ordinal.csv"
    path.write_text(write_cost_csv(cost_matrix_preset("ordinal", tagset), tagset))
    from_file = _run(*base, "--cost-matrix", str(path))
    assert from_file["cost_served"] == pytest.approx(ordinal["cost_served"], rel=1e-4)
    with pytest.raises(CommandError, match="neither a preset"):
        _run(*base, "--cost-matrix", "hamming")
    # With --agm, the same model and an adversarial one for the matrix, scored alike.
    agm = _run(*base, "--cost-matrix", "ordinal", "--agm")
    assert agm["cost_served"] == pytest.approx(ordinal["cost_served"])
    assert 0 < agm["cost_agm"] < 2 * agm["cost_bayes"] and 0.5 < agm["accuracy_agm"] <= 1
    assert "cost_agm" not in ordinal
