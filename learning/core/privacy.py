"""Private projects: count answers released through a local differential privacy mechanism
(the method paper's section 3 and appendix A).

The annotator's phone knows the true count ``N[b]`` of each asked tag ``b`` in the window and
sends only a randomized release ``o[b]``. A mechanism is ``α``-locally differentially private when
any two true answers produce any release with probabilities within a factor ``e^α``. The budget
``α`` is per answer and split evenly across the asked tags (``α / |B|`` each: the releases are
independent, so the ratios multiply). Each mechanism is a known channel ``C[o, N] = P(o | N)`` on
``{0, …, w}`` for a window of ``w`` tokens:

- ``classic`` — the paper's classic randomized response (§3.1): with probability ``ε`` the true
  answer, otherwise the count of the tag among ``w`` uniformly random tags (``Binomial(w, 1/K)``).
  Its guarantee is set by the rarest release, ``ε = (e^a − 1) u_min / (1 + (e^a − 1) u_min)``,
  so ``ε`` shrinks like ``K^{−w}``: the paper's point that it is unusable for structured outputs.
- ``krr`` — k-ary randomized response on the count: the true count with probability
  ``e^a / (e^a + w)``, each other value with ``1 / (e^a + w)``.
- ``geometric`` — the two-sided geometric mechanism clamped to ``{0, …, w}``:
  ``P(o | N) ∝ λ^{|o − N|}`` with ``λ = e^{−a/w}`` (the ends take the mass beyond them), which keeps
  releases near the truth, as counts want.

Learning stays consistent and exact:

- **Moments**: the debiased observation function (the paper's ``β(o)``): the value ``β(o)`` with
  ``Σ_o C[o, N] β(o) = N`` for every ``N``, i.e. ``β = C^{−T} (0, 1, …, w)``, so ``E[β(o) | N] = N``
  and the least squares on ``β`` instead of ``N`` estimates the same ŵ.
- **E-step**: the exact likelihood of the release given the window's tags, a known mixture over
  the true counts, ``P(o | y_r) = Π_{b∈B} C[o_b, N_b(y_r)]``; the posterior of the window's tags
  mixes the exact count posteriors (:mod:`.posterior`) of every possible true count vector,
  weighted by ``C[o, N] · P(N | x)``.
- **Reliability**: the release adds known noise, ``Var[β(o) | N]``; it is taken out of an
  annotator's residuals before they are compared with chance (:func:`.crowd.estimate_reliability`
  ``known_noise``), so spammers are still found, from more answers.
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy.special import comb, logsumexp

from .counts import expected_counts
from .crowd import chance_squared_error
from .observations import Observations
from .posterior import WindowPosteriors, window_posteriors

__all__ = [
    "MECHANISMS",
    "DEFAULT_MECHANISM",
    "MAX_ALPHA",
    "Mechanism",
    "PrivateCountEvidence",
]

MECHANISMS = ("geometric", "krr", "classic")
# Chosen by simulate_crowd (window 5, 1 tag per task, 10 tasks per sentence, α = 3): refined
# accuracy with krr / geometric: EWT 82.8 / 63.2 %, Sequoia 79.6 / 56.6 %, Alpino 62.7 / 31.6 %.
# The geometric mechanism spreads a window's whole range (sensitivity w) over its noise; krr keeps
# the true count with probability e^α / (e^α + w), 0.80 at α = 3 and w = 5.
DEFAULT_MECHANISM = "krr"
# The highest privacy level a project may choose. At α = 8 a krr release already keeps 0.99 of a
# count's information (Mechanism.information_share) and is the true count 998 times in 1,000 for
# a window of 5: above it "private" would promise what the release no longer gives. The phone
# refuses tasks above it too (frontend/static/frontend/js/annotate/privacy.js, MAX_ALPHA).
MAX_ALPHA = 8.0
MAX_PRIVATE_TAGS = 3  # the budget is split across the asked tags; more leaves too little each


@dataclass(frozen=True)
class Mechanism:
    """A local privacy mechanism for count answers: ``name`` (one of :data:`MECHANISMS`), ``alpha``
    the privacy level per answer (ε-LDP with ε = alpha), ``n_tags`` the size of the tag set (the
    classic mechanism draws uniformly random tags)."""

    name: str
    alpha: float
    n_tags: int

    def __post_init__(self) -> None:
        if self.name not in MECHANISMS:
            raise ValueError(f"unknown mechanism {self.name!r}; expected one of {MECHANISMS}")
        if not (np.isfinite(self.alpha) and self.alpha > 0):
            raise ValueError("alpha must be a positive number")
        if self.n_tags < 2:
            raise ValueError("a tag set has at least two tags")

    def channel(self, window: int, n_asked: int) -> np.ndarray:
        """``C[o, N] = P(release o | true count N)`` for one asked tag, (w+1, w+1)."""
        return _channel(self.name, float(self.alpha) / n_asked, int(window), self.n_tags)

    def channel_inverse(self, window: int, n_asked: int) -> np.ndarray:
        """``G = C⁻¹``: ``E[G[n, o] | N] = [N = n]``, an unbiased indicator of each true count
        from one release (gold checks of private answers)."""
        return _channel_inverse(self.name, float(self.alpha) / n_asked, int(window), self.n_tags)

    def debias(self, window: int, n_asked: int) -> np.ndarray:
        """``β(o)`` for ``o = 0..w``: ``E[β(o) | N] = N`` (module docstring)."""
        return _debias(self.name, float(self.alpha) / n_asked, int(window), self.n_tags)

    def noise_variance(self, window: int, n_asked: int) -> np.ndarray:
        """``Var[β(o) | N]`` for ``N = 0..w``: the noise the release adds to a debiased count."""
        c = self.channel(window, n_asked)
        beta = self.debias(window, n_asked)
        return c.T @ beta**2 - np.arange(window + 1) ** 2

    def information_share(self, count_probs: np.ndarray, n_asked: int = 1) -> float:
        """The share of a true count's information that its release keeps, ``I(N; o) / H(N)``,
        for one asked tag whose true counts ``N`` in a window of ``len(count_probs) − 1``
        tokens follow ``count_probs``. An answer worth this share of a plain one: a private
        project needs about its inverse times the answers for the same accuracy."""
        p = np.asarray(count_probs, dtype=np.float64)
        if p.ndim != 1 or p.shape[0] < 2 or (p < 0).any() or not np.isclose(p.sum(), 1.0):
            raise ValueError("count_probs must be a distribution over the counts 0..w")
        entropy = -float((p[p > 0] * np.log(p[p > 0])).sum())
        if entropy == 0.0:
            raise ValueError("a count that never varies carries no information to keep")
        joint = self.channel(p.shape[0] - 1, n_asked) * p[None, :]  # P(o, N)
        independent = joint.sum(axis=1, keepdims=True) * p[None, :]  # P(o) P(N)
        inside = joint > 0
        mutual = float((joint[inside] * np.log(joint[inside] / independent[inside])).sum())
        return mutual / entropy

    def release(
        self, counts: np.ndarray, tag_mask: np.ndarray, length: np.ndarray, rng
    ) -> np.ndarray:
        """Randomize true ``counts`` (n, K) of the asked tags as a phone does (simulations)."""
        rng = np.random.default_rng(rng)
        released = np.zeros_like(counts)
        n_asked = tag_mask.sum(axis=1)
        for i, j in zip(*np.nonzero(tag_mask), strict=True):
            column = self.channel(int(length[i]), int(n_asked[i]))[:, counts[i, j]]
            released[i, j] = rng.choice(column.shape[0], p=column)
        return released

    def released(self, observations: Observations, rng) -> Observations:
        """The same answers as a private project stores them (simulations): each asked tag's
        count randomized by :meth:`release`, windows and annotators kept. A release lies in
        ``0..w`` like the count it replaces, so the observations stay valid."""
        counts = self.release(observations.counts, observations.tag_mask, observations.length, rng)
        return dataclasses.replace(observations, counts=counts)

    def debiased_counts(self, observations: Observations) -> np.ndarray:
        """``β(o)`` of every asked tag's release (n, K), 0 off the asked tags."""
        out = np.zeros(observations.counts.shape)
        n_asked = observations.tag_mask.sum(axis=1)
        for (w, m), rows in _groups(observations.length, n_asked):
            beta = self.debias(w, m)
            block = observations.counts[rows]
            out[rows] = np.where(observations.tag_mask[rows], beta[block], 0.0)
        return out

    def expected_noise(self, observations: Observations, expected: np.ndarray) -> np.ndarray:
        """The release's noise variance of every asked tag (n, K), at the model's expected count
        (interpolated between the integers around it)."""
        out = np.zeros(observations.counts.shape)
        n_asked = observations.tag_mask.sum(axis=1)
        for (w, m), rows in _groups(observations.length, n_asked):
            grid = self.noise_variance(w, m)
            value = np.interp(np.clip(expected[rows], 0, w), np.arange(w + 1), grid)
            out[rows] = np.where(observations.tag_mask[rows], value, 0.0)
        return out

    def min_judged_answers(self, base: int, observations: Observations) -> int:
        """How many answers an annotator needs before their skill is judged: ``base`` answers'
        worth of evidence. A released answer carries the mechanism's noise on top of the
        annotator's, so the skill's spread grows about like ``((chance + noise) / chance)²``,
        with ``chance`` the squared error of a chance annotator and ``noise`` the mechanism's
        variance (averaged over the true counts, at these answers' windows and asked tags)."""
        if len(observations) == 0:
            return base
        n_asked = observations.tag_mask.sum(axis=1)
        m = np.where(n_asked == observations.tag_mask.shape[1], n_asked, n_asked + 1)
        w = observations.length.astype(np.float64)
        chance_mean = np.broadcast_to((w / m)[:, None], observations.tag_mask.shape)
        chance = chance_squared_error(observations.length, observations.tag_mask, chance_mean)
        noise = np.array(
            [self.noise_variance(int(a), int(b)).mean() for a, b in zip(w, n_asked, strict=True)]
        )
        asked = observations.tag_mask.sum()
        mean_chance = chance.sum() / asked
        mean_noise = (noise * n_asked).sum() / asked
        return int(np.ceil(base * ((mean_chance + mean_noise) / mean_chance) ** 2))


def _groups(length: np.ndarray, n_asked: np.ndarray):
    keys = np.stack([length, n_asked], axis=1)
    unique, which = np.unique(keys, axis=0, return_inverse=True)
    for k, (w, m) in enumerate(unique):
        yield (int(w), int(m)), np.flatnonzero(which.ravel() == k)


@lru_cache(maxsize=256)
def _channel(name: str, a: float, w: int, n_tags: int) -> np.ndarray:
    values = np.arange(w + 1)
    if name == "krr":
        c = np.full((w + 1, w + 1), 1.0 / (np.exp(a) + w))
        np.fill_diagonal(c, np.exp(a) / (np.exp(a) + w))
    elif name == "geometric":
        lam = np.exp(-a / max(w, 1))
        c = (1.0 - lam) / (1.0 + lam) * lam ** np.abs(values[:, None] - values[None, :])
        c[0] = lam**values / (1.0 + lam)  # the mass at or below 0
        c[w] = lam ** (w - values) / (1.0 + lam)  # at or above w
    else:  # classic
        p = 1.0 / n_tags
        u = comb(w, values) * p**values * (1.0 - p) ** (w - values)
        grow = np.expm1(a) * u.min()
        eps = grow / (1.0 + grow)
        c = eps * np.eye(w + 1) + (1.0 - eps) * u[:, None]
    c.setflags(write=False)
    return c


@lru_cache(maxsize=256)
def _channel_inverse(name: str, a: float, w: int, n_tags: int) -> np.ndarray:
    inverse = np.linalg.inv(_channel(name, a, w, n_tags))
    inverse.setflags(write=False)
    return inverse


@lru_cache(maxsize=256)
def _debias(name: str, a: float, w: int, n_tags: int) -> np.ndarray:
    beta = np.linalg.solve(_channel(name, a, w, n_tags).T, np.arange(w + 1, dtype=np.float64))
    beta.setflags(write=False)
    return beta


@lru_cache(maxsize=256)
def _candidates(w: int, m: int) -> np.ndarray:
    """Every true count vector of ``m`` asked tags in a window of ``w`` tokens (sum ≤ w)."""
    rows = [c for c in itertools.product(range(w + 1), repeat=m) if sum(c) <= w]
    return np.asarray(rows, dtype=np.int64)


@dataclass(frozen=True)
class PrivateCountEvidence:
    """Released count observations placed on tokens (as :class:`.counts.CountEvidence`), with
    the mechanism that released them: the exact E-step mixes the count posteriors of every
    possible true answer."""

    observations: Observations  # counts hold the releases
    windows: np.ndarray
    mechanism: Mechanism

    def posteriors(self, cavity: np.ndarray, rows: np.ndarray, floor: float) -> WindowPosteriors:
        obs = self.observations
        n, w_max, n_tags = cavity.shape
        marginals = np.zeros(cavity.shape)
        log_z = np.full(n, -np.inf)
        mask = obs.tag_mask[rows]
        n_asked = mask.sum(axis=1)
        for (w, m), local in _groups(obs.length[rows], n_asked):
            channel = self.mechanism.channel(w, m)
            asked = np.nonzero(mask[local])[1].reshape(local.shape[0], m)
            released = np.take_along_axis(obs.counts[rows][local], asked, axis=1)
            terms_z, terms_m = [], []
            for candidate in _candidates(w, m):
                counts = np.zeros((local.shape[0], n_tags), dtype=np.int64)
                np.put_along_axis(counts, asked, candidate[None, :], axis=1)
                result = window_posteriors(
                    cavity[local],
                    obs.length[rows][local],
                    mask[local],
                    counts,
                    floor=floor,
                )
                log_release = np.log(channel[released, candidate[None, :]]).sum(axis=1)
                terms_z.append(log_release + result.log_z)
                terms_m.append(result.marginals)
            stacked = np.stack(terms_z)  # (n_candidates, g)
            total = logsumexp(stacked, axis=0)
            ok = np.isfinite(total)
            share = np.exp(stacked - np.where(ok, total, 0.0)[None, :])
            share[:, ~ok] = 0.0
            marginals[local] = np.einsum("cg,cgwk->gwk", share, np.stack(terms_m))
            log_z[local] = total
        feasible = np.isfinite(log_z)
        return WindowPosteriors(marginals=marginals, log_z=log_z, feasible=feasible)

    def expected_counts(self, token_probs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return expected_counts(token_probs, self.windows)
