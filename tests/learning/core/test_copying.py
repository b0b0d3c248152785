"""Telling annotators who give back the served model's answers from those who read the words
(learning.core.copying), on a synthetic corpus whose true P(tag | word) is the served model: a
calibrated model, so an honest annotator agrees with its rounded counts as often as it says."""

import itertools
from dataclasses import replace

import numpy as np
import pytest

from learning.core.copying import count_pmf, model_following
from learning.core.design import encode_corpus
from learning.core.em import window_token_index
from learning.core.policy import PolicySettings, RetrainFacts, plan_version
from learning.core.training import TrainingSet
from learning.experiments.simulate import answers_copied, simulate_crowd
from tests.support.synthetic import make_corpus


def test_count_distribution_matches_enumeration_of_every_outcome():
    rng = np.random.default_rng(0)
    probs = rng.random((6, 4))
    probs[2, 3] = probs[4, 2:] = 0.0  # windows shorter than the widest
    pmf = count_pmf(probs)
    brute = np.zeros_like(pmf)
    for outcome in itertools.product((0, 1), repeat=4):
        chance = np.prod(np.where(np.array(outcome) == 1, probs, 1 - probs), axis=1)
        brute[:, sum(outcome)] += chance
    np.testing.assert_allclose(pmf, brute, atol=1e-12)


def _crowd(n_sentences, seed=0, copier_fraction=0.2, temper=0.0):
    """A crowd answering tasks on a synthetic corpus, its copiers giving back the expected counts
    of the true model (tempered toward uniform by ``temper``: an under-confident model)."""
    rng = np.random.default_rng(seed)
    sentences, gold, w_star, _ = make_corpus(rng, n_sentences=n_sentences)
    words = np.array([int(w[1:]) for s in sentences for w in s])
    proba = (1 - temper) * w_star[words] + temper / w_star.shape[1]
    crowd = simulate_crowd(
        gold, 4, window=4, obs_per_sentence=2, n_annotators=10, noisy_fraction=0.2,
        copier_fraction=copier_fraction, random_state=seed,
    )  # fmt: skip
    lengths = np.array([len(s) for s in sentences])
    crowd = answers_copied(crowd, proba, lengths)
    windows = window_token_index(encode_corpus(sentences), crowd.observations)
    return sentences, crowd, proba, windows


def _following(crowd, proba, windows, answered=None):
    obs = crowd.observations
    answered = np.ones(len(obs), dtype=bool) if answered is None else answered
    return model_following(
        obs.annotator, obs.tag_mask, obs.counts, windows, proba, answered=answered
    )


def test_copied_answers_are_the_rounded_expected_counts_and_stay_valid():
    _, crowd, proba, windows = _crowd(300)
    obs = crowd.observations
    copies = np.isin(obs.annotator, crowd.annotators_of_kind("copier"))
    expected = np.where(windows[..., None] >= 0, proba[np.maximum(windows, 0)], 0).sum(axis=1)
    rounded = np.rint(expected).astype(int)
    fits = rounded.sum(axis=1) <= obs.length
    np.testing.assert_array_equal(obs.counts[copies & fits], rounded[copies & fits])
    assert (obs.counts.sum(axis=1) <= obs.length).all()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_copiers_are_told_from_annotators_who_read_the_words(seed):
    _, crowd, proba, windows = _crowd(1500, seed=seed)
    following = _following(crowd, proba, windows)
    follows = following.follows()
    copiers = crowd.annotators_of_kind("copier")
    np.testing.assert_array_equal(following.annotators[follows], copiers)
    agreed, expected = following.rates()  # below 1 only where rounding passed the window
    assert (agreed[np.isin(following.annotators, copiers)] > 0.9).all()


def test_an_honest_annotators_agreement_approaches_the_models_own_doubt_as_answers_grow():
    gaps = []
    for n_sentences in (200, 3200):
        _, crowd, proba, windows = _crowd(n_sentences, seed=4, copier_fraction=0.0)
        following = _following(crowd, proba, windows)
        exact = np.isin(following.annotators, crowd.annotators_of_kind("exact"))
        agreed, expected = following.rates()
        gaps.append(np.abs(agreed - expected)[exact].mean())
        assert not following.follows().any()
    assert gaps[1] < gaps[0] / 2


def test_a_copier_with_few_answers_is_not_judged_yet():
    _, crowd, proba, windows = _crowd(8, seed=5)
    following = _following(crowd, proba, windows)
    copier = np.isin(following.annotators, crowd.annotators_of_kind("copier"))
    assert (following.entries[copier] < 20).all() and following.entries[copier].sum() > 0
    assert not following.follows()[copier].any()


def test_an_under_confident_model_makes_nobody_who_reads_the_words_a_copier():
    # Everyone agrees with a tempered model's rounded counts more often than it says: the
    # crowd's median takes that out, and the copiers still stand out.
    _, crowd, proba, windows = _crowd(1500, seed=6, temper=0.3)
    following = _following(crowd, proba, windows)
    agreed, expected = following.rates()
    honest = ~np.isin(following.annotators, crowd.annotators_of_kind("copier"))
    assert (agreed - expected)[honest & (following.entries >= 20)].mean() > 0.03
    np.testing.assert_array_equal(
        following.annotators[following.follows()], crowd.annotators_of_kind("copier")
    )


def test_only_answers_given_while_the_model_was_served_are_tested():
    _, crowd, proba, windows = _crowd(1500, seed=7)
    obs = crowd.observations
    copiers = crowd.annotators_of_kind("copier")
    following = _following(crowd, proba, windows, answered=~np.isin(obs.annotator, copiers))
    assert not np.isin(copiers, following.annotators).any()
    assert not following.follows().any()


def test_the_retrain_policy_flags_a_copier_and_weighs_their_answers_zero():
    sentences, crowd, proba, _ = _crowd(800, seed=8)
    obs = crowd.observations
    tagset = ("T0", "T1", "T2", "T3")
    data = TrainingSet(
        sentences, obs, tagset, served_answers=np.ones(len(obs), bool), served_proba=proba
    )
    settings = PolicySettings(estimator={"model": "node"})
    plan = plan_version(RetrainFacts.of_answers(data, number=2), None, settings)
    copiers = crowd.annotators_of_kind("copier")
    np.testing.assert_array_equal(plan.flagged, copiers)
    rows = {row["annotator"]: row for row in plan.table}
    for copier in copiers:
        assert "follow the model rather than the words" in rows[int(copier)]["flag_reason"]
        assert rows[int(copier)]["weight"] == 0.0
    # The same answers, none marked as given while the model was served: nobody is flagged.
    untested = plan_version(
        RetrainFacts.of_answers(replace(data, served_answers=None), number=2), None, settings
    )
    assert not np.isin(copiers, untested.flagged).any()


def test_served_probabilities_of_the_wrong_shape_are_refused():
    sentences, crowd, proba, _ = _crowd(50)
    with pytest.raises(ValueError, match="served_proba must be"):
        TrainingSet(sentences, crowd.observations, ("T0", "T1", "T2", "T3"), served_proba=proba[1:])
    with pytest.raises(ValueError, match="one flag per observation"):
        TrainingSet(sentences, crowd.observations, ("T0", "T1", "T2", "T3"), served_answers=[True])
