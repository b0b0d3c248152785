"""Steps 1–3 of a fit: ŵ by per-tag ridge least squares, the moments, the node-only fit.

1. **solve** — ŵ by per-tag ridge least squares toward the tag rates, λ chosen from a grid by
   held-out answers' squared count error, rows projected onto the simplex (:mod:`..solver`);
2. **moments** — soft counts ``Q[a, b] = n_a ŵ(a, b)`` with ``n_a`` the coverage of type ``a``;
3. **fit** — the node-only tagger on ``Q`` (:mod:`..node_tagger`), warm-started; its α chosen
   by the held-out answers' count error under moment taggers fitted without them.

Each function returns what it learned; nothing is kept between calls.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..counts import expected_counts
from ..design import coverage
from ..node_tagger import NodeTagger
from ..solver import RidgeSolution, select_ridge, soft_counts, solve_word_tag_probs
from .problem import Models, Problem, Stopwatch

__all__ = ["MomentFit", "choose_alpha", "choose_ridge", "fit_moments", "moment_weights"]


@dataclass(frozen=True)
class MomentFit:
    """Steps 1–3 with some answer weights: ŵ (``solution``), the covered types' coverage and
    the node-only tagger fitted to the moments."""

    solution: RidgeSolution
    coverage: np.ndarray
    tagger: NodeTagger


def moment_weights(weights: np.ndarray, drawn: np.ndarray) -> np.ndarray:
    """The moments' weight of each answer: its annotator's, on the uniform draws only. When no
    uniform answer keeps a weight (a small project whose uniform answers all came from
    annotators found doubtful), every answer the trusted annotators gave, rather than none."""
    moment = weights * drawn
    return moment if (moment > 0).any() else weights


def choose_ridge(
    problem: Problem,
    holdout: np.ndarray,
    weights: np.ndarray,
    ridge: float | str,
    grid: Sequence[float],
    watch: Stopwatch,
) -> tuple[float, dict[float, float]]:
    """λ (given, or ``"auto"``: from ``grid`` by the held-out answers' squared count error) and
    the error of each candidate."""
    if ridge != "auto":
        return float(ridge), {}
    tic = watch.start()
    obs = problem.observations
    chosen = select_ridge(
        problem.design,
        problem.moment_counts,
        obs.tag_mask * weights[:, None],
        obs.length,
        grid,
        holdout=holdout,
    )
    watch.stop("solve", tic)
    return chosen


def fit_moments(
    problem: Problem,
    weights: np.ndarray,
    ridge: float,
    solution: RidgeSolution | None,
    warm,
    models: Models,
    watch: Stopwatch,
) -> MomentFit:
    """Steps 1–3 with answer weights ``weights``, ŵ's solver started from ``solution`` and the
    node-only fit from ``warm``."""
    tic = watch.start()
    obs = problem.observations
    solution = solve_word_tag_probs(
        problem.design,
        problem.moment_counts,
        obs.tag_mask * weights[:, None],
        obs.length,
        ridge,
        x0=solution.raw if solution is not None else None,
    )
    watch.stop("solve", tic)
    tic = watch.start()
    n_a, _ = coverage(problem.corpus, obs, weights)
    covered = n_a[problem.covered]
    tagger = models.new(models.schedule.moment_fit_iter, "node").fit_types(
        problem.forms,
        soft_counts(covered, solution.probs),
        models.tagset,
        warm_start=warm,
        x=problem.node_features.x,
    )
    watch.stop("fit", tic)
    return MomentFit(solution=solution, coverage=covered, tagger=tagger)


def choose_alpha(
    problem: Problem, holdout: np.ndarray, ridge: float, models: Models, watch: Stopwatch
) -> tuple[float, dict[float, float]]:
    """α of the log-linear fits: the schedule's, or chosen by the squared count error of the
    held-out answers under moment taggers fitted without them (the excluded annotators'
    answers neither fit nor judge)."""
    schedule = models.schedule
    if schedule.alpha != "auto":
        return float(schedule.alpha), {}
    trusted = problem.trusted > 0
    held = holdout & trusted
    if held.sum() == 0 or held.sum() == trusted.sum():  # nothing to compare on
        return 1.0, {}
    tic = watch.start()
    obs = problem.observations
    keep = ~holdout
    fit_obs = obs.subset(keep)
    weight = problem.trusted[keep]
    solution = solve_word_tag_probs(
        problem.design[keep], problem.moment_counts[keep], fit_obs.tag_mask * weight[:, None],
        fit_obs.length, ridge,
    )  # fmt: skip
    n_a, _ = coverage(problem.corpus, fit_obs, None if weight.all() else weight)
    soft = soft_counts(n_a[problem.covered], solution.probs)
    held_windows = problem.evidence.windows[held]
    errors: dict[float, float] = {}
    tagger = None
    for alpha in sorted(schedule.alpha_grid, reverse=True):
        tagger = NodeTagger(
            alpha=alpha, features=models.features.word, max_iter=schedule.moment_fit_iter
        ).fit_types(problem.forms, soft, models.tagset, warm_start=tagger,
                    x=problem.node_features.x)  # fmt: skip
        mean, _ = expected_counts(models.token_probs(problem, tagger), held_windows)
        squared = (mean - problem.moment_counts[held]) ** 2
        errors[float(alpha)] = float(squared[obs.tag_mask[held]].mean())
    watch.stop("fit", tic)
    return min(errors, key=lambda k: (errors[k], -k)), errors
