"""``CountTagger``: the method as one estimator, an orchestration of the stages of this package.

``fit(data)`` on a :class:`..training.TrainingSet` runs :mod:`.problem` (the covered tokens and
their features), :mod:`.moments` (ŵ, the moments, the node-only fit, λ and α), the crowd's
reliability (:mod:`.reliability`; if any annotator is down-weighted, the moments are solved
again with the weights), :mod:`.refine` (EM with exact count posteriors, cross-fitted when the
answers are weak) and :mod:`.calibrate`. Each stage returns what it learned; the estimator
keeps only the results, as attributes ending in ``_``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from ..modelfile import save_tagger
from ..params import Params, check_is_fitted
from ..schedule import EMSchedule, choose_schedule, schedule_named
from ..settings import CrowdSettings, FeatureSettings
from ..training import TrainingSet
from ..wordclasses import WordClasses, learn_word_classes
from .calibrate import calibrate
from .moments import choose_alpha, choose_ridge, fit_moments, moment_weights
from .problem import Models, Stopwatch, build_problem
from .refine import refine
from .reliability import reweigh, unjudged

__all__ = ["MODEL_KINDS", "CountTagger"]

MODEL_KINDS = ("context", "node")


class CountTagger(Params):
    """Learn a part-of-speech tagger from region-count observations.

    Parameters
    ----------
    model : the served model kind, ``"context"`` (default) or ``"node"`` (the paper's).
    schedule : the :class:`..schedule.EMSchedule` of the fit (iterations, tolerances, L2
        strengths, L-BFGS budgets), a preset's name, or ``"auto"`` (default): the preset
        :func:`..schedule.choose_schedule` picks for the answers, a privacy mechanism and a warm
        start. Why each preset is what it is: docs/learning-notes.md.
    ridge : λ of the ŵ least squares, or ``"auto"`` (default) to pick it from ``ridge_grid`` by
        held-out answers' squared count error (a constant picked on one corpus does not carry).
    ridge_grid : candidates for ``"auto"``.
    features : :class:`..settings.FeatureSettings` of both model kinds (default: the defaults;
        a :class:`..features.FeatureConfig` or :class:`..features.ContextConfig` stands for
        the settings of that part, :meth:`..settings.FeatureSettings.of`).
    word_classes : learn word classes from the corpus' text for the contextual model (True), use
        the given :class:`..wordclasses.WordClasses`, or none (False).
    crowd : :class:`..settings.CrowdSettings`, how annotators are judged and weighed (default:
        the defaults: reliability on, flagged below skill 0.5 after 10 answers).
    holdout_fraction : share of observations held out to choose λ and α (default 0.1), and
        whose sentences calibrate the served model's probabilities.
    calibrate : fit temperatures to the served model's probabilities (default True): to the
        training set's gold sentences when it holds enough, else the warm start's with a
        schedule that keeps them, else to held-out answers (:mod:`.calibrate`); the argmax does
        not change.
    random_state : seed or ``np.random.Generator`` (the hold-out split, the word classes, the
        contextual M-steps' token sample).

    Attributes (after ``fit``)
    --------------------------
    tagger_ : the served model (node-only or contextual tagger; its ``token_proba`` applies the
        temperatures). Read by the platform (model files, predictions, reports).
    schedule_ : the :class:`..schedule.EMSchedule` that ran. Read by the platform.
    tagset_ : the tag names. vocabulary_ : the covered word types. word_tag_probs_ : ŵ,
        vocabulary × K. coverage_ : each covered type's coverage. tag_prior_ : π.
    ridge_, ridge_errors_ : λ and the held-out error of each candidate. alpha_, alpha_errors_ :
        α of the node-only fits, likewise. ``ridge_`` and ``alpha_`` are read by the platform.
    moment_tagger_ : the node-only model of the moments, before EM. node_tagger_ : the
        node-only model after its EM. word_classes_ : the contextual model's word classes.
    coef_, intercept_ : the served model's weights.
    reliability_ : the count answerers' :class:`..crowd.Reliability` at the end of the fit, over
        every answer, the excluded annotators' included (None with reliability off).
    verification_reliability_ : ``{annotator: {n_observations, skill, yes_rate, flagged}}`` of
        the verification answerers, likewise. Both are read by the retrain policy's annotator
        table (:mod:`..policy`).
    min_flag_observations_ : answers before an annotator is judged (more for releases of a
        privacy mechanism). Read by the platform.
    flagged_annotators_ : ids of the annotators flagged by either estimate.
    skipped_observations_ : indices of observations whose counts cannot be realised. Read by
        the platform (the report's count of them).
    history_ : one dict per EM iteration. Read by the platform (its length).
    timings_ : wall and CPU seconds per stage (:data:`.problem.STAGES`). Read by the platform.
    calibration_ : the :class:`.calibrate.Calibration` (source, temperatures, evidence). Read
        by the platform. temperature_, unseen_temperature_, calibration_source_ : its parts.
    n_observations_ : the count answers fitted.
    """

    def __init__(
        self,
        *,
        model: str = "context",
        schedule: str | EMSchedule = "auto",
        ridge: float | str = "auto",
        ridge_grid: Sequence[float] = (1e-3, 1e-2, 1e-1, 1.0, 10.0),
        features: FeatureSettings | None = None,
        word_classes: bool | WordClasses = True,
        crowd: CrowdSettings | None = None,
        holdout_fraction: float = 0.1,
        calibrate: bool = True,
        random_state: int | np.random.Generator | None = None,
    ) -> None:
        self.model = model
        self.schedule = schedule
        self.ridge = ridge
        self.ridge_grid = ridge_grid
        self.features = features
        self.word_classes = word_classes
        self.crowd = crowd
        self.holdout_fraction = holdout_fraction
        self.calibrate = calibrate
        self.random_state = random_state

    def _validate_params(self) -> tuple[FeatureSettings, CrowdSettings]:
        """Check every hyperparameter once, at the start of ``fit``; the settings groups."""
        if self.model not in MODEL_KINDS:
            raise ValueError(f"model must be one of {MODEL_KINDS}, not {self.model!r}")
        if not isinstance(self.schedule, EMSchedule | str):
            raise ValueError(f"schedule must be an EMSchedule, a preset's name or 'auto', not "
                             f"{self.schedule!r}")  # fmt: skip
        if self.ridge != "auto" and not float(self.ridge) > 0:
            raise ValueError("ridge must be positive or 'auto'")
        if not len(self.ridge_grid) or min(self.ridge_grid) <= 0:
            raise ValueError("ridge_grid must hold positive values")
        if not 0.0 <= self.holdout_fraction < 1.0:
            raise ValueError("holdout_fraction must be in [0, 1)")
        if not isinstance(self.word_classes, bool | WordClasses):
            raise ValueError("word_classes must be True, False or WordClasses")
        crowd = CrowdSettings() if self.crowd is None else self.crowd
        if not isinstance(crowd, CrowdSettings):
            raise ValueError(f"crowd must be CrowdSettings, not {crowd!r}")
        return FeatureSettings.of(self.features), crowd

    # ------------------------------------------------------------------ fit
    def fit(self, data: TrainingSet, *, warm_start=None) -> CountTagger:
        """Fit on ``data`` (:class:`..training.TrainingSet`). ``warm_start``: a fitted
        :class:`CountTagger` or tagger of either kind with the same word features (the previous
        model version): the fits start from it and a warm schedule is chosen."""
        if not isinstance(data, TrainingSet):
            raise TypeError("fit takes a TrainingSet (learning.core.training)")
        features, crowd = self._validate_params()
        watch = Stopwatch()
        rng = np.random.default_rng(self.random_state)
        previous = warm_start.tagger_ if isinstance(warm_start, CountTagger) else warm_start
        obs = data.observations
        schedule = self._resolve_schedule(data, previous is not None)
        min_judged = crowd.min_judged(data.mechanism, obs)
        classes = self._word_classes(data, rng, watch)
        models = Models(self.model, data.tagset, features, classes, schedule)
        problem = build_problem(data, models, watch)
        holdout = rng.random(len(obs)) < self.holdout_fraction
        problem = problem.with_fit_sample(schedule.context_fit_tokens, rng)

        # Steps 1-4: moments, node-only fit, reliability.
        drawn = data.drawn
        state = unjudged(problem)
        grid = self.ridge_grid
        ridge, ridge_errors = choose_ridge(
            problem, holdout, state.weights * drawn, self.ridge, grid, watch
        )
        alpha, alpha_errors = choose_alpha(problem, holdout, ridge, models, watch)
        models = replace(models, alpha=alpha)
        moments = fit_moments(problem, state.weights * drawn, ridge, None, previous, models, watch)
        for _ in range(3 if crowd.reliability else 0):
            probs = models.token_probs(problem, moments.tagger)
            new, kept = reweigh(problem, probs, state, crowd, min_judged, watch)
            converged = kept or np.allclose(new.weights, state.weights, atol=0.05)
            state = new
            if converged:
                break
            weights = moment_weights(state.weights, drawn)  # without the doubtful
            ridge, ridge_errors = choose_ridge(problem, holdout, weights, self.ridge, grid, watch)
            moments = fit_moments(
                problem, weights, ridge, moments.solution, moments.tagger, models, watch
            )

        # Step 5: EM with exact count posteriors, M-steps fitting the served model; then the
        # temperatures.
        refined = refine(problem, moments.tagger, previous, state, models, crowd, min_judged, watch)
        tagger = refined.tagger
        tagger.seen_forms_ = frozenset(form.lower() for form in problem.forms)
        calibration = calibrate(
            data, problem, refined, holdout, models, enabled=self.calibrate, previous=previous,
            watch=watch,
        )  # fmt: skip
        tagger.temperature_ = calibration.temperature
        tagger.unseen_temperature_ = calibration.unseen_temperature

        self.schedule_, self.tagset_, self.word_classes_ = schedule, data.tagset, classes
        self.ridge_, self.ridge_errors_ = ridge, ridge_errors
        self.alpha_, self.alpha_errors_ = alpha, alpha_errors
        self.vocabulary_, self.coverage_ = problem.forms, moments.coverage
        self.word_tag_probs_, self.tag_prior_ = moments.solution.probs, moments.solution.prior
        self.moment_tagger_, self.node_tagger_, self.tagger_ = (
            moments.tagger, refined.node_tagger, tagger
        )  # fmt: skip
        self.coef_, self.intercept_ = tagger.coef_, tagger.intercept_
        self.reliability_ = refined.crowd.reliability
        self.verification_reliability_ = refined.crowd.verification
        self.min_flag_observations_ = min_judged
        self.flagged_annotators_ = self._flagged(refined.crowd)
        self.skipped_observations_ = np.flatnonzero(~refined.feasible)
        self.history_ = refined.history
        self.calibration_ = calibration
        self.temperature_ = calibration.temperature
        self.unseen_temperature_ = calibration.unseen_temperature
        self.calibration_source_ = calibration.source
        self.timings_ = watch.timings
        self.n_observations_ = len(obs)
        return self

    def _resolve_schedule(self, data: TrainingSet, warm: bool) -> EMSchedule:
        if isinstance(self.schedule, EMSchedule):
            return self.schedule
        if self.schedule == "auto":
            return choose_schedule(data.observations, private=data.mechanism is not None, warm=warm)
        return schedule_named(self.schedule)

    def _word_classes(self, data: TrainingSet, rng, watch) -> WordClasses | None:
        if self.model != "context" or self.word_classes is False:
            return None
        if isinstance(self.word_classes, WordClasses):
            return self.word_classes
        tic = watch.start()
        text = data.text if data.text is not None else data.sentences
        classes = learn_word_classes(text, random_state=rng)
        watch.stop("classes", tic)
        return classes

    @staticmethod
    def _flagged(crowd) -> np.ndarray:
        counting = (
            crowd.reliability.annotators[crowd.reliability.flagged]
            if crowd.reliability is not None
            else np.zeros(0, dtype=np.int64)
        )
        verifying = [a for a, row in crowd.verification.items() if row["flagged"]]
        return np.union1d(counting, verifying).astype(np.int64)

    # -------------------------------------------------------------- predict
    def save(self, file, *, metadata: dict | None = None) -> None:
        """Write the served tagger as a model file (:func:`..modelfile.save_tagger`)."""
        check_is_fitted(self)
        save_tagger(self.tagger_, file, metadata=metadata)

    def token_proba(self, sentences: Sequence[Sequence[str]]) -> np.ndarray:
        """(n_tokens, K) tag probabilities of the served model, every token read in its
        sentence."""
        check_is_fitted(self)
        return self.tagger_.token_proba(sentences)

    def predict(self, sentences: Sequence[Sequence[str]]) -> list[list[str]]:
        """Most probable tag of each token, sentence by sentence."""
        check_is_fitted(self)
        return self.tagger_.predict(sentences)
