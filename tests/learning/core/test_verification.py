import itertools

import numpy as np
import pytest

from learning.core.verification import (
    VerificationAnswers,
    verification_posteriors,
    verification_reliability,
)


def _brute_force(probs, shown, answer, wrong):
    """Marginals and P(answer) by enumerating every tagging of the window."""
    w, k = probs.shape
    marginals, z = np.zeros((w, k)), 0.0
    for tagging in itertools.product(range(k), repeat=w):
        tagging = np.array(tagging)
        right = tagging == shown
        if answer:
            ok = right.all()
        elif wrong < 0:
            ok = not right.all()
        else:
            ok = right[:wrong].all() and not right[wrong]
        if ok:
            weight = float(np.prod(probs[np.arange(w), tagging]))
            z += weight
            marginals[np.arange(w), tagging] += weight
    return marginals / z, z


@pytest.mark.parametrize(
    ("answer", "wrong"), [(True, -1), (False, -1), (False, 0), (False, 2), (False, 3)]
)
def test_posteriors_equal_brute_force(answer, wrong):
    rng = np.random.default_rng(4)
    for _ in range(5):
        probs = rng.dirichlet(np.ones(3), size=4)
        shown = rng.integers(0, 3, size=4)
        with np.errstate(invalid="raise", divide="raise"):
            result = verification_posteriors(
                probs[None], shown[None], np.array([answer]), np.array([wrong])
            )
        expected, z = _brute_force(probs, shown, answer, wrong)
        np.testing.assert_allclose(result.marginals[0], expected, atol=1e-12)
        assert result.log_z[0] == pytest.approx(np.log(z))
        assert result.feasible[0]


def test_windows_of_different_lengths_in_one_batch():
    rng = np.random.default_rng(5)
    probs = rng.dirichlet(np.ones(3), size=(3, 4))
    shown = np.array([[0, 1, -1, -1], [2, 2, 1, 0], [1, -1, -1, -1]])
    answer, wrong = np.array([False, False, True]), np.array([1, -1, -1])
    result = verification_posteriors(probs, shown, answer, wrong)
    for i in range(3):
        length = int((shown[i] >= 0).sum())
        expected, z = _brute_force(probs[i, :length], shown[i, :length], answer[i], wrong[i])
        np.testing.assert_allclose(result.marginals[i, :length], expected, atol=1e-12)
        assert not result.marginals[i, length:].any()
        assert result.log_z[i] == pytest.approx(np.log(z))


def test_an_impossible_answer_is_infeasible():
    probs = np.array([[[1.0, 0.0], [0.0, 1.0]]])
    result = verification_posteriors(probs, np.array([[0, 1]]), np.array([False]), np.array([-1]))
    assert not result.feasible[0] and result.log_z[0] == -np.inf
    floored = verification_posteriors(
        probs, np.array([[0, 1]]), np.array([False]), np.array([-1]), floor=1e-3
    )
    assert floored.feasible[0]


def test_yes_sayers_and_random_answerers_have_no_skill():
    rng = np.random.default_rng(6)
    n = 1200
    mu = rng.uniform(0.3, 0.99, size=n)  # the model's P(Yes), calibrated: truth ~ Bern(mu)
    truth = rng.random(n) < mu
    annotator = np.repeat([0, 1, 2, 3], n // 4)
    answer = truth.copy()
    answer[annotator == 1] = True  # a yes-sayer
    answer[annotator == 2] = rng.random((annotator == 2).sum()) < 0.5  # random
    flip = (annotator == 3) & (rng.random(n) < 0.1)  # a careful but imperfect annotator
    answer[flip] = ~answer[flip]
    table = verification_reliability(annotator, answer, mu)
    assert table[0]["skill"] == pytest.approx(1.0, abs=0.2) and not table[0]["flagged"]
    assert table[3]["skill"] == pytest.approx(0.8, abs=0.2) and not table[3]["flagged"]
    assert table[1]["skill"] == 0.0 and table[1]["flagged"] and table[1]["yes_rate"] == 1.0
    assert table[2]["skill"] == pytest.approx(0.0, abs=0.25) and table[2]["flagged"]
    # A model less sure than it should be (right on every window, μ from 0.3 to 0.99): truthful
    # answers are all Yes, like a yes-sayer's; nobody can be told apart, nobody is flagged.
    right = verification_reliability(annotator[annotator != 2], np.ones(n * 3 // 4, bool),
                                     mu[annotator != 2])  # fmt: skip
    assert all(row["skill"] == 0.0 and not row["flagged"] for row in right.values())
    # A truthful annotator whose 14 windows all happened to be right (all Yes, slope 0, like a
    # yes-sayer's) or all wrong (all No) is not flagged on so little; a yes-sayer answering 60
    # windows of the same spread is.
    for size, said_yes, flagged in ((14, True, False), (14, False, False), (60, True, True)):
        one = verification_reliability(
            np.concatenate([annotator, np.full(size, 9)]),
            np.concatenate([answer, np.full(size, said_yes)]),
            np.concatenate([mu, np.linspace(0.6, 0.95, size)]),
        )[9]
        assert one["skill"] == 0.0 and one["flagged"] == flagged, (size, said_yes)
    # Windows the model is equally sure of say nothing about an annotator: no judgement.
    flat = verification_reliability(np.zeros(50, int), np.ones(50, bool), np.full(50, 0.8))
    assert flat[0]["skill"] is None and not flat[0]["flagged"]


def test_answers_are_validated():
    common = {"sentence_lengths": [3, 5], "n_tags": 4}
    good = VerificationAnswers.create(
        sentence=[0, 1], start=[0, 2], shown=[[1, 2], [0, 3, 3]], answer=[True, False],
        wrong=[-1, 2], **common,
    )  # fmt: skip
    assert len(good) == 2 and good.length.tolist() == [2, 3]
    bad = [
        ({"shown": [[1, 9], [0]]}, "shown tags must be tag indices"),
        ({"start": [2, 0]}, "past the end of its sentence"),
        ({"wrong": [0, -1]}, "a Yes has no wrong word"),
        ({"wrong": [-1, 1]}, "the wrong word must lie in the window"),
        ({"sentence": [0, 2]}, "sentence index out of range"),
    ]
    for change, message in bad:
        arguments = {"sentence": [0, 1], "start": [0, 4], "shown": [[1, 2], [0]],
                     "answer": [True, False], "wrong": [-1, -1], **common, **change}  # fmt: skip
        with pytest.raises(ValueError, match=message):
            VerificationAnswers.create(**arguments)


def test_log_sure_by_start_and_probability_all_right_match_their_sums():
    from learning.core.verification import log_sure_by_start, probability_all_right

    rng = np.random.default_rng(5)
    probs = rng.dirichlet(np.ones(4), size=7)
    sure = log_sure_by_start(probs, 3)
    expected = [np.log(probs[s : s + 3].max(axis=1)).sum() for s in range(5)]
    np.testing.assert_allclose(sure, expected)
    windows = np.array([[0, 1, 2], [4, 5, -1]])
    shown = np.array([[1, 0, 3], [2, 2, 0]])
    np.testing.assert_allclose(
        probability_all_right(probs, windows, shown),
        [probs[0, 1] * probs[1, 0] * probs[2, 3], probs[4, 2] * probs[5, 2]],
    )
