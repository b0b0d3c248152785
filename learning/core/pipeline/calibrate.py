"""The last stage of a fit: the temperatures of the served model's probabilities, decided here
and nowhere else.

The source, in order: gold-tagged sentences when the training set holds enough gold tokens
(:func:`..calibration.gold_calibration`, cross-fitted figures beside it); the warm start's
temperatures when the schedule keeps them (``keep_temperature``); answers the served model
could not learn by heart (:func:`answers_temperature`); none (1.0) with calibration off. The
argmax never changes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..calibration import fit_temperatures_posterior, gold_calibrates, gold_calibration
from ..training import TrainingSet
from .problem import Models, Problem, Stopwatch
from .refine import Refined

__all__ = ["MIN_CALIBRATION_ANSWERS", "Calibration", "calibrate"]

MIN_CALIBRATION_ANSWERS = 50


@dataclass(frozen=True)
class Calibration:
    """The served temperatures (``unseen_temperature``: of words no answer covered, None: the
    same), where they come from (``"gold"``, ``"answers"``, ``"previous"``, ``"none"``), how
    many held-out answers or gold tokens they were fitted to (``evidence``; 0 for a
    temperature left at 1 for want of them, or kept from the warm start) and, from gold, the
    expected calibration error
    before and after (``gold``)."""

    source: str
    temperature: float
    unseen_temperature: float | None
    evidence: int = 0
    gold: dict | None = None

    def as_dict(self) -> dict:
        """What a version stores and reports (``hyperparameters["calibration"]``)."""
        out = {
            "source": self.source,
            "temperature": self.temperature,
            "unseen_temperature": self.unseen_temperature,
        }
        return {**out, **(self.gold or {})}

    @property
    def judged(self) -> bool:
        """Whether the temperatures were fitted to enough held-out answers or gold (or kept
        from a version whose were): the model's probabilities have been checked against
        answers it did not learn from."""
        if self.source in ("gold", "previous"):  # a warm start follows a judged full fit
            return True
        return self.source == "answers" and self.evidence >= MIN_CALIBRATION_ANSWERS


def calibrate(
    data: TrainingSet,
    problem: Problem,
    refined: Refined,
    holdout: np.ndarray,
    models: Models,
    *,
    enabled: bool,
    previous,
    watch: Stopwatch,
) -> Calibration:
    """The served model's temperatures (module docstring); ``refined.tagger`` must carry its
    ``seen_forms_`` and no temperature yet."""
    served = refined.tagger
    if not enabled:
        return Calibration("none", 1.0, None)
    if gold_calibrates(data.gold_sentences):  # one reading of the gold sentences, no refit
        figures = gold_calibration(served, data.gold_sentences, data.gold_tags)
        gold = {k: figures[k] for k in ("ece_before", "ece_after", "tokens")}
        return Calibration(
            "gold", figures["temperature"], figures["unseen_temperature"], figures["tokens"], gold
        )
    if models.schedule.keep_temperature and hasattr(previous, "temperature_"):
        return Calibration("previous", previous.temperature_, previous.unseen_temperature_)
    temperature, unseen, held = answers_temperature(problem, refined, holdout, models, watch)
    return Calibration("answers", temperature, unseen, held)


def answers_temperature(
    problem: Problem, refined: Refined, holdout: np.ndarray, models: Models, watch: Stopwatch
) -> tuple[float, float | None, int]:
    """The temperature of the served model's probabilities, from answers it could not learn
    by heart: a model of its kind is refitted as its last M-step was, to the last E-step's
    beliefs of every sentence but those holding a held-out answer, and the temperatures are
    fitted to those answers' posterior tags under its marginals, which leave a temperature
    at 1 where the answers cannot tell (:func:`..calibration.fit_temperatures_posterior`):
    one for the words inside the refitted model's answered windows, one for the others (as
    words no answer covered are to the served model). Returns ``(temperature,
    unseen_temperature, held-out answers)``.
    The refit starts where the served model's fit started when that model had not read the
    held-out sentences: after cross-fitting, fold 0's model (the held-out sentences are then
    those of fold 0); otherwise the node-only model, with the M-steps' L-BFGS budgets.
    1.0 with fewer than ``MIN_CALIBRATION_ANSWERS`` held-out answers (a temperature fitted
    to a handful of answers is noise) or none left to fit."""
    obs = problem.observations
    last_m_step, weights = refined.last_m_step, refined.crowd.weights
    served = refined.tagger
    held = np.isin(obs.sentence, obs.sentence[holdout]) & (weights > 0)
    if last_m_step is not None and last_m_step.fold_start is not None:
        held &= obs.sentence % models.schedule.cross_fit == 0  # fold 0 (crossfit.py)
    if last_m_step is None or held.sum() < MIN_CALIBRATION_ANSWERS or held.all():
        return 1.0, None, 0
    tic = watch.start()
    alpha = last_m_step.alpha
    sentence = problem.sentence_of_tokens()
    labels = np.where(np.isin(sentence, obs.sentence[held])[:, None], 0.0, last_m_step.labels)
    model = last_m_step.fold_start
    if model is None:
        model = refined.node_tagger
    for max_iter in last_m_step.fit_iter:
        model = models.fit_beliefs(problem, models.new(max_iter, served.kind, alpha), labels, model)
    rows = np.flatnonzero(held)
    windows = problem.evidence.windows[rows]
    needed = np.zeros(problem.tokens.shape[0], dtype=bool)
    needed[windows[windows >= 0]] = True
    probs = models.token_probs(problem, model, needed)
    window_probs = np.where((windows >= 0)[:, :, None], probs[np.maximum(windows, 0)], 0.0)
    fitted = problem.evidence.windows[~held]
    # Lowercased forms as integers: arrays of a million forms' strings took gigabytes.
    _, lower = np.unique([form.lower() for form in problem.forms], return_inverse=True)
    covered_lower = lower.ravel()[problem.node_features.type_ids]  # of each covered token
    seen = np.zeros(lower.max(initial=-1) + 1, dtype=bool)
    seen[covered_lower[fitted[fitted >= 0]]] = True
    groups = np.where((windows >= 0) & ~seen[covered_lower[np.maximum(windows, 0)]], 1, 0)
    seen_t, unseen_t = fit_temperatures_posterior(
        window_probs,
        groups,
        lambda q: problem.evidence.posteriors(q, rows, 0.0),
        weights[rows],
    )
    watch.stop("calibrate", tic)
    return seen_t, unseen_t, int(held.sum())
