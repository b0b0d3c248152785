import numpy as np
import pytest
import scipy.sparse as sp

from learning.core.softmax import compact_columns, soft_label_objective


def test_gradient_matches_finite_differences():
    rng = np.random.default_rng(21)
    x = sp.random(12, 9, density=0.4, random_state=rng, format="csr")
    x.data[:] = 1.0
    q = rng.random((12, 4)) * (rng.random((12, 4)) < 0.6)
    params = rng.normal(size=9 * 4 + 4)
    with np.errstate(invalid="raise", over="raise", divide="raise"):
        value, grad = soft_label_objective(params, x, None, q, 0.7)
        numeric = np.empty_like(params)
        h = 1e-6
        for i in range(params.shape[0]):
            step = np.zeros_like(params)
            step[i] = h
            numeric[i] = (
                soft_label_objective(params + step, x, None, q, 0.7)[0]
                - soft_label_objective(params - step, x, None, q, 0.7)[0]
            ) / (2 * h)
    assert np.isfinite(value)
    np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-6)


def test_objective_is_soft_label_log_likelihood():
    """With one-hot labels the value is −Σ log p + α/2‖W‖²."""
    x = sp.csr_matrix(np.array([[1.0, 0.0], [0.0, 1.0]]))
    q = np.array([[2.0, 0.0], [0.0, 1.0]])
    w = np.array([[0.5, -0.5], [0.1, 0.2]])
    c = np.array([0.3, -0.3])
    value, _ = soft_label_objective(np.concatenate([w.ravel(), c]), x, None, q, 2.0)
    scores = x.toarray() @ w + c
    log_p = scores - np.log(np.exp(scores).sum(axis=1, keepdims=True))
    expected = -(q * log_p).sum() + (w**2).sum()
    assert value == pytest.approx(expected)


def test_compact_columns_keeps_the_products():
    x = sp.csr_matrix(np.array([[0, 1.0, 0, 1.0], [0, 0, 0, 1.0]]))
    compact, active = compact_columns(x)
    np.testing.assert_array_equal(active, [1, 3])
    w = np.arange(8.0).reshape(4, 2)
    np.testing.assert_array_equal(compact @ w[active], x @ w)


def test_single_precision_products_keep_the_gradient():
    """The float32 products the contextual fit uses agree with the double evaluation."""
    from learning.core.softmax import SoftLabelObjective

    rng = np.random.default_rng(8)
    x = sp.random(300, 50, density=0.1, random_state=rng, format="csr")
    x.data[:] = 1.0
    q = rng.random((300, 5)) * (rng.random((300, 5)) < 0.5)
    params = rng.normal(size=50 * 5 + 5)
    value64, grad64 = SoftLabelObjective(x, q, 0.5)(params)
    value32, grad32 = SoftLabelObjective(x, q, 0.5, dtype=np.float32)(params)
    assert value32 == pytest.approx(value64, rel=1e-6)
    np.testing.assert_allclose(grad32, grad64, rtol=1e-4, atol=1e-4 * np.abs(grad64).max())


def test_compact_columns_maps_every_entry_to_its_columns_rank():
    rng = np.random.default_rng(3)
    x = sp.random(200, 5000, density=0.002, random_state=rng, format="csr")
    compact, active = compact_columns(x)
    np.testing.assert_array_equal(active, np.unique(x.indices))
    assert compact.shape == (200, active.shape[0])
    np.testing.assert_array_equal(compact.toarray(), x.toarray()[:, active])


def test_row_blocks_in_threads_give_the_same_value_and_gradient():
    """F and ∇F are sums over rows: cut into blocks evaluated in threads, they are unchanged."""
    from learning.core.softmax import MIN_BLOCK_ROWS, SoftLabelObjective

    rng = np.random.default_rng(9)
    n_rows = 3 * MIN_BLOCK_ROWS + 7
    x = sp.random(n_rows, 40, density=0.1, random_state=rng, format="csr")
    q = rng.random((n_rows, 4)) * (rng.random((n_rows, 4)) < 0.5)
    params = rng.normal(size=40 * 4 + 4)
    one = SoftLabelObjective(x, q, 0.5)
    three = SoftLabelObjective(x, q, 0.5, n_threads=3)
    assert len(one.blocks) == 1 and len(three.blocks) == 3
    assert len(SoftLabelObjective(x[: MIN_BLOCK_ROWS + 1], q[: MIN_BLOCK_ROWS + 1], 0.5,
                                  n_threads=3).blocks) == 1  # fmt: skip
    value1, grad1 = one(params)
    value3, grad3 = three(params)
    assert value3 == pytest.approx(value1, rel=1e-12)
    np.testing.assert_allclose(grad3, grad1, rtol=1e-10, atol=1e-12)


def test_compact_columns_by_frequency_put_the_most_frequent_first():
    rng = np.random.default_rng(4)
    x = sp.random(300, 2000, density=0.004, random_state=rng, format="csr")
    x = x + sp.csr_matrix((np.ones(300), np.full(300, 1999), np.arange(301)), shape=x.shape)
    compact, active = compact_columns(x, by_frequency=True)
    assert active[0] == 1999 and sorted(active) == list(np.unique(x.indices))
    frequency = np.bincount(compact.indices)
    assert (np.diff(frequency) <= 0).all()
    np.testing.assert_array_equal(compact.toarray(), x.toarray()[:, active])


def test_lbfgs_backtracks_to_the_parabolas_minimum_in_one_evaluation():
    from learning.core.softmax import _lbfgs

    # The first step, −g/‖g‖ at length 1, lands 4 times as far past the minimum as it started.
    curvature, start = 20.0, 0.2
    evaluations = []

    def fun(x):
        evaluations.append(float(x[0]))
        return 0.5 * curvature * float(x @ x), curvature * x

    x, value, iterations = _lbfgs(
        fun, np.array([start, 0.0]), memory=5, max_iter=1, gtol=0.0, ftol=0.0, stop_below=None
    )
    # Start, the overshoot, then the exact minimum along the line (halving: two more, past it).
    assert len(evaluations) == 3 and iterations == 1
    np.testing.assert_allclose(x, [0.0, 0.0], atol=1e-12)
    assert value == pytest.approx(0.0, abs=1e-20)


def test_lbfgs_still_minimises_a_function_that_is_not_a_parabola():
    from learning.core.softmax import _lbfgs

    def fun(x):  # Rosenbrock's valley
        a, b = x
        value = (1 - a) ** 2 + 100 * (b - a * a) ** 2
        grad = np.array([-2 * (1 - a) - 400 * a * (b - a * a), 200 * (b - a * a)])
        return value, grad

    x, value, _ = _lbfgs(
        fun, np.array([-1.2, 1.0]), memory=5, max_iter=500, gtol=1e-8, ftol=0.0, stop_below=None
    )
    np.testing.assert_allclose(x, [1.0, 1.0], atol=1e-5)
