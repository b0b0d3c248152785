import numpy as np
import pytest

from learning.core import CountTagger, FeatureConfig, Observations
from learning.core.report import (
    TokenProbabilities,
    annotator_table,
    evaluation_report,
    held_out_consistency,
)
from learning.core.schedule import EMSchedule
from learning.core.settings import CrowdSettings
from learning.core.training import TrainingSet
from learning.experiments.simulate import simulate_crowd
from tests.support.synthetic import make_corpus


@pytest.fixture(scope="module")
def fitted():
    rng = np.random.default_rng(71)
    sentences, gold, _, tagset = make_corpus(rng, n_sentences=400, n_words=30)
    crowd = simulate_crowd(gold, 4, window=3, n_annotators=6, spam_fraction=0.34, random_state=1)
    model = CountTagger(
        features=FeatureConfig(2**12), schedule=EMSchedule(n_em_iter=2), random_state=0
    )
    model.fit(TrainingSet(sentences, crowd.observations, tagset))
    return sentences, gold, tagset, crowd, model


def test_window_expectations_sum_the_token_probabilities(fitted):
    sentences, _, _, crowd, tagger = fitted
    probs = TokenProbabilities.of(tagger, sentences)
    obs = crowd.observations
    mean, var = probs.window_expectations(obs)
    for i in (0, 7, 99):
        tokens = sentences[obs.sentence[i]][obs.start[i] : obs.start[i] + obs.length[i]]
        p = tagger.token_proba([sentences[obs.sentence[i]]])[
            obs.start[i] : obs.start[i] + len(tokens)
        ]
        np.testing.assert_allclose(mean[i], p.sum(axis=0))
        np.testing.assert_allclose(var[i], (p * (1 - p)).sum(axis=0))


def test_taking_sentences_gives_what_reading_them_alone_gives(fitted):
    sentences, _, _, _, tagger = fitted
    every = TokenProbabilities.of(tagger, sentences)
    picked = [9, 0, 3, 3, 250]
    taken = every.take(picked)
    alone = TokenProbabilities.of(tagger, [sentences[i] for i in picked])
    np.testing.assert_array_equal(taken.offsets, alone.offsets)
    np.testing.assert_allclose(taken.probs, alone.probs, rtol=1e-12, atol=1e-15)
    assert every.take([]).probs.shape == (0, len(tagger.tagset_))


def test_annotator_table_flags_the_spammers_with_a_reason(fitted):
    _, _, _, crowd, model = fitted
    annotators, answers = np.unique(crowd.observations.annotator, return_counts=True)
    table = annotator_table(
        model.reliability_, model.verification_reliability_, annotators=annotators,
        answers=answers, median_seconds=np.full(annotators.shape[0], np.nan),
        crowd=CrowdSettings(), min_observations=model.min_flag_observations_,
    )  # fmt: skip
    flagged = {row["annotator"] for row in table if row["flagged"]}
    assert flagged == set(crowd.annotators_of_kind("spammer"))
    # The table is the fit's one estimate: the flags it stores are the fit's own.
    assert flagged == set(model.flagged_annotators_.tolist())
    for row in table:
        assert row["answers"] == int(answers[list(annotators).index(row["annotator"])])
        assert row["median_seconds"] is None
        if row["flagged"]:
            assert row["flag_reason"].startswith("Counts no better than chance")
            assert row["weight"] == 0.0 and row["reliability"] < 0.5
        else:
            assert row["flag_reason"] == "" and row["reliability"] > 0.5


def test_evaluation_report_counts_every_token(fitted):
    sentences, gold, tagset, _, tagger = fitted
    tags = [[tagset[t] for t in g] for g in gold[:50]]
    out = evaluation_report(tagger, sentences[:50], tags)
    matrix = np.array(out["confusion"]["matrix"])
    assert matrix.sum() == out["evaluation"]["tokens"] == sum(len(s) for s in tags)
    assert out["accuracy"] == pytest.approx(np.trace(matrix) / matrix.sum())
    assert [row["tag"] for row in out["per_tag"]] == list(tagset)
    predicted = tagger.predict(sentences[:50])
    flat = np.concatenate
    assert out["accuracy"] == pytest.approx(np.mean(flat(predicted) == flat(tags)))
    # Given the probabilities already computed, the same report.
    assert (
        evaluation_report(tagger, sentences[:50], tags, probs=tagger.token_proba(sentences[:50]))
        == out
    )
    assert evaluation_report(tagger, [], []) == {
        "accuracy": None, "evaluation": None, "per_tag": [], "confusion": None,
    }  # fmt: skip


def test_no_held_out_answers_no_consistency(fitted):
    sentences, _, _, crowd, tagger = fitted
    probs = TokenProbabilities.of(tagger, sentences)
    empty = crowd.observations.subset(np.zeros(len(crowd.observations), dtype=bool))
    assert held_out_consistency(probs, empty) is None
    some = crowd.observations.subset(np.arange(len(crowd.observations)) < 50)
    assert 0 <= held_out_consistency(probs, some) < 2
    assert isinstance(some, Observations)
