import numpy as np
import pytest

from learning.core.posterior import brute_force_posteriors, window_posteriors


def _random_case(rng, n_tags, max_window, subset):
    w = int(rng.integers(1, max_window + 1))
    probs = rng.dirichlet(np.full(n_tags, 0.8), size=w)
    truth = rng.integers(0, n_tags, size=w)
    mask = np.ones(n_tags, dtype=bool)
    if subset:
        mask[:] = False
        mask[rng.choice(n_tags, size=int(rng.integers(1, n_tags)), replace=False)] = True
    counts = np.bincount(truth, minlength=n_tags) * mask
    return probs, mask, counts


@pytest.mark.parametrize("subset", [False, True], ids=["all-tags", "subset-B"])
def test_exact_posteriors_equal_brute_force(subset):
    rng = np.random.default_rng(11 if subset else 12)
    n_tags, max_window = 4, 5
    cases = [_random_case(rng, n_tags, max_window, subset) for _ in range(60)]
    probs = np.zeros((len(cases), max_window, n_tags))
    for i, (p, _, _) in enumerate(cases):
        probs[i, : p.shape[0]] = p
    lengths = np.array([p.shape[0] for p, _, _ in cases])
    masks = np.array([m for _, m, _ in cases])
    counts = np.array([c for _, _, c in cases])
    with np.errstate(invalid="raise", divide="raise", over="raise"):
        result = window_posteriors(probs, lengths, masks, counts)  # all windows in one batch
    assert result.feasible.all()
    for i, (p, m, c) in enumerate(cases):
        expected, z = brute_force_posteriors(p, m, c)
        np.testing.assert_allclose(result.marginals[i, : p.shape[0]], expected, atol=1e-12)
        np.testing.assert_allclose(result.log_z[i], np.log(z), rtol=1e-10)
        assert not result.marginals[i, p.shape[0] :].any()


def test_impossible_counts_are_reported_not_raised():
    probs = np.full((1, 3, 3), 1.0 / 3)
    mask = np.ones((1, 3), dtype=bool)
    counts = np.array([[1, 1, 0]])  # all tags asked but only 2 of 3 tokens counted
    with np.errstate(invalid="raise", divide="raise"):
        result = window_posteriors(probs, np.array([3]), mask, counts)
    assert not result.feasible[0]
    assert result.log_z[0] == -np.inf
    assert not result.marginals.any()


def test_long_windows_stay_finite():
    """Twelve confident-but-wrong tokens: scaled recursions neither underflow nor overflow."""
    w, n_tags = 12, 3
    probs = np.full((1, w, n_tags), 1e-9)
    probs[0, :, 0] = 1 - 2e-9
    counts = np.array([[0, w // 2, w - w // 2]])
    result = window_posteriors(probs, np.array([w]), np.ones((1, n_tags), bool), counts)
    assert result.feasible[0]
    np.testing.assert_allclose(result.marginals[0].sum(axis=1), 1.0)
    np.testing.assert_allclose(result.marginals[0, :, 1], 0.5)
    assert np.isfinite(result.log_z[0])
