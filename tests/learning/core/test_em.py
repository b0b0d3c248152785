import numpy as np
import pytest

from learning.core.counts import CountEvidence, count_distribution
from learning.core.design import encode_corpus
from learning.core.em import expected_labels, window_token_index
from learning.core.node_tagger import aggregate_by_type
from learning.core.posterior import brute_force_posteriors
from learning.experiments.simulate import simulate_crowd
from tests.support.synthetic import make_corpus


def _setup(obs_per_sentence):
    rng = np.random.default_rng(51)
    sentences, gold, w_star, _ = make_corpus(rng, n_sentences=40, sentence_length=(3, 6))
    crowd = simulate_crowd(
        gold, 4, window=3, obs_per_sentence=obs_per_sentence, tags_per_task=2, random_state=3
    )
    corpus = encode_corpus(sentences)
    probs = w_star[[int(corpus.vocabulary[t][1:]) for t in corpus.type_ids]]
    return corpus, crowd.observations, probs


def test_single_windows_give_exact_token_posteriors():
    corpus, obs, probs = _setup(1)
    windows = window_token_index(corpus, obs)
    with np.errstate(invalid="raise", divide="raise"):
        result = expected_labels(
            probs, [CountEvidence(obs, windows)], [np.ones(len(obs))], floor=0.0
        )
    for i in range(len(obs)):
        tokens = windows[i, : obs.length[i]]
        expected, _ = brute_force_posteriors(probs[tokens], obs.tag_mask[i], obs.counts[i])
        np.testing.assert_allclose(result.beliefs[tokens], expected, atol=1e-6)
    uncovered = np.setdiff1d(np.arange(corpus.n_tokens), windows[windows >= 0])
    assert not result.beliefs[uncovered].any()
    assert result.feasible[0].all()


def test_overlapping_windows_and_zero_weights():
    corpus, obs, probs = _setup(3)
    windows = window_token_index(corpus, obs)
    weights = np.ones(len(obs))
    weights[::2] = 0.0
    for rounds in (1, 3):
        result = expected_labels(probs, [CountEvidence(obs, windows)], [weights], n_rounds=rounds)
        covered = result.token_weight > 0
        np.testing.assert_allclose(result.beliefs[covered].sum(axis=1), 1.0)
        only_ignored = np.setdiff1d(windows[::2][windows[::2] >= 0], windows[1::2])
        assert not covered[only_ignored].any()
    q = aggregate_by_type(corpus.type_ids, corpus.n_types, result.beliefs, result.token_weight)
    np.testing.assert_allclose(q.sum(), result.token_weight.sum())


def test_count_distribution_counts_every_whole_window_and_every_tag():
    # Tags 0 1 0 0 in windows of 3: windows (0 1 0) and (1 0 0); tag 0 counts 2, 2; tag 1
    # counts 1, 1; tag 2 counts 0, 0. The 2-token sentence holds no whole window.
    distribution = count_distribution([[0, 1, 0, 0], [2, 2]], window=3, n_tags=3)
    np.testing.assert_allclose(distribution, [2 / 6, 2 / 6, 2 / 6, 0.0])
    with pytest.raises(ValueError):
        count_distribution([[0, 1]], window=3, n_tags=3)
