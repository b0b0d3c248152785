"""The count round and the task mix a new model version chooses (issue 25), on the learning side;
`annotation.services.rounds` stores them with the version, and leasing serves them in order.

**The round.** One count task per training sentence, as a uniform round has, chosen by
`learning.core.task_value.round_plan` from the new version's token probabilities: by the
information an answer carries, spread over sentences, with its exploration share drawn uniformly.
Regions still being answered (a task with a lease or an answer) are not asked again; the tasks
nobody leased are replaced by this round.

**The mix.** The share of leases that are verification tasks, chosen by value per second
(`task_value.verification_share`): the bits of this round's count tasks and of the version's
verification windows, each divided by the project's median seconds of an answer of that kind.
Until a kind has `MIN_TIMED_ANSWERS` answers that report their time, `PRIOR_SECONDS` stands in
for it. Leasing uses it when the manager has not fixed a share (`Project.verification_share`
null).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from annotation.models import TaskOrigin
from annotation.services import PlannedTask, VerificationWindow
from learning.core.report import TokenProbabilities
from learning.core.task_value import round_plan, verification_share, verification_values

# Seconds of an answer of each kind assumed until the project has measured its own: a count
# takes reading and counting, a verification a glance and a tap.
PRIOR_SECONDS = {"count": 8.0, "verify": 4.0}
MIN_TIMED_ANSWERS = 20


@dataclass(frozen=True)
class CountRound:
    """What a version asks next: its count tasks in serving order, and the share of
    verification leases its values chose."""

    tasks: list[PlannedTask]
    verification_share_auto: float


def seconds_of(kind: str, measured: dict[str, tuple[float | None, int]] | None) -> float:
    """The median seconds of an answer of `kind` in the project, or its prior."""
    median, n = (measured or {}).get(kind, (None, 0))
    if median is None or n < MIN_TIMED_ANSWERS or median <= 0:
        return PRIOR_SECONDS[kind]
    return median


def _offsets(lengths: np.ndarray) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)


def count_round(
    probs: TokenProbabilities,
    training: Sequence[tuple[int, list[str]]],
    *,
    window: int,
    tags_per_task: int | None,
    asked: np.ndarray,
    verification: list[VerificationWindow] | None,
    seconds: dict[str, tuple[float | None, int]] | None,
    random_state: int,
) -> CountRound:
    """The next round of the new version over the `training` sentences ((id, tokens), `probs`
    its probabilities of them; `asked` regions left out, as rows [index into `training`, start,
    length, tag mask...]) and the task mix with its `verification` windows (None: the project
    asks none)."""
    if not training:
        return CountRound(tasks=[], verification_share_auto=0.0)
    lengths = np.fromiter((len(t) for _, t in training), dtype=np.int64, count=len(training))
    offsets = _offsets(lengths)
    plan = round_plan(
        probs.probs,
        offsets,
        window=window,
        tags_per_task=tags_per_task,
        n_tasks=len(training),
        asked=asked,
        random_state=random_state,
    )
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
    share = 0.0
    windows = [w for w in verification or [] if not w.is_gold]
    index = {int(sentence_id): i for i, (sentence_id, _) in enumerate(training)}
    windows = [w for w in windows if w.sentence_id in index]
    if windows:
        at = [index[w.sentence_id] for w in windows]
        starts = [w.start for w in windows]
        rows = np.concatenate([np.arange(offsets[i], offsets[i + 1]) for i in at])
        verify_values = verification_values(
            probs.probs[rows], _offsets(lengths[at]), np.asarray(starts), window
        )
        share = verification_share(
            plan.value[~plan.explore],
            seconds_of("count", seconds),
            verify_values,
            seconds_of("verify", seconds),
        )
    return CountRound(tasks=tasks, verification_share_auto=float(share))
