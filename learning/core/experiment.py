"""End-to-end simulation report: simulated crowd on a gold corpus → CountTagger → accuracies.

Used by the ``simulate_crowd`` management command and the benchmark. The reference taggers are
the most-frequent-tag baseline (fully supervised on all training tokens) and the same log-linear
tagger trained on the gold tags of exactly the tokens shown in windows.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from .conllu import ConlluSentence
from .design import coverage, encode_corpus
from .em import aggregate_by_type
from .evaluate import MostFrequentTagger, accuracy
from .pipeline import CountTagger
from .simulate import simulate_crowd
from .tagger import LogLinearTagger

__all__ = ["simulation_report", "supervised_tagger"]


def supervised_tagger(
    sentences: Sequence[Sequence[str]],
    gold: Sequence[Sequence[int]],
    tagset: Sequence[str],
    token_weight: np.ndarray | None = None,
    **tagger_params,
) -> LogLinearTagger:
    """The log-linear tagger fitted to gold tags (of the tokens with ``token_weight > 0``)."""
    corpus = encode_corpus(sentences)
    flat = np.concatenate([np.asarray(g, dtype=np.int64) for g in gold])
    weight = np.ones(corpus.n_tokens) if token_weight is None else token_weight
    soft = aggregate_by_type(
        corpus.type_ids, corpus.n_types, np.eye(len(tagset))[flat], (weight > 0).astype(float)
    )
    return LogLinearTagger(**tagger_params).fit(corpus.vocabulary, soft, tagset)


def simulation_report(
    train: Sequence[ConlluSentence],
    test: Sequence[ConlluSentence],
    *,
    tag_column: str = "upos",
    window: int = 5,
    obs_per_sentence: int = 1,
    tags_per_task: int | None = None,
    n_annotators: int = 20,
    spam_fraction: float = 0.0,
    noisy_fraction: float = 0.0,
    seed: int = 0,
    model_params: dict | None = None,
) -> tuple[dict, CountTagger]:
    """Run the whole pipeline on a simulated crowd; returns (JSON-ready report, fitted model)."""
    train_tags = [s.tags(tag_column) for s in train]
    tagset = sorted({t for tags in train_tags for t in tags})
    if not tagset:
        raise ValueError("the training corpus has no tags")
    index = {t: k for k, t in enumerate(tagset)}
    gold = [[index[t] for t in tags] for tags in train_tags]
    sentences = [s.tokens for s in train]
    test_sentences = [s.tokens for s in test]
    test_tags = [s.tags(tag_column) for s in test]

    crowd = simulate_crowd(
        gold,
        len(tagset),
        window=window,
        obs_per_sentence=obs_per_sentence,
        tags_per_task=tags_per_task,
        n_annotators=n_annotators,
        spam_fraction=spam_fraction,
        noisy_fraction=noisy_fraction,
        random_state=seed,
    )
    observations = crowd.observations
    params = {"random_state": seed, **(model_params or {})}
    model = CountTagger(**params).fit(sentences, observations, tagset)

    corpus = encode_corpus(sentences)
    _, shown = coverage(corpus, observations)
    tic = time.perf_counter()
    reference = supervised_tagger(
        sentences,
        gold,
        tagset,
        shown,
        alpha=model.alpha_,
        features=model.features,
        max_iter=model.max_fit_iter * 3,
    )
    seconds_supervised = time.perf_counter() - tic
    most_frequent = MostFrequentTagger().fit(sentences, train_tags)

    spammers = crowd.annotators_of_kind("spammer")
    flagged = model.flagged_annotators_
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
        "n_observations": len(observations),
        "tokens_shown": int((shown > 0).sum()),
        "accuracy_most_frequent_tag": accuracy(test_tags, most_frequent.predict(test_sentences)),
        "accuracy_supervised_same_tokens": accuracy(test_tags, reference.predict(test_sentences)),
        "accuracy_moments": accuracy(test_tags, model.moment_tagger_.predict(test_sentences)),
        "accuracy_refined": accuracy(test_tags, model.predict(test_sentences)),
        "ridge": model.ridge_,
        "alpha": model.alpha_,
        "alpha_errors": model.alpha_errors_,
        "em_iterations": len(model.history_),
        "skipped_observations": int(model.skipped_observations_.shape[0]),
        "simulated_spammers": [int(a) for a in spammers],
        "flagged_annotators": [int(a) for a in flagged],
        "all_spammers_flagged": bool(np.isin(spammers, flagged).all()),
        "exact_annotators_flagged": [int(a) for a in np.intersect1d(exact, flagged)],
        "annotator_skill": {
            int(a): round(float(s), 4)
            for a, s in zip(model.reliability_.annotators, model.reliability_.skill, strict=True)
        }
        if model.reliability_ is not None
        else {},
        "seconds_solve": model.timings_["solve"],
        "seconds_fit": model.timings_["fit"],
        "seconds_refine": model.timings_["refine"],
        "seconds_reliability": model.timings_["reliability"],
        "seconds_supervised_reference": seconds_supervised,
    }
    report["seconds_total_learning"] = (
        report["seconds_solve"]
        + report["seconds_fit"]
        + report["seconds_refine"]
        + report["seconds_reliability"]
    )
    report["cpu_seconds_total_learning"] = sum(
        model.timings_["cpu_" + stage] for stage in ("solve", "fit", "refine", "reliability")
    )
    for stage in ("solve", "fit", "refine"):
        report[f"cpu_seconds_{stage}"] = model.timings_["cpu_" + stage]
    report["ratio_refined_to_supervised"] = (
        report["accuracy_refined"] / report["accuracy_supervised_same_tokens"]
    )
    return report, model
