"""STAND-IN for the lead's `learning.core.task_value` (issue 25 item 1), written on the platform
branch only so that the platform code and its tests run before the real module lands: at the
merge, take the lead's file and drop this one. Same signatures; the values are the issue's crude
floor (per window, the tag subset with the largest sum over its tokens of the entropy of
{asked tags, other}), not the information of the count.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import numpy as np

EXPLORATION = 0.2
_LOG2 = np.log(2.0)


@dataclass(frozen=True)
class RoundPlan:
    """The tasks of a round, in serving order."""

    sentence: np.ndarray
    start: np.ndarray
    length: np.ndarray
    tag_mask: np.ndarray
    value: np.ndarray
    explore: np.ndarray

    def __len__(self) -> int:
        return int(self.sentence.shape[0])


def _entropy_bits(p: np.ndarray, axis: int = -1) -> np.ndarray:
    p = np.clip(p, 1e-12, 1.0)
    return -(p * np.log(p)).sum(axis=axis) / _LOG2


def _subsets(n_tags: int, tags_per_task: int | None) -> np.ndarray:
    k = n_tags if tags_per_task is None else min(tags_per_task, n_tags)
    rows = list(combinations(range(n_tags), k))
    mask = np.zeros((len(rows), n_tags), dtype=bool)
    for i, row in enumerate(rows):
        mask[i, list(row)] = True
    return mask


def round_plan(
    token_probs: np.ndarray,
    offsets: np.ndarray,
    *,
    window: int,
    tags_per_task: int | None,
    n_tasks: int,
    exploration: float = EXPLORATION,
    asked: np.ndarray | None = None,
    channel: np.ndarray | None = None,
    random_state=None,
) -> RoundPlan:
    """`n_tasks` count tasks: a share `exploration` drawn uniformly (S(o | y)), interleaved
    with the rest, chosen by value at most once per sentence per pass."""
    rng = np.random.default_rng(random_state)
    n_tags = token_probs.shape[1]
    subsets = _subsets(n_tags, tags_per_task)
    asked_set = set()
    if asked is not None and len(asked):
        for row in np.asarray(asked):
            asked_set.add((int(row[0]), int(row[1]), int(row[2]), tuple(np.flatnonzero(row[3:]))))
    # token x subset entropy of {each asked tag, other}
    inside = token_probs @ subsets.T  # (n_tokens, n_subsets)
    per_tag = -(np.clip(token_probs, 1e-12, 1) * np.log(np.clip(token_probs, 1e-12, 1))) / _LOG2
    asked_part = per_tag @ subsets.T
    other = 1.0 - inside
    token_value = asked_part + _entropy_bits(other[..., None])
    candidates = []  # (value, sentence, start, length, subset)
    for s in range(offsets.shape[0] - 1):
        a, b = int(offsets[s]), int(offsets[s + 1])
        length = b - a
        if length == 0:
            continue
        width = min(window, length)
        sums = np.cumsum(np.vstack([np.zeros((1, subsets.shape[0])), token_value[a:b]]), axis=0)
        by_start = sums[width:] - sums[:-width]  # (n_starts, n_subsets)
        ranked = np.unravel_index(np.argsort(-by_start, axis=None), by_start.shape)
        for start, j in zip(*ranked, strict=True):
            key = (s, int(start), width, tuple(np.flatnonzero(subsets[j])))
            if key not in asked_set:
                candidates.append((float(by_start[start, j]), s, int(start), width, int(j)))
                break
    candidates.sort(key=lambda row: -row[0])
    n_explore = int(round(exploration * n_tasks))
    chosen = candidates[: max(n_tasks - n_explore, 0)]
    n_sentences = offsets.shape[0] - 1
    explore_rows = []
    taken = asked_set | {
        (s, start, width, tuple(np.flatnonzero(subsets[j]))) for _, s, start, width, j in chosen
    }
    for _ in range(10 * n_explore if n_sentences else 0):  # redraw a region asked already
        if len(explore_rows) == n_explore:
            break
        s = int(rng.integers(n_sentences))
        length = int(offsets[s + 1] - offsets[s])
        width = min(window, length)
        start = int(rng.integers(length - width + 1))
        j = int(rng.integers(subsets.shape[0]))
        key = (s, start, width, tuple(np.flatnonzero(subsets[j])))
        if length and key not in taken:
            taken.add(key)
            explore_rows.append((np.nan, s, start, width, j))
    rows, e, c = [], 0, 0
    for i in range(len(chosen) + len(explore_rows)):
        due = int(np.floor((i + 1) * exploration)) > int(np.floor(i * exploration))
        if (due and e < len(explore_rows)) or c >= len(chosen):
            rows.append((*explore_rows[e], True))
            e += 1
        else:
            rows.append((*chosen[c], False))
            c += 1
    if not rows:
        empty = np.zeros(0, dtype=np.int64)
        return RoundPlan(empty, empty, empty, np.zeros((0, n_tags), bool), np.zeros(0), empty > 0)
    columns = (np.array(col) for col in zip(*rows, strict=True))
    value, sentence, start, length, subset, explore = columns
    return RoundPlan(
        sentence=sentence.astype(np.int64),
        start=start.astype(np.int64),
        length=length.astype(np.int64),
        tag_mask=subsets[subset.astype(np.int64)],
        value=value.astype(np.float64),
        explore=explore.astype(bool),
    )


def verification_values(token_probs, offsets, shown_starts, width) -> np.ndarray:
    """Bits of each verification window's Yes / No (window i in sentence i, at `shown_starts[i]`):
    the binary entropy of P(all shown tags right), the shown tags the most likely ones."""
    values = np.zeros(len(shown_starts))
    for i, start in enumerate(shown_starts):
        a = int(offsets[i]) + int(start)
        b = min(a + width, int(offsets[i + 1]))
        p = float(np.prod(token_probs[a:b].max(axis=1)))
        values[i] = _entropy_bits(np.array([p, 1.0 - p]))
    return values


def verification_share(count_values, count_seconds, verify_values, verify_seconds) -> float:
    """The share of verification leases among the best answers by value per second (of as many
    answers as the count values)."""
    count = np.asarray(count_values, dtype=float)
    count = count[np.isfinite(count)] / count_seconds
    verify = np.asarray(verify_values, dtype=float)
    verify = verify[np.isfinite(verify)] / verify_seconds
    n = count.shape[0]
    if n == 0 or verify.shape[0] == 0:
        return 0.0 if n else float(verify.shape[0] > 0)
    kinds = np.concatenate([np.zeros(n, bool), np.ones(verify.shape[0], bool)])
    order = np.argsort(-np.concatenate([count, verify]), kind="stable")[:n]
    return float(kinds[order].mean())
