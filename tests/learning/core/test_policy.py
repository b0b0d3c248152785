"""The retrain policy (`learning.core.policy.plan_version`) on synthetic answers: exclusion and
flags from the fit's one estimate, the warm-start rule, and no verification round before a
model can be judged."""

from dataclasses import replace

import numpy as np
import pytest

from learning.core.features import FeatureConfig
from learning.core.policy import (
    JUDGE_MIN_GOLD_TOKENS,
    PolicySettings,
    PreviousVersion,
    RetrainFacts,
    RoundSettings,
    plan_version,
)
from learning.core.schedule import EMSchedule
from learning.core.training import TrainingSet
from learning.experiments.simulate import simulate_crowd
from tests.support.synthetic import make_corpus

QUICK = {"features": FeatureConfig(2**12), "schedule": EMSchedule(n_em_iter=2, n_context_iter=1)}


@pytest.fixture(scope="module")
def corpus():
    sentences, gold, _, tagset = make_corpus(np.random.default_rng(7), n_sentences=400)
    return sentences, gold, tagset


def _facts(corpus, n_sentences, **crowd):
    sentences, gold, tagset = corpus
    answers = simulate_crowd(gold[:n_sentences], len(tagset), window=3, tags_per_task=2,
                             n_annotators=5, random_state=1, **crowd)  # fmt: skip
    data = TrainingSet(sentences[:n_sentences], answers.observations, tagset)
    return RetrainFacts.of_answers(data, number=1), answers


def _previous(flagged=(), **fields):
    values = {"number": 1, "full_fit_answers": 0, "full_fit_chosen": 0, "text_tokens": None,
              "flagged": np.array(flagged, dtype=np.int64), "load": lambda: None}  # fmt: skip
    return PreviousVersion(**{**values, **fields})


def test_flags_come_from_the_fits_one_estimate_and_an_excluded_annotator_is_judged(corpus):
    facts, crowd = _facts(corpus, 300, spam_fraction=0.2)
    spammer = int(crowd.annotators_of_kind("spammer")[0])
    honest = int(crowd.annotators_of_kind("exact")[0])
    settings = PolicySettings(estimator=QUICK)
    plan = plan_version(facts, None, settings)
    assert set(plan.flags) == set(plan.estimator.flagged_annotators_.tolist()) == {spammer}
    # Both excluded by the previous version: judged, not fitted. The honest one's flag is
    # lifted (their answers agree with the model), the spammer's stays.
    again = plan_version(facts, _previous([spammer, honest]), settings)
    assert set(again.flags) == {spammer}
    rows = {row["annotator"]: row for row in again.table}
    assert rows[honest]["reliability"] > 0.5 and not rows[honest]["flagged"]
    assert "chance" in rows[spammer]["flag_reason"]
    assert spammer in again.estimator.reliability_.annotators  # one estimate covers everyone


def test_the_warm_start_and_the_word_classes_follow_the_previous_version(corpus):
    facts, _ = _facts(corpus, 300)
    settings = PolicySettings(estimator={"features": FeatureConfig(2**12)})
    first = plan_version(facts, None, settings)
    loads = []

    def load():
        loads.append(1)
        return first.estimator.tagger_

    answers = facts.answers_total
    grown = _previous(full_fit_answers=answers, text_tokens=facts.text_tokens, load=load)
    warm = plan_version(replace(facts, number=2), grown, settings)
    assert warm.warm_started and warm.estimator.schedule_.name == "warm"
    assert warm.word_classes_reused and warm.full_fit_answers == answers
    # Twice the answers since the full fit, and another text: a full fit, classes learned anew,
    # and the previous model never read.
    loads.clear()
    doubled = _previous(full_fit_answers=answers // 2, text_tokens=-1, load=load)
    full = plan_version(replace(facts, number=2), doubled, settings)
    assert not full.warm_started and not full.word_classes_reused and loads == []
    assert full.full_fit_answers == answers


def test_no_verification_round_before_the_model_can_be_judged(corpus):
    """Issue 46: a model from a handful of answers, with neither held-out answers nor gold to
    judge it by, asks counts only; gold to score it on (or enough answers) lets the values
    choose the mix."""
    sentences, gold, tagset = corpus
    facts, _ = _facts(corpus, 12)
    rounds = RoundSettings(window=3, tags_per_task=2)
    settings = PolicySettings(rounds=rounds, estimator=QUICK)
    few = plan_version(facts, None, settings)
    assert not few.judged and few.windows is None
    assert few.counts.verification_share == 0.0 and len(few.counts.plan) == 12
    # The same answers with gold sentences to judge the model by.
    scored = [[tagset[k] for k in g] for g in gold[300:340]]
    assert sum(map(len, scored)) >= JUDGE_MIN_GOLD_TOKENS
    data = replace(facts.data, gold_sentences=sentences[300:340], gold_tags=scored)
    judged = plan_version(replace(facts, data=data), None, settings)
    assert judged.judged and len(judged.windows) == 12
    # Enough answers: the temperatures are fitted to held-out ones, and that judges it.
    many, _ = _facts(corpus, 400, obs_per_sentence=2)
    big = plan_version(many, None, settings)
    assert big.calibration.source == "answers" and big.calibration.evidence >= 50 and big.judged
    assert big.windows
    # A fixed share of 0 asks none whatever the model.
    counts_only = replace(settings, rounds=replace(rounds, verification_share=0.0))
    none = plan_version(many, None, counts_only)
    assert none.windows is None and none.counts.verification_share == 0.0
