"""The EM schedule: how long each stage of :class:`.pipeline.CountTagger` runs and how strongly
each fit is regularised, as one frozen object with named presets.

A fit reads its settings from one :class:`EMSchedule` only (``CountTagger.schedule_``), so what a
report says ran is what ran. :func:`choose_schedule` picks the preset from the facts of a fit
(the answers, a privacy mechanism, a previous version to start from); the retrain job and
``simulate_crowd`` both go through it. Why each default is what it is: docs/decisions/ (001-008,
020, 021, 040).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from .observations import Observations

__all__ = [
    "EMSchedule",
    "PRESETS",
    "WARM_GROWTH",
    "WARM_MIN_ASKED",
    "WEAK_SHARE",
    "asked_share",
    "choose_schedule",
    "schedule_named",
    "warm_start_suits",
]

# Tasks asking on average fewer than this share of the tag set give weak answers.
WEAK_SHARE = 0.5
# A warm retrain suits answers up to this share more than the last full fit was fitted on...
WARM_GROWTH = 0.1
# ...once the answers have asked about this share of the corpus's token × tag cells.
WARM_MIN_ASKED = 0.06


@dataclass(frozen=True)
class EMSchedule:
    """Iterations, tolerances, L2 strengths and L-BFGS budgets of every stage of a fit.

    name : the preset's name, or ``"custom"``.
    n_em_iter : EM iterations of the node-only model (0: the moment estimate only).
    n_context_iter : EM iterations of the contextual model after them (0: serve the node-only).
    cross_fit : sentence folds of the contextual E-step's priors (0 or 1: none); every
        contextual iteration but the last fits one model per fold on the other folds' beliefs.
    cross_fit_alpha : L2 strength of the fold models.
    em_tol : stop a stage when the weighted log-likelihood per answer improves by less than this
        share of itself; None runs every iteration.
    alpha : L2 strength of the node-only fits, or ``"auto"``: chosen from ``alpha_grid`` by the
        held-out answers' squared count error.
    alpha_grid : candidates of ``"auto"``.
    context_alpha : L2 strength of the contextual fits.
    context_alpha_start : None, or the first contextual M-step's L2 strength, descending
        geometrically to ``context_alpha`` at the last contextual iteration.
    moment_fit_iter : L-BFGS iterations of the moment fit (and of the ``"auto"`` α search).
    em_fit_iter : L-BFGS iterations of each node-only M-step.
    context_fit_iter, context_refit_iter : L-BFGS iterations of the first contextual M-step and
        of the later ones.
    prior_from_previous : a warm-started fit's first contextual E-step reads the previous
        version's priors (when it is a contextual model on the same features) instead of the
        node-only stage's: EM goes on from where the previous version stopped.
    keep_temperature : a warm-started fit serves the previous version's temperatures instead of
        refitting a model for them (its answers are most of the same; the next full fit
        calibrates anew).
    n_bp_rounds : belief-propagation rounds per E-step where windows overlap (1: each window's
        exact posterior as independent evidence).
    posterior_floor : uniform mixing weight of the E-step's priors (robustness to over-confidence).
    context_fit_tokens : the contextual M-steps fit the beliefs of at most this many covered
        tokens, of whole sentences drawn at random once per fit (None: all); a corpus of
        today's size is fitted whole (:func:`.pipeline.fit_sample`).

    See docs/decisions/001-schedule-presets.md for the measurements behind each preset.
    """

    name: str = "custom"
    n_em_iter: int = 10
    n_context_iter: int = 2
    cross_fit: int = 0
    cross_fit_alpha: float = 0.9
    em_tol: float | None = 2e-3
    alpha: float | str = 1.0
    alpha_grid: tuple[float, ...] = (0.3, 1.0, 3.0, 10.0)
    context_alpha: float = 0.3
    context_alpha_start: float | None = None
    moment_fit_iter: int = 100
    em_fit_iter: int = 10
    context_fit_iter: int = 60
    context_refit_iter: int = 20
    prior_from_previous: bool = False
    keep_temperature: bool = False
    n_bp_rounds: int = 1
    posterior_floor: float = 1e-6
    context_fit_tokens: int | None = 400_000

    def __post_init__(self) -> None:
        counts = ("n_em_iter", "n_context_iter", "cross_fit")
        budgets = ("moment_fit_iter", "em_fit_iter", "context_fit_iter", "context_refit_iter")
        for field in counts + budgets + ("n_bp_rounds",):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"{field} must be an integer, not {value!r}")
            low = 1 if field in budgets + ("n_bp_rounds",) else 0
            if value < low:
                raise ValueError(f"{field} must be at least {low}, not {value}")
        if self.alpha != "auto" and not (isinstance(self.alpha, int | float) and self.alpha > 0):
            raise ValueError(f"alpha must be positive or 'auto', not {self.alpha!r}")
        positive = [self.cross_fit_alpha, self.context_alpha, *self.alpha_grid]
        if self.context_alpha_start is not None:
            positive.append(self.context_alpha_start)
        if not self.alpha_grid or any(not value > 0 for value in positive):
            raise ValueError("every L2 strength must be positive (and alpha_grid non-empty)")
        if self.em_tol is not None and not self.em_tol >= 0:
            raise ValueError(f"em_tol must be non-negative or None, not {self.em_tol!r}")
        if self.context_fit_tokens is not None and (
            isinstance(self.context_fit_tokens, bool)
            or not isinstance(self.context_fit_tokens, int)
            or self.context_fit_tokens < 1
        ):
            raise ValueError(
                f"context_fit_tokens must be a positive integer or None, not "
                f"{self.context_fit_tokens!r}"
            )
        if not 0 <= self.posterior_floor < 1:
            raise ValueError("posterior_floor must be in [0, 1)")
        object.__setattr__(self, "alpha_grid", tuple(float(a) for a in self.alpha_grid))

    def replace(self, **changes) -> EMSchedule:
        """A copy with ``changes``, named ``"custom"`` unless a name is given."""
        return dataclasses.replace(self, **{"name": "custom", **changes})

    def as_dict(self) -> dict:
        """JSON-ready settings (for a version's record and reports)."""
        out = dataclasses.asdict(self)
        out["alpha_grid"] = list(self.alpha_grid)
        return out


INFORMATIVE = EMSchedule(name="informative")
WEAK = EMSchedule(name="weak", n_em_iter=40, n_context_iter=10, cross_fit=2, em_tol=5e-3)
PRIVATE = EMSchedule(
    name="private", n_em_iter=30, n_context_iter=6, em_tol=None, context_alpha=10.0
)
# Warm retrains go on from the previous version (fitted on most of the same answers): its priors
# start the contextual EM, and fewer iterations and shorter L-BFGS runs reach the full fit's
# accuracy (docs/decisions/008-warm-retrains.md).
WARM = EMSchedule(
    name="warm",
    n_em_iter=2,
    n_context_iter=1,
    moment_fit_iter=20,
    em_fit_iter=5,
    context_fit_iter=20,
    prior_from_previous=True,
    keep_temperature=True,
)
PRIVATE_WARM = PRIVATE.replace(
    name="private-warm",
    n_em_iter=10,
    n_context_iter=1,
    moment_fit_iter=20,
    em_fit_iter=5,
    context_fit_iter=20,
    keep_temperature=True,
)
PRESETS: dict[str, EMSchedule] = {
    s.name: s for s in (INFORMATIVE, WEAK, PRIVATE, WARM, PRIVATE_WARM)
}


def schedule_named(name: str) -> EMSchedule:
    """The preset called ``name``; a ValueError listing the presets otherwise."""
    try:
        return PRESETS[name]
    except KeyError:
        raise ValueError(
            f"no EM schedule called {name!r}; the presets are {', '.join(PRESETS)}"
        ) from None


def answers_are_weak(observations: Observations) -> bool:
    """The tasks ask on average fewer than :data:`WEAK_SHARE` of the tag set."""
    asked = float(observations.tag_mask.mean()) if len(observations) else 1.0
    return asked < WEAK_SHARE


def choose_schedule(
    observations: Observations, *, private: bool = False, warm: bool = False
) -> EMSchedule:
    """The preset for a fit: releases of a privacy mechanism (``private``) get their own, weak
    answers (:func:`answers_are_weak`) the long cross-fitted one, the rest the informative one.
    A fit ``warm``-started from the previous version goes on from it: the short ``warm`` preset
    (``private-warm`` for releases)."""
    if private:
        return PRIVATE_WARM if warm else PRIVATE
    if warm:
        return WARM
    return WEAK if answers_are_weak(observations) else INFORMATIVE


def asked_share(observations: Observations, n_tokens: int) -> float:
    """How much of a corpus of ``n_tokens`` tokens the count answers asked about: their windows'
    tokens × asked tags over the corpus's tokens × the tag set (a cell asked twice counts twice)."""
    if n_tokens <= 0 or len(observations) == 0:
        return 0.0
    cells = float((observations.length * observations.tag_mask.sum(axis=1)).sum())
    return cells / (n_tokens * observations.n_tags)


def warm_start_suits(
    full_fit_answers: int, answers: int, *, asked: float, chosen_since: int
) -> bool:
    """Whether a fit on ``answers`` should go on from the current version, when the last full
    (not warm) fit it descends from saw ``full_fit_answers``. The short warm preset keeps up with
    a full fit only on a tenth more answers drawn uniformly, once the answers have ``asked``
    :data:`WARM_MIN_ASKED` of the corpus (:func:`asked_share`); answers chosen by value since
    the full fit (``chosen_since``: count tasks and verifications) teach what the version does
    not know, and a warm fit absorbs about half of it (docs/decisions/008-warm-retrains.md)."""
    return (
        full_fit_answers > 0
        and answers <= (1.0 + WARM_GROWTH) * full_fit_answers
        and asked >= WARM_MIN_ASKED
        and chosen_since <= 0
    )
