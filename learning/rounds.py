"""The count round and the task mix a new model version chooses (issue 25), on the learning side;
`annotation.services.rounds` stores them with the version, and leasing serves them in order.

**The round.** One count task per training sentence, as a uniform round has, chosen by
`learning.core.task_value.round_plan` from the new version's token probabilities: by the
information an answer carries given the answers in hand, spread over sentences, with its
exploration share drawn uniformly.
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
from dataclasses import dataclass, replace

import numpy as np

from annotation.models import TaskOrigin
from annotation.services import PlannedTask, VerificationWindow
from learning.core.observations import Observations
from learning.core.report import TokenProbabilities
from learning.core.task_value import (
    given_answers,
    given_verifications,
    round_plan,
    verification_share,
    verification_values,
)
from learning.core.verification import VerificationAnswers

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


def answered_rows(
    observations: Sequence[Observations],
    sentence_ids: np.ndarray,
    training: Sequence[tuple[int, list[str]]],
) -> np.ndarray:
    """The count answers in hand on the `training` sentences, one per region (the first; a
    region answered twice tells an exact crowd nothing more), as rows [index into `training`,
    start, length, tag mask (K), counts (K)]; `observations` index `sentence_ids`."""
    index = {int(sentence_id): i for i, (sentence_id, _) in enumerate(training)}
    at = np.array([index.get(int(s), -1) for s in sentence_ids], dtype=np.int64)
    parts = []
    for obs in observations:
        if len(obs) == 0:
            continue
        sentence = at[obs.sentence]
        parts.append(
            np.concatenate(
                [
                    sentence[:, None],
                    obs.start[:, None],
                    obs.length[:, None],
                    obs.tag_mask.astype(np.int64),
                    obs.counts,
                ],
                axis=1,
            )  # fmt: skip
        )
    if not parts:
        return np.zeros((0, 3), dtype=np.int64)
    rows = np.concatenate(parts)
    rows = rows[rows[:, 0] >= 0]
    n_tags = (rows.shape[1] - 3) // 2
    _, first = np.unique(rows[:, : 3 + n_tags], axis=0, return_index=True)
    return rows[np.sort(first)]


def verified_answers(
    verifications: VerificationAnswers | None,
    sentence_ids: np.ndarray,
    training: Sequence[tuple[int, list[str]]],
) -> VerificationAnswers | None:
    """The verification answers in hand on the `training` sentences, their `sentence` an index
    into `training` (`verifications` index `sentence_ids`); None when there are none."""
    if verifications is None or len(verifications) == 0:
        return None
    index = {int(sentence_id): i for i, (sentence_id, _) in enumerate(training)}
    at = np.array([index.get(int(s), -1) for s in sentence_ids], dtype=np.int64)
    kept = verifications.subset(at[verifications.sentence] >= 0)
    return replace(kept, sentence=at[kept.sentence]) if len(kept) else None


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
    answered: np.ndarray | None = None,
    verified: VerificationAnswers | None = None,
) -> CountRound:
    """The next round of the new version over the `training` sentences ((id, tokens), `probs`
    its probabilities of them; `asked` regions left out, as rows [index into `training`, start,
    length, tag mask...]) and the task mix with its `verification` windows (None: the project
    asks none). `answered` (rows of :func:`answered_rows`; None for a private project, whose
    counts are releases): tasks are valued on the probabilities given those answers
    (`task_value.given_answers`) and the `verified` ones (:func:`verified_answers`), so what the
    answers settled is not asked about again."""
    if not training:
        return CountRound(tasks=[], verification_share_auto=0.0)
    lengths = np.fromiter((len(t) for _, t in training), dtype=np.int64, count=len(training))
    offsets = _offsets(lengths)
    count_probs = probs.probs
    if answered is not None and len(answered):
        n_tags = count_probs.shape[1]
        count_probs = given_answers(
            count_probs, offsets, answered[:, 0], answered[:, 1], answered[:, 2],
            answered[:, 3 : 3 + n_tags].astype(bool), answered[:, 3 + n_tags :],
        )  # fmt: skip
    if verified is not None:
        count_probs = given_verifications(
            count_probs, offsets, verified.sentence, verified.start, verified.shown,
            verified.answer, verified.wrong,
        )  # fmt: skip
    plan = round_plan(
        count_probs,
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
        # On the same probabilities as the counts: what the answers settled is worth no
        # verification either, or the mix would lean to the kind valued without them.
        verify_values = verification_values(
            count_probs[rows], _offsets(lengths[at]), np.asarray(starts), window
        )
        share = verification_share(
            plan.value[~plan.explore],
            seconds_of("count", seconds),
            verify_values,
            seconds_of("verify", seconds),
        )
    return CountRound(tasks=tasks, verification_share_auto=float(share))
