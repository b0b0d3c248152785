import numpy as np
import pytest
import scipy.sparse as sp

from learning.core.training import TrainingSet
from learning.experiments.agm import (
    AdversarialGame,
    adversarial_decisions,
    fit_adversarial,
    game_value_lp,
)
from tests.support.synthetic import random_cost


@pytest.mark.parametrize("seed", range(4))
def test_the_linear_programs_value_is_the_games(seed):
    """Brute force on the LP's own strategies: neither player gains by a pure deviation."""
    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, 7))
    cost, psi = random_cost(rng, k), rng.normal(size=k)
    value, predictor, adversary = game_value_lp(psi, cost)
    payoff = cost.T + psi[None, :]  # [given, true]: what the predictor pays
    assert predictor @ payoff @ adversary == pytest.approx(value, abs=1e-7)
    assert (payoff.T @ predictor).max() == pytest.approx(value, abs=1e-7)  # adversary's best
    assert (payoff @ adversary).min() == pytest.approx(value, abs=1e-7)  # predictor's best


@pytest.mark.parametrize("k", [2, 3, 5, 17])
def test_the_smoothed_games_value_brackets_the_linear_programs(k):
    rng = np.random.default_rng(k)
    cost, psi = random_cost(rng, k), rng.normal(size=(60, k))
    exact = np.array([game_value_lp(p, cost)[0] for p in psi])
    gaps = []
    for tau in (0.1, 0.02):
        with np.errstate(invalid="raise"):
            value, adversary = AdversarialGame(cost, tau, n_iter=1500).solve(psi)
        assert np.all(value >= exact - 1e-9)
        assert np.all(value <= exact + tau * np.log(k) + 1e-9)
        np.testing.assert_allclose(adversary.sum(axis=1), 1.0)
        gaps.append(np.abs(value - exact).max())
    # Smoothing vanishing, the value goes to the linear program's.
    assert gaps[1] < gaps[0] and gaps[1] < 0.04


def test_zero_one_games_closed_form():
    """For the 0/1 matrix the value is max over tag sets S of (Σ_S ψ + |S| − 1) / |S|
    (Fathony et al., 2016): the linear program agrees."""
    rng = np.random.default_rng(9)
    k = 5
    for psi in rng.normal(size=(20, k)):
        ranked = np.sort(psi)[::-1]
        closed = max((ranked[:s].sum() + s - 1) / s for s in range(1, k + 1))
        assert game_value_lp(psi, 1 - np.eye(k))[0] == pytest.approx(closed, abs=1e-8)


@pytest.mark.parametrize("matrix", ["zero-one", "ordinal"])
def test_fisher_consistency_on_synthetic_data(matrix):
    """One-hot features (the richest), soft labels from a known P(y | x): the adversarial
    predictor's decisions are the Bayes decisions of P under the cost."""
    rng = np.random.default_rng(1)
    m, k = 40, 4
    truth = rng.dirichlet(np.ones(k), size=m)
    if matrix == "zero-one":
        cost = 1 - np.eye(k)
    else:
        cost = np.abs(np.subtract.outer(np.arange(k), np.arange(k))).astype(float)
    risk = truth @ cost
    x = sp.identity(m, format="csr")
    w, c, info = fit_adversarial(x, 100 * truth, cost, alpha=1e-4, tau=0.02, max_iter=300,
                                 inner_iter=50)  # fmt: skip
    decided = adversarial_decisions(np.asarray(x @ w) + c, cost, 0.02, 500)
    excess = risk[np.arange(m), decided] - risk.min(axis=1)
    # The Bayes decision wherever it is clear; near ties (the smoothing's scale) may go
    # either way at a negligible excess risk.
    ranked = np.sort(risk, axis=1)
    clear = ranked[:, 1] - ranked[:, 0] > 0.05
    assert clear.sum() > 30
    np.testing.assert_array_equal(decided[clear], risk.argmin(axis=1)[clear])
    assert excess.max() < 0.01


def test_outer_gradient_matches_finite_differences():
    rng = np.random.default_rng(4)
    k, n, d = 3, 30, 6
    x = sp.csr_matrix(rng.random((n, d)) * (rng.random((n, d)) < 0.5))
    q = rng.dirichlet(np.ones(k), size=n) * rng.uniform(0.5, 1.5, size=(n, 1))
    cost = random_cost(rng, k)
    game = AdversarialGame(cost, 0.2, n_iter=3000)

    def objective(flat):
        w, c = flat[: d * k].reshape(d, k), flat[d * k :]
        psi = np.asarray(x @ w) + c
        game.predictor = None  # a fresh, converged solve at every point
        value, adversary = game.solve(psi)
        g = q.sum(axis=1)[:, None] * adversary - q
        return q.sum(axis=1) @ value - (psi * q).sum(), np.r_[(x.T @ g).ravel(), g.sum(axis=0)]

    point = rng.normal(size=d * k + k) * 0.3
    _, grad = objective(point)
    h = 1e-5
    for i in rng.choice(point.size, 6, replace=False):
        step = np.zeros_like(point)
        step[i] = h
        numeric = (objective(point + step)[0] - objective(point - step)[0]) / (2 * h)
        assert grad[i] == pytest.approx(numeric, rel=1e-3, abs=1e-4)


def test_an_adversarial_model_is_fitted_beside_the_served_one_outside_it():
    from learning.core import CountTagger, FeatureConfig
    from learning.experiments.agm import adversarial_for
    from learning.experiments.simulate import simulate_crowd
    from tests.support.synthetic import make_corpus

    rng = np.random.default_rng(5)
    sentences, gold, _, tagset = make_corpus(rng, n_sentences=600, n_words=40)
    crowd = simulate_crowd(gold, 4, window=4, random_state=1)
    cost = np.abs(np.subtract.outer(np.arange(4), np.arange(4))).astype(float)
    params = {"features": FeatureConfig(2**12), "random_state": 0}
    data = TrainingSet(sentences, crowd.observations, tagset)
    model = CountTagger(**params).fit(data)
    assert "agm_cost" not in model.get_params()  # the served estimator knows nothing of it
    adversarial = adversarial_for(model, data, cost)
    decided = adversarial.decide(sentences)
    flat = np.concatenate(gold)
    # Stopped at its iteration limit, the adversary matches the moments to within 0.3-1.6 %
    # of the mass (over five seeds of the fit); after one iteration it is off by 19 %.
    assert decided.shape == flat.shape and adversarial.info_["moment_gap"] < 0.02
    bayes = (model.token_proba(sentences) @ cost).argmin(axis=1)
    agm_cost, bayes_cost = cost[flat, decided].mean(), cost[flat, bayes].mean()
    assert agm_cost < 1.2 * bayes_cost  # of the same order: it learned the same answers
