"""The problem every stage of a fit works on, built once per fit, and how a stage makes, fits
and reads a tagger.

:func:`build_problem` encodes the corpus, re-validates the answers against it and indexes
every token inside a window of any kind compactly (the *covered* tokens): the count answers'
design matrix over the covered word types (the moments), their windows over the covered
tokens (EM), and the features of both model kinds. :class:`Models` is what the stages share
about the taggers: the kind served, the features, the word classes, the schedule and the α the
moments chose.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp

from ..context_tagger import ContextTagger
from ..copying import ModelFollowing, model_following
from ..counts import CountEvidence
from ..design import Corpus, design_matrix, encode_corpus
from ..em import window_token_index
from ..features import featurize
from ..node_tagger import NodeFeatures, NodeTagger
from ..observations import Observations
from ..privacy import MAX_PRIVATE_TAGS, Mechanism, PrivateCountEvidence
from ..schedule import EMSchedule
from ..settings import FeatureSettings
from ..training import TrainingSet
from ..verification import VerificationAnswers, VerificationEvidence
from ..wordclasses import WordClasses

__all__ = ["STAGES", "Models", "Problem", "SentenceTokens", "Stopwatch", "build_problem"]

STAGES = ("solve", "fit", "classes", "refine", "reliability", "calibrate")


class Stopwatch:
    """Accumulates wall-clock and process CPU seconds per stage into ``timings``."""

    def __init__(self) -> None:
        self.timings = {key: 0.0 for stage in STAGES for key in (stage, "cpu_" + stage)}

    def start(self) -> tuple[float, float]:
        return time.perf_counter(), time.process_time()

    def stop(self, stage: str, started: tuple[float, float]) -> None:
        self.timings[stage] += time.perf_counter() - started[0]
        self.timings["cpu_" + stage] += time.process_time() - started[1]


@dataclass
class SentenceTokens:
    """Every token of the sentences that hold a window, for the contextual model (which reads a
    token's neighbours, covered or not): stage-1 features of each (``features``), the sentences'
    ``lengths``, and the row of each covered token (``rows``, in the order of ``Problem.tokens``).
    """

    features: sp.csr_matrix
    lengths: np.ndarray
    rows: np.ndarray

    def labels(self, covered_labels: np.ndarray) -> np.ndarray:
        """Soft labels of every token: the covered tokens' ``covered_labels``, zero elsewhere."""
        out = np.zeros((self.features.shape[0], covered_labels.shape[1]))
        out[self.rows] = covered_labels
        return out

    def sentence_of_covered(self) -> np.ndarray:
        """The sentence (of this view) of each covered token."""
        sentence_of_row = np.repeat(np.arange(self.lengths.shape[0]), self.lengths)
        return sentence_of_row[self.rows]

    def view(self, sentences: np.ndarray, tokens: np.ndarray) -> SentenceTokens:
        """The view of the sentences ``sentences`` (a mask over this view's sentences) and of
        their covered tokens ``tokens`` (a mask over ``rows``)."""
        keep = np.repeat(sentences, self.lengths)
        return SentenceTokens(
            features=self.features[keep],
            lengths=self.lengths[sentences],
            rows=(np.cumsum(keep) - 1)[self.rows[tokens]],
        )

    def tokens_view(self, tokens: np.ndarray) -> SentenceTokens:
        """The view of the covered tokens ``tokens`` (a mask) and of their sentences."""
        if tokens.all():
            return self
        sentences = np.zeros(self.lengths.shape[0], dtype=bool)
        sentences[self.sentence_of_covered()[tokens]] = True
        return self.view(sentences, tokens)


@dataclass(frozen=True)
class Problem:
    """What every stage works on: the count answers on the covered word types (moments) and on
    the covered tokens (EM), the verification answers on the covered tokens, the features."""

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
    context: SentenceTokens | None  # the contextual model's view of the covered tokens
    trusted: np.ndarray  # per count answer: 1, or 0 for an excluded annotator's
    verification_trusted: np.ndarray  # likewise per verification answer
    following: ModelFollowing | None = None  # answers against the served model (copying.py)
    fitted: np.ndarray | None = None  # covered tokens the contextual M-steps fit (fit_sample)
    fit_context: SentenceTokens | None = None  # the contextual view of their sentences

    def sentence_of_tokens(self) -> np.ndarray:
        """The corpus sentence of each covered token."""
        return np.searchsorted(self.corpus.offsets, self.tokens, side="right") - 1

    def with_fit_sample(self, budget: int | None, rng: np.random.Generator) -> Problem:
        """The problem with the covered tokens the contextual M-steps fit (:func:`fit_sample`)."""
        if self.context is None:
            return self
        fitted = fit_sample(self.context.sentence_of_covered(), budget, rng)
        return replace(self, fitted=fitted, fit_context=self.context.tokens_view(fitted))


def fit_sample(sentence: np.ndarray, budget: int | None, rng: np.random.Generator) -> np.ndarray:
    """Which covered tokens (of sentences ``sentence``) the contextual M-steps fit on: all when
    they are at most ``budget`` (or ``budget`` is None), else those of whole sentences in a
    random order until the next would pass it. The M-step's cost follows the tokens it fits, so
    a budget bounds a retrain's time at sizes beyond today's projects, at some accuracy; the
    E-step still reads every answer (docs/decisions/021-contextual-token-budget.md)."""
    if budget is None or sentence.shape[0] <= budget:
        return np.ones(sentence.shape[0], dtype=bool)
    ids, size = np.unique(sentence, return_counts=True)
    order = rng.permutation(ids.shape[0])
    taken = order[: np.searchsorted(np.cumsum(size[order]), budget, side="right")]
    return np.isin(sentence, ids[taken])


@dataclass(frozen=True)
class Models:
    """How the stages make, fit and read taggers: the served ``kind``, the ``features``, the
    ``word_classes`` of the contextual model, the ``schedule`` and the node-only ``alpha``."""

    kind: str
    tagset: tuple[str, ...]
    features: FeatureSettings
    word_classes: WordClasses | None
    schedule: EMSchedule
    alpha: float = 1.0

    def new(self, max_iter: int, kind: str | None = None, alpha: float | None = None):
        """An unfitted tagger of ``kind`` (default the served one) with ``max_iter`` L-BFGS
        iterations; α: the node-only ``alpha``, the contextual schedule's, or ``alpha``."""
        if (kind or self.kind) == "node":
            return NodeTagger(alpha=self.alpha, features=self.features.word, max_iter=max_iter)
        return ContextTagger(
            alpha=self.schedule.context_alpha if alpha is None else alpha,
            features=self.features.context,
            word_classes=self.word_classes,
            max_iter=max_iter,
        )

    def fit_beliefs(self, problem: Problem, tagger, labels: np.ndarray, warm, context=None):
        """M-step: ``tagger`` fitted to the covered tokens' weighted beliefs ``labels`` (of the
        tokens of ``context``, a view of some sentences; by default every covered token's
        beliefs, of which a contextual model fits those of ``problem.fitted``)."""
        if tagger.kind == "node":
            return tagger.fit(
                None, labels, self.tagset, warm_start=warm, features=problem.node_features
            )
        if context is None:
            context, labels = problem.fit_context, labels[problem.fitted]
        return tagger.fit(
            None, context.labels(labels), self.tagset, warm_start=warm,
            features=context.features, lengths=context.lengths,
        )  # fmt: skip

    @staticmethod
    def token_probs(problem: Problem, tagger, needed=None) -> np.ndarray:
        """The tagger's priors of every covered token, as fitted (a previous version's
        calibration is for its users, not for EM); with ``needed`` (a mask over the covered
        tokens), a contextual tagger reads only the sentences holding those and the other rows
        are zero (at a million answers the whole corpus' second stage takes gigabytes)."""
        if tagger.kind == "node":
            return tagger.token_proba(None, features=problem.node_features, calibrated=False)
        context, rows = problem.context, slice(None)
        if needed is not None:
            sentence = context.sentence_of_covered()
            rows = np.isin(sentence, sentence[needed])  # every covered token of their sentences
            context = context.tokens_view(rows)
        probs = tagger.token_proba(
            None, features=context.features, lengths=context.lengths, rows=context.rows,
            calibrated=False,
        )  # fmt: skip
        if needed is None:
            return probs
        out = np.zeros((problem.tokens.shape[0], probs.shape[1]))
        out[rows] = probs
        return out


def build_problem(data: TrainingSet, models: Models, watch: Stopwatch) -> Problem:
    """The problem of ``data`` for ``models`` (module docstring)."""
    tic = watch.start()
    sentences, mechanism = data.sentences, data.mechanism
    corpus = encode_corpus(sentences)
    observations = data.observations
    if mechanism is not None:
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
    verifications = data.verifications
    if verifications is not None:
        verifications = VerificationAnswers.create(
            sentence=verifications.sentence,
            start=verifications.start,
            shown=verifications.shown,
            answer=verifications.answer,
            wrong=verifications.wrong,
            annotator=verifications.annotator,
            sentence_lengths=corpus.lengths,
            n_tags=len(data.tagset),
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
    node_features = NodeFeatures(
        forms=forms,
        type_ids=column_of_type[corpus.type_ids[tokens]],
        x=featurize(forms, models.features.word),
    )
    context = None
    if models.kind == "context":
        # Only sentences holding a window are read.
        sentence_of = np.repeat(np.arange(len(sentences)), corpus.lengths)[tokens]
        used, local = np.unique(sentence_of, return_inverse=True)
        starts = np.concatenate([[0], np.cumsum(corpus.lengths[used])[:-1]])
        context = SentenceTokens(
            features=ContextTagger(
                features=models.features.context, word_classes=models.word_classes
            ).featurize([sentences[s] for s in used]),
            lengths=corpus.lengths[used],
            rows=starts[local.ravel()] + (tokens - corpus.offsets[sentence_of]),
        )
    watch.stop("fit", tic)
    following = None
    served = data.served_answers
    if mechanism is None and served is not None and served.any() and data.served_proba is not None:
        following = model_following(
            observations.annotator,
            observations.tag_mask,
            observations.counts,
            windows[0],
            data.served_proba[tokens],
            answered=served,
        )
    return Problem(
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
            observations.counts if mechanism is None else mechanism.debiased_counts(observations)
        ),
        mechanism=mechanism,
        verification=(
            VerificationEvidence(verifications, windows[1]) if verifications is not None else None
        ),
        node_features=node_features,
        context=context,
        trusted=data.trusted(observations.annotator),
        verification_trusted=(
            data.trusted(verifications.annotator) if verifications is not None else np.zeros(0)
        ),
        following=following,
    )
