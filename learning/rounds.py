"""The count round and the task mix a new model version chooses (issue 25), as the annotation
app stores them: the retrain policy plans them (`learning.core.next_round`, which says how),
`annotation.services.rounds` stores them with the version, and leasing serves them in order.
Leasing uses the automatic mix when the manager has not fixed a share
(`Project.verification_share` null).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from annotation.models import TaskOrigin
from annotation.services import PlannedTask
from learning.core.next_round import (
    MIN_TIMED_ANSWERS,
    PRIOR_SECONDS,
    NextCounts,
    answered_rows,
    seconds_of,
    verified_answers,
)
from learning.core.next_round import count_round as next_counts
from learning.core.report import TokenProbabilities
from learning.core.verification import VerificationAnswers

__all__ = [
    "MIN_TIMED_ANSWERS",
    "PRIOR_SECONDS",
    "CountRound",
    "answered_rows",
    "as_count_round",
    "count_round",
    "seconds_of",
    "verified_answers",
]


@dataclass(frozen=True)
class CountRound:
    """What a version asks next: its count tasks in serving order, and the share of
    verification leases its values chose."""

    tasks: list[PlannedTask]
    verification_share_auto: float


def as_count_round(
    counts: NextCounts | None, training: Sequence[tuple[int, list[str]]]
) -> CountRound:
    """The policy's round over the `training` sentences ((id, tokens)) as planned tasks."""
    if counts is None:
        return CountRound(tasks=[], verification_share_auto=0.0)
    plan = counts.plan
    tasks = [
        PlannedTask(
            sentence_id=int(training[s][0]),
            start=int(start),
            length=int(length),
            tags=[int(k) for k in np.flatnonzero(mask)],
            origin=TaskOrigin.UNIFORM if explore else TaskOrigin.VALUE,
        )
        for s, start, length, mask, explore in zip(
            plan.sentence, plan.start, plan.length, plan.tag_mask, plan.explore, strict=True
        )
    ]
    return CountRound(tasks=tasks, verification_share_auto=counts.verification_share)


def count_round(
    probs: TokenProbabilities,
    training: Sequence[tuple[int, list[str]]],
    *,
    window: int,
    tags_per_task: int | None,
    asked: np.ndarray,
    verification: list | None,
    seconds: dict[str, tuple[float | None, int]] | None,
    random_state: int,
    answered: np.ndarray | None = None,
    verified: VerificationAnswers | None = None,
) -> CountRound:
    """`learning.core.next_round.count_round` as planned tasks (one per training sentence)."""
    counts = next_counts(
        probs, training, window=window, tags_per_task=tags_per_task, asked=asked,
        verification=verification, seconds=seconds, random_state=random_state,
        answered=answered, verified=verified,
    )  # fmt: skip
    return as_count_round(counts, training)
