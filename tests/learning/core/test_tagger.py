import numpy as np
import pytest
import scipy.sparse as sp

from learning.core.features import FeatureConfig, featurize, word_shape
from learning.core.tagger import LogLinearTagger, soft_label_objective


def test_gradient_matches_finite_differences():
    rng = np.random.default_rng(21)
    x = sp.random(12, 9, density=0.4, random_state=rng, format="csr")
    x.data[:] = 1.0
    q = rng.random((12, 4)) * (rng.random((12, 4)) < 0.6)
    params = rng.normal(size=9 * 4 + 4)
    xt = x.T.tocsr()
    with np.errstate(invalid="raise", over="raise", divide="raise"):
        value, grad = soft_label_objective(params, x, xt, q, 0.7)
        numeric = np.empty_like(params)
        h = 1e-6
        for i in range(params.shape[0]):
            step = np.zeros_like(params)
            step[i] = h
            numeric[i] = (
                soft_label_objective(params + step, x, xt, q, 0.7)[0]
                - soft_label_objective(params - step, x, xt, q, 0.7)[0]
            ) / (2 * h)
    assert np.isfinite(value)
    np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-6)


def test_objective_is_soft_label_log_likelihood():
    """With one type and one-hot labels the value is −Σ log p + α/2‖W‖²."""
    x = sp.csr_matrix(np.array([[1.0, 0.0], [0.0, 1.0]]))
    q = np.array([[2.0, 0.0], [0.0, 1.0]])
    w = np.array([[0.5, -0.5], [0.1, 0.2]])
    c = np.array([0.3, -0.3])
    value, _ = soft_label_objective(np.concatenate([w.ravel(), c]), x, x.T.tocsr(), q, 2.0)
    scores = x.toarray() @ w + c
    log_p = scores - np.log(np.exp(scores).sum(axis=1, keepdims=True))
    expected = -(q * log_p).sum() + (w**2).sum()
    assert value == pytest.approx(expected)


def test_fit_learns_suffixes_and_generalises_to_unseen_words():
    forms = ["walking", "talking", "running", "dog", "cat", "house", "the", "a"]
    tags = ["VERB", "VERB", "VERB", "NOUN", "NOUN", "NOUN", "DET", "DET"]
    tagset = ["DET", "NOUN", "VERB"]
    soft = np.zeros((len(forms), 3))
    soft[np.arange(len(forms)), [tagset.index(t) for t in tags]] = 5.0
    config = FeatureConfig(n_features=2**12)
    with np.errstate(invalid="raise"):
        tagger = LogLinearTagger(alpha=0.5, features=config).fit(forms, soft, tagset)
    assert tagger.predict([["jumping", "the"]]) == [["VERB", "DET"]]
    proba = tagger.predict_proba(["jumping", "jumping", "zzz"])
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_array_equal(proba[0], proba[1])
    # Warm start from itself converges at once to the same optimum.
    again = LogLinearTagger(alpha=0.5, features=config).fit(forms, soft, tagset, warm_start=tagger)
    assert again.n_iter_ <= 2
    np.testing.assert_allclose(again.coef_, tagger.coef_, atol=1e-4)


def test_warm_start_with_other_features_is_refused():
    forms, soft = ["a", "b"], np.array([[1.0, 0.0], [0.0, 1.0]])
    first = LogLinearTagger(features=FeatureConfig(n_features=64)).fit(forms, soft, ["X", "Y"])
    with pytest.raises(ValueError, match="different feature configuration"):
        LogLinearTagger(features=FeatureConfig(n_features=128)).fit(
            forms, soft, ["X", "Y"], warm_start=first
        )


def test_features_are_stable_hashes():
    config = FeatureConfig(n_features=2**10)
    a = featurize(["Running", "running"], config)
    b = featurize(["Running", "running"], config)
    assert (a != b).nnz == 0
    assert word_shape("McDonald's-2") == "XxXx'x-d"


def test_fit_reaches_the_optimum_of_a_reference_solver():
    """Same minimum as scipy's L-BFGS-B run to a tight tolerance on the same objective, and the
    in-place objective agrees with a dense evaluation."""
    from scipy.optimize import minimize

    rng = np.random.default_rng(5)
    forms = [f"w{i}{'ing' if i % 3 == 0 else 'ed' if i % 3 == 1 else ''}" for i in range(60)]
    soft = rng.random((60, 4)) * (rng.random((60, 4)) < 0.5) * 3.0
    soft[soft.sum(axis=1) == 0, 0] = 1.0
    config = FeatureConfig(n_features=2**9)
    tagset = ["A", "B", "C", "D"]
    ours = LogLinearTagger(alpha=0.3, features=config, tol=1e-10, ftol=0.0, max_iter=5000)
    ours.fit(forms, soft, tagset)
    x = featurize(forms, config)
    active = np.flatnonzero(np.diff(x.tocsc().indptr))
    xa = x[:, active].tocsr()
    # Dense reference of the objective at our solution.
    scores = xa.toarray() @ ours.coef_[active] + ours.intercept_
    log_p = scores - np.log(np.exp(scores).sum(axis=1, keepdims=True))
    dense = -(soft * log_p).sum() + 0.15 * (ours.coef_**2).sum()
    assert ours.objective_ == pytest.approx(dense, rel=1e-10)
    reference = minimize(
        lambda p: soft_label_objective(p, xa, None, soft, 0.3),
        np.zeros(active.shape[0] * 4 + 4),
        jac=True,
        method="L-BFGS-B",
        options={"gtol": 1e-10, "ftol": 0.0, "maxiter": 10000, "maxcor": 20},
    )
    assert ours.objective_ <= reference.fun + 1e-8 * abs(reference.fun)
    np.testing.assert_allclose(ours.coef_[active], reference.x[:-4].reshape(-1, 4), atol=1e-5)
    # The intercept is unpenalized, so it is determined up to a common shift of all tags.
    shift = ours.intercept_ - reference.x[-4:]
    np.testing.assert_allclose(shift, shift.mean(), atol=1e-5)
