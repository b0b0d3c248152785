"""The online learner on a simulated crowd's stream: ``simulate_crowd --online BLOCKS``.

The answers arrive in a random order, in ``n_blocks`` equal blocks, through
:class:`learning.core.online.OnlineCountTagger`; at given fractions of the stream the online
model is scored against a batch :class:`learning.core.pipeline.CountTagger` fitted on the answers
so far (the whole stream's batch fit is the report's served model).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np

from learning.core.observations import Observations
from learning.core.online import OnlineCountTagger
from learning.core.pipeline import CountTagger
from learning.core.privacy import Mechanism
from learning.core.training import TrainingSet

__all__ = ["CURVE_FRACTIONS", "online_report"]

CURVE_FRACTIONS = (0.1, 0.25, 0.5, 1.0)


def online_report(
    sentences: Sequence[Sequence[str]],
    observations: Observations,
    tagset: Sequence[str],
    *,
    n_blocks: int,
    score: Callable[[object], float],
    batch_params: dict,
    batch_model: CountTagger,
    mechanism: Mechanism | None = None,
    online_params: dict | None = None,
    seed: int = 0,
) -> dict:
    """``accuracy_online`` after the whole stream, ``online_curve`` (``{fraction, answers,
    accuracy_online, accuracy_batch}`` at :data:`CURVE_FRACTIONS`), ``seconds_online_per_1000``
    (the updates after the first block, per 1,000 answers), ``seconds_online_start`` (the first
    block's batch fit) and the progressive-validation curve (``online_progressive``)."""
    if not 1 <= n_blocks <= len(observations):
        raise ValueError(f"--online must be between 1 and the number of answers, not {n_blocks}")
    order = np.random.default_rng(seed + 3).permutation(len(observations))
    blocks = np.array_split(order, n_blocks)
    ends = np.cumsum([b.shape[0] for b in blocks])
    marks = {
        fraction: int(np.searchsorted(ends, fraction * len(observations) - 1e-9))
        for fraction in CURVE_FRACTIONS
    }
    learner = OnlineCountTagger(random_state=seed, **(online_params or {}))
    curve, start_seconds, update_seconds = [], 0.0, 0.0
    for index, block in enumerate(blocks):
        tic = time.perf_counter()
        learner.partial_fit(
            TrainingSet(sentences, observations.subset(np.sort(block)), tagset, mechanism=mechanism)
        )
        if index == 0:
            start_seconds = time.perf_counter() - tic
        else:
            update_seconds += time.perf_counter() - tic
        for fraction in [f for f, at in marks.items() if at == index]:
            so_far = np.sort(order[: ends[index]])
            batch = (
                batch_model
                if so_far.shape[0] == len(observations)
                else CountTagger(**batch_params).fit(
                    TrainingSet(sentences, observations.subset(so_far), tagset, mechanism=mechanism)
                )
            )
            curve.append(
                {
                    "fraction": fraction,
                    "answers": int(ends[index]),
                    "accuracy_online": score(learner.tagger_),
                    "accuracy_batch": score(batch.tagger_),
                }
            )
    streamed = int(ends[-1] - ends[0])
    return {
        "online_blocks": n_blocks,
        "accuracy_online": curve[-1]["accuracy_online"],
        "online_curve": curve,
        "seconds_online_per_1000": update_seconds / max(streamed, 1) * 1000.0,
        "seconds_online_start": start_seconds,
        "online_flagged_annotators": [int(a) for a in learner.flagged_annotators_],
        "online_progressive": [
            {k: row[k] for k in ("block", "answers", "log_likelihood", "count_error")}
            for row in learner.progressive_
        ],
    }
