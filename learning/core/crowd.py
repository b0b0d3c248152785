"""Annotator reliability from count residuals (Dawid–Skene-style weighting for counts).

For observation ``i`` by annotator ``a`` and asked tag ``b``, compare the answer ``N_ib`` with the
model's expected count ``μ_ib = Σ_{j∈r_i} p_j(b)`` (or the true count on gold tasks). Modelling
the answer as the true count plus annotator noise of variance ``σ_a²``,

    E[(N_ib − μ_ib)²] = v_ib + σ_a²,      v_ib = Σ_{j∈r_i} p_j(b)(1 − p_j(b))   (0 on gold),

so ``σ_a² = max(0, mean(r² − v))``, shrunk toward the crowd's median ``σ_ref²`` by the
smaller of two factors: a few pseudo-entries, ``n_a / (n_a + n_0)``, and the empirical-Bayes factor
``T² / (T² + s_a²)``, where ``s_a²`` is the sampling variance of annotator ``a``'s mean excess and
``T²`` the spread of the true noise between the trusted annotators beyond their sampling variance
(``var(means) − mean(s²)``, at least 0). Without it, a crowd that answers alike but through a
noisy channel (a privacy mechanism's releases, :mod:`.privacy`) reads its sampling error as
annotator noise: at α = 3 (k-ary randomized response, window 5, one tag per task) honest
annotators' weights spread down to 0.17, and taking the sampling error out raised the refined
accuracy on EWT / Sequoia / Alpino from 88.0 / 85.4 / 69.4 % to 88.3 / 86.3 / 70.9 %.
Weights ``ω_a = min(1, (τ² + σ_ref²) / (τ² + σ_a²))``, with ``τ²`` the mean model variance, enter
the least squares rows and temper the annotator's evidence in EM.

The manager-facing score is the *skill* ``1 − Σ r² / Σ E[(U − μ)²]``, where ``U`` is the answer
of a chance annotator who picks a valid count vector uniformly at random (for ``m`` categories —
the asked tags, plus "other" unless all tags were asked — ``U_b`` is Dirichlet-multinomial with
``n = w``, ``α = 1``: mean ``w/m``, variance ``w (1/m)(1 − 1/m)(w + m)/(m + 1)``). Skill is 1 for
answers that match the model perfectly and about 0 for chance; annotators with at least
``min_observations`` answers and skill below ``flag_threshold`` are flagged and get weight 0.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .copying import ModelFollowing

__all__ = [
    "Reliability",
    "ReliabilitySums",
    "chance_squared_error",
    "estimate_reliability",
    "reliability_from_sums",
    "reliability_sums",
]


@dataclass(frozen=True)
class Reliability:
    """Per-annotator estimates, aligned with ``annotators`` (sorted unique ids)."""

    annotators: np.ndarray
    n_observations: np.ndarray
    noise_variance: np.ndarray
    skill: np.ndarray
    weight: np.ndarray
    flagged: np.ndarray
    following: ModelFollowing | None = None  # how their answers agree with the served model
    follows_model: np.ndarray | None = None  # flagged for giving back the served model's answers

    def with_following(self, following: ModelFollowing, follows: np.ndarray) -> Reliability:
        """These estimates with the annotators who follow the served model (``follows``, one per
        row of ``following``: :mod:`.copying`) flagged and weighed 0."""
        mine = np.isin(self.annotators, following.annotators[follows])
        return replace(
            self,
            following=following,
            follows_model=mine,
            flagged=self.flagged | mine,
            weight=np.where(mine, 0.0, self.weight),
        )

    def observation_weights(self, annotator: np.ndarray) -> np.ndarray:
        """ω of each observation's annotator (annotators not estimated get weight 1)."""
        position = np.searchsorted(self.annotators, annotator)
        position = np.clip(position, 0, max(len(self.annotators) - 1, 0))
        known = (
            self.annotators[position] == annotator
            if len(self.annotators)
            else np.zeros(len(annotator), bool)
        )
        return np.where(known, self.weight[position] if len(self.annotators) else 1.0, 1.0)

    def as_dict(self) -> dict[int, dict]:
        """JSON-friendly ``{annotator id: {n_observations, noise_variance, skill, weight,
        flagged, follows_model, model_agreement}}``; ``model_agreement`` is None, or
        ``{entries, agreed, expected}`` (shares) when their answers were tested against the
        served model (:mod:`.copying`)."""
        follows = (
            self.follows_model
            if self.follows_model is not None
            else np.zeros(len(self.annotators), dtype=bool)
        )
        agreement: dict[int, dict] = {}
        if self.following is not None:
            agreed, expected = self.following.rates()
            for a, n, k, e in zip(
                self.following.annotators, self.following.entries, agreed, expected, strict=True
            ):
                if n:
                    agreement[int(a)] = {
                        "entries": int(n),
                        "agreed": float(k),
                        "expected": float(e),
                    }
        return {
            int(a): {
                "n_observations": int(n),
                "noise_variance": float(s),
                "skill": float(k),
                "weight": float(w),
                "flagged": bool(f),
                "follows_model": bool(c),
                "model_agreement": agreement.get(int(a)),
            }
            for a, n, s, k, w, f, c in zip(
                self.annotators,
                self.n_observations,
                self.noise_variance,
                self.skill,
                self.weight,
                self.flagged,
                follows,
                strict=True,
            )
        }


def chance_squared_error(
    length: np.ndarray, tag_mask: np.ndarray, expected: np.ndarray
) -> np.ndarray:
    """``E[(U_b − μ_b)²]`` (n, K) for a uniformly random valid answer ``U`` (zero off ``B``)."""
    n_tags = tag_mask.shape[1]
    asked = tag_mask.sum(axis=1)
    m = np.where(asked == n_tags, asked, asked + 1).astype(np.float64)
    w = length.astype(np.float64)
    mean = w / m
    variance = w * (1.0 / m) * (1.0 - 1.0 / m) * (w + m) / (m + 1.0)
    return np.where(tag_mask, variance[:, None] + (mean[:, None] - expected) ** 2, 0.0)


@dataclass(frozen=True)
class ReliabilitySums:
    """Per-annotator sums of the count residuals, all that :func:`reliability_from_sums` reads:
    they add across blocks of answers, so an online learner keeps them instead of the answers.

    ``entries`` (asked tags answered), ``excess`` (Σ r² − v), ``excess_squared`` (Σ (r² − v)²),
    ``squared`` (Σ r²), ``chance`` (Σ of the chance annotator's squared error), ``n_observations``
    (answers), ``variance`` and ``mass``: the crowd's Σ v and Σ entries, for ``τ²``. Rows follow
    ``annotators``."""

    annotators: np.ndarray
    entries: np.ndarray
    excess: np.ndarray
    excess_squared: np.ndarray
    squared: np.ndarray
    chance: np.ndarray
    n_observations: np.ndarray
    variance: float
    mass: float


def reliability_sums(
    annotator: np.ndarray,
    tag_mask: np.ndarray,
    counts: np.ndarray,
    length: np.ndarray,
    expected: np.ndarray,
    variance: np.ndarray,
    *,
    known_noise: np.ndarray | None = None,
) -> ReliabilitySums:
    """The sums of :class:`ReliabilitySums` of some answers (arguments as
    :func:`estimate_reliability`)."""
    annotators, which = np.unique(annotator, return_inverse=True)
    which = which.ravel()
    n_annotators = annotators.shape[0]
    mask = tag_mask.astype(np.float64)
    squared = mask * (counts - expected) ** 2
    if known_noise is not None:
        squared = squared - mask * known_noise
    chance = chance_squared_error(length, tag_mask, expected)

    def per_annotator(values: np.ndarray) -> np.ndarray:
        return np.bincount(which, weights=values.sum(axis=1), minlength=n_annotators)

    excess_entries = squared - mask * variance
    return ReliabilitySums(
        annotators=annotators,
        entries=per_annotator(mask),
        excess=per_annotator(excess_entries),
        excess_squared=per_annotator(excess_entries**2),
        squared=per_annotator(squared),
        chance=per_annotator(chance),
        n_observations=np.bincount(which, minlength=n_annotators),
        variance=float((mask * variance).sum()),
        mass=float(mask.sum()),
    )


def estimate_reliability(
    annotator: np.ndarray,
    tag_mask: np.ndarray,
    counts: np.ndarray,
    length: np.ndarray,
    expected: np.ndarray,
    variance: np.ndarray,
    *,
    flag_threshold: float = 0.5,
    min_observations: int = 10,
    prior_entries: float = 10.0,
    known_noise: np.ndarray | None = None,
) -> Reliability:
    """Estimate every annotator's noise, skill and weight from ``(n, K)`` expected counts and
    model variances of their observations (see the module docstring). ``known_noise`` (n, K):
    variance every answer carries whoever gives it (a privacy mechanism's, :mod:`.privacy`): it
    is taken out of the residuals, so the skill and the flag keep their meaning."""
    sums = reliability_sums(
        annotator, tag_mask, counts, length, expected, variance, known_noise=known_noise
    )
    return reliability_from_sums(
        sums,
        flag_threshold=flag_threshold,
        min_observations=min_observations,
        prior_entries=prior_entries,
    )


def reliability_from_sums(
    sums: ReliabilitySums,
    *,
    flag_threshold: float = 0.5,
    min_observations: int = 10,
    prior_entries: float = 10.0,
    shared: np.ndarray | None = None,
) -> Reliability:
    """Noise, skill, weight and flag of every row of ``sums`` (see the module docstring).
    ``shared`` (bool per row): rows that pool several annotators (an online learner's hashed
    slots after a collision) say nothing about one annotator: they get the crowd's reference
    noise, weight 1 and no flag, and do not enter the reference."""
    entries, excess, n_obs = sums.entries, sums.excess, sums.n_observations
    shared = np.zeros(len(entries), dtype=bool) if shared is None else np.asarray(shared, bool)
    mean_excess = excess / np.maximum(entries, 1.0)
    raw_noise = np.maximum(mean_excess, 0.0)
    skill = 1.0 - sums.squared / np.maximum(sums.chance, 1e-12)
    flagged = (n_obs >= min_observations) & (skill < flag_threshold) & ~shared
    trusted = ~flagged & ~shared & (n_obs >= min_observations)
    reference = float(np.median(raw_noise[trusted])) if trusted.any() else 0.0
    # Sampling variance of each annotator's mean excess, and the true spread between annotators.
    spread = sums.excess_squared / np.maximum(entries, 1.0) - mean_excess**2
    sampling = np.maximum(spread, 0.0) / np.maximum(entries - 1.0, 1.0)
    between = 0.0
    if trusted.sum() >= 2:
        between = max(0.0, float(np.var(mean_excess[trusted]) - np.mean(sampling[trusted])))
    empirical_bayes = between / np.maximum(between + sampling, 1e-300)
    shrink = np.minimum(entries / (entries + prior_entries), empirical_bayes)
    shrink[shared] = 0.0
    noise = reference + shrink * (raw_noise - reference)
    tau = sums.variance / max(sums.mass, 1.0)
    tau = max(tau, 1e-3)
    weight = np.minimum(1.0, (tau + reference) / (tau + noise))
    weight[flagged] = 0.0
    return Reliability(
        annotators=sums.annotators,
        n_observations=n_obs,
        noise_variance=noise,
        skill=skill,
        weight=weight,
        flagged=flagged,
    )
