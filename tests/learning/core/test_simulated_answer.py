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
