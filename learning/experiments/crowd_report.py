"""End-to-end simulation report: simulated crowd on a gold corpus → CountTagger → accuracies.

Used by the ``simulate_crowd`` management command and the benchmark. Besides the served model
(``accuracy_refined``) and the moment stage, the report fits in the same run:

- the node-only pipeline (``accuracy_refined_node``: the paper's model refined by the same EM);
- the honest references: the served model class (same features, same word classes) supervised on
  the gold tags of exactly the tokens shown in windows (``accuracy_supervised_same_tokens``) and
  on every training token (``accuracy_supervised_all_tokens``), the node-only class on the shown
  tokens (``accuracy_supervised_same_tokens_node``), and the most frequent tag of each word.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from learning.core.calibration import expected_calibration_error
from learning.core.conllu import ConlluSentence
from learning.core.context_tagger import ContextTagger
from learning.core.cost import bayes_decision, cost_matrix_named, expected_cost, realised_cost
from learning.core.design import coverage, encode_corpus
from learning.core.em import window_token_index
from learning.core.evaluate import MostFrequentTagger, accuracy
from learning.core.node_tagger import NodeTagger
from learning.core.pipeline import STAGES, CountTagger
from learning.core.policy import PolicySettings, RetrainFacts, VersionPlan, plan_version
from learning.core.privacy import DEFAULT_MECHANISM, Mechanism
from learning.core.training import TrainingSet

from .agm import adversarial_for
from .online_report import online_report
from .simulate import answers_copied, simulate_crowd, simulate_verifications

__all__ = ["gold_indices", "simulation_report", "supervised_tagger"]


def supervised_tagger(
    tagger: NodeTagger | ContextTagger,
    sentences: Sequence[Sequence[str]],
    gold: Sequence[Sequence[int]],
    tagset: Sequence[str],
    token_weight: np.ndarray | None = None,
):
    """``tagger`` (unfitted) fitted to the gold tags of the tokens with ``token_weight > 0``."""
    flat = np.concatenate([np.asarray(g, dtype=np.int64) for g in gold])
    labels = np.eye(len(tagset))[flat]
    if token_weight is not None:
        labels *= (np.asarray(token_weight) > 0)[:, None]
    return tagger.fit(sentences, labels, tagset)


def gold_indices(
    corpus: Sequence[ConlluSentence], tag_column: str = "upos"
) -> tuple[list[str], list[list[int]]]:
    """The sorted tag set of ``corpus`` and each sentence's gold tags as indices into it: the
    tag columns of the answers :func:`simulation_report` simulates."""
    tags = [s.tags(tag_column) for s in corpus]
    tagset = sorted({t for sentence in tags for t in sentence})
    if not tagset:
        raise ValueError("the training corpus has no tags")
    index = {t: k for k, t in enumerate(tagset)}
    return tagset, [[index[t] for t in sentence] for sentence in tags]


def simulation_report(
    train: Sequence[ConlluSentence],
    test: Sequence[ConlluSentence],
    *,
    tag_column: str = "upos",
    window: int = 5,
    obs_per_sentence: float = 1,
    tags_per_task: int | None = None,
    n_annotators: int = 20,
    spam_fraction: float = 0.0,
    noisy_fraction: float = 0.0,
    yes_sayer_fraction: float = 0.0,
    copier_fraction: float = 0.0,
    verify_per_sentence: int = 0,
    verify_choice: str = "uncertain",
    verify_tap: bool = True,
    privacy_alpha: float | None = None,
    mechanism: str = DEFAULT_MECHANISM,
    references: bool = True,
    seed: int = 0,
    model_params: dict | None = None,
    online_blocks: int | None = None,
    online_params: dict | None = None,
    cost_matrix: str | None = None,
    agm: bool = False,
) -> tuple[dict, CountTagger]:
    """Run the whole pipeline on a simulated crowd; returns (JSON-ready report, fitted model).

    With ``verify_per_sentence`` R > 0, the model learned from the count answers shows its tags
    on R windows per sentence (:func:`.simulate.simulate_verifications`), the same crowd answers
    Yes or No, and the served model is learned from both kinds of answer. The report then also
    gives, from the same run, the count-only model (``accuracy_counts_only``) and a count-only
    model given as many answers in all (``accuracy_counts_only_same_answers``: R more count
    tasks per sentence).

    With ``copier_fraction``, that share of the crowd gives back the served model's answers
    (:func:`.simulate.answers_copied`): a first model is learned from a first round that the
    others answer, and served; then everyone answers the run's tasks, and the model is learned
    from both rounds, the second tested for copying (:mod:`learning.core.copying`). The report
    then also gives the same answers learned without that test
    (``accuracy_refined_copiers_not_tested``).

    With ``privacy_alpha``, every count answer is released through the local privacy
    ``mechanism`` at that level (:mod:`.privacy`) before learning; the report then also gives the
    same tasks learned without privacy (``accuracy_*_without_privacy``); as in a private
    project's retrain, annotators are judged only after
    :meth:`.privacy.Mechanism.min_judged_answers` answers. ``references=False``
    skips the supervised references (for studies that need only the learned models).

    ``online_blocks``: the same count answers also stream in that many blocks through the online
    learner (:mod:`.online_report`; ``online_params`` its settings), compared along the stream
    with batch fits on the answers so far. ``cost_matrix``: a preset's name or a CSV file
    (:func:`learning.core.cost.cost_matrix_named`); the report then scores the same model in the
    manager's currency (:func:`cost_figures`)."""
    tagset, gold = gold_indices(train, tag_column)
    sentences = [s.tokens for s in train]
    test_sentences = [s.tokens for s in test]
    test_tags = [s.tags(tag_column) for s in test]
    train_tags = [s.tags(tag_column) for s in train]

    def crowd_for(tasks_per_sentence, random_state=seed, kinds=None):
        return simulate_crowd(
            gold,
            len(tagset),
            window=window,
            obs_per_sentence=tasks_per_sentence,
            tags_per_task=tags_per_task,
            n_annotators=n_annotators,
            spam_fraction=spam_fraction,
            noisy_fraction=noisy_fraction,
            yes_sayer_fraction=yes_sayer_fraction,
            copier_fraction=copier_fraction,
            kinds=kinds,
            random_state=random_state,
        )

    crowd = crowd_for(obs_per_sentence)
    observations = crowd.observations
    params = {"random_state": seed, **(model_params or {})}
    privacy_report: dict = {}
    private = None
    served_answers = served_proba = None
    copiers = crowd.annotators_of_kind("copier")
    if copiers.size and privacy_alpha is not None:
        raise ValueError("copiers are simulated without a privacy mechanism")
    if copiers.size:  # copiers join once a first model is served
        first = crowd_for(obs_per_sentence, seed + 5, crowd.annotator_kind).observations
        first = first.subset(~np.isin(first.annotator, copiers))
        first_model = served_plan(TrainingSet(sentences, first, tagset), seed, model_params)
        served_proba = first_model.estimator.token_proba(sentences)
        lengths = np.array([len(s) for s in sentences])
        crowd = answers_copied(crowd, served_proba, lengths)
        observations = first.joined(crowd.observations)
        served_answers = np.arange(len(observations)) >= len(first)
    if privacy_alpha is not None:
        private = Mechanism(mechanism, privacy_alpha, n_tags=len(tagset))
        public = CountTagger(**params).fit(TrainingSet(sentences, observations, tagset))
        observations = private.released(observations, seed + 2)
        privacy_report = {"privacy_alpha": privacy_alpha, "mechanism": mechanism}
    data = TrainingSet(
        sentences, observations, tagset, mechanism=private, served_answers=served_answers,
        served_proba=served_proba,
    )  # fmt: skip
    plan = served_plan(data, seed, model_params)
    model = plan.estimator
    if private is not None:
        # As in a private project's retrain: an annotator is judged after as many released
        # answers as carry the evidence of min_flag_observations true ones.
        privacy_report["min_flag_observations"] = model.min_flag_observations_
    verification_report: dict = {}
    verifications = None
    if verify_per_sentence > 0:
        counts_only = model
        verifications = simulate_verifications(
            crowd,
            gold,
            counts_only.token_proba(sentences),
            window=window,
            per_sentence=verify_per_sentence,
            choice=verify_choice,
            tap=verify_tap,
            random_state=seed + 1,
        )
        data = replace(data, verifications=verifications)
        plan = served_plan(data, seed, model_params)
        model = plan.estimator
        more = crowd_for(obs_per_sentence + verify_per_sentence).observations
        same_answers = CountTagger(**params).fit(TrainingSet(sentences, more, tagset))
        yes_sayers = crowd.annotators_of_kind("yes-sayer")
        verification_report = {
            "verify_per_sentence": verify_per_sentence,
            "verify_choice": verify_choice,
            "verify_tap": verify_tap,
            "n_verifications": len(verifications),
            "verification_yes_rate": float(verifications.answer.mean()),
            "accuracy_counts_only": None,  # filled in below, with the other scores
            "accuracy_counts_only_same_answers": None,
            "simulated_yes_sayers": [int(a) for a in yes_sayers],
            "all_yes_sayers_flagged": bool(np.isin(yes_sayers, plan.flagged).all()),
            "verification_skill": {
                a: None if row["skill"] is None else round(row["skill"], 4)
                for a, row in model.verification_reliability_.items()
            },
        }

    def score(tagger) -> float:
        return accuracy(test_tags, tagger.predict(test_sentences))

    corpus = encode_corpus(sentences)
    _, shown = coverage(corpus, observations)
    if verifications is not None:
        placed = window_token_index(corpus, verifications)
        shown[placed[placed >= 0]] = 1.0
    served = model.tagger_
    supervised: dict[str, tuple[object, np.ndarray | None]] = {
        "supervised_same_tokens": (served, shown),
        "supervised_same_tokens_node": (model.node_tagger_, shown),
        "supervised_all_tokens": (served, None),
    }
    scores, seconds, references_fitted = {}, {}, {}
    for name, (like, weight) in supervised.items() if references else ():
        tic = time.perf_counter()
        unfitted = _unfitted_like(like, max_iter=model.schedule_.moment_fit_iter * 3)
        references_fitted[name] = supervised_tagger(unfitted, sentences, gold, tagset, weight)
        scores[name] = score(references_fitted[name])
        seconds[name] = time.perf_counter() - tic
    most_frequent = MostFrequentTagger().fit(sentences, train_tags)

    spammers = crowd.annotators_of_kind("spammer")
    flagged = plan.flagged
    copy_report: dict = {}
    if copiers.size:
        untested = served_plan(replace(data, served_answers=None), seed, model_params)
        weights = {} if model.reliability_ is None else model.reliability_.as_dict()
        copy_report = {
            "copier_fraction": copier_fraction,
            "simulated_copiers": [int(a) for a in copiers],
            "all_copiers_flagged": bool(np.isin(copiers, flagged).all()),
            "copier_weight_max": max(weights.get(int(a), {}).get("weight", 1.0) for a in copiers),
            "honest_flagged_for_copying": [
                int(a)
                for a, row in weights.items()
                if row["follows_model"] and a not in set(copiers.tolist())
            ],
            "accuracy_refined_copiers_not_tested": score(untested.estimator.tagger_),
            "copiers_flagged_not_tested": bool(np.isin(copiers, untested.flagged).all()),
        }
    exact = crowd.annotators_of_kind("exact")
    report = {
        "tagset": tag_column,
        "n_tags": len(tagset),
        "window": window,
        "obs_per_sentence": obs_per_sentence,
        "tags_per_task": tags_per_task if tags_per_task is not None else "all",
        "n_annotators": n_annotators,
        "spam_fraction": spam_fraction,
        "seed": seed,
        "model": served.kind,
        **verification_report,
        **privacy_report,
        "n_observations": len(observations),
        "tokens_shown": int((shown > 0).sum()),
        "accuracy_most_frequent_tag": score(most_frequent),
        "accuracy_moments": score(model.moment_tagger_),
        "accuracy_refined": score(served),
        "accuracy_refined_node": score(model.node_tagger_),
        **{f"accuracy_{name}": value for name, value in scores.items()},
        "ridge": model.ridge_,
        "alpha": model.alpha_,
        "alpha_errors": model.alpha_errors_,
        "schedule": model.schedule_.name,
        "em_iterations": len(model.history_),
        "skipped_observations": int(model.skipped_observations_.shape[0]),
        "simulated_spammers": [int(a) for a in spammers],
        "flagged_annotators": [int(a) for a in flagged],
        "all_spammers_flagged": bool(np.isin(spammers, flagged).all()),
        **copy_report,
        "exact_annotators_flagged": [int(a) for a in np.intersect1d(exact, flagged)],
        "annotator_skill": {
            int(a): round(float(s), 4)
            for a, s in zip(model.reliability_.annotators, model.reliability_.skill, strict=True)
        }
        if model.reliability_ is not None
        else {},
    }
    if online_blocks is not None:
        report.update(
            online_report(
                sentences,
                observations,
                tagset,
                n_blocks=online_blocks,
                score=score,
                batch_params=params,
                batch_model=model,
                mechanism=private,
                online_params=online_params,
                seed=seed,
            )  # fmt: skip
        )
    agm_seconds = (0.0, 0.0)
    if cost_matrix is not None:
        cost = cost_matrix_named(cost_matrix, tagset)
        report["cost_matrix"] = cost_matrix
        report |= cost_figures(model, test_sentences, test_tags, tagset, cost)
        for name, reference in references_fitted.items():  # the same class taught by gold
            report[f"cost_{name}_bayes"] = reference_cost(
                reference, test_sentences, test_tags, tagset, cost
            )
        if agm and served.kind == "context":  # an experiment beside the served model
            tic, cpu = time.perf_counter(), time.process_time()
            adversarial = adversarial_for(model, data, cost)
            agm_seconds = (time.perf_counter() - tic, time.process_time() - cpu)
            report |= agm_figures(adversarial, test_sentences, test_tags, tagset, cost)
    if private is not None:
        report["accuracy_moments_without_privacy"] = score(public.moment_tagger_)
        report["accuracy_refined_without_privacy"] = score(public.tagger_)
    if verifications is not None:
        report["accuracy_counts_only"] = score(counts_only)
        report["accuracy_counts_only_same_answers"] = score(same_answers)
    for stage in STAGES:
        report[f"seconds_{stage}"] = model.timings_[stage]
        report[f"cpu_seconds_{stage}"] = model.timings_["cpu_" + stage]
    report["seconds_agm"], report["cpu_seconds_agm"] = agm_seconds
    report["seconds_total_learning"] = sum(model.timings_[stage] for stage in STAGES)
    report["seconds_total_learning"] += agm_seconds[0]
    report["cpu_seconds_total_learning"] = sum(model.timings_["cpu_" + s] for s in STAGES)
    report["cpu_seconds_total_learning"] += agm_seconds[1]
    for name, value in seconds.items():
        report[f"seconds_{name}"] = value
    if references:
        report["ratio_refined_to_supervised"] = (
            report["accuracy_refined"] / report["accuracy_supervised_same_tokens"]
        )
        report["ratio_refined_node_to_supervised_node"] = (
            report["accuracy_refined_node"] / report["accuracy_supervised_same_tokens_node"]
        )
    return report, model


def cost_figures(
    model: CountTagger,
    sentences: Sequence[Sequence[str]],
    tags: Sequence[Sequence[str]],
    tagset: Sequence[str],
    cost: np.ndarray,
) -> dict:
    """The fitted ``model`` on gold-tagged ``sentences`` in the currency of ``cost``: the cost
    per token of its argmax (``cost_argmax``) and of the Bayes decision under its likelihood
    marginals (``cost_bayes``) and under its calibrated ones (``cost_served``, what a project
    with this matrix is served), the served decisions' accuracy, the expected calibration error
    of the served probabilities (``calibration_error``, a fraction) and of the uncalibrated
    ones, what the model expects its decisions to cost, and the seconds of each decision
    (probabilities included)."""
    gold = flat_gold(tags, tagset)
    known = gold >= 0  # a tag the crowd corpus never had cannot be scored in its matrix
    seconds = {"argmax": np.inf, "bayes": np.inf}
    for _ in range(2):  # the better of two runs each, alternating: timings here are noisy
        for name, matrix in (("argmax", None), ("bayes", cost)):
            tic = time.perf_counter()
            probs = model.token_proba(sentences)
            decided = bayes_decision(probs, matrix)
            seconds[name] = min(seconds[name], time.perf_counter() - tic)
            if matrix is None:
                argmax = decided
            else:
                served = decided
    raw = model.tagger_.token_proba(sentences, calibrated=False)
    likelihood_bayes = bayes_decision(raw, cost)
    rows = np.flatnonzero(known)

    def believed(p, decided):
        return float(expected_cost(p[rows], cost)[np.arange(rows.size), decided[rows]].mean())

    def realised(decided):
        return realised_cost(gold[rows], decided[rows], cost)

    figures = {
        "temperature": model.temperature_,
        "unseen_temperature": model.unseen_temperature_,
        "calibration_error": expected_calibration_error(probs[rows], gold[rows]),
        "calibration_error_uncalibrated": expected_calibration_error(raw[rows], gold[rows]),
        "cost_argmax": realised(argmax),
        "cost_bayes": realised(likelihood_bayes),
        "cost_served": realised(served),
        "accuracy_argmax": float(np.mean(argmax == gold)),
        "accuracy_served": float(np.mean(served == gold)),
        "expected_cost_argmax_uncalibrated": believed(raw, argmax),
        "expected_cost_argmax": believed(probs, argmax),
        "expected_cost_served": believed(probs, served),
        "seconds_decide_argmax": seconds["argmax"],
        "seconds_decide_bayes": seconds["bayes"],
    }
    figures["ratio_served_to_bayes"] = figures["cost_served"] / max(figures["cost_bayes"], 1e-12)
    return figures


def flat_gold(tags: Sequence[Sequence[str]], tagset: Sequence[str]) -> np.ndarray:
    """Every token's gold tag index, −1 for a tag outside ``tagset`` (one the crowd corpus
    never had, which no matrix can score)."""
    index = {t: k for k, t in enumerate(tagset)}
    return np.array([index.get(t, -1) for sentence in tags for t in sentence])


def reference_cost(tagger, sentences, tags, tagset, cost: np.ndarray) -> float:
    """The cost per token of ``tagger``'s Bayes decision for ``cost`` on gold-tagged
    ``sentences``: what a supervised reference would cost the manager."""
    gold = flat_gold(tags, tagset)
    known = gold >= 0
    decided = bayes_decision(tagger.token_proba(sentences), cost)
    return realised_cost(gold[known], decided[known], cost)


def agm_figures(adversarial, sentences, tags, tagset, cost: np.ndarray) -> dict:
    """``cost_agm`` and ``accuracy_agm``: the adversarial model (:mod:`.agm`) on gold
    ``sentences``, its training's moment gap and seconds."""
    gold = flat_gold(tags, tagset)
    known = gold >= 0
    decided = adversarial.decide(sentences)
    return {
        "cost_agm": realised_cost(gold[known], decided[known], cost),
        "accuracy_agm": float(np.mean(decided == gold)),
        "agm_iterations": adversarial.info_["n_iter"],
        "agm_moment_gap": adversarial.info_["moment_gap"],
    }


def served_plan(data: TrainingSet, seed: int, model_params: dict | None) -> VersionPlan:
    """The served model of a simulation as the platform's retrain makes a first version (the
    retrain policy, :func:`learning.core.policy.plan_version`, without a next round)."""
    settings = PolicySettings(seed=seed, estimator=dict(model_params or {}))
    return plan_version(RetrainFacts.of_answers(data, number=1), None, settings)


def _unfitted_like(tagger, *, max_iter: int):
    """A new tagger of the same kind and settings (features, word classes, α)."""
    if tagger.kind == "node":
        return NodeTagger(alpha=tagger.alpha, features=tagger.features, max_iter=max_iter)
    return ContextTagger(
        alpha=tagger.alpha,
        features=tagger.features,
        word_classes=tagger.word_classes,
        max_iter=max_iter,
    )
