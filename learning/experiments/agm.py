"""Adversarial training for a cost matrix (Fathony et al., 2018, "Distributionally robust
graphical models"), for node potentials: the chain's pairwise terms are not used. An experiment
(``simulate_crowd --agm``): the served model does not use it (it did not beat the Bayes decision
under the served probabilities, even from gold tags).

For a token with potentials ``ψ = θᵀφ`` (K,), the predictor ``p̂`` and an adversary ``p̌`` play
the game ``p̂ᵀ Cᵀ p̌ + ψᵀ p̌`` (``C[true, given]`` the manager's cost matrix): the adversary picks
the truth to make the predictor pay, constrained through ``θ`` to match the data's feature
moments. Its value is the K × K linear program

    v(ψ) = min_{p̂ ∈ Δ} max_k (ψ + C p̂)_k = max_{p̌ ∈ Δ} [ψᵀ p̌ + min_j (Cᵀ p̌)_j],

and training minimises ``Σ_t w_t v(ψ_t) − Σ_t ψ_tᵀ q_t + α/2 ‖W‖²`` over ``θ = (W, c)``, with
``q_t`` the soft labels (here: the E-step's token beliefs times their weight ``w_t``). Its
gradient in ``ψ_t`` is ``w_t p̌_t − q_t``: the adversary must match the beliefs' moments. The
prediction is the predictor's equilibrium strategy ``p̂`` (its most likely tag).

The inner game is solved smoothed: ``v_τ(ψ) = min_{p̂ ∈ Δ} τ log Σ_k exp((ψ + C p̂)_k / τ)``,
between ``v`` and ``v + τ log K``, by exponentiated gradient on ``p̂`` for all tokens at once,
warm-started between the outer iterations; :func:`game_value_lp` is the exact linear program
(scipy's ``linprog``), the reference of the tests.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog, minimize

from learning.core.em import expected_labels
from learning.core.pipeline.problem import Models, Stopwatch, build_problem
from learning.core.settings import FeatureSettings
from learning.core.softmax import compact_columns, softmax_rows
from learning.core.training import TrainingSet

__all__ = [
    "AdversarialGame", "AdversarialTagger", "adversarial_for", "fit_adversarial", "game_value_lp",
]  # fmt: skip


def game_value_lp(psi: np.ndarray, cost: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """Exact value of one token's game, with the predictor's and the adversary's equilibrium
    strategies: ``min_{p̂, t} t`` s.t. ``ψ_k + (C p̂)_k ≤ t`` for every ``k``, ``p̂ ∈ Δ``."""
    k = psi.shape[0]
    objective = np.r_[np.zeros(k), 1.0]
    a_ub = np.c_[cost, -np.ones(k)]  # (C p̂)_k − t ≤ −ψ_k
    a_eq = np.r_[np.ones(k), 0.0][None, :]
    result = linprog(objective, A_ub=a_ub, b_ub=-psi, A_eq=a_eq, b_eq=[1.0],
                     bounds=[(0, None)] * k + [(None, None)], method="highs")  # fmt: skip
    if not result.success:
        raise RuntimeError(f"linprog failed: {result.message}")
    adversary = -result.ineqlin.marginals  # the dual of the k constraints
    return float(result.fun), result.x[:k], adversary / adversary.sum()


class AdversarialGame:
    """The smoothed inner games of ``n`` tokens under cost ``cost``, at smoothing ``tau``; keeps
    the predictor strategies between calls (a warm start: potentials change little between
    the outer iterations)."""

    def __init__(self, cost: np.ndarray, tau: float, n_iter: int = 60) -> None:
        self.cost = np.asarray(cost, dtype=np.float64)
        self.tau = float(tau)
        self.n_iter = n_iter
        self.predictor: np.ndarray | None = None
        spread = float(np.abs(self.cost).max()) or 1.0
        self.step = self.tau / spread**2  # 1 / (Lipschitz constant of the smoothed objective)

    def solve(self, psi: np.ndarray, n_iter: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(values (n,), adversary strategies (n, K)); the predictor's in ``self.predictor``."""
        n, k = psi.shape
        if self.predictor is None or self.predictor.shape != psi.shape:
            self.predictor = np.full((n, k), 1.0 / k)
        log_p = np.log(np.maximum(self.predictor, 1e-300))
        # Exponentiated gradient with a mild momentum-free acceleration: the step grows while
        # the value keeps falling (per token), as for a smooth convex function on the simplex.
        step = np.full((n, 1), self.step * 8.0)
        value, adversary = self._value(psi, np.exp(log_p))
        for _ in range(self.n_iter if n_iter is None else n_iter):
            grad = adversary @ self.cost  # ∂/∂p̂ of τ LSE((ψ + C p̂)/τ) = Cᵀ p̌
            trial = log_p - step * grad
            trial -= trial.max(axis=1, keepdims=True)
            trial -= np.log(np.exp(trial).sum(axis=1, keepdims=True))
            new_value, new_adversary = self._value(psi, np.exp(trial))
            better = (new_value <= value)[:, None]
            log_p = np.where(better, trial, log_p)
            value = np.where(better[:, 0], new_value, value)
            adversary = np.where(better, new_adversary, adversary)
            step = np.where(better, step * 1.5, step * 0.3)
        self.predictor = np.exp(log_p)
        return value, adversary

    def _value(self, psi, predictor):
        scores = (psi + predictor @ self.cost.T) / self.tau
        top = scores.max(axis=1)
        value = self.tau * (top + np.log(np.exp(scores - top[:, None]).sum(axis=1)))
        return value, softmax_rows(scores)


def fit_adversarial(
    x: sp.csr_matrix,
    q: np.ndarray,
    cost: np.ndarray,
    *,
    alpha: float,
    tau: float,
    w0: np.ndarray | None = None,
    c0: np.ndarray | None = None,
    max_iter: int = 100,
    inner_iter: int = 30,
) -> tuple[np.ndarray, np.ndarray, dict]:
    """``(W, c, info)`` minimising the adversarial objective above over rows ``x`` (n × d) with
    soft labels ``q`` (n × K; a row's sum is its weight, all-zero rows carry none), by L-BFGS
    from ``(w0, c0)`` (default zero). ``info``: the objective, iterations, and the adversary's
    moment gap ``max_k |Σ_t (w_t p̌_t − q_t)_k| / Σ_t w_t`` (0 at the optimum without penalty)."""
    q = np.asarray(q, dtype=np.float64)
    n_features, k = x.shape[1], q.shape[1]
    weight = q.sum(axis=1)
    keep = weight > 0
    x, active = compact_columns(sp.csr_matrix(x)[keep])
    q, weight = q[keep], weight[keep]
    d = active.shape[0]
    xt = x.T.tocsr()
    game = AdversarialGame(cost, tau, inner_iter)
    w0 = np.zeros((d, k)) if w0 is None else w0[active]
    c0 = np.zeros(k) if c0 is None else c0
    state = {}

    def objective(params):
        w = params[: d * k].reshape(d, k)
        c = params[d * k :]
        psi = np.asarray(x @ w) + c
        # Every evaluation solves from the same start: the objective is then a function of
        # the parameters alone, as the line search needs.
        game.predictor = None
        value, adversary = game.solve(psi)
        g = weight[:, None] * adversary - q
        loss = float(weight @ value - (psi * q).sum() + 0.5 * alpha * (w * w).sum())
        grad_w = np.asarray(xt @ g) + alpha * w
        state["gap"] = np.abs(g.sum(axis=0)).max() / max(weight.sum(), 1.0)
        return loss, np.r_[grad_w.ravel(), g.sum(axis=0)]

    result = minimize(objective, np.r_[w0.ravel(), c0], jac=True, method="L-BFGS-B",
                      options={"maxiter": max_iter, "maxcor": 5})  # fmt: skip
    w = np.zeros((n_features, k))
    w[active] = result.x[: d * k].reshape(d, k)
    c = result.x[d * k :]
    info = {
        "objective": float(result.fun),
        "n_iter": int(result.nit),
        "moment_gap": float(state.get("gap", np.nan)),
        "message": str(result.message),
    }
    return w, c, info


def adversarial_decisions(
    psi: np.ndarray, cost: np.ndarray, tau: float, n_iter: int = 200
) -> np.ndarray:
    """The predictor's most likely tag at the equilibrium of each token's game."""
    if psi.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    game = AdversarialGame(cost, tau, n_iter)
    game.solve(psi)
    return game.predictor.argmax(axis=1)


class AdversarialTagger:
    """A tagger trained adversarially for ``cost`` over the features the served contextual
    model reads (``reader``: that fitted :class:`.context_tagger.ContextTagger`; with a second
    stage, its features include the neighbours' stage-1 tag probabilities). Attributes after
    :meth:`fit`: coef_, intercept_, tagset_, info_."""

    kind = "agm"

    def __init__(self, reader, cost: np.ndarray, *, alpha: float, tau: float = 0.05,
                 max_iter: int = 100, inner_iter: int = 30) -> None:  # fmt: skip
        self.reader = reader
        self.cost = cost
        self.alpha = alpha
        self.tau = tau
        self.max_iter = max_iter
        self.inner_iter = inner_iter

    def fit(self, x: sp.csr_matrix, lengths: np.ndarray, q: np.ndarray, tagset):
        """Fit to soft labels ``q`` of every token of sentences of ``lengths`` whose stage-1
        features are ``x`` (all-zero rows: unlabelled)."""
        self.coef_, self.intercept_, self.info_ = fit_adversarial(
            self.reader.served_features(x, lengths), q, self.cost, alpha=self.alpha,
            tau=self.tau, max_iter=self.max_iter, inner_iter=self.inner_iter,
        )  # fmt: skip
        self.tagset_ = tuple(tagset)
        return self

    def decide(self, sentences) -> np.ndarray:
        """The tag index of every token of ``sentences`` (each read whole)."""
        lengths = np.fromiter((len(s) for s in sentences), dtype=np.int64)
        x = self.reader.served_features(self.reader.featurize(sentences), lengths)
        psi = np.asarray(x @ self.coef_) + self.intercept_
        return adversarial_decisions(psi, self.cost, self.tau)


def adversarial_for(model, data: TrainingSet, cost: np.ndarray) -> AdversarialTagger:
    """The adversarial tagger for ``cost`` beside a fitted contextual
    :class:`learning.core.pipeline.CountTagger` ``model``, fitted to ``data``'s beliefs under
    the served model (one exact E-step, the answers weighed by the fit's crowd estimate) over
    the features the served model reads."""
    served = model.tagger_
    if served.kind != "context":
        raise ValueError("the adversarial model reads a contextual model's features")
    models = Models(
        "context", tuple(data.tagset), served_settings(served), served.word_classes,
        model.schedule_, model.alpha_,
    )  # fmt: skip
    problem = build_problem(data, models, Stopwatch())
    evidence = [problem.evidence]
    weights = [np.ones(len(problem.observations))]
    if model.reliability_ is not None:
        weights = [model.reliability_.observation_weights(problem.observations.annotator)]
    if problem.verification is not None:
        evidence.append(problem.verification)
        weights.append(np.ones(len(problem.verification.answers)))
    probs = models.token_probs(problem, served)
    e_step = expected_labels(probs, evidence, weights, floor=model.schedule_.posterior_floor)
    labels = e_step.beliefs * e_step.token_weight[:, None]
    context = problem.context
    return AdversarialTagger(served, np.asarray(cost, dtype=np.float64),
                             alpha=model.schedule_.context_alpha).fit(
        context.features, context.lengths, context.labels(labels), data.tagset
    )  # fmt: skip


def served_settings(served) -> FeatureSettings:
    """The :class:`learning.core.settings.FeatureSettings` a fitted contextual tagger reads."""
    config = served.feature_config_
    return FeatureSettings(word=config.word, context=config)
