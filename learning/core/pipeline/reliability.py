"""Step 4 of a fit: the crowd's reliability, the one estimate answers are weighed by.

Count answerers are judged by their residuals against the model's expected counts
(:func:`..crowd.estimate_reliability`; a privacy mechanism's releases debiased and its known
noise taken out, here and nowhere else), and tested for giving back the served model's
answers (:mod:`..copying`), verification answerers by their Yes / No against the
model's probability that every shown tag is right (:func:`..verification.verification_reliability`).
Every answer is judged, the excluded annotators' too (``Problem.trusted``), but those weigh 0
whatever their estimate. The fit's last estimate is what the retrain policy's annotator table
and flags are made from (:mod:`..policy`).

**Extension point.** A richer annotator model (miss rates, tag confusions) is a setting of
:class:`..settings.CrowdSettings` read by :func:`judge`, which returns its estimate in the same
:class:`CrowdEstimate`; a new kind of answer adds its answerers' estimate beside
``verification``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..crowd import Reliability, estimate_reliability
from ..settings import CrowdSettings
from ..verification import verification_reliability
from .problem import Problem, Stopwatch

__all__ = ["CrowdEstimate", "judge", "reweigh", "unjudged"]


@dataclass(frozen=True)
class CrowdEstimate:
    """The crowd as the fit weighs it: each count answer's weight, the count answerers'
    :class:`..crowd.Reliability` (None before the first estimate or with reliability off), the
    verification answerers' table ``{annotator: {n_observations, skill, yes_rate, flagged}}``
    and each verification answer's weight."""

    weights: np.ndarray
    reliability: Reliability | None
    verification: dict[int, dict]
    verification_weights: np.ndarray


def unjudged(problem: Problem) -> CrowdEstimate:
    """Before any estimate: every trusted answer weighs 1, every excluded one 0."""
    return CrowdEstimate(
        weights=problem.trusted.copy(),
        reliability=None,
        verification={},
        verification_weights=problem.verification_trusted.copy(),
    )


def judge(
    problem: Problem,
    token_probs: np.ndarray,
    crowd: CrowdSettings,
    min_observations: int,
    watch: Stopwatch,
) -> tuple[Reliability, dict[int, dict], np.ndarray]:
    """Every annotator judged against the covered tokens' probabilities ``token_probs``: the
    count answerers' reliability, the verification answerers' table and the verification
    answers' weights (0 when their annotator is flagged or excluded)."""
    tic = watch.start()
    obs = problem.observations
    mean, var = problem.evidence.expected_counts(token_probs)
    noise = None if problem.mechanism is None else problem.mechanism.expected_noise(obs, mean)
    result = estimate_reliability(
        obs.annotator,
        obs.tag_mask,
        problem.moment_counts,
        obs.length,
        mean,
        var,
        known_noise=noise,
        flag_threshold=crowd.flag_threshold,
        min_observations=min_observations,
    )
    if problem.following is not None:  # answers that give back the served model's (copying.py)
        result = result.with_following(problem.following, problem.following.follows())
    table: dict[int, dict] = {}
    weights = problem.verification_trusted
    if problem.verification is not None:
        answers = problem.verification.answers
        table = verification_reliability(
            answers.annotator,
            answers.answer,
            problem.verification.probability_yes(token_probs),
            flag_threshold=crowd.flag_threshold,
            min_observations=min_observations,
        )
        flagged = [a for a, row in table.items() if row["flagged"]]
        weights = np.where(np.isin(answers.annotator, flagged), 0.0, 1.0) * weights
    watch.stop("reliability", tic)
    return result, table, weights


def reweigh(
    problem: Problem,
    token_probs: np.ndarray,
    state: CrowdEstimate,
    crowd: CrowdSettings,
    min_observations: int,
    watch: Stopwatch,
) -> tuple[CrowdEstimate, bool]:
    """The crowd re-estimated against ``token_probs``, and whether ``state`` was kept instead:
    when every count answer would weigh 0, the model (a weak one, on a small project) is what
    the crowd disagrees with, and flagging everyone would leave nothing to learn from and
    nobody to serve."""
    estimate, table, verification_weights = judge(
        problem, token_probs, crowd, min_observations, watch
    )
    weights = estimate.observation_weights(problem.observations.annotator) * problem.trusted
    if len(weights) and not weights.any():
        return state, True
    return CrowdEstimate(weights, estimate, table, verification_weights), False
