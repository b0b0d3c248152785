"""What a new version asks next (issues 15 and 25): its count round, its verification windows
and the task mix, from its token probabilities and the answers in hand. The retrain policy
(:mod:`.policy`) calls these for the platform and the simulated campaign alike; the platform
stores the result (``learning.rounds``, ``learning.verification``) and leasing serves it in order.

**The round.** ``n_tasks`` count tasks (the platform: one per training sentence, as a uniform
round has), chosen by :func:`.task_value.round_plan` from the version's probabilities given the
answers in hand (:func:`.task_value.given_answers`, :func:`.task_value.given_verifications`), so
what they settled is not asked again, with the exploration share drawn uniformly; regions
already asked are left out.

**The windows.** One per served sentence (training and gold-check sentences, at most
``max_sentences`` training and ``max_gold`` gold-check ones a version, drawn at random): the
window whose answer (Yes, or the first wrong word) carries the most bits
(:func:`.task_value.best_verification_windows`), the most informative first. The choice depends
on the text and the model only, never on the true tags, so conditioning on the shown tags keeps
the E-step exact (:mod:`.verification`).

**The mix.** The share of leases that are verification tasks, by value per second
(:func:`.task_value.verification_share`): the bits of the round's count tasks and of the
windows, each divided by the median seconds of an answer of that kind (``PRIOR_SECONDS`` until
a kind has ``MIN_TIMED_ANSWERS`` timed answers).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from .observations import Observations
from .report import TokenProbabilities
from .task_value import (
    EXPLORATION,
    RoundPlan,
    best_verification_windows,
    given_answers,
    given_verifications,
    round_plan,
    verification_share,
    verification_values,
)
from .verification import VerificationAnswers

__all__ = [
    "MIN_TIMED_ANSWERS",
    "PRIOR_SECONDS",
    "NextCounts",
    "Window",
    "answered_rows",
    "count_round",
    "seconds_of",
    "verification_windows",
    "verified_answers",
]

# Seconds of an answer of each kind assumed until the project has measured its own: a count
# takes reading and counting, a verification a glance and a tap.
PRIOR_SECONDS = {"count": 8.0, "verify": 4.0}
MIN_TIMED_ANSWERS = 20
MAX_SENTENCES = 2000
MAX_GOLD_SENTENCES = 500


@dataclass(frozen=True)
class Window:
    """A verification window: its sentence (a key of the served sentences), first word, the tag
    shown under each word, whether the sentence is a gold check, and its bits."""

    sentence_id: int
    start: int
    shown_tags: tuple[int, ...]
    is_gold: bool = False
    value: float = 0.0


@dataclass(frozen=True)
class NextCounts:
    """A version's count round (:class:`.task_value.RoundPlan`, sentences indexing the training
    sentences, in serving order) and the share of verification leases its values chose."""

    plan: RoundPlan
    verification_share: float


def seconds_of(kind: str, measured: dict[str, tuple[float | None, int]] | None) -> float:
    """The median seconds of an answer of ``kind``, or its prior with too few timed answers."""
    median, n = (measured or {}).get(kind, (None, 0))
    if median is None or n < MIN_TIMED_ANSWERS or median <= 0:
        return PRIOR_SECONDS[kind]
    return median


def answered_rows(
    observations: Sequence[Observations],
    sentence_ids: np.ndarray,
    training: Sequence[tuple[int, list[str]]],
) -> np.ndarray:
    """The count answers in hand on the ``training`` sentences, one per region (the first; a
    region answered twice tells an exact crowd nothing more), as rows [index into ``training``,
    start, length, tag mask (K), counts (K)]; ``observations`` index ``sentence_ids``."""
    index = {int(sentence_id): i for i, (sentence_id, _) in enumerate(training)}
    at = np.array([index.get(int(s), -1) for s in sentence_ids], dtype=np.int64)
    parts = []
    for obs in observations:
        if len(obs) == 0:
            continue
        columns = [at[obs.sentence][:, None], obs.start[:, None], obs.length[:, None]]
        parts.append(np.concatenate([*columns, obs.tag_mask.astype(np.int64), obs.counts], 1))
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
    """The verification answers in hand on the ``training`` sentences, their ``sentence`` an
    index into ``training`` (``verifications`` index ``sentence_ids``); None when there are none."""
    if verifications is None or len(verifications) == 0:
        return None
    index = {int(sentence_id): i for i, (sentence_id, _) in enumerate(training)}
    at = np.array([index.get(int(s), -1) for s in sentence_ids], dtype=np.int64)
    kept = verifications.subset(at[verifications.sentence] >= 0)
    return replace(kept, sentence=at[kept.sentence]) if len(kept) else None


def verification_windows(
    probs: TokenProbabilities,
    served: Sequence[tuple[int, list[str], bool]],
    *,
    window: int,
    random_state: int | np.random.Generator | None,
    max_sentences: int = MAX_SENTENCES,
    max_gold: int = MAX_GOLD_SENTENCES,
) -> list[Window]:
    """The verification windows of a version: one per sentence of ``served`` ((key, tokens, is a
    gold check), ``probs`` the version's probabilities of them), the most informative first
    (module docstring)."""
    rng = np.random.default_rng(random_state)
    picked: list[int] = []
    for gold, cap in ((False, max_sentences), (True, max_gold)):
        rows = [i for i, row in enumerate(served) if row[2] is gold]
        if len(rows) > cap:
            rows = [rows[i] for i in sorted(rng.choice(len(rows), size=cap, replace=False))]
        picked.extend(rows)
    if not picked:
        return []
    chosen = [served[i] for i in picked]
    taken = probs.take(picked)
    offsets = np.append(taken.offsets, taken.probs.shape[0])
    starts, values = best_verification_windows(taken.probs, offsets, window)
    guess = taken.probs.argmax(axis=1)
    windows = []
    for i in np.argsort(-values, kind="stable"):  # served in this order
        sentence_id, tokens, gold = chosen[i]
        first = offsets[i] + starts[i]
        shown = guess[first : first + min(window, len(tokens))]
        windows.append(
            Window(int(sentence_id), int(starts[i]), tuple(int(k) for k in shown), gold,
                   float(values[i]))
        )  # fmt: skip
    return windows


def _offsets(lengths: np.ndarray) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)


def count_round(
    probs: TokenProbabilities,
    training: Sequence[tuple[int, list[str]]],
    *,
    window: int,
    tags_per_task: int | None,
    asked: np.ndarray,
    verification: Sequence | None,
    seconds: dict[str, tuple[float | None, int]] | None,
    random_state: int | np.random.Generator | None,
    answered: np.ndarray | None = None,
    verified: VerificationAnswers | None = None,
    n_tasks: int | None = None,
    exploration: float = EXPLORATION,
    token_keys: np.ndarray | None = None,
    repeat_discount: float = 1.0,
) -> NextCounts:
    """The next round over the ``training`` sentences ((key, tokens), ``probs`` the version's
    probabilities of them; ``asked`` regions left out, as rows [index into ``training``, start,
    length, tag mask...]) and the task mix with the ``verification`` windows (anything with
    ``sentence_id``, ``start`` and ``is_gold``; None: the project asks none). ``answered`` (rows
    of :func:`answered_rows`; None for a private project, whose counts are releases) and
    ``verified`` (:func:`verified_answers`): tasks are valued given those answers. ``n_tasks``:
    the round's count tasks (default one per training sentence); ``token_keys`` and
    ``repeat_discount``: :func:`.task_value.round_plan`'s."""
    if not training:
        empty = np.zeros(0, dtype=np.int64)
        mask = np.zeros((0, probs.probs.shape[1]), dtype=bool)
        none = RoundPlan(empty, empty, empty, mask, np.zeros(0), np.zeros(0, dtype=bool))
        return NextCounts(plan=none, verification_share=0.0)
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
        count_probs, offsets, window=window, tags_per_task=tags_per_task,
        n_tasks=len(training) if n_tasks is None else n_tasks, exploration=exploration,
        asked=asked, token_keys=token_keys, repeat_discount=repeat_discount,
        random_state=random_state,
    )  # fmt: skip
    share = 0.0
    index = {int(sentence_id): i for i, (sentence_id, _) in enumerate(training)}
    windows = [w for w in verification or [] if not w.is_gold and w.sentence_id in index]
    if windows and len(plan):
        at = [index[w.sentence_id] for w in windows]
        rows = np.concatenate([np.arange(offsets[i], offsets[i + 1]) for i in at])
        # On the same probabilities as the counts: what the answers settled is worth no
        # verification either, or the mix would lean to the kind valued without them.
        verify_values = verification_values(
            count_probs[rows], _offsets(lengths[at]), np.array([w.start for w in windows]), window
        )
        share = verification_share(
            plan.value[~plan.explore], seconds_of("count", seconds),
            verify_values, seconds_of("verify", seconds),
        )  # fmt: skip
    return NextCounts(plan=plan, verification_share=float(share))
