"""One simulated annotator's answer to one task, as the demo crowd uses it."""

import numpy as np
import pytest

from learning.experiments.simulate import simulated_answer

TRUE = np.array([2, 0, 1, 2])  # counts of four tags in a window of 5
MASK = np.array([True, False, True, False])


def test_exact_annotator_gives_the_true_counts_of_the_asked_tags():
    rng = np.random.default_rng(0)
    answer = simulated_answer("exact", TRUE, MASK, 5, rng)
    assert answer.tolist() == [2, 0, 1, 0]


def test_noisy_annotator_is_off_by_at_most_one_and_stays_valid():
    rng = np.random.default_rng(1)
    answers = [simulated_answer("noisy", TRUE, MASK, 5, rng, noise_rate=1.0) for _ in range(200)]
    for answer in answers:
        assert np.abs(answer - [2, 0, 1, 0]).sum() == 1
        assert answer.min() >= 0 and answer.sum() <= 5 and not answer[~MASK].any()


def test_spammer_answers_are_valid_and_ignore_the_truth():
    rng = np.random.default_rng(2)
    answers = np.array([simulated_answer("spammer", TRUE, MASK, 5, rng) for _ in range(2000)])
    assert answers.min() >= 0 and answers.sum(axis=1).max() <= 5
    assert not answers[:, ~MASK].any()
    # Uniform over compositions of 5 into (tag 0, tag 2, other): E[count] = 5/3 for each.
    assert answers[:, MASK].mean(axis=0) == pytest.approx([5 / 3, 5 / 3], abs=0.1)


def test_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="unknown annotator kind 'careless'"):
        simulated_answer("careless", TRUE, MASK, 5, np.random.default_rng(0))


def test_a_round_is_answered_only_by_the_annotators_served():
    from learning.experiments.simulate import answer_counts, answer_verifications, simulate_crowd

    rng = np.random.default_rng(0)
    gold = [list(rng.integers(0, 4, size=8)) for _ in range(30)]
    crowd = simulate_crowd(gold, 4, window=3, n_annotators=10, spam_fraction=0.2, random_state=0)
    sentence = np.arange(30)
    start, length = np.zeros(30, dtype=np.int64), np.full(30, 3)
    mask = np.ones((30, 4), dtype=bool)
    serving = np.array([1, 4, 7])  # the platform serves flagged annotators gold checks only
    counts = answer_counts(crowd, gold, sentence, start, length, mask, rng, serving=serving)
    assert set(counts.annotator) == {1, 4, 7}  # 30 draws among 3: each one appears
    probs = np.full((240, 4), 0.25)
    verified = answer_verifications(crowd, gold, probs, sentence, start, 3, rng, serving=serving)
    assert set(verified.annotator) <= {1, 4, 7}
    everyone = answer_counts(crowd, gold, sentence, start, length, mask, rng)
    assert len(set(everyone.annotator)) > 3
    with pytest.raises(ValueError, match="every annotator is flagged"):
        answer_counts(crowd, gold, sentence, start, length, mask, rng, serving=np.zeros(0, int))
