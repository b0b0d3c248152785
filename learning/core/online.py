"""Online EM for the served model: the model follows the answers block by block.

After Mineiro's online EM for crowdsourcing (papers/mineiro-online-em-crowdsourcing.md) and
Liang & Klein's stepwise EM. Block ``t`` of new answers is used once:

1. **Progressive validation**: the block's mean ``log P(answer | x)`` and mean absolute count
   error ``|E_θ[N_b] − N_b|`` under the model *before* the update (the learning curve, as
   :func:`.evaluate.count_consistency` on answers the model has not seen).
2. **E-step**: the block's exact posteriors under the current model (:func:`.em.expected_labels`,
   the batch E-step run on the block's windows only), each answer weighted by its annotator's
   reliability.
3. **Stepwise M-step**: soft labels are running statistics. The labels of every stored token
   decay by ``1 − η_t`` and the block's tokens enter with mass ``η_t``,
   ``η_t = η₀ (τ₀ + t)^−ρ`` (``η₀ = 1, τ₀ = 0, ρ = 1``: every block weighs the same, the batch
   average; ``ρ < 1`` forgets older beliefs, made under older models). The contextual tagger
   then takes ``block_fit_iter`` warm-started L-BFGS iterations on the stored labels (the
   block's and, with ``replay``, a uniform sample of the others, at least
   ``replay_min_tokens``). The store
   keeps whole sentences (the contextual model reads neighbours) up to ``max_tokens`` tokens,
   dropping the oldest first, so an update costs the same at a million answers as at ten
   thousand once the store is full.
4. **Reliability** in a fixed table of ``n_slots`` rows indexed by a hash of the annotator id
   (memory bounded up front, whatever the number of annotators): each row adds the residual sums
   of :class:`.crowd.ReliabilitySums`, and weights and flags come from
   :func:`.crowd.reliability_from_sums`. A row that two annotators hash to is marked shared and
   falls back to the population's parameters (weight 1, never flagged).

5. **Refresh** (incremental EM, Neal & Hinton): the store keeps its sentences' answers; each
   update E-steps again, under the current model, those of the least recently E-stepped
   sentences (``refresh`` times the block's answers, at least ``refresh_min_answers``), whose
   new beliefs replace their old ones.

The learner starts, on its first block, from a batch :class:`.pipeline.CountTagger` fit of that
block (the moments, the node-only EM, then the contextual EM), and restarts from a batch fit of
every stored answer on every update while they are few (``refit_below``), then whenever they
have grown by half (``refit_growth``); or it starts from a
fitted model given as ``warm_start`` or to :meth:`seed` (the batch retrain's result), which then
does the refitting. Why the defaults: docs/decisions/015-online-em.md and
016-online-update-cost.md.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import scipy.sparse as sp

from .context_tagger import ContextTagger
from .counts import CountEvidence
from .crowd import Reliability, ReliabilitySums, reliability_from_sums, reliability_sums
from .em import expected_labels
from .observations import Observations
from .params import Params, check_is_fitted
from .pipeline import CountTagger
from .privacy import PrivateCountEvidence
from .schedule import WARM, EMSchedule
from .settings import CrowdSettings, FeatureSettings
from .training import TrainingSet
from .verification import VerificationEvidence

__all__ = ["OnlineCountTagger", "annotator_slot"]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def annotator_slot(annotator: np.ndarray, n_slots: int) -> np.ndarray:
    """Row of each annotator id in a table of ``n_slots`` rows: a multiplicative (Fibonacci)
    hash, stable across processes, spreading consecutive ids."""
    ids = np.asarray(annotator, dtype=np.int64).astype(np.uint64)
    with np.errstate(over="ignore"):
        mixed = ids * _GOLDEN
    return ((mixed >> np.uint64(17)) % np.uint64(n_slots)).astype(np.int64)


class OnlineCountTagger(Params):
    """Learn the contextual tagger from blocks of answers, one :meth:`partial_fit` per block.

    Parameters
    ----------
    eta0, tau0, rho : the step ``η_t = eta0 (tau0 + t)^−rho`` of block ``t``, clipped to
        [0, 1]; the first block has all the mass. Defaults 1, 0, 1: the running average.
    block_size : answers of a nominal block (default 1,000): blocks of other sizes count for
        their share of one, ``t`` being the answers so far over ``block_size`` and the step
        ``(m_t / block_size) η_t`` for a block of ``m_t`` answers, so that with the defaults each
        answer weighs the same however the stream is cut.
    block_fit_iter : L-BFGS iterations of each block's M-step (default 3).
    max_tokens : tokens of the sentences whose labels are kept (default 200,000).
    replay : None for M-steps on every stored token, or ``r`` (default 1): on the block's
        tokens and a uniform sample of ``r`` times as many stored ones, at least
        ``replay_min_tokens`` (a cost per update that follows the block, not the store).
    replay_min_tokens : the smallest sample of a ``replay`` M-step (default 100,000 tokens,
        half the default store): smaller samples made the steps noisy enough to lose accuracy;
        a store of at most that many tokens is read whole.
    refresh : None to keep each token's belief as its block's E-step made it, or ``r``
        (default 2): each update also E-steps again, under the current model, the stored answers of
        the least recently E-stepped sentences, about ``r`` times the block's answers (``inf``:
        all), and their new beliefs replace their old ones in the statistics, at the same mass
        (incremental EM, Neal & Hinton). The answers are stored with the sentences.
    refresh_min_answers : the fewest stored answers an update E-steps again when ``refresh``
        is on (default 2,000, all of them when fewer are stored): small blocks arrive often
        and each gains little, so their beliefs went stale where the batch's EM iterations
        would have corrected them. A block of 1,000 answers refreshes 2,000 anyway.
    refit_growth, refit_until : a batch :class:`.pipeline.CountTagger` fit of every stored
        answer restarts the learner (its counters, curve and annotator table kept) whenever the
        answers have grown ``refit_growth`` times (default 1.5; None: never) since the learner's
        last fit, as long as they are at most ``refit_until`` (default None: always): a small
        stream starts from as good a model as its answers allow, at a cost per answer that the
        geometric growth keeps bounded. A learner started by :meth:`seed` or ``warm_start``
        (the batch retrain's model) leaves refits to the batch retrain.
    refit_below : while the stored answers, the block's included, are at most this many
        (default 2,000), every update of a learner that started from nothing is such a refit:
        there each update E-steps every stored answer anyway (``refresh_min_answers``), a batch
        fit costs seconds, and the online steps fell up to 4 points behind it.
    n_slots : rows of the hashed annotator table (default 2**16).
    schedule : the :class:`.schedule.EMSchedule` whose ``context_alpha`` and
        ``posterior_floor`` the online steps use (default the ``warm`` preset).
    crowd : :class:`.settings.CrowdSettings`, how annotators are judged (default: the
        defaults), shared with :class:`.pipeline.CountTagger`.
    features : :class:`.settings.FeatureSettings` (default: the defaults; or one part, as
        :class:`.pipeline.CountTagger`'s), shared likewise.
    first_fit : keyword arguments of the :class:`.pipeline.CountTagger` fitted on the first
        block when there is no ``warm_start``.
    random_state : seed of that first fit.

    Attributes (after ``partial_fit``)
    ----------------------------------
    tagger_ (the served contextual model), tagset_, word_classes_, n_blocks_, n_answers_,
    progressive_ (one dict per block: block, answers, log_likelihood, count_error, eta,
    seconds), reliability_ (:class:`.crowd.Reliability` of the table's used rows, ids = slots),
    slot_owner_ (first annotator id hashed to each row, −1 if none), slot_shared_ (bool),
    flagged_annotators_ (ids seen whose row is flagged), stored_tokens_, stored_answers_.
    """

    def __init__(
        self,
        *,
        eta0: float = 1.0,
        tau0: float = 0.0,
        rho: float = 1.0,
        block_size: int = 1000,
        block_fit_iter: int = 3,
        max_tokens: int = 200_000,
        replay: float | None = 1.0,
        replay_min_tokens: int = 100_000,
        refresh: float | None = 2.0,
        refresh_min_answers: int = 2000,
        refit_growth: float | None = 1.5,
        refit_until: int | None = None,
        refit_below: int = 2000,
        n_slots: int = 2**16,
        schedule: EMSchedule = WARM,
        crowd: CrowdSettings | None = None,
        features: FeatureSettings | None = None,
        first_fit: dict | None = None,
        random_state: int | np.random.Generator | None = None,
    ) -> None:
        self.eta0 = eta0
        self.tau0 = tau0
        self.rho = rho
        self.block_size = block_size
        self.block_fit_iter = block_fit_iter
        self.max_tokens = max_tokens
        self.replay = replay
        self.replay_min_tokens = replay_min_tokens
        self.refresh = refresh
        self.refresh_min_answers = refresh_min_answers
        self.refit_growth = refit_growth
        self.refit_until = refit_until
        self.refit_below = refit_below
        self.n_slots = n_slots
        self.schedule = schedule
        self.crowd = crowd
        self.features = features
        self.first_fit = first_fit
        self.random_state = random_state

    # ------------------------------------------------------------------ public
    def partial_fit(self, data: TrainingSet, *, warm_start=None) -> OnlineCountTagger:
        """Learn from one block of answers, ``data`` (:class:`.training.TrainingSet`) whose
        sentence indices refer to its ``sentences`` (the whole corpus, the same list on every
        call). ``warm_start``: a fitted :class:`.pipeline.CountTagger` (or contextual tagger) to
        restart from, forgetting the stored labels (the batch retrain's consolidation)."""
        tic = time.perf_counter()
        sentences, observations, tagset = data.sentences, data.observations, data.tagset
        verifications, mechanism = data.verifications, data.mechanism
        fitted_on_block = False
        if getattr(self, "tagset_", tagset) != tagset:
            raise ValueError("tagset differs from the one the learner started with")
        self._validate_params()
        if warm_start is not None:
            self._start(warm_start, tagset)
        elif not hasattr(self, "tagger_"):
            self._start(self._batch_fit(data), tagset)
            self._fitted_at = len(observations)
            fitted_on_block = True
        block = self._block(sentences, observations, verifications, mechanism)
        probs = self._token_probs(block)
        weights = self._weights(observations)
        self._validate(block, probs, fitted_on_block)
        before = probs  # the annotators' residuals are taken under the model before the update
        if not fitted_on_block and self._refit_due(len(observations)):
            # Validated above under the model before the update; the refit is the update's start.
            self._refit(data)
            probs = self._token_probs(block)
        if self.refresh is None:
            e_step = self.e_step(block, probs, weights)
            self._learn_reliability(block, before)
        else:
            self._learn_reliability(block, before)
            block, probs, weights = self._with_replayed(
                sentences, block, probs, weights, verifications, mechanism
            )
            e_step = self.e_step(block, probs, weights)
        self.n_blocks_ += 1
        eta = self._eta(len(observations))
        self._store(block, e_step.beliefs * e_step.token_weight[:, None], eta)
        self._m_step(len(block["sentences"]))
        self.n_answers_ += len(observations) + (0 if verifications is None else len(verifications))
        self.progressive_[-1].update(eta=eta, seconds=time.perf_counter() - tic)
        return self

    def _refit_due(self, answers: int) -> bool:
        total = self._answers_counted + answers
        if hasattr(self, "_fitted_at") and total <= self.refit_below:
            return True
        if self.refit_growth is None:
            return False
        small = self.refit_until is None or total <= self.refit_until
        return small and total >= self.refit_growth * getattr(self, "_fitted_at", np.inf)

    def _validate_params(self) -> None:
        """Check the hyperparameters the online steps read (the batch fits check theirs)."""
        if self.n_slots < 1 or self.block_fit_iter < 1 or self.max_tokens < 1:
            raise ValueError("n_slots, block_fit_iter and max_tokens must be at least 1")
        if self.crowd is not None and not isinstance(self.crowd, CrowdSettings):
            raise ValueError("crowd must be CrowdSettings")
        FeatureSettings.of(self.features)

    @property
    def _crowd_settings(self) -> CrowdSettings:
        return CrowdSettings() if self.crowd is None else self.crowd

    def _batch_fit(self, data: TrainingSet) -> CountTagger:
        """A batch :class:`.pipeline.CountTagger` fit of ``data`` with this learner's settings."""
        return CountTagger(
            model="context", features=self.features, crowd=self.crowd,
            random_state=self.random_state, **(self.first_fit or {}),
        ).fit(data)  # fmt: skip

    def _refit(self, data: TrainingSet) -> None:
        """Restart from a batch fit of the stored answers and the block's, the stored answers'
        E-step labels as the whole store; counters, curve and annotator table go on."""
        sentences, observations, tagset = data.sentences, data.observations, data.tagset
        mechanism = data.mechanism
        stored = self._answers
        both = stored.joined(observations)
        fit = self._batch_fit(replace(data, observations=both, uniform=None))
        kept = (self.n_blocks_, self.n_answers_, self._answers_counted, self.progressive_)
        self._start(fit, tagset)
        self.n_blocks_, self.n_answers_, self._answers_counted, self.progressive_ = kept
        self._fitted_at = self._answers_counted + len(observations)
        if len(stored):
            block = self._block(sentences, stored, None, mechanism)
            e_step = self.e_step(block, self._token_probs(block), self._weights(stored))
            self._store(block, e_step.beliefs * e_step.token_weight[:, None], 1.0)

    def e_step(self, block: dict, probs: np.ndarray, weights: np.ndarray):
        """The block's exact E-step (:func:`.em.expected_labels`) under token priors ``probs``
        of the block's sentences, count answers weighted by ``weights``."""
        all_weights = [weights]
        if len(block["evidence"]) > 1:
            all_weights.append(np.ones(block["evidence"][1].windows.shape[0]))
        return expected_labels(
            probs, block["evidence"], all_weights, floor=self.schedule.posterior_floor
        )

    def state(self) -> dict[str, np.ndarray]:
        """Everything learned but the served tagger (saved apart as a model file), as arrays to
        store: the stored sentences' labels and masses, the annotator table, the counters and
        the progressive-validation curve. The stored features are not in it: :meth:`restore`
        computes them again from the sentences."""
        curve = self.progressive_
        return {
            "sentence": self._sentence,
            "lengths": self._lengths,
            "labels": self._labels.astype(np.float32),
            "token_mass": self._token_mass,
            "slot_owner": self.slot_owner_,
            "slot_shared": self.slot_shared_,
            "n_obs": self._n_obs,
            "crowd": self._crowd,
            "counters": np.array(
                [self.n_blocks_, self.n_answers_, self._answers_counted], dtype=np.int64
            ),
            "tagset": np.array(self.tagset_),
            "progressive": np.array(
                [[r["answers"], _nan(r["log_likelihood"]), _nan(r["count_error"])] for r in curve]
            ).reshape(-1, 3),
            **{"sum_" + key: values for key, values in self._sums.items()},
            **{"answer_" + f.name: getattr(self._answers, f.name) for f in _FIELDS},
            "fitted_at": np.array(getattr(self, "_fitted_at", -1), dtype=np.int64),
        }

    def restore(self, state: dict, tagger, sentences) -> OnlineCountTagger:
        """Go on from :meth:`state` and the served ``tagger`` it was saved with; ``sentences``
        maps every stored sentence index to its tokens."""
        self._start(tagger, tuple(str(t) for t in state["tagset"]))
        if len(state["slot_owner"]) != self.n_slots:
            raise ValueError("the saved annotator table has another number of rows")
        self.slot_owner_ = np.array(state["slot_owner"], dtype=np.int64)
        self.slot_shared_ = np.array(state["slot_shared"], dtype=bool)
        self._n_obs = np.array(state["n_obs"], dtype=np.int64)
        self._crowd = np.array(state["crowd"], dtype=np.float64)
        self._sums = {key: np.array(state["sum_" + key]) for key in self._sums}
        self.n_blocks_, self.n_answers_, self._answers_counted = (int(v) for v in state["counters"])
        self.progressive_ = [
            {"block": k + 1, "answers": int(a), "log_likelihood": _none(ll),
             "count_error": _none(err)}
            for k, (a, ll, err) in enumerate(state["progressive"])
        ]  # fmt: skip
        self._sentence = np.array(state["sentence"], dtype=np.int64)
        self._lengths = np.array(state["lengths"], dtype=np.int64)
        self._labels = np.array(state["labels"], dtype=np.float64)
        self._token_mass = np.array(state["token_mass"], dtype=np.float64)
        if "answer_sentence" in state:  # a state saved before answers were stored has none
            self._answers = Observations(
                **{f.name: np.array(state["answer_" + f.name]) for f in _FIELDS}
            )
        self.stored_answers_ = len(self._answers)
        if int(state.get("fitted_at", -1)) >= 0:
            self._fitted_at = int(state["fitted_at"])
        if len(self._sentence):
            self._x = self._tagger_like().featurize([sentences[s] for s in self._sentence])
        self.stored_tokens_ = int(self._lengths.sum())
        if self._n_obs.any():
            self._refresh_reliability()
        return self

    def token_proba(self, sentences: Sequence[Sequence[str]]) -> np.ndarray:
        """(n_tokens, K) tag probabilities of the served model."""
        check_is_fitted(self)
        return self.tagger_.token_proba(sentences)

    def predict(self, sentences: Sequence[Sequence[str]]) -> list[list[str]]:
        """Most probable tag of each token, sentence by sentence."""
        check_is_fitted(self)
        return self.tagger_.predict(sentences)

    # ------------------------------------------------------------------ steps
    def _start(self, fitted, tagset) -> None:
        tagger = fitted.tagger_ if isinstance(fitted, CountTagger) else fitted
        if tagger.kind != "context":
            raise ValueError("the online learner serves a contextual model")
        self.tagset_ = tagset
        self.tagger_ = tagger
        self.word_classes_ = tagger.word_classes
        self.n_blocks_ = 0
        self.n_answers_ = 0
        self._answers_counted = 0
        self._rng = np.random.default_rng(self.random_state)
        self.progressive_: list[dict] = []
        self.stored_tokens_ = 0
        self._x = sp.csr_matrix((0, tagger.feature_config_.n_features), dtype=np.float64)
        self._labels = np.zeros((0, len(tagset)))
        self._token_mass = np.zeros(0)  # the running-statistics weight of each stored token
        self._sentence = np.zeros(0, dtype=np.int64)  # stored sentences, oldest first
        self._lengths = np.zeros(0, dtype=np.int64)
        self._answers = _no_answers(len(tagset))  # the stored sentences' answers
        self.stored_answers_ = 0
        self.__dict__.pop("_fitted_at", None)  # the answers of the learner's last batch fit
        if not hasattr(self, "slot_owner_"):
            self._new_table()

    def _new_table(self) -> None:
        n = self.n_slots
        self.slot_owner_ = np.full(n, -1, dtype=np.int64)
        self.slot_shared_ = np.zeros(n, dtype=bool)
        self._sums = {
            key: np.zeros(n) for key in ("entries", "excess", "excess_squared", "squared", "chance")
        }
        self._n_obs = np.zeros(n, dtype=np.int64)
        self._crowd = np.zeros(2)  # Σ model variance, Σ entries
        self.reliability_ = None
        self.flagged_annotators_ = np.zeros(0, dtype=np.int64)
        self._flagged_slots = np.zeros(n, dtype=bool)
        self._slot_weight = np.ones(n)

    def _block(self, sentences, observations, verifications, mechanism, featurized=None) -> dict:
        """The block's sentences featurized (each whole), or ``featurized`` = (ids, lengths,
        features) of them sorted by id, and its answers' windows as rows of them."""
        if featurized is None:
            used = [observations.sentence]
            if verifications is not None:
                used.append(verifications.sentence)
            ids = np.unique(np.concatenate(used))
            lengths = np.array([len(sentences[s]) for s in ids], dtype=np.int64)
            x = self._tagger_like().featurize([sentences[s] for s in ids])
        else:
            ids, lengths, x = featurized
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])

        def windows(sentence, start, length):
            first = starts[np.searchsorted(ids, sentence)] + start
            w_max = int(length.max()) if len(length) else 0
            positions = np.arange(w_max)[None, :]
            return np.where(positions < length[:, None], first[:, None] + positions, -1)

        count_windows = windows(observations.sentence, observations.start, observations.length)
        evidence = [
            CountEvidence(observations, count_windows)
            if mechanism is None
            else PrivateCountEvidence(observations, count_windows, mechanism)
        ]
        if verifications is not None:
            v = verifications
            evidence.append(VerificationEvidence(v, windows(v.sentence, v.start, v.length)))
        return {
            "sentences": ids, "lengths": lengths, "x": x, "observations": observations,
            "evidence": evidence, "mechanism": mechanism, "new_tokens": None,
        }  # fmt: skip

    def _with_replayed(self, sentences, block, probs, weights, verifications, mechanism):
        """The block widened to its sentences' stored answers and to those of the least
        recently E-stepped stored sentences (about ``refresh`` times the block's answers), with
        the priors and weights of all its answers; ``new_tokens`` marks the tokens the block's
        own answers cover (the only ones that bring new mass)."""
        new = block["observations"]
        stored = self._answers
        position = _positions(self._sentence, stored.sentence)
        per_sentence = np.bincount(position, minlength=self._sentence.shape[0])
        candidates = np.flatnonzero(
            (per_sentence > 0) & ~np.isin(self._sentence, block["sentences"])
        )
        budget = self.refresh * len(new)
        if budget > 0:  # small blocks still refresh a floor of answers (a cost that is fixed)
            budget = max(budget, self.refresh_min_answers)
        if budget <= 0:
            candidates = candidates[:0]
        elif np.isfinite(budget):
            cumulative = np.cumsum(per_sentence[candidates])
            candidates = candidates[: int(np.searchsorted(cumulative, budget)) + 1]
        wanted = np.concatenate([block["sentences"], self._sentence[candidates]])
        old_rows = np.flatnonzero(np.isin(stored.sentence, wanted))
        if old_rows.size == 0:
            return block, probs, weights
        answers = new.joined(stored.subset(old_rows))
        # The replayed sentences' features are the stored ones: no tokens needed, none computed.
        ids = np.concatenate([block["sentences"], self._sentence[candidates]])
        lengths = np.concatenate([block["lengths"], self._lengths[candidates]])
        store_starts = np.concatenate([[0], np.cumsum(self._lengths)[:-1]])
        replayed_x = self._x[_ranges(store_starts[candidates], self._lengths[candidates])]
        # The block's priors are already known: only the replayed sentences are read.
        replayed_probs = self.tagger_.token_proba(
            None, features=replayed_x, lengths=self._lengths[candidates]
        )
        order = np.argsort(ids)
        x_starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        wanted_rows = _ranges(x_starts[order], lengths[order])
        x = sp.vstack([block["x"], replayed_x], format="csr")[wanted_rows]
        wide_probs = np.concatenate([probs, replayed_probs])[wanted_rows]
        featurized = (ids[order], lengths[order], x)
        wide = self._block(sentences, answers, verifications, mechanism, featurized)
        new_tokens = np.zeros(wide["x"].shape[0], dtype=bool)
        for k, evidence in enumerate(wide["evidence"]):
            windows = evidence.windows[: len(new)] if k == 0 else evidence.windows
            new_tokens[windows[windows >= 0]] = True
        wide["new_tokens"] = new_tokens
        replayed = answers.subset(np.arange(len(new), len(answers)))
        wide_weights = np.concatenate([weights, self._weights(replayed)])
        return wide, wide_probs, wide_weights

    def _token_probs(self, block: dict) -> np.ndarray:
        return self.tagger_.token_proba(None, features=block["x"], lengths=block["lengths"])

    def _validate(self, block: dict, probs: np.ndarray, fitted_on_block: bool) -> None:
        """Progressive validation: the block's answers scored by the model before the update
        (None for a first block the start was fitted on: no model had not seen it)."""
        obs = block["observations"]
        evidence = block["evidence"][0]
        result = evidence.posteriors(
            probs[np.maximum(evidence.windows, 0)], np.arange(len(obs)),
            self.schedule.posterior_floor,
        )  # fmt: skip
        ok = result.feasible
        mean, _ = evidence.expected_counts(probs)
        error = np.abs(mean - obs.counts)[obs.tag_mask]
        infeasible = int((~ok).sum())
        if fitted_on_block:
            ok, error = np.zeros_like(ok), error[:0]
        self.progressive_.append(
            {
                "block": self.n_blocks_ + 1,
                "answers": self.n_answers_ + len(obs),
                "log_likelihood": float(result.log_z[ok].mean()) if ok.any() else None,
                "count_error": float(error.mean()) if error.size else None,
                "infeasible": infeasible,
            }
        )

    def _weights(self, observations: Observations) -> np.ndarray:
        if not self._crowd_settings.reliability:
            return np.ones(len(observations))
        return self._slot_weight[annotator_slot(observations.annotator, self.n_slots)]

    def _learn_reliability(self, block: dict, probs: np.ndarray) -> None:
        """Add the block's residuals (under the pre-update model) to the hashed table."""
        if not self._crowd_settings.reliability:
            return
        obs = block["observations"]
        evidence = block["evidence"][0]
        mean, var = evidence.expected_counts(probs)
        mechanism = block["mechanism"]
        noise = None if mechanism is None else mechanism.expected_noise(obs, mean)
        sums = reliability_sums(
            obs.annotator, obs.tag_mask, obs.counts, obs.length, mean, var, known_noise=noise
        )
        slots = annotator_slot(sums.annotators, self.n_slots)
        owner = self.slot_owner_[slots]
        fresh = owner < 0
        # Two annotators of this block on one row, or a new one on a row already owned.
        first_of_slot = np.unique(slots, return_index=True)[1]
        crowded = np.bincount(slots, minlength=self.n_slots)[slots] > 1
        self.slot_shared_[slots[crowded | (~fresh & (owner != sums.annotators))]] = True
        new_rows = slots[first_of_slot][fresh[first_of_slot]]
        self.slot_owner_[new_rows] = sums.annotators[first_of_slot][fresh[first_of_slot]]
        for key, values in self._sums.items():
            np.add.at(values, slots, getattr(sums, key))
        np.add.at(self._n_obs, slots, sums.n_observations)
        self._crowd += (sums.variance, sums.mass)
        self._refresh_reliability()

    def _refresh_reliability(self) -> None:
        used = np.flatnonzero(self._n_obs > 0)
        table = ReliabilitySums(
            annotators=used, n_observations=self._n_obs[used],
            variance=float(self._crowd[0]), mass=float(self._crowd[1]),
            **{key: values[used] for key, values in self._sums.items()},
        )  # fmt: skip
        result: Reliability = reliability_from_sums(
            table,
            flag_threshold=self._crowd_settings.flag_threshold,
            min_observations=self._crowd_settings.min_observations,
            shared=self.slot_shared_[used],
        )
        self.reliability_ = result
        self._slot_weight[used] = result.weight
        self._flagged_slots[:] = False
        self._flagged_slots[used[result.flagged]] = True
        flagged_owners = self.slot_owner_[self._flagged_slots]
        self.flagged_annotators_ = np.sort(flagged_owners[flagged_owners >= 0])

    def _eta(self, answers: int) -> float:
        """``η`` of a block of ``answers`` answers (the first block: 1), counting the answers."""
        before = self._answers_counted
        self._answers_counted += answers
        if before == 0:
            return 1.0
        share = answers / self.block_size
        t = self._answers_counted / self.block_size
        return float(np.clip(share * self.eta0 * (self.tau0 + t) ** -self.rho, 0.0, 1.0))

    def seed(self, data: TrainingSet, tagger) -> OnlineCountTagger:
        """Start from a fitted ``tagger`` (the batch retrain's) and store the E-step labels and
        annotator residuals of ``data``'s count answers, answers it was fitted on, without a
        step: the next blocks' M-steps then weigh them against what the batch fit learned."""
        sentences, observations, mechanism = data.sentences, data.observations, data.mechanism
        self._start(tagger, data.tagset)
        block = self._block(sentences, observations, None, mechanism)
        probs = self._token_probs(block)
        e_step = self.e_step(block, probs, self._weights(observations))
        self._learn_reliability(block, probs)
        self._store(
            block, e_step.beliefs * e_step.token_weight[:, None], self._eta(len(observations))
        )
        return self

    def _store(self, block: dict, labels: np.ndarray, eta: float) -> None:
        """Running soft-label statistics: old mass × (1 − η), the tokens of the block's new
        answers mass η (their sentences replace any stored copy), the oldest sentences dropped
        past ``max_tokens``. With ``refresh``, a stored token keeps its mass and takes its new
        label: its old contribution is replaced, not added to."""
        self._token_mass *= 1.0 - eta
        labelled = labels.sum(axis=1) > 0
        fresh = labelled if block["new_tokens"] is None else labelled & block["new_tokens"]
        block_mass = np.where(fresh, eta / max(int(fresh.sum()), 1), 0.0)
        keep = ~np.isin(self._sentence, block["sentences"])
        answers = block["observations"]
        if self.refresh is not None and not keep.all():
            block_mass += np.where(labelled, self._mass_of(block), 0.0)
        elif not keep.all():  # the labels are replaced, the earlier answers kept for a refit
            earlier = self._answers.subset(np.isin(self._answers.sentence, block["sentences"]))
            answers = earlier.joined(answers)
        if not keep.all():
            rows = np.repeat(keep, self._lengths)
            self._drop(rows, keep)
        self._answers = self._answers.joined(answers)
        self._x = sp.vstack([self._x, block["x"]], format="csr")
        self._labels = np.vstack([self._labels, labels])
        self._token_mass = np.concatenate([self._token_mass, block_mass])
        self._sentence = np.concatenate([self._sentence, block["sentences"]])
        self._lengths = np.concatenate([self._lengths, block["lengths"]])
        excess = int(self._lengths.sum()) - self.max_tokens
        if excess > 0:
            cut = int(np.searchsorted(np.cumsum(self._lengths), excess))
            keep = np.arange(self._lengths.shape[0]) > cut
            self._drop(np.repeat(keep, self._lengths), keep)
        self.stored_tokens_ = int(self._lengths.sum())
        self.stored_answers_ = len(self._answers)

    def _mass_of(self, block: dict) -> np.ndarray:
        """The stored (already decayed) mass of each token of the block, 0 where its sentence
        is not stored."""
        mass = np.zeros(block["x"].shape[0])
        starts = np.concatenate([[0], np.cumsum(self._lengths)[:-1]])
        block_starts = np.concatenate([[0], np.cumsum(block["lengths"])[:-1]])
        where = {int(s): k for k, s in enumerate(self._sentence)}
        for k, sentence in enumerate(block["sentences"]):
            j = where.get(int(sentence))
            if j is not None:
                n = int(self._lengths[j])
                stored = self._token_mass[starts[j] : starts[j] + n]
                mass[block_starts[k] : block_starts[k] + n] = stored
        return mass

    def _drop(self, rows: np.ndarray, keep: np.ndarray) -> None:
        self._answers = self._answers.subset(np.isin(self._answers.sentence, self._sentence[keep]))
        self._x = self._x[rows]
        self._labels = self._labels[rows]
        self._token_mass = self._token_mass[rows]
        self._sentence = self._sentence[keep]
        self._lengths = self._lengths[keep]

    def _m_step(self, block_sentences: int) -> None:
        """``block_fit_iter`` L-BFGS iterations on the stored labels, each token's weighted by
        its mass (scaled to a mean of 1 over labelled tokens, so that the L2 strength means what
        it means in a batch fit), warm from the current model. With ``replay``, on the block's
        sentences (the last ``block_sentences`` stored) and a uniform sample of the others of
        ``replay`` times their tokens (at least ``replay_min_tokens``; all of them when they are
        fewer), the sample's masses scaled up to the others' total: an unbiased estimate of the
        whole objective, at a cost that does not grow with the store past the floor."""
        rows = np.ones(self._labels.shape[0], dtype=bool)
        x, lengths, mass = self._x, self._lengths, self._token_mass
        older = self._lengths.shape[0] - block_sentences
        wanted = np.inf
        if self.replay is not None:
            wanted = max(self.replay * self._lengths[older:].sum(), self.replay_min_tokens)
        if older > 0 and wanted < self._lengths[:older].sum():
            order = self._rng.permutation(older)
            chosen = order[: int(np.searchsorted(np.cumsum(self._lengths[order]), wanted)) + 1]
            keep = np.zeros(self._lengths.shape[0], dtype=bool)
            keep[chosen] = True
            keep[older:] = True
            rows = np.repeat(keep, self._lengths)
            first_block_row = int(self._lengths[:older].sum())
            old_rows = np.arange(rows.shape[0]) < first_block_row
            sample_mass = mass[rows & old_rows].sum()
            mass = mass.copy()
            if sample_mass > 0:
                mass[old_rows] *= mass[old_rows].sum() / sample_mass
            x, lengths, mass = x[rows], self._lengths[keep], mass[rows]
        labelled = mass > 0
        if not labelled.any():
            return
        scale = labelled.sum() / mass.sum()
        labels = self._labels[rows] * (mass * scale)[:, None]
        self.tagger_ = self._tagger_like(self.block_fit_iter).fit(
            None, labels, self.tagset_, warm_start=self.tagger_, features=x, lengths=lengths,
        )  # fmt: skip

    def _tagger_like(self, max_iter: int = 1) -> ContextTagger:
        return ContextTagger(
            alpha=self.schedule.context_alpha,
            features=self.tagger_.features,
            word_classes=self.word_classes_,
            max_iter=max_iter,
            tag_max_iter=max_iter,
        )


_FIELDS = dataclasses.fields(Observations)


def _no_answers(n_tags: int) -> Observations:
    empty = np.zeros(0, dtype=np.int64)
    return Observations(
        sentence=empty, start=empty, length=empty, tag_mask=np.zeros((0, n_tags), dtype=bool),
        counts=np.zeros((0, n_tags), dtype=np.int64), annotator=empty,
    )  # fmt: skip


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``start, start + 1, …, start + length − 1`` of each (start, length), concatenated."""
    before = np.cumsum(lengths) - lengths
    return np.repeat(starts - before, lengths) + np.arange(int(lengths.sum()))


def _positions(keys: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Index in ``keys`` (distinct) of each of ``values`` (all in ``keys``)."""
    order = np.argsort(keys, kind="stable")
    return order[np.searchsorted(keys[order], values)]


def _nan(value: float | None) -> float:
    return np.nan if value is None else float(value)


def _none(value: float) -> float | None:
    return None if np.isnan(value) else float(value)
