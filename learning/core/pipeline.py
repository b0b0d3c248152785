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

from .context_tagger import ContextTagger
from .counts import CountEvidence, expected_counts
from .crowd import Reliability, estimate_reliability
from .design import Corpus, coverage, design_matrix, encode_corpus
from .em import expected_labels, window_token_index
from .features import ContextConfig, FeatureConfig, featurize
from .modelfile import save_tagger
from .node_tagger import NodeFeatures, NodeTagger
from .observations import Observations
from .privacy import MAX_PRIVATE_TAGS, Mechanism, PrivateCountEvidence
from .solver import RidgeSolution, select_ridge, solve_word_tag_probs
from .verification import VerificationAnswers, VerificationEvidence, verification_reliability
from .wordclasses import WordClasses, learn_word_classes

__all__ = ["CountTagger", "MODEL_KINDS", "STAGES"]

MODEL_KINDS = ("context", "node")
STAGES = ("solve", "fit", "classes", "refine", "reliability")
# The "auto" schedules (CountTagger's n_em_iter, n_context_iter, cross_fit).
_INFORMATIVE_SCHEDULE = {"n_em_iter": 10, "n_context_iter": 2, "cross_fit": 0}
_WEAK_SCHEDULE = {"n_em_iter": 40, "n_context_iter": 10, "cross_fit": 2}


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


class CountTagger:
    """Learn a part-of-speech tagger from region-count observations.

    Parameters
    ----------
    model : the served model kind, ``"context"`` (default) or ``"node"`` (the paper's).
    ridge : λ of the ŵ least squares, or ``"auto"`` to pick it from ``ridge_grid``.
    ridge_grid : candidates for ``"auto"``.
    alpha : L2 strength of the node-only fits, or ``"auto"`` to pick it from ``alpha_grid`` by
        the squared count error of held-out observations (the hold-out of λ).
    context_alpha : L2 strength of the contextual fits (on EWT, Sequoia and Alpino, supervised on
        the same tokens, 0.1 and 0.3 both beat 1.0, by 0.04, 0.14 and 0.3 points); released
        counts use ``context_alpha_private``.
    context_alpha_start : None (default), or the L2 strength of the first contextual M-step,
        descending geometrically to ``context_alpha`` at the last of ``n_context_iter`` (EM does
        not stop on ``em_tol`` before it gets there). A smoother first contextual model keeps
        fewer of the node-only beliefs' errors, which pays when the answers say little per token
        and EM runs several contextual iterations. 3 windows per sentence, 2 tags per task,
        4 contextual iterations: EWT 90.15 % with a start of 3.0 against 89.74 % without,
        Sequoia 88.14 against 87.48. With the default 2 iterations it cost 0.2-0.3 points on
        every treebank (the last M-step does not get back to ``context_alpha``'s optimum in 20
        L-BFGS iterations), so it is off by default.
    context_alpha_private : the L2 strength of the contextual fits when the counts are releases of
        a privacy mechanism. The contextual model has the capacity to fit each token's E-step
        belief nearly as given, and a release's beliefs carry the mechanism's noise: the next
        E-step then counts that noise again, and the likelihood keeps rising while accuracy does
        not (at α = 3 with ``context_alpha`` 0.3, 8 contextual iterations instead of 2 raised the
        log-likelihood per answer from −0.738 to −0.683 on Sequoia and left the accuracy at
        86.4 %). A stronger penalty keeps the model to what context features share across
        tokens. k-ary randomized response, window 5, 1 tag per task, 10 tasks per sentence, at
        α = 3, 0.3 → 10: EWT 88.3 → 88.9 %, Sequoia 86.5 → 88.9 %, Alpino 71.1 → 74.0 % (of
        0.3, 1, 3, 10, 30, 100 on Sequoia and Alpino, 10 and 30 best, 100 worse than 0.3);
        α = 8: EWT 90.7 → 91.0 %, Sequoia 90.8 → 91.7 %, Alpino 79.7 → 79.5 %; α = 1: EWT
        49.5 → 52.0 %, Sequoia 43.9 → 45.4 %, Alpino 15.1 → 15.3 %. Held-out answers'
        likelihood does not choose it: on Alpino at α = 3 it peaked at 1-3 (sentences held out)
        while accuracy peaked at 10.
    features : :class:`FeatureConfig`, the word-form features (of both models).
    context : :class:`ContextConfig` of the contextual model (its ``word`` is ``features``).
    word_classes : learn word classes from the corpus' text for the contextual model (True), use
        the given :class:`WordClasses`, or none (False).
    n_em_iter : EM iterations of the node-only model (0: moments only), or ``"auto"``: 10 when
        the answers are informative, 40 when they are weak (see ``weak_share``). With 2 of 17
        tags per task and 3 windows per sentence (EWT) node-only EM is still climbing at 10
        iterations and stops on ``em_tol`` after 24 (its beliefs on the shown tokens 89.0 %
        then 90.0 % right); every later stage starts from it.
    n_em_iter_private : the same when the counts are releases of a privacy mechanism. EM's
        convergence rate is the fraction of information missing, which the release's noise
        raises: with k-ary randomized response at α = 3, 30 iterations instead of 10 gained 5.7
        points on Sequoia and 7.0 on Alpino (the log-likelihood still rising at 10).
    n_context_iter : EM iterations of the contextual model, after the node-only ones (with
        ``model="context"``; 0 serves the node-only model), or ``"auto"``: 2 when the answers
        are informative, 10 when they are weak.
    n_context_iter_private : the same for releases of a privacy mechanism (not cross-fitted by
        the ``"auto"`` schedule).
        With ``context_alpha_private`` the contextual model no longer copies the releases' noise
        from its beliefs, and further iterations keep improving it: krr, window 5, 1 tag per task,
        10 tasks per sentence, α = 3, 2 → 6 → 10 iterations: EWT 89.3 → 90.9 %, Sequoia 89.0 →
        90.2 → 90.4 %, Alpino 73.9 → 73.7 → 73.3 % (cross-fitted instead, 10 iterations: EWT
        90.4, Sequoia 89.8, Alpino 72.8 %, at more CPU).
    cross_fit : sentence folds of the contextual E-step's priors (0 or 1: none), or ``"auto"``:
        2 when the answers are weak, none otherwise. With ``F`` folds every contextual iteration
        but the last fits ``F`` models, model ``f`` on the beliefs of the tokens outside fold
        ``f`` (sentence ``s`` is in fold ``s mod F``), and gives fold ``f``'s tokens their next
        priors; the last iteration fits the served model on every token's beliefs. A contextual
        model fitted on a token's own beliefs gives them back as its prior (it can nearly
        memorise them): with weak answers EM then confirms its first beliefs' errors (EWT, 2 tags
        per task, 3 windows per sentence, 12 iterations: the answers' log-likelihood nearly 0,
        beliefs on the shown tokens 92.8 % right, test 90.8 %); out-of-fold priors are honest
        and EM keeps learning (10 iterations: 93.3 %, test 91.2 %; Sequoia 87.2 -> 91.1 %,
        Alpino 74.0 -> 75.0 % with the whole weak schedule).
    cross_fit_alpha : L2 strength of the fold models (each fits (F-1)/F of the tokens; EWT row 2:
        0.9 beat 0.3 and 3.0 by 0.1 and 0.5 points).
    weak_share : the answers are weak, for the ``"auto"`` schedules, when the tasks ask on average
        fewer than this share of the tag set (released counts of a private project keep the
        informative schedule: ``n_em_iter_private`` sets theirs).
    n_bp_rounds : belief-propagation rounds per E-step when windows overlap. 1 (default) combines
        each window's exact posterior as independent evidence (a composite likelihood whose value
        rises monotonically under EM); more rounds run loopy BP, which on EWT with 3 overlapping
        windows per sentence over-counted evidence and lost accuracy (measured 77 % vs 85 %).
    em_tol : stop EM when the weighted marginal log-likelihood per observation improves less
        (relative to its size; not while cross-fitting or annealing). Weak answers are explained
        at small cost (EWT, 2 of 17 tags per task: about -0.2 nats per answer), so the tolerance
        is relative to the value itself, not to at least 1 nat, which stopped node-only EM there
        at 18 iterations with its beliefs still improving.
    em_tol_private : the same for releases of a privacy mechanism; None (default) runs every
        iteration. A release's likelihood is mostly the mechanism's own noise, so a tolerance
        relative to its size stopped EM while the model was still improving: at α = 1 after 5-6
        of 30 iterations. Running all 30 (krr, window 5, 1 tag per task, 10 tasks per sentence)
        raised the refined accuracy at α = 1 on Sequoia / Alpino from 9.8 / 9.8 % to 26.4 /
        14.1 %, at α = 3 from 86.3 / 70.9 % to 86.4 / 71.1 %, at α = 8 on Alpino from 78.7 % to
        79.4 %.
    reliability : estimate annotator reliability and use it as weights.
    flag_threshold, min_flag_observations : flag annotators with skill below the threshold.
    posterior_floor : uniform mixing weight of the E-step priors (robustness to over-confidence).
    holdout_fraction : share of observations held out to choose λ.
    max_fit_iter : L-BFGS iterations of the moment fit.
    em_fit_iter : L-BFGS iterations of each node-only M-step (warm-started, so a partial M-step
        still increases the likelihood).
    context_fit_iter, context_refit_iter : L-BFGS iterations of the first contextual M-step and
        of the later ones.
    random_state : seed or ``np.random.Generator`` (the λ hold-out split and the word classes).

    Attributes (after ``fit``)
    --------------------------
    tagset_, vocabulary_ (covered word types), word_tag_probs_ (ŵ, vocabulary × K), coverage_,
    ridge_, ridge_errors_, alpha_, alpha_errors_, tag_prior_, moment_tagger_ (node-only, before
    EM), node_tagger_ (node-only, after its EM), tagger_ (the served model), word_classes_,
    coef_, intercept_, reliability_ (:class:`Reliability`), flagged_annotators_ (ids),
    skipped_observations_ (indices of observations whose counts cannot be realised), history_
    (per EM iteration), timings_ (wall and CPU seconds per stage), weak_answers_, n_em_iter_,
    n_context_iter_, cross_fit_ (the schedule used).
    """

    def __init__(
        self,
        *,
        model: str = "context",
        ridge: float | str = "auto",
        ridge_grid: Sequence[float] = (1e-3, 1e-2, 1e-1, 1.0, 10.0),
        alpha: float | str = 1.0,
        alpha_grid: Sequence[float] = (0.3, 1.0, 3.0, 10.0),
        context_alpha: float = 0.3,
        context_alpha_start: float | None = None,
        context_alpha_private: float = 10.0,
        features: FeatureConfig | None = None,
        context: ContextConfig | None = None,
        word_classes: bool | WordClasses = True,
        n_em_iter: int | str = "auto",
        n_em_iter_private: int = 30,
        n_context_iter: int | str = "auto",
        n_context_iter_private: int = 6,
        cross_fit: int | str = "auto",
        cross_fit_alpha: float = 0.9,
        weak_share: float = 0.5,
        n_bp_rounds: int = 1,
        em_tol: float = 2e-3,
        em_tol_private: float | None = None,
        reliability: bool = True,
        flag_threshold: float = 0.5,
        min_flag_observations: int = 10,
        posterior_floor: float = 1e-6,
        holdout_fraction: float = 0.1,
        max_fit_iter: int = 100,
        em_fit_iter: int = 10,
        context_fit_iter: int = 60,
        context_refit_iter: int = 20,
        random_state: int | np.random.Generator | None = None,
    ) -> None:
        self.model = model
        self.ridge = ridge
        self.ridge_grid = ridge_grid
        self.alpha = alpha
        self.alpha_grid = alpha_grid
        self.context_alpha = context_alpha
        self.context_alpha_start = context_alpha_start
        self.context_alpha_private = context_alpha_private
        self.features = features
        self.context = context
        self.word_classes = word_classes
        self.n_em_iter = n_em_iter
        self.n_em_iter_private = n_em_iter_private
        self.n_context_iter = n_context_iter
        self.n_context_iter_private = n_context_iter_private
        self.cross_fit = cross_fit
        self.cross_fit_alpha = cross_fit_alpha
        self.weak_share = weak_share
        self.n_bp_rounds = n_bp_rounds
        self.em_tol = em_tol
        self.em_tol_private = em_tol_private
        self.reliability = reliability
        self.flag_threshold = flag_threshold
        self.min_flag_observations = min_flag_observations
        self.posterior_floor = posterior_floor
        self.holdout_fraction = holdout_fraction
        self.max_fit_iter = max_fit_iter
        self.em_fit_iter = em_fit_iter
        self.context_fit_iter = context_fit_iter
        self.context_refit_iter = context_refit_iter
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
    ) -> CountTagger:
        """Fit on ``sentences`` (lists of word forms) and ``observations`` whose sentence
        indices refer to ``sentences`` and whose tag columns follow ``tagset``.

        ``warm_start``: a fitted :class:`CountTagger` or tagger of either kind with the same word
        features (the previous model version). ``verifications``: yes/no answers on windows of
        the same sentences (:mod:`.verification`); they enter the EM, not the moments.
        ``mechanism``: the observations' counts are releases of this local privacy mechanism
        (:mod:`.privacy`): the moments use their debiased values, the E-step their exact
        likelihood, reliability discounts the known noise. ``text``:
        the corpus' whole text to learn word classes from (default: ``sentences``)."""
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
        self._schedule(observations, mechanism)
        self.word_classes_ = self._word_classes(sentences, text, previous, rng, watch)
        problem = self._problem(sentences, observations, verifications, mechanism, watch)
        holdout = rng.random(len(observations)) < self.holdout_fraction

        # Steps 1-4: moments, node-only fit, reliability.
        weights = np.ones(len(problem.observations))
        self.verification_reliability_ = {}
        self.verification_weights_ = (
            np.ones(len(problem.verification.answers)) if problem.verification else np.zeros(0)
        )
        self._choose_ridge(problem, holdout, weights, watch)
        self._choose_alpha(problem, holdout, watch)
        solution, moment_tagger = self._moments(problem, weights, None, previous, watch)
        reliability = None
        if self.reliability:
            for _ in range(3):
                reliability = self._reliability(
                    problem, self._token_probs(problem, moment_tagger), watch
                )
                new_weights = reliability.observation_weights(problem.observations.annotator)
                converged = np.allclose(new_weights, weights, atol=0.05)
                weights = new_weights
                if converged:
                    break
                self._choose_ridge(problem, holdout, weights, watch)  # without the doubtful
                solution, moment_tagger = self._moments(
                    problem, weights, solution, moment_tagger, watch
                )
        self.moment_tagger_ = moment_tagger

        # Step 5: EM with exact count posteriors, M-steps fitting the served model.
        tagger, weights, reliability = self._refine(
            problem, moment_tagger, previous, weights, reliability, watch
        )
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

    def _schedule(self, observations: Observations, mechanism: Mechanism | None) -> None:
        """Resolve the ``"auto"`` EM schedule: weak answers (tasks asking on average fewer than
        ``weak_share`` of the tags, counts not privatized) get the long, cross-fitted one."""
        asked = float(observations.tag_mask.mean()) if len(observations) else 1.0
        self.weak_answers_ = mechanism is None and asked < self.weak_share
        auto = _WEAK_SCHEDULE if self.weak_answers_ else _INFORMATIVE_SCHEDULE
        self.n_em_iter_, self.n_context_iter_, self.cross_fit_ = (
            auto[name] if getattr(self, name) == "auto" else int(getattr(self, name))
            for name in ("n_em_iter", "n_context_iter", "cross_fit")
        )

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
            alpha=self.context_alpha if alpha is None else alpha,
            features=self._context_config(),
            word_classes=self.word_classes_,
            max_iter=max_iter,
        )

    def _token_probs(self, problem: _Problem, tagger) -> np.ndarray:
        """The tagger's priors of every covered token."""
        if tagger.kind == "node":
            return tagger.token_proba(None, features=problem.node_features)
        context = problem.context
        return tagger.token_proba(
            None, features=context.features, lengths=context.lengths, rows=context.rows
        )

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
        tagger = self._new_tagger(self.max_fit_iter, "node").fit_types(
            problem.forms,
            self.coverage_[:, None] * solution.probs,
            self.tagset_,
            warm_start=warm,
            x=problem.node_features.x,
        )
        watch.stop("fit", tic)
        return solution, tagger

    def _choose_alpha(self, problem: _Problem, holdout, watch) -> None:
        """α of the log-linear fits: given, or chosen by the squared count error of the held-out
        observations under moment taggers fitted without them."""
        if self.alpha != "auto":
            self.alpha_, self.alpha_errors_ = float(self.alpha), {}
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
        soft = n_a[problem.covered][:, None] * solution.probs
        held_windows = problem.evidence.windows[holdout]
        errors: dict[float, float] = {}
        tagger = None
        for alpha in sorted(self.alpha_grid, reverse=True):
            tagger = NodeTagger(
                alpha=alpha, features=self.features, max_iter=self.max_fit_iter
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
            min_observations=self.min_flag_observations,
        )
        if problem.verification is not None:
            answers = problem.verification.answers
            table = verification_reliability(
                answers.annotator,
                answers.answer,
                problem.verification.probability_yes(token_probs),
                flag_threshold=self.flag_threshold,
                min_observations=self.min_flag_observations,
            )
            flagged = [a for a, row in table.items() if row["flagged"]]
            self.verification_reliability_ = table
            self.verification_weights_ = np.where(np.isin(answers.annotator, flagged), 0.0, 1.0)
        watch.stop("reliability", tic)
        return result

    # -------------------------------------------------------------- step 5: EM
    def _refine(self, problem: _Problem, moment_tagger, previous, weights, reliability, watch):
        """5a: EM of the node-only model from the moments (the paper's model, refined); 5b: for
        the contextual model, EM whose first E-step uses 5a's priors. Starting the contextual
        M-steps from the refined node-only beliefs rather than the moments' measured better (on
        EWT, Sequoia and Alpino): a contextual model fits token beliefs closely enough to keep
        the errors of its first beliefs, so those should be as good as the cheap model makes
        them."""
        self.history_ = []
        node, weights, reliability, feasible = self._em(
            problem, moment_tagger, moment_tagger, weights, reliability, "node",
            self.n_em_iter_ if problem.mechanism is None else self.n_em_iter_private,
            (self.em_fit_iter, self.em_fit_iter), watch,
        )  # fmt: skip
        self.node_tagger_ = node
        tagger = node
        private = problem.mechanism is not None
        n_context_iter = self.n_context_iter_private if private else self.n_context_iter_
        if self.model == "context" and n_context_iter > 0:
            warm = previous if getattr(previous, "kind", None) == "context" else node
            tagger, weights, reliability, feasible = self._em(
                problem, node, warm, weights, reliability, "context",
                n_context_iter, (self.context_fit_iter, self.context_refit_iter), watch,
            )  # fmt: skip
        self.skipped_observations_ = np.flatnonzero(~feasible)
        return tagger, weights, reliability

    def _em(self, problem, prior, warm, weights, reliability, kind, n_iter, fit_iter, watch):
        """EM iterations fitting a ``kind`` model; the first E-step uses ``prior``'s token
        probabilities, the first M-step starts from ``warm`` and runs ``fit_iter[0]`` L-BFGS
        iterations, the later ones ``fit_iter[1]``. Count answers and verification answers enter
        the same E-step, each with its annotator's weight. Stops after ``n_iter`` iterations or
        when the weighted marginal log-likelihood per answer improves by less than ``em_tol``
        (``em_tol_private`` for released counts)
        (relative). Contextual iterations but the last are cross-fitted with ``cross_fit_``
        folds (:meth:`_out_of_fold`); the last one, on ``em_tol`` or at ``n_iter``, fits the
        served model. Returns the model, the count observations' weights and reliability (both
        re-estimated after every iteration when ``reliability`` is on) and which count
        observations were feasible at the last E-step."""
        obs = problem.observations
        evidence = [problem.evidence]
        if problem.verification is not None:
            evidence.append(problem.verification)
        folds = self._folds(problem) if kind == "context" else None
        fold_models = [warm] * (0 if folds is None else self.cross_fit_)
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
                n_rounds=self.n_bp_rounds,
                floor=self.posterior_floor,
            )
            feasible = e_step.feasible[0]
            e_step_cpu = time.process_time() - tic[1]
            total, mass = 0.0, 0.0
            for w, ok, log_z in zip(all_weights, e_step.feasible, e_step.log_z, strict=True):
                used = ok & (w > 0)
                total += float((w[used] * log_z[used]).sum())
                mass += float(w[used].sum())
            ll = total / max(mass, 1.0)
            private = problem.mechanism is not None
            alpha = (
                self._context_alpha_at(iteration, n_iter, private) if kind == "context" else None
            )
            tol = self.em_tol if problem.mechanism is None else self.em_tol_private
            # Annealing and cross-fitting steps run on: the likelihood under a smoother or an
            # out-of-fold model is not the one EM raises.
            annealing = alpha is not None and alpha > self._served_context_alpha(private)
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
                start = fold_models[0] if fold_models else warm if iteration == 0 else tagger
                tagger = self._fit_beliefs(
                    problem, self._new_tagger(max_iter, kind, alpha), labels, start
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
                reliability = self._reliability(problem, probs, watch)
                weights = reliability.observation_weights(obs.annotator)
            if last:
                break
            previous_ll = ll
        return tagger, weights, reliability, feasible

    def _fit_beliefs(self, problem: _Problem, tagger, labels: np.ndarray, warm):
        """M-step: ``tagger`` fitted to the covered tokens' weighted beliefs ``labels``."""
        if tagger.kind == "node":
            return tagger.fit(
                None, labels, self.tagset_, warm_start=warm, features=problem.node_features
            )
        context = problem.context
        return tagger.fit(
            None, context.labels(labels), self.tagset_, warm_start=warm,
            features=context.features, lengths=context.lengths,
        )  # fmt: skip

    def _folds(self, problem: _Problem) -> np.ndarray | None:
        """Fold ``s mod cross_fit_`` of each covered token's sentence ``s``; None without
        cross-fitting or when a fold would be empty."""
        if self.cross_fit_ < 2:
            return None
        sentence = np.searchsorted(problem.corpus.offsets, problem.tokens, side="right") - 1
        folds = sentence % self.cross_fit_
        return folds if np.unique(folds).shape[0] == self.cross_fit_ else None

    def _out_of_fold(self, problem: _Problem, labels, folds, models, max_iter):
        """Cross-fitted M-step: contextual model ``f`` fitted (warm from ``models[f]``) on the
        soft ``labels`` of the covered tokens outside fold ``f``. Returns the models and the
        out-of-fold priors, each token's from the model of its fold."""
        probs = np.empty_like(labels)
        fitted = []
        for f, warm in enumerate(models):
            mine = folds == f
            model = self._fit_beliefs(
                problem,
                self._new_tagger(max_iter, "context", self.cross_fit_alpha),
                np.where(mine[:, None], 0.0, labels),
                warm,
            )
            probs[mine] = self._token_probs(problem, model)[mine]
            fitted.append(model)
        return fitted, probs

    def _served_context_alpha(self, private: bool) -> float:
        """The contextual model's L2 strength: ``context_alpha_private`` for released counts."""
        return self.context_alpha_private if private else self.context_alpha

    def _context_alpha_at(self, iteration: int, n_iter: int, private: bool = False) -> float:
        """α of the contextual M-step ``iteration`` (0-based) of ``n_iter``: the served α
        (:meth:`_served_context_alpha`), or with a larger ``context_alpha_start`` a geometric
        descent from it to the served α at the last iteration."""
        served = self._served_context_alpha(private)
        start = self.context_alpha_start
        if start is None or start <= served or n_iter < 2:
            return served
        ratio = served / start
        return start * ratio ** min(1.0, iteration / (n_iter - 1))

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
