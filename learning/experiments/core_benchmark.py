"""Benchmark: time every stage on a corpus and compare the tagger fit with scikit-learn.

The comparison fits the *same objective* on the *same soft labels* (the moment estimate
``Q = n_a ŵ``): scikit-learn's ``LogisticRegression`` (multinomial, L-BFGS, ``C = 1/α``, intercept
unpenalized) gets one row per (word type, tag) with ``Q > 0`` and sample weight ``Q``, which is
exactly ``−Σ Q log p + α/2 ‖W‖²`` up to the factor ``C``. scikit-learn runs first with its default
tolerance; our fit then stops as soon as its objective is at or below scikit-learn's final value,
so both times are "time to the same objective". Both run with BLAS limited to one thread; wall
and process CPU times are reported (CPU time is the steadier figure on a shared machine).

This is the only module of the core that imports scikit-learn (and only when called).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from learning.core.conllu import ConlluSentence
from learning.core.features import featurize
from learning.core.node_tagger import NodeTagger
from learning.core.pipeline import CountTagger
from learning.core.softmax import soft_label_objective
from learning.core.solver import soft_counts
from learning.core.training import TrainingSet

from .simulate import simulate_crowd

__all__ = ["benchmark"]


def _objective(x_active, q, alpha, coef, intercept) -> float:
    params = np.concatenate([coef.ravel(), intercept])
    value, _ = soft_label_objective(params, x_active, None, q, alpha)
    return value


def compare_fit_with_sklearn(
    forms: Sequence[str], soft: np.ndarray, tagset: Sequence[str], alpha: float, features
) -> dict:
    """Fit the soft labels with scikit-learn and with :class:`NodeTagger`; time both."""
    from sklearn.linear_model import LogisticRegression
    from threadpoolctl import threadpool_limits

    config = features
    keep = soft.sum(axis=1) > 0
    forms = [f for f, k in zip(forms, keep, strict=True) if k]
    soft = soft[keep]
    x = featurize(forms, config)
    active = np.flatnonzero(np.diff(x.tocsc().indptr))
    x_active = x[:, active].tocsr()
    rows, labels = np.nonzero(soft > 0)
    n_tags = len(tagset)

    with threadpool_limits(limits=1):
        tic, cpu_tic = time.perf_counter(), time.process_time()
        sk = LogisticRegression(C=1.0 / alpha, solver="lbfgs", max_iter=5000, tol=1e-4)
        sk.fit(x_active[rows], labels, sample_weight=soft[rows, labels])
        seconds_sklearn = time.perf_counter() - tic
        cpu_seconds_sklearn = time.process_time() - cpu_tic
        coef_sk = np.zeros((active.shape[0], n_tags))
        coef_sk[:, sk.classes_] = sk.coef_.T
        intercept_sk = np.full(n_tags, -50.0)
        intercept_sk[sk.classes_] = sk.intercept_
        objective_sklearn = _objective(x_active, soft, alpha, coef_sk, intercept_sk)

        tic, cpu_tic = time.perf_counter(), time.process_time()
        ours = NodeTagger(
            alpha=alpha,
            features=config,
            max_iter=20000,
            tol=1e-9,
            ftol=0.0,
            stop_below=objective_sklearn,
        ).fit_types(forms, soft, tagset, x=x)
        seconds_ours = time.perf_counter() - tic
        cpu_seconds_ours = time.process_time() - cpu_tic
    objective_ours = _objective(x_active, soft, alpha, ours.coef_[active], ours.intercept_)
    return {
        "fit_rows_types": int(soft.shape[0]),
        "fit_rows_sklearn": int(rows.shape[0]),
        "fit_parameters": int(active.shape[0] * n_tags + n_tags),
        "seconds_fit_ours": seconds_ours,
        "seconds_fit_sklearn": seconds_sklearn,
        "objective_ours": objective_ours,
        "objective_sklearn": objective_sklearn,
        "iterations_ours": ours.n_iter_,
        "iterations_sklearn": int(np.max(sk.n_iter_)),
        "fit_speedup_vs_sklearn": seconds_sklearn / seconds_ours,
        "cpu_seconds_fit_ours": cpu_seconds_ours,
        "cpu_seconds_fit_sklearn": cpu_seconds_sklearn,
        "fit_speedup_vs_sklearn_cpu": cpu_seconds_sklearn / cpu_seconds_ours,
    }


def benchmark(
    train: Sequence[ConlluSentence],
    *,
    tag_column: str = "upos",
    window: int = 5,
    obs_per_sentence: int = 1,
    seed: int = 0,
) -> dict:
    """Time every stage of :class:`CountTagger` on ``train`` with an exact simulated crowd
    (all tags per task), then compare the fit with scikit-learn."""
    tags = [s.tags(tag_column) for s in train]
    tagset = sorted({t for sentence in tags for t in sentence})
    index = {t: k for k, t in enumerate(tagset)}
    gold = [[index[t] for t in sentence] for sentence in tags]
    sentences = [s.tokens for s in train]
    tic = time.perf_counter()
    crowd = simulate_crowd(
        gold, len(tagset), window=window, obs_per_sentence=obs_per_sentence, random_state=seed
    )
    seconds_simulate = time.perf_counter() - tic
    model = CountTagger(model="node", random_state=seed).fit(
        TrainingSet(sentences, crowd.observations, tagset)
    )
    soft = soft_counts(model.coverage_, model.word_tag_probs_)
    comparison = compare_fit_with_sklearn(
        model.vocabulary_, soft, tagset, model.alpha_, model.tagger_.feature_config_
    )
    return {
        "n_sentences": len(sentences),
        "n_tokens": int(sum(len(s) for s in sentences)),
        "n_observations": len(crowd.observations),
        "n_types_covered": len(model.vocabulary_),
        "seconds_simulate": seconds_simulate,
        "seconds_solve": model.timings_["solve"],
        "seconds_fit": model.timings_["fit"],
        "seconds_refine": model.timings_["refine"],
        "seconds_reliability": model.timings_["reliability"],
        "em_iterations": len(model.history_),
        **comparison,
    }
