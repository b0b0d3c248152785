"""Forecast what more answers buy: a learning curve fitted to a project's own model versions.

The loss ``L`` (``1 − accuracy``, or the label-free count error as it is) is modelled as an inverse
power law of the number of answers ``n``, ``L(n) = a + b·(n / n_ref)^−c`` with ``a ≥ 0`` (the
loss the project tends to), ``b ≥ 0`` (the curve improves with answers) and ``c`` in
``exponent_range``; ``n_ref`` is the largest fitted ``n``. For a fixed ``c`` the model is linear in
``(a, b)``, so the fit profiles ``c`` over a log-spaced grid: each grid value gets the weight
``prior(c) · exp(−RSS(c) / 2σ²)`` (a log-uniform prior), which keeps every exponent the points
do not rule out. The interval is a parametric bootstrap over that mixture: draw ``c`` by its weight,
redraw the points around its fitted curve with noise ``σ``, refit ``(a, b)``; a predicted metric
adds the noise of one more version. ``σ`` pools a floor with the residuals of the best fit; the
floor adds in quadrature two independent sources: retraining (a version learnt from ``n``
answers moves like an estimate from ``n`` samples, ``answer_noise·√(L(1 − L)/n)`` at the newest
version, at least ``min_noise``) and the binomial noise of an evaluation set of ``n_eval``
items. With two versions every exponent fits exactly and the interval is the prior's spread
(wide, finite); with one version :meth:`LearningCurve.fit` refuses. The experiments behind the
curve and the defaults are in docs/decisions/014-learning-curve-forecast.md.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize_scalar

__all__ = ["Forecast", "LearningCurve"]


@dataclass(frozen=True)
class Forecast:
    """One prediction with its interval: ``low ≤ value ≤ high`` (``high`` may be ``math.inf``
    for answers the plausible curves may never reach)."""

    value: float
    low: float
    high: float


class LearningCurve:
    """Inverse-power-law learning curve with an honest interval.

    Parameters
    ----------
    higher_is_better : bool, default True
        ``True`` for accuracy (a fraction in [0, 1], the curve rises towards at most 1);
        ``False`` for a loss ≥ 0 such as the label-free count error (the curve falls towards ≥ 0).
    level : float, default 0.8
        Coverage of the intervals (central, equal tails).
    random_state : int, numpy Generator or None
        Seeds the bootstrap.
    exponent_range : (float, float), default (0.05, 2.0)
        The exponents ``c`` the fit may use (log-uniform prior); wider than learning curves
        measured in the literature and here, so the prior widens intervals rather than biases them.
    min_noise : float, default 0.003
        The least noise of retraining on more answers (in the metric's units), and the whole of
        it for a loss other than accuracy; ``fit``'s ``n_eval`` adds the evaluation's binomial
        noise to it.
    answer_noise : float, default 0.7
        For accuracy, the noise of retraining as a share of the binomial noise over the newest
        version's answers, ``√(L(1 − L)/n)``: a project of a few hundred answers moves by about a
        point from version to version, one of tens of thousands by a tenth of one (measured on
        simulated campaigns, docs/decisions/014-learning-curve-forecast.md).
    asymptote_scale : float, None or "auto", default "auto"
        Scale of a Gaussian prior ``a ~ N(0, scale²)`` on the loss the curve tends to (None: flat).
        A few early versions cannot tell a near asymptote from a slow exponent; real accuracy
        curves keep improving over the extrapolated range, so for accuracy ("auto": 0.02) the
        prior leans to a small asymptote; a count error tends to the crowd's own noise ("auto":
        flat).
    n_draws : int, default 2000
        Bootstrap draws behind each interval.

    Attributes
    ----------
    params_ : ndarray (a, b, c)
        The least-squares curve, in loss units: ``L(n) = a + b·(n / n_ref_)^−c``.
    n_ref_ : float
        The largest fitted answer count.
    noise_ : float
        σ, the noise of one version's loss.
    exponents_, exponent_weights_ : ndarray
        The exponent grid and the weight each exponent got from the points.
    samples_ : ndarray (n_draws, 3)
        The bootstrap curves ``(a, b, c)`` behind the intervals.
    """

    def __init__(
        self,
        *,
        higher_is_better: bool = True,
        level: float = 0.8,
        random_state: int | np.random.Generator | None = None,
        exponent_range: tuple[float, float] = (0.05, 2.0),
        min_noise: float = 0.003,
        answer_noise: float = 0.7,
        asymptote_scale: float | str | None = "auto",
        n_draws: int = 2000,
    ) -> None:
        self.higher_is_better = higher_is_better
        self.level = level
        self.random_state = random_state
        self.exponent_range = exponent_range
        self.min_noise = min_noise
        self.answer_noise = answer_noise
        self.asymptote_scale = asymptote_scale
        self.n_draws = n_draws

    # ---- fitting --------------------------------------------------------------------------
    def fit(
        self, answers: Sequence[float], metric: Sequence[float], *, n_eval: int | None = None
    ) -> LearningCurve:
        """Fit to versions trained on ``answers[i]`` answers that scored ``metric[i]``.

        ``n_eval``: items the metric was measured on (gold tokens); its binomial noise adds to σ's
        floor.
        Raises ``ValueError`` with fewer than two distinct answer counts.
        """
        n = np.asarray(answers, dtype=np.float64).ravel()
        y = np.asarray(metric, dtype=np.float64).ravel()
        self._check(n, y, n_eval)
        loss = 1.0 - y if self.higher_is_better else y.copy()
        self.n_ref_ = float(n.max())
        x = n / self.n_ref_
        rng = np.random.default_rng(self.random_state)

        exponents = np.geomspace(*self.exponent_range, num=48)
        rss = np.array([_fit_at(x, loss, c, 0.0)[1] for c in exponents])
        self.noise_ = self._noise(loss, rss.min(), n_eval, self.n_ref_)
        # The prior a ~ N(0, asymptote_scale²) is one more row, (σ/scale)·a ≈ 0.
        scale = self.asymptote_scale
        if scale == "auto":
            scale = 0.02 if self.higher_is_better else None
        prior = 0.0 if scale is None else self.noise_ / scale
        basis = [_design(x, c, prior) for c in exponents]
        target = np.append(loss, 0.0)
        fits = [_nonnegative_lstsq(B, target[None, :])[0] for B in basis]
        rss = np.array([np.sum((B @ p - target) ** 2) for B, p in zip(basis, fits, strict=True)])
        log_weight = -(rss - rss.min()) / (2.0 * self.noise_**2)
        weight = np.exp(log_weight - log_weight.max())
        self.exponent_weights_ = weight / weight.sum()
        self.exponents_ = exponents
        self.params_ = _refine_best(x, loss, exponents, rss, prior)  # a, b, c of the best curve

        # Parametric bootstrap: exponent by weight, points redrawn around its curve, (a, b) refit.
        chosen = rng.choice(len(exponents), size=self.n_draws, p=self.exponent_weights_)
        samples = np.empty((self.n_draws, 3))
        for k in np.unique(chosen):
            rows = np.flatnonzero(chosen == k)
            center = basis[k] @ fits[k]
            redrawn = center[None, :] + self.noise_ * rng.standard_normal((len(rows), len(x) + 1))
            ab = _nonnegative_lstsq(basis[k], redrawn)
            samples[rows, 0], samples[rows, 1], samples[rows, 2] = ab[:, 0], ab[:, 1], exponents[k]
        self.samples_ = samples
        self._future_noise = rng.standard_normal(self.n_draws)
        self.n_points_ = len(n)
        return self

    def _check(self, n: np.ndarray, y: np.ndarray, n_eval: int | None) -> None:
        if n.shape != y.shape:
            raise ValueError("answers and metric must have the same length")
        if not (np.all(np.isfinite(n)) and np.all(np.isfinite(y))):
            raise ValueError("answers and metric must be finite numbers")
        if np.any(n <= 0):
            raise ValueError("every version must have been trained on at least one answer")
        if len(np.unique(n)) < 2:
            raise ValueError("a learning curve needs versions at two or more answer counts")
        if self.higher_is_better and np.any((y < 0) | (y > 1)):
            raise ValueError("accuracy must be a fraction between 0 and 1")
        if not self.higher_is_better and np.any(y < 0):
            raise ValueError("a loss such as the count error cannot be negative")
        if n_eval is not None and n_eval < 1:
            raise ValueError("n_eval must be a positive number of evaluated items")
        if not 0 < self.level < 1:
            raise ValueError("level must be strictly between 0 and 1")
        if self.min_noise < 0 or self.answer_noise < 0:
            raise ValueError("min_noise and answer_noise cannot be negative")

    def _noise(
        self, loss: np.ndarray, best_rss: float, n_eval: int | None, answers: float
    ) -> float:
        """σ: the floor, pooled with the best fit's residuals as two pseudo-observations."""
        floor = self.min_noise
        if self.higher_is_better:
            p = float(np.clip(loss[-1], 0.01, 0.99))
            floor = max(floor, self.answer_noise * math.sqrt(p * (1 - p) / answers))
            if n_eval is not None:
                floor = math.hypot(floor, math.sqrt(p * (1 - p) / n_eval))
        prior_dof, dof = 2.0, max(len(loss) - 3, 0)
        return math.sqrt((prior_dof * floor**2 + best_rss) / (prior_dof + dof))

    # ---- predictions ----------------------------------------------------------------------
    def _tails(self) -> tuple[float, float]:
        return (1 - self.level) / 2, (1 + self.level) / 2

    def _to_metric(self, loss: np.ndarray) -> np.ndarray:
        return 1.0 - loss if self.higher_is_better else loss

    def curve(self, answers: float | np.ndarray) -> np.ndarray:
        """Loss of every bootstrap curve at ``answers`` (draws × points), before version noise."""
        x = np.atleast_1d(np.asarray(answers, dtype=np.float64)) / self.n_ref_
        a, b, c = (self.samples_[:, i : i + 1] for i in range(3))
        return a + b * x[None, :] ** -c

    def predict(self, answers: float) -> Forecast:
        """The metric a version trained on ``answers`` answers is expected to score.

        ``value`` is the median curve; the interval also holds that version's own noise."""
        if answers <= 0:
            raise ValueError("answers must be positive")
        loss = self.curve(answers)[:, 0]
        observed = loss + self.noise_ * self._future_noise
        if self.higher_is_better:
            observed = np.minimum(observed, 1.0)  # accuracy ≤ 1
        observed = np.maximum(observed, 0.0)
        lo_q, hi_q = self._tails()
        value = float(self._to_metric(np.median(loss)))
        ends = self._to_metric(np.quantile(observed, [lo_q, hi_q]))
        low, high = float(ends.min()), float(ends.max())
        return Forecast(value=value, low=min(low, value), high=max(high, value))

    def answers_for(self, target: float) -> Forecast | None:
        """Answers at which the curve reaches ``target`` (None if the median curve never does).

        Per bootstrap curve ``n* = n_ref·((L* − a)/b)^(−1/c)``; a curve that never reaches the
        target counts as ``inf``, so ``high`` may be ``math.inf``. Inverts :meth:`predict`'s value.
        """
        goal = 1.0 - target if self.higher_is_better else target
        a, b, c = self.samples_.T
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            needed = self.n_ref_ * ((goal - a) / b) ** (-1.0 / c)
        needed = np.where(goal <= a, np.inf, needed)
        needed = np.where((b <= 0) & (goal > a), 0.0, needed)
        lo_q, hi_q = self._tails()
        value, low, high = np.quantile(needed, [0.5, lo_q, hi_q], method="inverted_cdf")
        if not np.isfinite(value):
            return None
        return Forecast(value=float(value), low=float(low), high=float(high))


def _design(x: np.ndarray, c: float, prior: float) -> np.ndarray:
    """Columns ``1`` and ``x^−c``, and the prior's row ``(prior, 0)`` (0: no prior on ``a``)."""
    return np.vstack([np.column_stack([np.ones_like(x), x**-c]), [prior, 0.0]])


def _fit_at(x: np.ndarray, loss: np.ndarray, c: float, prior: float) -> tuple[np.ndarray, float]:
    """``(a, b)`` at exponent ``c`` and the penalised squared error."""
    basis, target = _design(x, c, prior), np.append(loss, 0.0)
    ab = _nonnegative_lstsq(basis, target[None, :])[0]
    return ab, float(np.sum((basis @ ab - target) ** 2))


def _refine_best(
    x: np.ndarray, loss: np.ndarray, grid: np.ndarray, rss: np.ndarray, prior: float
) -> np.ndarray:
    """``(a, b, c)`` minimising the (penalised) squared error, ``c`` refined between the best grid
    point's neighbours (the profile over ``c`` is one-dimensional: a bounded scalar search)."""

    def profile(c: float) -> tuple[float, np.ndarray]:
        ab, rss_c = _fit_at(x, loss, c, prior)
        return rss_c, ab

    k = int(np.argmin(rss))
    bounds = (grid[max(k - 1, 0)], grid[min(k + 1, len(grid) - 1)])
    c = minimize_scalar(lambda c: profile(c)[0], bounds=bounds, method="bounded").x
    rss_c, ab = profile(c)
    if rss_c > rss[k]:
        c = grid[k]
        ab = profile(c)[1]
    return np.array([ab[0], ab[1], c])


def _nonnegative_lstsq(basis: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Least squares ``targets[i] ≈ basis @ (a, b)`` with ``a, b ≥ 0`` for every row ``i``.

    Two unknowns: the unconstrained solution if feasible, else the better of the two faces
    (``a = 0`` or ``b = 0``), each clipped at 0 — exact for this convex problem."""
    one, z = basis[:, 0], basis[:, 1]
    free = targets @ np.linalg.pinv(basis).T  # rows × 2
    b_only = np.maximum(targets @ z / (z @ z), 0.0)  # a = 0
    a_only = np.maximum(targets @ one / (one @ one), 0.0)  # b = 0
    candidates = [
        free,
        np.column_stack([np.zeros_like(b_only), b_only]),
        np.column_stack([a_only, np.zeros_like(a_only)]),
    ]
    best = np.empty_like(free)
    best_rss = np.full(len(targets), np.inf)
    for ab in candidates:
        feasible = np.all(ab >= -1e-12, axis=1)
        rss = np.sum((ab @ basis.T - targets) ** 2, axis=1)
        better = feasible & (rss < best_rss)
        best[better], best_rss[better] = ab[better], rss[better]
    return np.maximum(best, 0.0)
