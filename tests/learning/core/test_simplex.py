import numpy as np

from learning.core.simplex import project_rows_to_simplex


def _bisection_projection(v):
    low, high = v.min() - 1.0, v.max()
    for _ in range(200):
        tau = 0.5 * (low + high)
        if np.maximum(v - tau, 0).sum() > 1:
            low = tau
        else:
            high = tau
    return np.maximum(v - 0.5 * (low + high), 0)


def test_projection_matches_bisection_and_lies_on_simplex():
    rng = np.random.default_rng(0)
    v = rng.normal(scale=2.0, size=(200, 7))
    original = v.copy()
    with np.errstate(invalid="raise"):
        p = project_rows_to_simplex(v)
    np.testing.assert_array_equal(v, original)
    assert np.all(p >= 0)
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    expected = np.array([_bisection_projection(row) for row in v])
    np.testing.assert_allclose(p, expected, atol=1e-9)


def test_points_on_the_simplex_are_fixed():
    rng = np.random.default_rng(1)
    p = rng.dirichlet(np.ones(5), size=20)
    np.testing.assert_allclose(project_rows_to_simplex(p), p, atol=1e-12)
