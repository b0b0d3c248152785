import numpy as np
import scipy.sparse as sp

from learning.core.design import design_matrix, encode_corpus
from learning.core.solver import select_ridge, solve_word_tag_probs, tag_prior
from learning.experiments.simulate import simulate_crowd
from tests.support.synthetic import make_corpus


def _solve(n_sentences, seed, tags_per_task=None, ridge=1e-2):
    rng = np.random.default_rng(seed)
    sentences, gold, w_star, _ = make_corpus(rng, n_sentences=n_sentences)
    crowd = simulate_crowd(
        gold, 4, window=4, obs_per_sentence=2, tags_per_task=tags_per_task, random_state=seed
    )
    corpus = encode_corpus(sentences)
    obs = crowd.observations
    a = design_matrix(corpus, obs)
    solution = solve_word_tag_probs(a, obs.counts, obs.tag_mask * 1.0, obs.length, ridge)
    truth = w_star[[int(form[1:]) for form in corpus.vocabulary]]
    return solution, truth, a, obs


def test_word_tag_estimates_are_consistent():
    """ŵ → w* as observations grow (frequency-weighted error, all tags and tag subsets)."""
    with np.errstate(invalid="raise", divide="raise"):
        for tags_per_task in (None, 2):
            errors = []
            for n in (200, 2000, 20000):
                solution, truth, a, _ = _solve(n, seed=3, tags_per_task=tags_per_task)
                weight = np.asarray(a.sum(axis=0)).ravel()
                error = np.abs(solution.probs - truth).sum(axis=1)
                errors.append(float((weight * error).sum() / weight.sum()))
            assert errors[0] > errors[1] > errors[2], errors
            assert errors[2] < 0.1, errors


def test_rows_are_projected_onto_simplex():
    solution, _, _, _ = _solve(300, seed=4, tags_per_task=2)
    assert np.all(solution.probs >= 0)
    np.testing.assert_allclose(solution.probs.sum(axis=1), 1.0)


def test_batched_cg_matches_dense_normal_equations():
    rng = np.random.default_rng(5)
    n, v, k = 60, 15, 3
    a = sp.random(n, v, density=0.3, random_state=rng, format="csr")
    a.data = np.ceil(a.data * 3)
    counts = rng.integers(0, 3, size=(n, k)).astype(float)
    weights = rng.random((n, k)) * (rng.random((n, k)) < 0.7)
    length = np.asarray(a.sum(axis=1)).ravel()
    ridge = 0.3
    solution = solve_word_tag_probs(a, counts, weights, length, ridge, tol=1e-12)
    prior = tag_prior(counts, weights, length)
    dense = a.toarray()
    for b in range(k):
        d = np.diag(weights[:, b])
        lhs = dense.T @ d @ dense + ridge * np.eye(v)
        rhs = dense.T @ d @ (counts[:, b] - length * prior[b])
        expected = np.linalg.solve(lhs, rhs) + prior[b]
        np.testing.assert_allclose(solution.raw[:, b], expected, atol=1e-8)
    assert solution.converged


def test_ridge_selection_uses_only_observations():
    rng = np.random.default_rng(6)
    _, _, a, obs = _solve(1000, seed=6)
    best, errors = select_ridge(
        a, obs.counts, obs.tag_mask * 1.0, obs.length, (1e-2, 1.0, 100.0), rng=rng
    )
    assert set(errors) == {1e-2, 1.0, 100.0}
    assert errors[best] == min(errors.values())
    assert best < 100.0  # heavy shrinkage toward the tag rates predicts counts worse


def test_ridge_selection_error_is_weighted_held_out_squared_error():
    """Regression (λ chosen by mean absolute error, too small on EWT): the criterion is the
    ridge problem's own loss, ``Σ D (A_out ŵ − N_out)² / Σ D`` over the held-out rows."""
    rng = np.random.default_rng(7)
    _, _, a, obs = _solve(600, seed=7, tags_per_task=2)
    weights = obs.tag_mask * rng.uniform(0.2, 1.0, size=(len(obs), 1))
    holdout = rng.random(len(obs)) < 0.2
    with np.errstate(invalid="raise", divide="raise"):
        for ridge in (1e-2, 1.0):
            _, errors = select_ridge(a, obs.counts, weights, obs.length, (ridge,), holdout=holdout)
            fitted = solve_word_tag_probs(
                a[~holdout],
                obs.counts[~holdout],
                weights[~holdout],
                obs.length[~holdout],
                ridge,
                tol=1e-4,
                max_iter=500,
            )
            residual = a[holdout] @ fitted.probs - obs.counts[holdout]
            w_out = weights[holdout]
            expected = (w_out * residual**2).sum() / w_out.sum()
            np.testing.assert_allclose(errors[ridge], expected, rtol=1e-10)
            absolute = (w_out * np.abs(residual)).sum() / w_out.sum()
            assert abs(errors[ridge] - absolute) > 1e-3 * absolute


def test_a_warm_start_worse_than_none_is_dropped_column_by_column():
    """Regression: a tag asked but never counted (its rate 0) has a right-hand side of exactly
    0. Warm-started from a solution in which it had a rate, CG chased a tolerance of 1e-305
    through all its iterations and drifted in floating point; in a small demo project's retrain
    it reached NaN, and the retrain failed on non-finite soft counts."""
    solution, _, a, obs = _solve(300, seed=5, tags_per_task=2)
    counts = obs.counts.copy()
    counts[:, 1] = 0  # tag 1 is asked but nobody ever sees it any more
    weights = obs.tag_mask * 1.0
    with np.errstate(invalid="raise", divide="raise", over="raise"):
        again = solve_word_tag_probs(
            a, counts, weights, obs.length, 1e-2, x0=solution.raw, max_iter=300
        )
    assert again.converged
    np.testing.assert_allclose(again.raw[:, 1], 0.0, atol=1e-9)  # its prior, 0, exactly
    fresh = solve_word_tag_probs(a, counts, weights, obs.length, 1e-2, max_iter=300)
    np.testing.assert_allclose(again.raw, fresh.raw, atol=1e-3)
