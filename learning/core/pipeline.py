"""``CountTagger``: the whole method as one scikit-learn-style estimator.

``fit`` runs, on a corpus and its region-count observations, the paper's steps and then ours:

1. **solve** — ŵ by per-tag ridge least squares toward the tag rates, λ chosen from ``ridge_grid``
   by held-out observations' squared count error, rows projected onto the simplex (:mod:`.solver`);
2. **moments** — soft counts ``Q[a, b] = n_a ŵ(a, b)`` with ``n_a`` the coverage of type ``a``;
3. **fit** — the node-only tagger on ``Q`` (:mod:`.node_tagger`), warm-started from ``warm_start``;
4. **reliability** — annotator noise from residuals against the fitted tagger (:mod:`.crowd`);
   if any annotator is down-weighted, steps 1–3 are repeated with the weights;
5. **refine** — EM with exact count posteriors (:mod:`.em`, :mod:`.counts`), re-estimating
   reliability after every iteration. The first E-step uses the node-only tagger of step 3; every
   M-step fits the served model: the contextual tagger (:mod:`.context_tagger`, with word classes
   learned from the corpus' own text, :mod:`.wordclasses`) by default, or the node-only one.
   Observations whose counts cannot be realised are skipped and reported.
   When the answers are weak (the tasks ask few of the tags), the contextual E-step's priors are
   cross-fitted: each token's prior comes from a model fitted on the other sentences' beliefs.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .agm import AdversarialTagger
from .calibration import fit_temperatures_posterior
from .context_tagger import ContextTagger
from .counts import CountEvidence, expected_counts
from .crossfit import cross_fitted_priors, sentence_folds
from .crowd import Reliability, estimate_reliability
from .design import Corpus, coverage, design_matrix, encode_corpus
from .em import expected_labels, window_token_index
from .features import ContextConfig, FeatureConfig, featurize
from .modelfile import save_tagger
from .node_tagger import NodeFeatures, NodeTagger
from .observations import Observations
from .privacy import MAX_PRIVATE_TAGS, Mechanism, PrivateCountEvidence
from .schedule import EMSchedule, choose_schedule, schedule_named
from .solver import RidgeSolution, select_ridge, soft_counts, solve_word_tag_probs
from .verification import VerificationAnswers, VerificationEvidence, verification_reliability
from .wordclasses import WordClasses, learn_word_classes

__all__ = ["CountTagger", "MODEL_KINDS", "STAGES"]

MODEL_KINDS = ("context", "node")
MIN_CALIBRATION_ANSWERS = 50
STAGES = ("solve", "fit", "classes", "refine", "reliability", "calibrate", "agm")


class _Stopwatch:
    """Accumulates wall-clock and process CPU seconds per stage into ``timings``."""

    def __init__(self) -> None:
        self.timings = {key: 0.0 for stage in STAGES for key in (stage, "cpu_" + stage)}

    def start(self) -> tuple[float, float]:
        return time.perf_counter(), time.process_time()

    def stop(self, stage: str, started: tuple[float, float]) -> None:
        self.timings[stage] += time.perf_counter() - started[0]
        self.timings["cpu_" + stage] += time.process_time() - started[1]


@dataclass
class _Problem:
    """What every step works on, built once per ``fit``: the observations on the covered word
    types (moments) and on the covered tokens (EM), with the features of both."""

    corpus: Corpus
    observations: Observations
    design: sp.csr_matrix  # observations × covered types
    covered: np.ndarray  # corpus type id of each covered type (in a window of either kind)
    forms: list[str]  # form of each covered type
    tokens: np.ndarray  # flat corpus index of each covered token
    evidence: CountEvidence | PrivateCountEvidence  # windows index the covered tokens
    moment_counts: np.ndarray  # the counts, or the debiased releases of a private project
    mechanism: Mechanism | None
    verification: VerificationEvidence | None  # likewise
    node_features: NodeFeatures  # of the covered tokens (one row per covered type)
    context: _SentenceTokens | None  # the contextual model's view of the covered tokens
    fold_views: list | None = None  # of the cross-fitted folds (:func:`_fold_views`)
    fitted: np.ndarray | None = None  # covered tokens the contextual M-steps fit (fit_sample)
    fit_context: _SentenceTokens | None = None  # the contextual view of their sentences


@dataclass(frozen=True)
class _LastMStep:
    """How the served model was fitted, for its calibration: the beliefs of its M-step, the
    L-BFGS budgets from its start, its L2 strength, and, after cross-fitting, the fold 0 model
    it started from (None: it started from the node-only model or the warm start)."""

    labels: np.ndarray
    fit_iter: tuple[int, ...]
    alpha: float | None
    fold_start: object | None


@dataclass
class _SentenceTokens:
    """Every token of the sentences that hold a window, for the contextual model (which reads a
    token's neighbours, covered or not): stage-1 features of each (``features``), the sentences'
    ``lengths``, and the row of each covered token (``rows``, in the order of ``_Problem.tokens``).
    """

    features: sp.csr_matrix
    lengths: np.ndarray
    rows: np.ndarray

    def labels(self, covered_labels: np.ndarray) -> np.ndarray:
        """Soft labels of every token: the covered tokens' ``covered_labels``, zero elsewhere."""
        out = np.zeros((self.features.shape[0], covered_labels.shape[1]))
        out[self.rows] = covered_labels
        return out


def _sentence_view(
    context: _SentenceTokens, sentences: np.ndarray, tokens: np.ndarray
) -> _SentenceTokens:
    """The contextual view of the sentences ``sentences`` (a mask over ``context``'s sentences)
    and of their covered tokens ``tokens`` (a mask over ``context.rows``)."""
    keep = np.repeat(sentences, context.lengths)
    return _SentenceTokens(
        features=context.features[keep],
        lengths=context.lengths[sentences],
        rows=(np.cumsum(keep) - 1)[context.rows[tokens]],
    )


def _moment_weights(weights: np.ndarray, drawn: np.ndarray) -> np.ndarray:
    """The moments' weight of each answer: its annotator's, on the uniform draws only. When no
    uniform answer keeps a weight (a small project whose uniform answers all came from
    annotators found doubtful), every answer the trusted annotators gave, rather than none."""
    moment = weights * drawn
    return moment if (moment > 0).any() else weights


def _sentence_of_covered(context: _SentenceTokens) -> np.ndarray:
    """The sentence (of ``context``) of each covered token."""
    sentence_of_row = np.repeat(np.arange(context.lengths.shape[0]), context.lengths)
    return sentence_of_row[context.rows]


def _fold_views(
    context: _SentenceTokens, folds: np.ndarray, n_folds: int, fitted: np.ndarray
) -> list[tuple[_SentenceTokens, _SentenceTokens]]:
    """For each fold, the contextual view of its own sentences (its covered tokens, in the order
    of ``folds``: what its priors are read on) and of the other sentences among those the
    M-steps fit on (``fitted``, a mask over the covered tokens: what its model is fitted on)."""
    sentence = _sentence_of_covered(context)
    fold_of_sentence = np.empty(context.lengths.shape[0], dtype=np.int64)
    fold_of_sentence[sentence] = folds
    fitted_sentence = np.zeros(context.lengths.shape[0], dtype=bool)
    fitted_sentence[sentence[fitted]] = True
    return [
        (
            _sentence_view(context, fold_of_sentence == f, folds == f),
            _sentence_view(
                context, (fold_of_sentence != f) & fitted_sentence, (folds != f) & fitted
            ),
        )
        for f in range(n_folds)
    ]


def _tokens_view(context: _SentenceTokens, tokens: np.ndarray) -> _SentenceTokens:
    """The contextual view of the covered tokens ``tokens`` (a mask) and of their sentences."""
    if tokens.all():
        return context
    sentences = np.zeros(context.lengths.shape[0], dtype=bool)
    sentences[_sentence_of_covered(context)[tokens]] = True
    return _sentence_view(context, sentences, tokens)


def fit_sample(sentence: np.ndarray, budget: int | None, rng: np.random.Generator) -> np.ndarray:
    """Which covered tokens (of sentences ``sentence``) the contextual M-steps fit on: all when
    they are at most ``budget`` (or ``budget`` is None), else those of whole sentences in a
    random order until the next would pass it. The M-step's cost follows the tokens it fits, so
    a budget bounds a retrain's time at sizes beyond today's projects, at some accuracy; the
    E-step still reads every answer (docs/learning-notes.md, "The contextual M-steps' token
    budget")."""
    if budget is None or sentence.shape[0] <= budget:
        return np.ones(sentence.shape[0], dtype=bool)
    ids, size = np.unique(sentence, return_counts=True)
    order = rng.permutation(ids.shape[0])
    taken = order[: np.searchsorted(np.cumsum(size[order]), budget, side="right")]
    return np.isin(sentence, ids[taken])


class CountTagger:
    """Learn a part-of-speech tagger from region-count observations.

    Parameters
    ----------
    model : the served model kind, ``"context"`` (default) or ``"node"`` (the paper's).
    schedule : the :class:`.schedule.EMSchedule` of the fit (iterations, tolerances, L2
        strengths, L-BFGS budgets), a preset's name, or ``"auto"`` (default): the preset
        :func:`.schedule.choose_schedule` picks for the answers, a privacy mechanism and a warm
        start. Why each preset is what it is: docs/learning-notes.md.
    ridge : λ of the ŵ least squares, or ``"auto"`` (default) to pick it from ``ridge_grid`` by
        held-out answers' squared count error (a constant picked on one corpus does not carry).
    ridge_grid : candidates for ``"auto"``.
    features : :class:`FeatureConfig`, the word-form features (of both models).
    context : :class:`ContextConfig` of the contextual model (its ``word`` is ``features``).
    word_classes : learn word classes from the corpus' text for the contextual model (True), use
        the given :class:`WordClasses`, or none (False).
    reliability : estimate annotator reliability and use it as weights (default True).
    flag_threshold : flag annotators whose skill is below this (default 0.5).
    min_flag_observations : answers an annotator needs before being judged (default 10); for
        released counts, the number that carries as much evidence
        (:meth:`.privacy.Mechanism.min_judged_answers`).
    holdout_fraction : share of observations held out to choose λ and α (default 0.1), and
        whose sentences calibrate the served model's probabilities.
    agm_cost : a K × K cost matrix, or None (default): with one, an adversarial model for it is
        also fitted (``agm_``, :mod:`.agm`) to the last E-step's beliefs over the features the
        served contextual model reads (an experiment: the served model does not use it).
    calibrate : fit a temperature to the served model's probabilities (default True): a model
        like the served one is refitted without the held-out sentences, and the temperature
        that best fits their answers' exact posterior tags under its marginals is given to the
        served model (:func:`.calibration.fit_temperatures_posterior`); the argmax does not
        change. A schedule with
        ``keep_temperature`` serves the warm start's temperatures instead.
    random_state : seed or ``np.random.Generator`` (the hold-out split and the word classes).

    Attributes (after ``fit``)
    --------------------------
    schedule_ (the :class:`.schedule.EMSchedule` that ran), tagset_, vocabulary_ (covered word
    types), word_tag_probs_ (ŵ, vocabulary × K), coverage_, ridge_, ridge_errors_, alpha_,
    alpha_errors_, tag_prior_, moment_tagger_ (node-only, before EM), node_tagger_ (node-only,
    after its EM), tagger_ (the served model), word_classes_, coef_, intercept_, reliability_
    (:class:`Reliability`), min_flag_observations_, flagged_annotators_ (ids),
    skipped_observations_ (indices of observations whose counts cannot be realised), history_
    (per EM iteration), timings_ (wall and CPU seconds per stage), temperature_ (also set on
    ``tagger_``, whose ``token_proba`` applies it; 1.0 uncalibrated), calibration_source_
    (``"answers"``: fitted to held-out answers, ``"previous"``: the warm start's, ``"none"``).
    """

    def __init__(
        self,
        *,
        model: str = "context",
        schedule: str | EMSchedule = "auto",
        ridge: float | str = "auto",
        ridge_grid: Sequence[float] = (1e-3, 1e-2, 1e-1, 1.0, 10.0),
        features: FeatureConfig | None = None,
        context: ContextConfig | None = None,
        word_classes: bool | WordClasses = True,
        reliability: bool = True,
        flag_threshold: float = 0.5,
        min_flag_observations: int = 10,
        holdout_fraction: float = 0.1,
        calibrate: bool = True,
        agm_cost: np.ndarray | None = None,
        random_state: int | np.random.Generator | None = None,
    ) -> None:
        self.model = model
        self.schedule = schedule
        self.ridge = ridge
        self.ridge_grid = ridge_grid
        self.features = features
        self.context = context
        self.word_classes = word_classes
        self.reliability = reliability
        self.flag_threshold = flag_threshold
        self.min_flag_observations = min_flag_observations
        self.holdout_fraction = holdout_fraction
        self.calibrate = calibrate
        self.agm_cost = agm_cost
        self.random_state = random_state

    # ------------------------------------------------------------------ fit
    def fit(
        self,
        sentences: Sequence[Sequence[str]],
        observations: Observations,
        tagset: Sequence[str],
        *,
        verifications: VerificationAnswers | None = None,
        mechanism: Mechanism | None = None,
        warm_start=None,
        text: Sequence[Sequence[str]] | None = None,
        uniform: np.ndarray | None = None,
    ) -> CountTagger:
        """Fit on ``sentences`` (lists of word forms) and ``observations`` whose sentence
        indices refer to ``sentences`` and whose tag columns follow ``tagset``.

        ``warm_start``: a fitted :class:`CountTagger` or tagger of either kind with the same word
        features (the previous model version). ``verifications``: yes/no answers on windows of
        the same sentences (:mod:`.verification`); they enter the EM, not the moments.
        ``mechanism``: the observations' counts are releases of this local privacy mechanism
        (:mod:`.privacy`): the moments use their debiased values, the E-step their exact
        likelihood, reliability discounts the known noise. ``text``:
        the corpus' whole text to learn word classes from (default: ``sentences``).
        ``uniform``: per observation, whether its task was drawn as the paper's ``S(o | y)``
        (default: all); tasks chosen by a model's doubt (:mod:`.task_value`) enter the EM, not
        the moments, whose least squares assume windows drawn independently of the tags."""
        if self.model not in MODEL_KINDS:
            raise ValueError(f"model must be one of {MODEL_KINDS}, not {self.model!r}")
        watch = _Stopwatch()
        tagset = tuple(tagset)
        if len(set(tagset)) != len(tagset) or not tagset:
            raise ValueError("tagset must be a non-empty list of distinct tag names")
        if observations.n_tags != len(tagset):
            raise ValueError(
                f"observations have {observations.n_tags} tag columns, tagset has {len(tagset)}"
            )
        rng = np.random.default_rng(self.random_state)
        previous = warm_start.tagger_ if isinstance(warm_start, CountTagger) else warm_start
        self.tagset_ = tagset
        self.schedule_ = self._resolve_schedule(observations, mechanism, previous is not None)
        self.min_flag_observations_ = (
            self.min_flag_observations
            if mechanism is None
            else mechanism.min_judged_answers(self.min_flag_observations, observations)
        )
        self.word_classes_ = self._word_classes(sentences, text, previous, rng, watch)
        problem = self._problem(sentences, observations, verifications, mechanism, watch)
        holdout = rng.random(len(observations)) < self.holdout_fraction
        if problem.context is not None:
            problem.fitted = fit_sample(
                _sentence_of_covered(problem.context), self.schedule_.context_fit_tokens, rng
            )
            problem.fit_context = _tokens_view(problem.context, problem.fitted)

        # Steps 1-4: moments, node-only fit, reliability.
        weights = np.ones(len(problem.observations))
        drawn = np.ones(len(observations)) if uniform is None else np.asarray(uniform, float)
        if drawn.shape != (len(observations),):
            raise ValueError("uniform must hold one flag per observation")
        if not drawn.any():
            drawn = np.ones(len(observations))  # no uniform task: the moments see them all
        self.verification_reliability_ = {}
        self.verification_weights_ = (
            np.ones(len(problem.verification.answers)) if problem.verification else np.zeros(0)
        )
        self._choose_ridge(problem, holdout, weights * drawn, watch)
        self._choose_alpha(problem, holdout, watch)
        solution, moment_tagger = self._moments(problem, weights * drawn, None, previous, watch)
        reliability = None
        if self.reliability:
            for _ in range(3):
                new_weights, reliability, kept = self._reweigh(
                    problem, self._token_probs(problem, moment_tagger), weights, reliability, watch
                )
                converged = kept or np.allclose(new_weights, weights, atol=0.05)
                weights = new_weights
                if converged:
                    break
                moment_weights = _moment_weights(weights, drawn)  # without the doubtful
                self._choose_ridge(problem, holdout, moment_weights, watch)
                solution, moment_tagger = self._moments(
                    problem, moment_weights, solution, moment_tagger, watch
                )
        self.moment_tagger_ = moment_tagger

        # Step 5: EM with exact count posteriors, M-steps fitting the served model.
        tagger, weights, reliability = self._refine(
            problem, moment_tagger, previous, weights, reliability, watch
        )
        self.agm_ = None
        if self.agm_cost is not None and tagger.kind == "context":
            self.agm_ = self._adversarial(problem, tagger, watch)
        self.temperature_, self.unseen_temperature_ = 1.0, None
        kept = self.schedule_.keep_temperature and hasattr(previous, "temperature_")
        if self.calibrate and kept:
            self.temperature_ = previous.temperature_
            self.unseen_temperature_ = previous.unseen_temperature_
        elif self.calibrate:
            self.temperature_, self.unseen_temperature_ = self._temperature(
                problem, tagger, holdout, weights, watch
            )
        self.__dict__.pop("_last_m_step", None)
        self.calibration_source_ = (
            "none" if not self.calibrate else "previous" if kept else "answers"
        )
        tagger.temperature_ = self.temperature_
        tagger.unseen_temperature_ = self.unseen_temperature_
        tagger.seen_forms_ = frozenset(form.lower() for form in problem.forms)
        self.tagger_ = tagger
        self.coef_ = tagger.coef_
        self.intercept_ = tagger.intercept_
        self.reliability_ = reliability
        flagged_counting = (
            reliability.annotators[reliability.flagged]
            if reliability is not None
            else np.zeros(0, dtype=np.int64)
        )
        flagged_verifying = [
            a for a, row in self.verification_reliability_.items() if row["flagged"]
        ]
        self.flagged_annotators_ = np.union1d(flagged_counting, flagged_verifying).astype(np.int64)
        self.timings_ = watch.timings
        self.n_observations_ = len(observations)
        return self

    def _resolve_schedule(
        self, observations: Observations, mechanism: Mechanism | None, warm: bool
    ) -> EMSchedule:
        if isinstance(self.schedule, EMSchedule):
            return self.schedule
        if self.schedule == "auto":
            return choose_schedule(observations, private=mechanism is not None, warm=warm)
        if isinstance(self.schedule, str):
            return schedule_named(self.schedule)
        raise ValueError(f"schedule must be an EMSchedule, a preset's name or 'auto', not "
                         f"{self.schedule!r}")  # fmt: skip

    def _word_classes(self, sentences, text, previous, rng, watch) -> WordClasses | None:
        if self.model != "context" or self.word_classes is False:
            return None
        if isinstance(self.word_classes, WordClasses):
            return self.word_classes
        tic = watch.start()
        classes = learn_word_classes(text if text is not None else sentences, random_state=rng)
        watch.stop("classes", tic)
        return classes

    def _problem(self, sentences, observations, verifications, mechanism, watch) -> _Problem:
        tic = watch.start()
        corpus = encode_corpus(sentences)
        if mechanism is not None:
            if mechanism.n_tags != len(self.tagset_):
                raise ValueError("the mechanism was made for another tag set")
            asked = observations.tag_mask.sum(axis=1)
            if len(observations) and asked.max() > MAX_PRIVATE_TAGS:
                raise ValueError(
                    f"private observations ask at most {MAX_PRIVATE_TAGS} tags each, "
                    f"not {int(asked.max())}: the privacy budget is split across them"
                )
        observations = Observations.create(  # re-validate against this corpus
            sentence=observations.sentence,
            start=observations.start,
            length=observations.length,
            tag_mask=observations.tag_mask,
            counts=observations.counts,
            annotator=observations.annotator,
            sentence_lengths=corpus.lengths,
            released=mechanism is not None,
        )
        if verifications is not None:
            verifications = VerificationAnswers.create(
                sentence=verifications.sentence,
                start=verifications.start,
                shown=verifications.shown,
                answer=verifications.answer,
                wrong=verifications.wrong,
                annotator=verifications.annotator,
                sentence_lengths=corpus.lengths,
                n_tags=len(self.tagset_),
            )
        # Every token inside a window of either kind, indexed compactly.
        placed = [window_token_index(corpus, observations)]
        if verifications is not None:
            placed.append(window_token_index(corpus, verifications))
        tokens = np.unique(np.concatenate([w[w >= 0] for w in placed]))
        windows = [np.where(w >= 0, np.searchsorted(tokens, np.maximum(w, 0)), -1) for w in placed]
        covered = np.unique(corpus.type_ids[tokens])
        design_all = design_matrix(corpus, observations)
        column_of_type = np.full(corpus.n_types, -1)
        column_of_type[covered] = np.arange(covered.shape[0])
        forms = [corpus.vocabulary[t] for t in covered]
        watch.stop("solve", tic)
        tic = watch.start()
        word = self.features if self.features is not None else FeatureConfig()
        node_features = NodeFeatures(
            forms=forms,
            type_ids=column_of_type[corpus.type_ids[tokens]],
            x=featurize(forms, word),
        )
        context = None
        if self.model == "context":
            # Only sentences holding a window are read.
            sentence_of = np.repeat(np.arange(len(sentences)), corpus.lengths)[tokens]
            used, local = np.unique(sentence_of, return_inverse=True)
            starts = np.concatenate([[0], np.cumsum(corpus.lengths[used])[:-1]])
            context = _SentenceTokens(
                features=ContextTagger(
                    features=self._context_config(), word_classes=self.word_classes_
                ).featurize([sentences[s] for s in used]),
                lengths=corpus.lengths[used],
                rows=starts[local.ravel()] + (tokens - corpus.offsets[sentence_of]),
            )
        watch.stop("fit", tic)
        return _Problem(
            corpus=corpus,
            observations=observations,
            design=design_all[:, covered].tocsr(),
            covered=covered,
            forms=forms,
            tokens=tokens,
            evidence=(
                CountEvidence(observations, windows[0])
                if mechanism is None
                else PrivateCountEvidence(observations, windows[0], mechanism)
            ),
            moment_counts=(
                observations.counts
                if mechanism is None
                else mechanism.debiased_counts(observations)
            ),
            mechanism=mechanism,
            verification=(
                VerificationEvidence(verifications, windows[1])
                if verifications is not None
                else None
            ),
            node_features=node_features,
            context=context,
        )

    def _context_config(self) -> ContextConfig:
        word = self.features if self.features is not None else FeatureConfig()
        context = self.context if self.context is not None else ContextConfig(word=word)
        if context.word != word:
            raise ValueError("context.word must equal features (the shared word features)")
        return context

    def _new_tagger(self, max_iter: int, kind: str | None = None, alpha: float | None = None):
        if (kind or self.model) == "node":
            return NodeTagger(alpha=self.alpha_, features=self.features, max_iter=max_iter)
        return ContextTagger(
            alpha=self.schedule_.context_alpha if alpha is None else alpha,
            features=self._context_config(),
            word_classes=self.word_classes_,
            max_iter=max_iter,
        )

    def _token_probs(self, problem: _Problem, tagger, needed=None) -> np.ndarray:
        """The tagger's priors of every covered token, as fitted (a previous version's
        calibration is for its users, not for EM); with ``needed`` (a mask over the covered
        tokens), a contextual tagger reads only the sentences holding those and the other rows
        are zero (at a million answers the whole corpus' second stage takes gigabytes)."""
        if tagger.kind == "node":
            return tagger.token_proba(None, features=problem.node_features, calibrated=False)
        context, rows = problem.context, slice(None)
        if needed is not None:
            sentence = _sentence_of_covered(context)
            rows = np.isin(sentence, sentence[needed])  # every covered token of their sentences
            context = _tokens_view(context, rows)
        probs = tagger.token_proba(
            None, features=context.features, lengths=context.lengths, rows=context.rows,
            calibrated=False,
        )  # fmt: skip
        if needed is None:
            return probs
        out = np.zeros((problem.tokens.shape[0], probs.shape[1]))
        out[rows] = probs
        return out

    # -------------------------------------------------------------- steps 1-3: moments
    def _choose_ridge(self, problem, holdout, weights, watch) -> None:
        if self.ridge != "auto":
            self.ridge_, self.ridge_errors_ = float(self.ridge), {}
            return
        tic = watch.start()
        obs = problem.observations
        self.ridge_, self.ridge_errors_ = select_ridge(
            problem.design,
            problem.moment_counts,
            obs.tag_mask * weights[:, None],
            obs.length,
            self.ridge_grid,
            holdout=holdout,
        )
        watch.stop("solve", tic)

    def _moments(
        self, problem: _Problem, weights, solution: RidgeSolution | None, warm, watch
    ) -> tuple[RidgeSolution, NodeTagger]:
        """Steps 1-3 with observation weights ``weights``."""
        tic = watch.start()
        obs = problem.observations
        solution = solve_word_tag_probs(
            problem.design,
            problem.moment_counts,
            obs.tag_mask * weights[:, None],
            obs.length,
            self.ridge_,
            x0=solution.raw if solution is not None else None,
        )
        watch.stop("solve", tic)
        tic = watch.start()
        n_a, _ = coverage(problem.corpus, obs, weights)
        self.coverage_ = n_a[problem.covered]
        self.word_tag_probs_ = solution.probs
        self.vocabulary_ = problem.forms
        self.tag_prior_ = solution.prior
        tagger = self._new_tagger(self.schedule_.moment_fit_iter, "node").fit_types(
            problem.forms,
            soft_counts(self.coverage_, solution.probs),
            self.tagset_,
            warm_start=warm,
            x=problem.node_features.x,
        )
        watch.stop("fit", tic)
        return solution, tagger

    def _choose_alpha(self, problem: _Problem, holdout, watch) -> None:
        """α of the log-linear fits: given, or chosen by the squared count error of the held-out
        observations under moment taggers fitted without them."""
        schedule = self.schedule_
        if schedule.alpha != "auto":
            self.alpha_, self.alpha_errors_ = float(schedule.alpha), {}
            return
        if holdout.sum() == 0 or holdout.all():  # nothing to compare on
            self.alpha_, self.alpha_errors_ = 1.0, {}
            return
        tic = watch.start()
        obs = problem.observations
        keep = ~holdout
        fit_obs = obs.subset(keep)
        solution = solve_word_tag_probs(
            problem.design[keep], problem.moment_counts[keep], fit_obs.tag_mask * 1.0,
            fit_obs.length,
            self.ridge_,
        )  # fmt: skip
        n_a, _ = coverage(problem.corpus, fit_obs)
        soft = soft_counts(n_a[problem.covered], solution.probs)
        held_windows = problem.evidence.windows[holdout]
        errors: dict[float, float] = {}
        tagger = None
        for alpha in sorted(schedule.alpha_grid, reverse=True):
            tagger = NodeTagger(
                alpha=alpha, features=self.features, max_iter=schedule.moment_fit_iter
            ).fit_types(problem.forms, soft, self.tagset_, warm_start=tagger,
                        x=problem.node_features.x)  # fmt: skip
            mean, _ = expected_counts(self._token_probs(problem, tagger), held_windows)
            squared = (mean - problem.moment_counts[holdout]) ** 2
            errors[float(alpha)] = float(squared[obs.tag_mask[holdout]].mean())
        self.alpha_ = min(errors, key=lambda k: (errors[k], -k))
        self.alpha_errors_ = errors
        watch.stop("fit", tic)

    # -------------------------------------------------------------- step 4: reliability
    def _reliability(self, problem: _Problem, token_probs: np.ndarray, watch) -> Reliability:
        """Count annotators' reliability against the covered tokens' probabilities
        ``token_probs`` (returned); verification answerers' too, when there are verification
        answers: their skill, and weight 0 when flagged (``verification_reliability_``,
        ``verification_weights_``)."""
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
            flag_threshold=self.flag_threshold,
            min_observations=self.min_flag_observations_,
        )
        if problem.verification is not None:
            answers = problem.verification.answers
            table = verification_reliability(
                answers.annotator,
                answers.answer,
                problem.verification.probability_yes(token_probs),
                flag_threshold=self.flag_threshold,
                min_observations=self.min_flag_observations_,
            )
            flagged = [a for a, row in table.items() if row["flagged"]]
            self.verification_reliability_ = table
            self.verification_weights_ = np.where(np.isin(answers.annotator, flagged), 0.0, 1.0)
        watch.stop("reliability", tic)
        return result

    def _reweigh(self, problem: _Problem, token_probs, weights, reliability, watch):
        """The count answers' weights and reliability re-estimated against ``token_probs``, and
        whether the last ones were kept instead: when every count answer would weigh 0, the
        model (a weak one, on a small project) is what the crowd disagrees with, and flagging
        everyone would leave nothing to learn from and nobody to serve."""
        verification = self.verification_reliability_, self.verification_weights_
        estimate = self._reliability(problem, token_probs, watch)
        new_weights = estimate.observation_weights(problem.observations.annotator)
        if len(new_weights) and not new_weights.any():
            self.verification_reliability_, self.verification_weights_ = verification
            return weights, reliability, True
        return new_weights, estimate, False

    # -------------------------------------------------------------- step 5: EM
    def _refine(self, problem: _Problem, moment_tagger, previous, weights, reliability, watch):
        """5a: EM of the node-only model from the moments (the paper's model, refined); 5b: for
        the contextual model, EM whose first E-step uses 5a's priors. Starting the contextual
        M-steps from the refined node-only beliefs rather than the moments' measured better (on
        EWT, Sequoia and Alpino): a contextual model fits token beliefs closely enough to keep
        the errors of its first beliefs, so those should be as good as the cheap model makes
        them."""
        self.history_ = []
        schedule = self.schedule_
        node, weights, reliability, feasible = self._em(
            problem, moment_tagger, moment_tagger, weights, reliability, "node",
            schedule.n_em_iter, (schedule.em_fit_iter, schedule.em_fit_iter), watch,
        )  # fmt: skip
        self.node_tagger_ = node
        tagger = node
        if self.model == "context" and schedule.n_context_iter > 0:
            contextual = getattr(previous, "kind", None) == "context"
            warm = previous if contextual else node
            same_features = contextual and previous.word_classes is self.word_classes_
            prior = previous if schedule.prior_from_previous and same_features else node
            tagger, weights, reliability, feasible = self._em(
                problem, prior, warm, weights, reliability, "context", schedule.n_context_iter,
                (schedule.context_fit_iter, schedule.context_refit_iter), watch,
            )  # fmt: skip
        self.skipped_observations_ = np.flatnonzero(~feasible)
        return tagger, weights, reliability

    def _em(self, problem, prior, warm, weights, reliability, kind, n_iter, fit_iter, watch):
        """EM iterations fitting a ``kind`` model; the first E-step uses ``prior``'s token
        probabilities, the first M-step starts from ``warm`` and runs ``fit_iter[0]`` L-BFGS
        iterations, the later ones ``fit_iter[1]``. Count answers and verification answers enter
        the same E-step, each with its annotator's weight. Stops after ``n_iter`` iterations or
        when the weighted marginal log-likelihood per answer improves by less than the
        schedule's ``em_tol`` (relative). Contextual iterations but the last are cross-fitted
        with the schedule's ``cross_fit``
        folds (:meth:`_out_of_fold`); the last one, on ``em_tol`` or at ``n_iter``, fits the
        served model. Returns the model, the count observations' weights and reliability (both
        re-estimated after every iteration when ``reliability`` is on) and which count
        observations were feasible at the last E-step."""
        obs = problem.observations
        schedule = self.schedule_
        evidence = [problem.evidence]
        if problem.verification is not None:
            evidence.append(problem.verification)
        folds = self._folds(problem) if kind == "context" else None
        if folds is not None:
            problem.fold_views = _fold_views(
                problem.context, folds, schedule.cross_fit, problem.fitted
            )
        fold_models = [warm] * (0 if folds is None else schedule.cross_fit)
        tagger = prior
        probs = self._token_probs(problem, prior)  # the next E-step's priors
        feasible = np.ones(len(obs), dtype=bool)
        previous_ll = -np.inf
        for iteration in range(n_iter):
            tic = watch.start()
            all_weights = [weights, self.verification_weights_][: len(evidence)]
            e_step = expected_labels(
                probs,
                evidence,
                all_weights,
                n_rounds=schedule.n_bp_rounds,
                floor=schedule.posterior_floor,
            )
            feasible = e_step.feasible[0]
            e_step_cpu = time.process_time() - tic[1]
            total, mass = 0.0, 0.0
            for w, ok, log_z in zip(all_weights, e_step.feasible, e_step.log_z, strict=True):
                used = ok & (w > 0)
                total += float((w[used] * log_z[used]).sum())
                mass += float(w[used].sum())
            ll = total / max(mass, 1.0)
            alpha = self._context_alpha_at(iteration, n_iter) if kind == "context" else None
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
                fold_models, probs = self._out_of_fold(
                    problem, labels, folds, fold_models, max_iter
                )
                fitted = fold_models
            else:
                problem.fold_views = None  # the served model's M-step: their gigabyte back
                start = fold_models[0] if fold_models else warm if iteration == 0 else tagger
                tagger = self._fit_beliefs(
                    problem, self._new_tagger(max_iter, kind, alpha), labels, start
                )
                # How the served model was fitted, for its calibration: after cross-fitting,
                # from fold 0's model, which never read fold 0's sentences.
                crossed = folds is not None and iteration > 0
                self._last_m_step = _LastMStep(
                    labels=labels,
                    fit_iter=(max_iter,) if crossed else fit_iter[: min(iteration + 1, 2)],
                    alpha=alpha,
                    fold_start=start if crossed else None,
                )
                probs = self._token_probs(problem, tagger)
                fitted = [tagger]
            watch.stop("refine", tic)
            self.history_.append(
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
            if self.reliability:
                weights, reliability, _ = self._reweigh(problem, probs, weights, reliability, watch)
            if last:
                break
            previous_ll = ll
        return tagger, weights, reliability, feasible

    def _fit_beliefs(self, problem: _Problem, tagger, labels: np.ndarray, warm, context=None):
        """M-step: ``tagger`` fitted to the covered tokens' weighted beliefs ``labels`` (of the
        tokens of ``context``, a view of some sentences; by default every covered token's
        beliefs, of which a contextual model fits those of ``problem.fitted``)."""
        if tagger.kind == "node":
            return tagger.fit(
                None, labels, self.tagset_, warm_start=warm, features=problem.node_features
            )
        if context is None:
            context, labels = problem.fit_context, labels[problem.fitted]
        return tagger.fit(
            None, context.labels(labels), self.tagset_, warm_start=warm,
            features=context.features, lengths=context.lengths,
        )  # fmt: skip

    def _folds(self, problem: _Problem) -> np.ndarray | None:
        """The schedule's ``cross_fit`` folds of the covered tokens, by sentence."""
        sentence = np.searchsorted(problem.corpus.offsets, problem.tokens, side="right") - 1
        return sentence_folds(sentence, self.schedule_.cross_fit)

    def _out_of_fold(self, problem: _Problem, labels, folds, models, max_iter):
        """Cross-fitted M-step (:func:`.crossfit.cross_fitted_priors`): the fold models, warm
        from ``models``, each fitted and read on the sentences it concerns only (the others'
        rows would carry no label, or be thrown away), and the covered tokens' out-of-fold
        priors."""
        views = problem.fold_views
        return cross_fitted_priors(
            lambda f, fold_labels, start: self._fit_beliefs(
                problem,
                self._new_tagger(max_iter, "context", self.schedule_.cross_fit_alpha),
                fold_labels[(folds != f) & problem.fitted],
                start,
                context=views[f][1],
            ),
            lambda model, f: model.token_proba(
                None, features=views[f][0].features, lengths=views[f][0].lengths,
                rows=views[f][0].rows,
            ),
            labels,
            folds,
            models,
        )  # fmt: skip

    def _context_alpha_at(self, iteration: int, n_iter: int) -> float:
        """α of the contextual M-step ``iteration`` (0-based) of ``n_iter``: the schedule's
        ``context_alpha``, or with a larger ``context_alpha_start`` a geometric descent from it
        to ``context_alpha`` at the last iteration."""
        served = self.schedule_.context_alpha
        start = self.schedule_.context_alpha_start
        if start is None or start <= served or n_iter < 2:
            return served
        ratio = served / start
        return start * ratio ** min(1.0, iteration / (n_iter - 1))

    # -------------------------------------------------------------- AGM
    def _adversarial(self, problem: _Problem, served, watch):
        """The adversarial tagger for ``agm_cost`` on the last E-step's beliefs, over the
        features the served model reads."""
        tic = watch.start()
        labels = self._last_m_step.labels
        context = problem.context
        model = AdversarialTagger(
            served, np.asarray(self.agm_cost, dtype=np.float64),
            alpha=self.schedule_.context_alpha,
        ).fit(context.features, context.lengths, context.labels(labels), self.tagset_)  # fmt: skip
        watch.stop("agm", tic)
        return model

    # -------------------------------------------------------------- calibration
    def _temperature(self, problem: _Problem, served, holdout, weights, watch):
        """The temperature of the served model's probabilities, from answers it could not learn
        by heart: a model of its kind is refitted as its last M-step was, to the last E-step's
        beliefs of every sentence but those holding a held-out answer, and the temperatures are
        fitted to those answers' posterior tags under its marginals, which leave a temperature
        at 1 where the answers cannot tell (:func:`.calibration.fit_temperatures_posterior`):
        one for the words inside the refitted model's answered windows, one for the others (as
        words no answer covered are to the served model). Returns ``(temperature,
        unseen_temperature)``.
        The refit starts where the served model's fit started when that model had not read the
        held-out sentences: after cross-fitting, fold 0's model (the held-out sentences are then
        those of fold 0); otherwise the node-only model, with the M-steps' L-BFGS budgets.
        1.0 with fewer than ``MIN_CALIBRATION_ANSWERS`` held-out answers (a temperature fitted
        to a handful of answers is noise) or none left to fit."""
        obs = problem.observations
        last_m_step = self.__dict__.pop("_last_m_step", None)
        held = np.isin(obs.sentence, obs.sentence[holdout]) & (weights > 0)
        if last_m_step is not None and last_m_step.fold_start is not None:
            held &= obs.sentence % self.schedule_.cross_fit == 0  # fold 0 (crossfit.py)
        if last_m_step is None or held.sum() < MIN_CALIBRATION_ANSWERS or held.all():
            return 1.0, None
        tic = watch.start()
        alpha = last_m_step.alpha
        sentence = np.searchsorted(problem.corpus.offsets, problem.tokens, side="right") - 1
        labels = np.where(np.isin(sentence, obs.sentence[held])[:, None], 0.0, last_m_step.labels)
        model = last_m_step.fold_start
        if model is None:
            model = self.node_tagger_
        for max_iter in last_m_step.fit_iter:
            model = self._fit_beliefs(
                problem, self._new_tagger(max_iter, served.kind, alpha), labels, model
            )
        rows = np.flatnonzero(held)
        windows = problem.evidence.windows[rows]
        needed = np.zeros(problem.tokens.shape[0], dtype=bool)
        needed[windows[windows >= 0]] = True
        probs = self._token_probs(problem, model, needed)
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
        return seen_t, unseen_t

    # -------------------------------------------------------------- predict
    def save(self, file, *, metadata: dict | None = None) -> None:
        """Write the served tagger as a model file (:func:`.modelfile.save_tagger`)."""
        save_tagger(self.tagger_, file, metadata=metadata)

    def token_proba(self, sentences: Sequence[Sequence[str]]) -> np.ndarray:
        """(n_tokens, K) tag probabilities of the served model, every token read in its
        sentence."""
        return self.tagger_.token_proba(sentences)

    def predict(self, sentences: Sequence[Sequence[str]]) -> list[list[str]]:
        """Most probable tag of each token, sentence by sentence."""
        return self.tagger_.predict(sentences)
