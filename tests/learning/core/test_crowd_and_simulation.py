import numpy as np

from learning.core.crowd import chance_squared_error, estimate_reliability
from learning.experiments.simulate import simulate_crowd
from tests.support.synthetic import make_corpus


def test_simulation_is_seeded_and_exact_annotators_tell_the_truth():
    rng = np.random.default_rng(31)
    _, gold, _, _ = make_corpus(rng, n_sentences=200)
    one = simulate_crowd(
        gold,
        4,
        window=3,
        obs_per_sentence=2,
        spam_fraction=0.25,
        noisy_fraction=0.25,
        n_annotators=8,
        random_state=5,
    )
    two = simulate_crowd(
        gold,
        4,
        window=3,
        obs_per_sentence=2,
        spam_fraction=0.25,
        noisy_fraction=0.25,
        n_annotators=8,
        random_state=5,
    )
    np.testing.assert_array_equal(one.observations.counts, two.observations.counts)
    assert (one.annotator_kind == "spammer").sum() == 2
    obs = one.observations
    exact = np.isin(obs.annotator, one.annotators_of_kind("exact"))
    for i in np.flatnonzero(exact):
        tags = gold[obs.sentence[i]][obs.start[i] : obs.start[i] + obs.length[i]]
        np.testing.assert_array_equal(obs.counts[i], np.bincount(tags, minlength=4))


def test_chance_error_matches_monte_carlo():
    rng = np.random.default_rng(32)
    _, gold, _, _ = make_corpus(rng, n_sentences=1, sentence_length=(5, 5))
    crowd = simulate_crowd(
        gold * 20000,
        4,
        window=5,
        tags_per_task=2,
        spam_fraction=1.0,
        n_annotators=1,
        random_state=1,
    )
    obs = crowd.observations
    expected = np.full(obs.counts.shape, 1.0)
    analytic = chance_squared_error(obs.length, obs.tag_mask, expected)
    empirical = ((obs.counts - expected) ** 2)[obs.tag_mask].mean()
    assert abs(analytic[obs.tag_mask].mean() - empirical) < 0.05


def test_reliability_flags_a_spammer_and_not_exact_annotators():
    rng = np.random.default_rng(33)
    _, gold, w_star, _ = make_corpus(rng, n_sentences=600)
    crowd = simulate_crowd(gold, 4, window=4, spam_fraction=0.2, n_annotators=10, random_state=2)
    obs = crowd.observations
    # Expected counts from the true (calibrated) per-token distributions.
    sentences, _, _, _ = make_corpus(np.random.default_rng(33), n_sentences=600)
    mean, var = _true_expectations(sentences, obs, w_star)
    result = estimate_reliability(obs.annotator, obs.tag_mask, obs.counts, obs.length, mean, var)
    spammers = crowd.annotators_of_kind("spammer")
    assert set(result.annotators[result.flagged]) == set(spammers)
    assert np.all(result.weight[spammers] == 0)
    good = np.setdiff1d(result.annotators, spammers)
    assert np.all(result.skill[good] > 0.5)
    assert np.all(result.weight[good] > 0.5)


def _true_expectations(sentences, obs, w_star):
    mean = np.zeros(obs.counts.shape)
    var = np.zeros(obs.counts.shape)
    for i in range(len(obs)):
        words = sentences[obs.sentence[i]][obs.start[i] : obs.start[i] + obs.length[i]]
        p = w_star[[int(w[1:]) for w in words]]
        mean[i], var[i] = p.sum(axis=0), (p * (1 - p)).sum(axis=0)
    return mean, var


def test_a_private_crowd_of_honest_annotators_keeps_full_weight():
    """Regression: releases of a privacy mechanism carry known noise whose sampling error was read
    as annotator noise; at α = 3 (k-ary randomized response, one tag per task) honest annotators'
    weights spread down to 0.17 on Alpino. The empirical-Bayes shrinkage sees no spread between
    them beyond sampling error and keeps them alike, while spammers are still flagged."""
    from learning.core.privacy import Mechanism

    rng = np.random.default_rng(41)
    sentences, gold, w_star, _ = make_corpus(rng, n_sentences=3000)
    crowd = simulate_crowd(gold, 4, window=5, tags_per_task=1, spam_fraction=0.2,
                           n_annotators=20, random_state=3)  # fmt: skip
    obs = crowd.observations
    mechanism = Mechanism("krr", 3.0, n_tags=4)
    private = mechanism.released(obs, rng)
    mean, var = _true_expectations(sentences, private, w_star)
    with np.errstate(invalid="raise"):
        result = estimate_reliability(
            private.annotator, private.tag_mask, mechanism.debiased_counts(private),
            private.length, mean, var, known_noise=mechanism.expected_noise(private, mean),
        )  # fmt: skip
    spammers = crowd.annotators_of_kind("spammer")
    assert set(result.annotators[result.flagged]) == set(spammers)
    honest = ~np.isin(result.annotators, spammers)
    assert result.weight[honest].min() > 0.9, result.weight[honest]


def test_noisy_annotators_weigh_less_than_exact_ones():
    """The shrinkage keeps a real spread between annotators: those whose counts are off by one now
    and then get less weight than those who count exactly."""
    rng = np.random.default_rng(43)
    sentences, gold, w_star, _ = make_corpus(rng, n_sentences=3000)
    crowd = simulate_crowd(gold, 4, window=4, noisy_fraction=0.3, noise_rate=0.5,
                           n_annotators=10, random_state=4)  # fmt: skip
    obs = crowd.observations
    mean, var = _true_expectations(sentences, obs, w_star)
    result = estimate_reliability(obs.annotator, obs.tag_mask, obs.counts, obs.length, mean, var)
    noisy = np.isin(result.annotators, crowd.annotators_of_kind("noisy"))
    assert result.weight[noisy].max() < result.weight[~noisy].min()
    assert not result.flagged.any()


def test_expected_counts_in_chunks_equal_the_sums_at_once(monkeypatch):
    from learning.core import counts

    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(4), size=30)
    windows = rng.integers(0, 30, size=(11, 3))
    windows[::3, 2] = -1  # shorter windows
    inside = (windows >= 0)[:, :, None]
    p = np.where(inside, probs[np.maximum(windows, 0)], 0.0)
    monkeypatch.setattr(counts, "_CHUNK", 4)
    mean, var = counts.expected_counts(probs, windows)
    np.testing.assert_array_equal(mean, p.sum(axis=1))
    np.testing.assert_array_equal(var, (p * (1.0 - p)).sum(axis=1))
