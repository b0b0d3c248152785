"""Step 5 of a fit: EM with exact count posteriors, M-steps fitting the served model.

The first E-step uses the node-only tagger of the moments; every M-step fits the served model:
the contextual tagger (:mod:`..context_tagger`, with word classes learned from the corpus' own
text) by default, or the node-only one. Count answers and verification answers enter the same
E-step, each with its annotator's weight, and the crowd is re-estimated after every iteration.
Observations whose counts cannot be realised are skipped and reported. When the answers are
weak (the tasks ask few of the tags), the contextual E-step's priors are cross-fitted: each
token's prior comes from a model fitted on the other sentences' beliefs
(:func:`..crossfit.cross_fitted_priors`).

:func:`refine` returns everything it learned, the last M-step included (what calibration
refits from); nothing is kept on the estimator between stages.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..crossfit import cross_fitted_priors, sentence_folds
from ..em import expected_labels
from ..settings import CrowdSettings
from .problem import Models, Problem, SentenceTokens, Stopwatch
from .reliability import CrowdEstimate, reweigh

__all__ = ["LastMStep", "Refined", "refine"]


@dataclass(frozen=True)
class LastMStep:
    """How the served model was fitted, for its calibration: the beliefs of its M-step, the
    L-BFGS budgets from its start, its L2 strength, and, after cross-fitting, the fold 0 model
    it started from (None: it started from the node-only model or the warm start)."""

    labels: np.ndarray
    fit_iter: tuple[int, ...]
    alpha: float | None
    fold_start: object | None


@dataclass(frozen=True)
class Refined:
    """What EM learned: the served ``tagger``, the refined ``node_tagger``, the crowd, which
    count answers were feasible at the last E-step, the per-iteration ``history`` and the
    served model's :class:`LastMStep`."""

    tagger: object
    node_tagger: object
    crowd: CrowdEstimate
    feasible: np.ndarray
    history: list[dict]
    last_m_step: LastMStep | None


@dataclass(frozen=True)
class _EMRun:
    tagger: object
    crowd: CrowdEstimate
    feasible: np.ndarray
    last_m_step: LastMStep | None


def refine(
    problem: Problem,
    moment_tagger,
    previous,
    crowd: CrowdEstimate,
    models: Models,
    settings: CrowdSettings,
    min_observations: int,
    watch: Stopwatch,
) -> Refined:
    """5a: EM of the node-only model from the moments (the paper's model, refined); 5b: for
    the contextual model, EM whose first E-step uses 5a's priors. Starting the contextual
    M-steps from the refined node-only beliefs rather than the moments' measured better (on
    EWT, Sequoia and Alpino): a contextual model fits token beliefs closely enough to keep
    the errors of its first beliefs, so those should be as good as the cheap model makes
    them."""
    history: list[dict] = []
    schedule = models.schedule
    judge = (settings, min_observations)
    node = _em(
        problem, moment_tagger, moment_tagger, crowd, models, "node", schedule.n_em_iter,
        (schedule.em_fit_iter, schedule.em_fit_iter), judge, history, watch,
    )  # fmt: skip
    run = node
    if models.kind == "context" and schedule.n_context_iter > 0:
        contextual = getattr(previous, "kind", None) == "context"
        warm = previous if contextual else node.tagger
        same_features = contextual and previous.word_classes is models.word_classes
        prior = previous if schedule.prior_from_previous and same_features else node.tagger
        run = _em(
            problem, prior, warm, node.crowd, models, "context", schedule.n_context_iter,
            (schedule.context_fit_iter, schedule.context_refit_iter), judge, history, watch,
        )  # fmt: skip
    return Refined(
        tagger=run.tagger,
        node_tagger=node.tagger,
        crowd=run.crowd,
        feasible=run.feasible,
        history=history,
        last_m_step=run.last_m_step,
    )


def _em(problem, prior, warm, crowd, models, kind, n_iter, fit_iter, judge, history, watch):
    """EM iterations fitting a ``kind`` model; the first E-step uses ``prior``'s token
    probabilities, the first M-step starts from ``warm`` and runs ``fit_iter[0]`` L-BFGS
    iterations, the later ones ``fit_iter[1]``. Stops after ``n_iter`` iterations or when the
    weighted marginal log-likelihood per answer improves by less than the schedule's
    ``em_tol`` (relative). Contextual iterations but the last are cross-fitted with the
    schedule's ``cross_fit`` folds; the last one, on ``em_tol`` or at ``n_iter``, fits the
    served model. The crowd is re-estimated after every iteration when reliability is on."""
    obs = problem.observations
    schedule = models.schedule
    settings, min_observations = judge
    evidence = [problem.evidence]
    if problem.verification is not None:
        evidence.append(problem.verification)
    folds = _folds(problem, schedule.cross_fit) if kind == "context" else None
    fold_views = None
    if folds is not None:
        fold_views = _fold_views(problem.context, folds, schedule.cross_fit, problem.fitted)
    fold_models = [warm] * (0 if folds is None else schedule.cross_fit)
    tagger = prior
    last_m_step = None
    probs = models.token_probs(problem, prior)  # the next E-step's priors
    feasible = np.ones(len(obs), dtype=bool)
    previous_ll = -np.inf
    for iteration in range(n_iter):
        tic = watch.start()
        all_weights = [crowd.weights, crowd.verification_weights][: len(evidence)]
        e_step = expected_labels(
            probs, evidence, all_weights, n_rounds=schedule.n_bp_rounds,
            floor=schedule.posterior_floor,
        )  # fmt: skip
        feasible = e_step.feasible[0]
        e_step_cpu = time.process_time() - tic[1]
        total, mass = 0.0, 0.0
        for w, ok, log_z in zip(all_weights, e_step.feasible, e_step.log_z, strict=True):
            used = ok & (w > 0)
            total += float((w[used] * log_z[used]).sum())
            mass += float(w[used].sum())
        ll = total / max(mass, 1.0)
        alpha = _context_alpha_at(schedule, iteration, n_iter) if kind == "context" else None
        tol = schedule.em_tol
        # Annealing and cross-fitting steps run on: the likelihood under a smoother or an
        # out-of-fold model is not the one EM raises.
        annealing = alpha is not None and alpha > schedule.context_alpha
        keep_on = annealing or folds is not None
        last = iteration == n_iter - 1 or (
            tol is not None and not keep_on and ll - previous_ll < tol * abs(ll)
        )
        labels = e_step.beliefs * e_step.token_weight[:, None]
        max_iter = fit_iter[min(iteration, 1)]
        if folds is not None and not last:
            fold_models, probs = _out_of_fold(
                problem, models, labels, folds, fold_views, fold_models, max_iter
            )
            fitted = fold_models
        else:
            fold_views = None  # the served model's M-step: their gigabyte back
            start = fold_models[0] if fold_models else warm if iteration == 0 else tagger
            tagger = models.fit_beliefs(problem, models.new(max_iter, kind, alpha), labels, start)
            # How the served model was fitted, for its calibration: after cross-fitting,
            # from fold 0's model, which never read fold 0's sentences.
            crossed = folds is not None and iteration > 0
            last_m_step = LastMStep(
                labels=labels,
                fit_iter=(max_iter,) if crossed else fit_iter[: min(iteration + 1, 2)],
                alpha=alpha,
                fold_start=start if crossed else None,
            )
            probs = models.token_probs(problem, tagger)
            fitted = [tagger]
        watch.stop("refine", tic)
        history.append(
            {
                "model": kind,
                "iteration": iteration + 1,
                "log_likelihood": ll,
                "infeasible": int((~feasible).sum()),
                "fit_iterations": sum(m.n_iter_ for m in fitted),
                "alpha": float(fitted[0].alpha),
                "cross_fitted": len(fitted) > 1,
                "cpu_seconds": time.process_time() - tic[1],
                "cpu_seconds_e_step": e_step_cpu,
            }
        )
        if settings.reliability:
            crowd, _ = reweigh(problem, probs, crowd, settings, min_observations, watch)
        if last:
            break
        previous_ll = ll
    return _EMRun(tagger=tagger, crowd=crowd, feasible=feasible, last_m_step=last_m_step)


def _folds(problem: Problem, n_folds: int) -> np.ndarray | None:
    """The schedule's ``cross_fit`` folds of the covered tokens, by sentence."""
    return sentence_folds(problem.sentence_of_tokens(), n_folds)


def _fold_views(
    context: SentenceTokens, folds: np.ndarray, n_folds: int, fitted: np.ndarray
) -> list[tuple[SentenceTokens, SentenceTokens]]:
    """For each fold, the contextual view of its own sentences (its covered tokens, in the order
    of ``folds``: what its priors are read on) and of the other sentences among those the
    M-steps fit on (``fitted``, a mask over the covered tokens: what its model is fitted on)."""
    sentence = context.sentence_of_covered()
    fold_of_sentence = np.empty(context.lengths.shape[0], dtype=np.int64)
    fold_of_sentence[sentence] = folds
    fitted_sentence = np.zeros(context.lengths.shape[0], dtype=bool)
    fitted_sentence[sentence[fitted]] = True
    return [
        (
            context.view(fold_of_sentence == f, folds == f),
            context.view((fold_of_sentence != f) & fitted_sentence, (folds != f) & fitted),
        )
        for f in range(n_folds)
    ]


def _out_of_fold(problem, models, labels, folds, views, fold_models, max_iter):
    """Cross-fitted M-step (:func:`..crossfit.cross_fitted_priors`): the fold models, warm
    from ``fold_models``, each fitted and read on the sentences it concerns only (the others'
    rows would carry no label, or be thrown away), and the covered tokens' out-of-fold
    priors."""
    alpha = models.schedule.cross_fit_alpha
    return cross_fitted_priors(
        lambda f, fold_labels, start: models.fit_beliefs(
            problem, models.new(max_iter, "context", alpha),
            fold_labels[(folds != f) & problem.fitted], start, context=views[f][1],
        ),
        lambda model, f: model.token_proba(
            None, features=views[f][0].features, lengths=views[f][0].lengths,
            rows=views[f][0].rows,
        ),
        labels,
        folds,
        fold_models,
    )  # fmt: skip


def _context_alpha_at(schedule, iteration: int, n_iter: int) -> float:
    """α of the contextual M-step ``iteration`` (0-based) of ``n_iter``: the schedule's
    ``context_alpha``, or with a larger ``context_alpha_start`` a geometric descent from it
    to ``context_alpha`` at the last iteration."""
    served = schedule.context_alpha
    start = schedule.context_alpha_start
    if start is None or start <= served or n_iter < 2:
        return served
    ratio = served / start
    return start * ratio ** min(1.0, iteration / (n_iter - 1))
