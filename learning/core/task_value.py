"""What a task's answer would teach the current model, and the round of tasks that teaches most.

A count task asks, in a window of a sentence, how many tokens carry each tag of a subset ``B``.
Under the model, tokens' tags are independent with probabilities ``p_i`` (the served model's
token probabilities), so the answer ``N = (N_b)_{b ∈ B}`` has an exact distribution, computed by
the same kind of dynamic program as the exact count posterior (:mod:`.posterior`): one token at
a time over the count vectors reachable so far. A task's *value* is the mutual information
between its answer and the window's tags, in bits: ``H(N)`` for an exact crowd, ``H(A) − H(A|N)``
when an answer ``A`` is, with probability ``noise``, a uniformly random valid answer instead of
``N`` (the crowd's measured share of such answers). Asking all tags, the count vector has too
many states for the program on every window; there the value is the window's tag entropy
``Σ_i H(p_i)``, an upper bound of ``H(N)`` (equal when no two tokens of the window are unsure
between the same tags), measured against the exact value in docs/decisions/009-task-value.md.

A verification task shows the model's most likely tags of a window and is answered Yes, or No
with a tap on the first wrong word: its outcome is one of ``w + 1`` events whose probabilities
the model gives, and its value is their entropy.

What the answers in hand already say is taken out first (:func:`given_answers`): each answered
window's tokens take their exact count posterior under the model, so a window overlapping an
answered one is valued on what that answer left unsure.

A *round* (:func:`round_plan`) takes the most valuable tasks, at most one task per window start
and no two overlapping windows in a sentence (their tokens would be counted twice: the values of
disjoint windows add up exactly under the model, those of overlapping ones do not), and mixes in
a share ``exploration`` of tasks drawn as the paper's uniform ``S(o | y)``, so the moments keep
an unbiased sample and a confidently wrong model is still corrected.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from functools import cache
from itertools import combinations

import numpy as np

from .posterior import window_posteriors
from .softmax import safe_log

__all__ = [
    "EXPLORATION",
    "RoundPlan",
    "best_verification_windows",
    "count_answer_distribution",
    "count_values",
    "given_answers",
    "given_verifications",
    "round_plan",
    "verification_share",
    "verification_values",
]

# The share of a round drawn uniformly: docs/decisions/010-exploration-and-moments.md.
EXPLORATION = 0.1
CANDIDATE_TAGS = 6  # tags of a window a subset is chosen from: the ones the model is least sure of
_CHUNK = 4096  # (window, subset) pairs per dynamic-program block: bounds the memory of a round


# ------------------------------------------------------------------ count answers
@cache
def _states(width: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The count vectors of ``k`` tags reachable in ``width`` tokens (rows, Σ ≤ width), and for
    each tag ``j`` the row reached by adding one token of tag ``j`` (−1 past ``width``)."""
    vectors = [
        v
        for total in range(width + 1)
        for v in _compositions(total, k)  # by total: a token only moves to a later row
    ]
    index = {v: i for i, v in enumerate(vectors)}
    successor = np.full((k, len(vectors)), -1, dtype=np.int64)
    for i, v in enumerate(vectors):
        for j in range(k):
            w = v[:j] + (v[j] + 1,) + v[j + 1 :]
            successor[j, i] = index.get(w, -1)
    return np.array(vectors, dtype=np.int64).reshape(len(vectors), k), successor


def _compositions(total: int, k: int):
    if k == 0:
        if total == 0:
            yield ()
        return
    for first in range(total, -1, -1):
        for rest in _compositions(total - first, k - 1):
            yield (first, *rest)


def count_answer_distribution(asked_probs: np.ndarray) -> np.ndarray:
    """The distribution of the count vector of ``k`` asked tags in windows of ``w`` tokens.

    ``asked_probs`` (m, w, k): each token's probability of each asked tag (the rest is "other";
    a padding token has all zeros). Returns (m, S) over the rows of ``_states(w, k)[0]``."""
    m, width, k = asked_probs.shape
    _, successor = _states(width, k)
    dist = np.zeros((m, successor.shape[1]))
    dist[:, 0] = 1.0
    for i in range(width):
        p = asked_probs[:, i, :]
        new = dist * (1.0 - p.sum(axis=1))[:, None]
        for j in range(k):
            reach = successor[j] >= 0
            new[:, successor[j, reach]] += dist[:, reach] * p[:, j, None]
        dist = new
    return dist


def _entropy_bits(dist: np.ndarray, axis: int = -1) -> np.ndarray:
    return -(dist * safe_log(dist)).sum(axis=axis) / np.log(2.0)


def _noisy_information(dist: np.ndarray, n_answers: int, noise: float) -> np.ndarray:
    """I(A; N) when A is N with probability 1 − noise, else uniform over ``n_answers`` answers."""
    if noise <= 0.0:
        return _entropy_bits(dist)
    answer = (1.0 - noise) * dist + noise / n_answers
    kept = (1.0 - noise) + noise / n_answers  # P(A = n | N = n); the rest spread evenly
    rest = np.full(n_answers - 1, noise / n_answers)
    given = _entropy_bits(np.concatenate([[kept], rest])) if n_answers > 1 else 0.0
    return _entropy_bits(answer) - given


def count_values(asked_probs: np.ndarray, *, noise: float = 0.0) -> np.ndarray:
    """Bits an answer to each count task teaches (module docstring); ``asked_probs`` as in
    :func:`count_answer_distribution`. ``noise``: the share of answers that are random."""
    m, width, k = asked_probs.shape
    values = np.empty(m)
    n_answers = _states(width, k)[1].shape[1]
    for at in range(0, m, _CHUNK):
        dist = count_answer_distribution(asked_probs[at : at + _CHUNK])
        values[at : at + _CHUNK] = _noisy_information(dist, n_answers, noise)
    return values


def _tag_entropy(token_probs: np.ndarray) -> np.ndarray:
    return _entropy_bits(token_probs)


def given_answers(
    token_probs: np.ndarray,
    offsets: np.ndarray,
    sentence: np.ndarray,
    start: np.ndarray,
    length: np.ndarray,
    tag_mask: np.ndarray,
    counts: np.ndarray,
    *,
    floor: float = 1e-6,
) -> np.ndarray:
    """The model's token probabilities given the count answers already in hand: what a new task
    can still teach is what those answers have not told.

    Each answer's window gets its exact count posterior (:func:`.posterior.window_posteriors`,
    the priors mixed with ``floor`` of the uniform so an answer the model finds impossible
    still conditions); a token in several answered windows multiplies their likelihood ratios
    (posterior over prior), exact for a token in one answered window, and, under the model's
    independent tokens, for a new window sharing one token with each answered one."""
    token_probs = np.asarray(token_probs, dtype=np.float64)
    sentence = np.asarray(sentence, dtype=np.int64)
    if sentence.shape[0] == 0:
        return token_probs
    start = np.asarray(start, dtype=np.int64)
    length = np.asarray(length, dtype=np.int64)
    n_tags = token_probs.shape[1]
    prior = (token_probs + floor) / (1.0 + n_tags * floor)
    width = int(length.max())
    window = _window_tokens(prior, offsets, sentence, start, length, width)
    result = window_posteriors(window, length, np.asarray(tag_mask, bool), counts)
    ratio = safe_log(result.marginals) - safe_log(np.where(window > 0, window, 1.0))
    position = np.arange(width)[None, :]
    inside = (position < length[:, None]) & result.feasible[:, None]  # an impossible answer: none
    index = (offsets[sentence, None] + start[:, None] + position)[inside]
    log_odds = np.zeros_like(prior)
    np.add.at(log_odds, index, ratio[inside])
    log_post = safe_log(prior) + log_odds
    log_post -= log_post.max(axis=1, keepdims=True)
    out = np.exp(log_post)
    return out / out.sum(axis=1, keepdims=True)


def given_verifications(
    token_probs: np.ndarray,
    offsets: np.ndarray,
    sentence: np.ndarray,
    start: np.ndarray,
    shown: np.ndarray,
    answer: np.ndarray,
    wrong: np.ndarray,
    *,
    floor: float = 1e-6,
) -> np.ndarray:
    """The token probabilities given verification answers too (as :func:`given_answers` for
    counts): a Yes settles every shown tag; a No settles those before the tapped word and rules
    the tapped word's shown tag out; a No without a tap lowers each shown tag's probability by
    ``P(No | that tag right) / P(No)``. Exact for a token in one answered window."""
    token_probs = np.asarray(token_probs, dtype=np.float64)
    sentence = np.asarray(sentence, dtype=np.int64)
    if sentence.shape[0] == 0:
        return token_probs
    n_tags = token_probs.shape[1]
    prior = (token_probs + floor) / (1.0 + n_tags * floor)
    shown = np.asarray(shown, dtype=np.int64)
    position = np.arange(shown.shape[1])[None, :]
    inside = shown >= 0
    index = np.where(inside, offsets[sentence, None] + np.asarray(start)[:, None] + position, 0)
    right = np.where(inside, prior[index, np.maximum(shown, 0)], 1.0)  # P(shown tag right)
    answer = np.asarray(answer, bool)
    wrong = np.where(answer, -1, np.asarray(wrong, dtype=np.int64))
    tapped = ~answer & (wrong >= 0)
    # Per shown word: the log-ratio of its shown tag and of every other tag.
    log_right = np.zeros(shown.shape)
    log_other = np.zeros(shown.shape)
    settled = inside & (answer[:, None] | (tapped[:, None] & (position < wrong[:, None])))
    log_right[settled], log_other[settled] = -safe_log(right[settled]), safe_log(0.0)
    ruled_out = inside & tapped[:, None] & (position == wrong[:, None])
    log_right[ruled_out] = safe_log(0.0)
    log_other[ruled_out] = -safe_log(1.0 - right[ruled_out])
    untapped = inside & (~answer & ~tapped)[:, None]
    p_no = 1.0 - right.prod(axis=1, keepdims=True)
    p_no_if_right = 1.0 - right.prod(axis=1, keepdims=True) / right
    log_right[untapped] = (safe_log(p_no_if_right) - safe_log(p_no))[untapped]
    log_other[untapped] = -np.broadcast_to(safe_log(p_no), shown.shape)[untapped]
    log_odds = np.zeros_like(prior)
    rows = index[inside]
    np.add.at(log_odds, rows, np.broadcast_to(log_other[inside][:, None], (rows.shape[0], n_tags)))
    np.add.at(log_odds, (rows, shown[inside]), (log_right - log_other)[inside])
    log_post = safe_log(prior) + log_odds
    log_post -= log_post.max(axis=1, keepdims=True)
    out = np.exp(log_post)
    return out / out.sum(axis=1, keepdims=True)


# ------------------------------------------------------------------ verification answers
def verification_values(
    token_probs: np.ndarray, offsets: np.ndarray, starts: np.ndarray, width: int
) -> np.ndarray:
    """Bits of each verification task's answer (Yes, or the first wrong word): sentence ``s``
    (``offsets[s]:offsets[s + 1]`` of ``token_probs``) shows its model's most likely tags from
    ``starts[s]`` on, over ``min(width, its length)`` tokens."""
    lengths = np.diff(offsets)
    n = starts.shape[0]
    position = np.arange(width)[None, :]
    inside = position < np.minimum(width, lengths)[:, None]
    index = np.where(inside, offsets[:-1, None] + starts[:, None] + position, 0)
    right = np.where(inside, token_probs.max(axis=1)[index], 1.0)
    before = np.cumprod(np.concatenate([np.ones((n, 1)), right[:, :-1]], axis=1), axis=1)
    outcomes = np.concatenate([before * (1.0 - right), right.prod(axis=1)[:, None]], axis=1)
    return _entropy_bits(outcomes)


def best_verification_windows(
    token_probs: np.ndarray, offsets: np.ndarray, width: int
) -> tuple[np.ndarray, np.ndarray]:
    """Each sentence's most informative verification window: (starts, bits). Not the least
    sure window: where the model is surely wrong the answer is surely No and teaches little."""
    lengths = np.diff(offsets)
    best_start = np.zeros(lengths.shape[0], dtype=np.int64)
    best_value = np.full(lengths.shape[0], -1.0)
    last_start = lengths - np.minimum(width, lengths)
    for shift in range(int(last_start.max()) + 1 if lengths.size else 0):
        fits = last_start >= shift
        value = verification_values(token_probs, offsets, np.where(fits, shift, 0), width)
        better = fits & (value > best_value)
        best_start[better], best_value[better] = shift, value[better]
    return best_start, np.maximum(best_value, 0.0)


def verification_share(
    count_values: np.ndarray,
    count_seconds: float,
    verify_values: np.ndarray,
    verify_seconds: float,
    n_tasks: int | None = None,
) -> float:
    """The share of the next ``n_tasks`` (default: as many as there are count candidates) that
    should be verification tasks when tasks are taken by bits per second of annotators' time:
    the verification tasks' share among the best candidates of both kinds."""
    count_rate = np.sort(np.asarray(count_values, dtype=float))[::-1] / max(count_seconds, 1e-9)
    verify_rate = np.sort(np.asarray(verify_values, dtype=float))[::-1] / max(verify_seconds, 1e-9)
    n = len(count_rate) if n_tasks is None else int(n_tasks)
    if n <= 0 or not len(verify_rate):
        return 0.0
    both = np.concatenate([count_rate, verify_rate])
    kind = np.concatenate([np.zeros(len(count_rate)), np.ones(len(verify_rate))])
    best = np.argsort(-both, kind="stable")[:n]
    return float(kind[best].mean())


# ------------------------------------------------------------------ a round of count tasks
@dataclass(frozen=True)
class RoundPlan:
    """The tasks of a round, in serving order (the most valuable first, exploration mixed in)."""

    sentence: np.ndarray  # (n,) index into the sentences the plan was made for
    start: np.ndarray  # (n,)
    length: np.ndarray  # (n,)
    tag_mask: np.ndarray  # (n, K) bool: the asked tags
    value: np.ndarray  # (n,) bits per answer; nan for exploration rows
    explore: np.ndarray  # (n,) bool: drawn uniformly as S(o | y), not by value

    def __len__(self) -> int:
        return int(self.sentence.shape[0])


def _windows(lengths: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every window of every non-empty sentence: (sentence, start, length)."""
    widths = np.minimum(width, lengths)
    n_starts = np.where(lengths > 0, lengths - widths + 1, 0)
    sentence = np.repeat(np.arange(lengths.shape[0]), n_starts)
    first = np.concatenate([[0], np.cumsum(n_starts)[:-1]])
    start = np.arange(sentence.shape[0]) - np.repeat(first, n_starts)
    return sentence, start, widths[sentence]


def _window_tokens(token_probs, offsets, sentence, start, length, width) -> np.ndarray:
    """(m, width, K) token probabilities of each window, padded with all-zero rows."""
    position = np.arange(width)[None, :]
    inside = position < length[:, None]
    index = np.where(inside, offsets[sentence, None] + start[:, None] + position, 0)
    return np.where(inside[:, :, None], token_probs[index], 0.0)


def _best_subsets(window_probs: np.ndarray, k: int, noise: float):
    """For each window, the subset of ``k`` tags (among its ``CANDIDATE_TAGS`` least sure tags)
    whose count answer teaches most: (values (m,), tags (m, k))."""
    m, width, n_tags = window_probs.shape
    spread = (window_probs * (1.0 - window_probs)).sum(axis=1)  # Var of each tag's count
    n_candidates = min(n_tags, max(k, CANDIDATE_TAGS))
    top = np.argsort(-spread, axis=1, kind="stable")[:, :n_candidates]
    subsets = np.array(list(combinations(range(n_candidates), k)), dtype=np.int64)
    tags = top[:, subsets]  # (m, n_subsets, k)
    asked = np.take_along_axis(
        window_probs[:, None, :, :].repeat(subsets.shape[0], axis=1),
        tags[:, :, None, :].repeat(width, axis=2),
        axis=3,
    )  # (m, n_subsets, width, k)
    values = count_values(asked.reshape(-1, width, k), noise=noise).reshape(m, -1)
    best = values.argmax(axis=1)
    return values[np.arange(m), best], np.sort(tags[np.arange(m), best], axis=1)


def _uniform_rows(lengths, width, n_tags, k, n, rng):
    """``n`` tasks drawn as S(o | y): sentences in a random order (each once before any twice,
    as a uniform round spreads), then a uniform start and tag subset."""
    usable = np.flatnonzero(lengths > 0)
    passes = -(-n // max(1, usable.shape[0]))
    sentence = np.concatenate([rng.permutation(usable) for _ in range(passes)] + [usable[:0]])[:n]
    length = np.minimum(width, lengths[sentence])
    start = (rng.random(n) * (lengths[sentence] - length + 1)).astype(np.int64)
    mask = np.zeros((n, n_tags), dtype=bool)
    chosen = np.argsort(rng.random((n, n_tags)), axis=1)[:, :k]
    np.put_along_axis(mask, chosen, True, axis=1)
    return sentence, start, length, mask


def round_plan(
    token_probs: np.ndarray,
    offsets: np.ndarray,
    *,
    window: int,
    tags_per_task: int | None,
    n_tasks: int,
    exploration: float = EXPLORATION,
    asked: np.ndarray | None = None,
    noise: float = 0.0,
    token_keys: np.ndarray | None = None,
    repeat_discount: float = 1.0,
    random_state: int | np.random.Generator | None = None,
) -> RoundPlan:
    """The next ``n_tasks`` count tasks (module docstring).

    ``token_probs`` (n_tokens, K): the model's tag probabilities of the sentences' tokens,
    concatenated; ``offsets`` (n_sentences + 1,): where each sentence starts, and the end.
    ``tags_per_task``: the size of the asked subsets (None: all tags). ``asked``: rows
    ``[sentence, start, length, tag_mask...]`` of tasks that exist already (not asked again).
    ``exploration``: the probability that a row is a uniform draw instead of the next most
    valuable task. ``noise``: the share of random answers in the crowd."""
    if not 0.0 <= exploration <= 1.0:
        raise ValueError("exploration must be between 0 and 1")
    if n_tasks < 0:
        raise ValueError("n_tasks must not be negative")
    rng = np.random.default_rng(random_state)
    offsets = np.asarray(offsets, dtype=np.int64)
    lengths = np.diff(offsets)
    n_tags = token_probs.shape[1]
    k = n_tags if tags_per_task is None else min(int(tags_per_task), n_tags)
    all_tags = k == n_tags

    explore = rng.random(n_tasks) < exploration
    n_value = int(n_tasks - explore.sum())
    sentence, start, length = _windows(lengths, window)
    width = int(length.max()) if length.size else 0
    values = np.zeros(0)
    tags = np.zeros((0, k), dtype=np.int64)
    if n_value and sentence.size:
        if all_tags:  # each token's entropy once, summed over the windows holding it
            entropy = _window_tokens(_tag_entropy(token_probs)[:, None], offsets, sentence,
                                     start, length, width)  # fmt: skip
            values = entropy[:, :, 0].sum(1)
            tags = np.broadcast_to(np.arange(n_tags), (sentence.shape[0], n_tags))
        else:
            window_probs = _window_tokens(token_probs, offsets, sentence, start, length, width)
            values = np.empty(sentence.shape[0])
            tags = np.empty((sentence.shape[0], k), dtype=np.int64)
            step = max(1, _CHUNK // 8)
            for at in range(0, sentence.shape[0], step):
                values[at : at + step], tags[at : at + step] = _best_subsets(
                    window_probs[at : at + step], k, noise
                )
    if asked is not None and len(asked) and values.size:
        values = np.where(_already_asked(asked, sentence, start, length, tags, n_tags), -1, values)
    keys = None
    if token_keys is not None and repeat_discount < 1.0 and values.size:
        # Each window's key: the word of its least sure token (what its answer mostly teaches).
        entropy = _window_tokens(_tag_entropy(token_probs)[:, None], offsets, sentence, start,
                                 length, width)[:, :, 0]  # fmt: skip
        position = offsets[sentence] + start + entropy.argmax(axis=1)
        keys = np.asarray(token_keys, dtype=np.int64)[position]
    chosen = _disjoint_best(sentence, start, length, values, n_value, keys, repeat_discount)
    if chosen.shape[0] < n_value:  # fewer valuable tasks than asked for: the rest uniform
        explore[np.flatnonzero(~explore)[chosen.shape[0] :]] = True
    if not (lengths > 0).any():
        explore = np.zeros(0, dtype=bool)
    value_mask = np.zeros((chosen.shape[0], n_tags), dtype=bool)
    np.put_along_axis(value_mask, tags[chosen], True, axis=1)
    taken = _region_keys(sentence[chosen], start[chosen], length[chosen], value_mask)
    if asked is not None and len(asked):
        asked = np.asarray(asked, dtype=np.int64)
        taken |= _region_keys(asked[:, 0], asked[:, 1], asked[:, 2], asked[:, 3:].astype(bool))
    uniform = _new_uniform_rows(lengths, window, n_tags, k, int(explore.sum()), taken, rng)
    if uniform[0].shape[0] < explore.sum():  # a small corpus with few regions left
        explore = explore[~explore | (np.cumsum(explore) <= uniform[0].shape[0])]
    n_explore = int(explore.sum())
    rows = (
        (sentence[chosen], uniform[0]),
        (start[chosen], uniform[1]),
        (length[chosen], uniform[2]),
        (value_mask, uniform[3]),
        (values[chosen], np.full(n_explore, np.nan)),
    )
    placed = []
    for by_value, drawn in rows:
        out = np.empty((explore.shape[0], *by_value.shape[1:]), dtype=by_value.dtype)
        out[~explore], out[explore] = by_value, drawn
        placed.append(out)
    return RoundPlan(*placed, explore=explore)


def _region_keys(sentence, start, length, mask) -> set[tuple]:
    return {
        (s, a, n, m.tobytes())
        for s, a, n, m in zip(
            sentence.tolist(), start.tolist(), length.tolist(), np.asarray(mask, bool), strict=True
        )
    }


def _new_uniform_rows(lengths, width, n_tags, k, n, taken: set[tuple], rng):
    """``n`` uniform rows (as :func:`_uniform_rows`) whose regions are not in ``taken`` nor
    repeated: draws again up to four times as many; fewer rows when the corpus runs out."""
    out: list[tuple] = []
    for _ in range(4):
        if len(out) >= n or n == 0:
            break
        drawn = _uniform_rows(lengths, width, n_tags, k, 2 * (n - len(out)) + 8, rng)
        for row in zip(*drawn, strict=True):
            key = (int(row[0]), int(row[1]), int(row[2]), row[3].tobytes())
            if key not in taken:
                taken.add(key)
                out.append(row)
                if len(out) == n:
                    break
    if not out:
        return (np.zeros(0, np.int64),) * 3 + (np.zeros((0, n_tags), bool),)
    sentence, start, length, mask = zip(*out, strict=True)
    return np.array(sentence), np.array(start), np.array(length), np.array(mask)


def _already_asked(asked, sentence, start, length, tags, n_tags) -> np.ndarray:
    """Whether each candidate (window and its chosen tags) is among the ``asked`` rows."""
    asked = np.asarray(asked, dtype=np.int64)
    mask = np.zeros((sentence.shape[0], n_tags), dtype=bool)
    np.put_along_axis(mask, tags, True, axis=1)
    existing = _row_bytes(asked[:, 0], asked[:, 1], asked[:, 2], asked[:, 3 : 3 + n_tags] != 0)
    return np.isin(_row_bytes(sentence, start, length, mask), existing)


def _row_bytes(sentence, start, length, mask) -> np.ndarray:
    """One byte string per region (its window and its tag mask's bits), compared as a whole by
    ``np.isin``: no Python object per candidate window."""
    head = np.stack([sentence, start, length], axis=1).astype(np.int64)
    rows = np.concatenate(
        [head.view(np.uint8).reshape(head.shape[0], -1), np.packbits(mask, axis=1)], axis=1
    )
    return np.ascontiguousarray(rows).view(np.dtype((np.void, rows.shape[1]))).ravel()


def _disjoint_best(sentence, start, length, values, n: int, keys=None, discount=1.0):
    """Indices of up to ``n`` candidates with positive value, greedily by value, no two
    overlapping in one sentence. With ``keys``, a candidate's value is multiplied by
    ``discount`` for each chosen candidate of its key (lazily: a popped candidate whose key was
    chosen since it was valued goes back re-valued; values only fall, so the order is exact)."""
    order = np.argsort(-values, kind="stable")
    order = order[values[order] > 0]
    taken: dict[int, list[tuple[int, int]]] = {}
    chosen: list[int] = []
    if keys is None:
        for i in order.tolist():
            if len(chosen) == n:
                break
            if _take(i, sentence, start, length, taken):
                chosen.append(i)
    else:
        used: dict[int, int] = {}
        heap = [(-float(values[i]), rank, 0, i) for rank, i in enumerate(order.tolist())]
        heapq.heapify(heap)
        while heap and len(chosen) < n:
            _, rank, seen, i = heapq.heappop(heap)
            key = int(keys[i])
            now = used.get(key, 0)
            if now != seen:
                heapq.heappush(heap, (-float(values[i]) * discount**now, rank, now, i))
            elif _take(i, sentence, start, length, taken):
                chosen.append(i)
                used[key] = now + 1
    return np.asarray(chosen, dtype=np.int64)


def _take(i, sentence, start, length, taken) -> bool:
    """Whether candidate ``i`` overlaps no window taken in its sentence; if so, take it."""
    s, a, b = int(sentence[i]), int(start[i]), int(start[i] + length[i])
    spans = taken.setdefault(s, [])
    if any(a < end and begin < b for begin, end in spans):
        return False
    spans.append((a, b))
    return True
