"""Verification answers: "are all of these tags right?" — a second kind of indirect supervision
(Chang, Srikumar, Goldwasser and Roth 2010), next to the counts (:mod:`.counts`).

An answer is ``o = (r, s, a, t)``: a window ``r`` of a sentence, the tags ``s`` shown under its
words (the model's guess when the task was made, stored with the answer because the model
changes), the answer ``a`` (Yes or No) and, optionally after a No, ``t``: the first word whose tag
is wrong. For a model that gives every token its own distribution ``p_j``, the exact posterior of
the window's tags is cheap:

- **Yes**: the tags are exactly ``s``. ``P(Yes) = Π_j p_j(s_j)``; the posterior is ``s``.
- **No** (no word tapped): the prior with the shown sequence removed and renormalised,
  ``P(No) = 1 − Π_j p_j(s_j)`` and ``P(y_j = b | No) = (p_j(b) − [b = s_j] Π_k p_k(s_k)) / P(No)``.
- **No, first wrong word t**: the words before ``t`` are right, ``t`` is wrong, the rest is
  unconstrained: ``P = Π_{j<t} p_j(s_j) · (1 − p_t(s_t))``; the posterior is ``s_j`` before ``t``,
  ``p_t(b) [b ≠ s_t] / (1 − p_t(s_t))`` at ``t`` and the prior after it.

There are no moment equations: the shown tags depend on the model that chose them, so these
answers enter learning through the likelihood (the E-step), not through the linear system. How
the windows were chosen (for example where the model was least sure) depends on the text and the
model only, never on the true tags, so conditioning on the shown tags keeps the E-step exact.

**Reliability.** An annotator who answers Yes to everything (or at random) tells nothing, however
often the model is right, so answers are not judged by how often they agree with the model. With
Dawid and Skene's two rates for a yes/no question, the sensitivity ``α = P(Yes | right)`` and the
specificity ``β = P(No | wrong)``, and the model's probability ``μ_i`` that window ``i``'s shown
tags are right, an annotator's expected answer is linear in ``μ_i``:

    E[a_i] = (1 − β) + J μ_i,      J = α + β − 1 (Youden's index).

So the least-squares slope of their answers on ``μ``, ``J = Cov(a, μ) / Var(μ)``, estimates their
*skill* without knowing the truth: 1 for truthful answers, about 0 for answers that do not depend
on the window (a yes-sayer has ``α = 1, β = 0``; a coin ``α = β = ½``), whatever their rate of Yes.

That needs ``μ`` calibrated. Where the model is surer of itself than ``μ`` says (it is right on
every window shown, though ``μ`` ranges from 0.6 to 1), truthful answers are all Yes and their
slope is 0 like a yes-sayer's: the windows cannot tell them apart, and neither may be flagged.
A model off by a factor shrinks every annotator's slope by it, so an annotator is flagged when
their skill is below ``flag_threshold`` times the skill of the crowd's good annotators (the 75th
percentile of the skills of those with enough answers, at most 1): with a calibrated model that
is the threshold itself; where nobody's answers follow ``μ``, nobody is flagged.

A slope from a few answers is a noisy estimate, and a run of answers that are all alike has
slope 0 whatever its cause: a truthful annotator whose 14 windows were all wrong answers No 14
times, like a no-sayer (Alpino, 0.1 count and 1 verification task per sentence: four exact
annotators flagged so). So a skill below the mark is also tested: flagged only when it is below
the crowd's reference by more than ``z`` standard errors, the error computed as if the annotator
answered like the crowd (their own rate of Yes, the reference slope; binomial variance per
answer), which is what the flag says they do not.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .observations import rows_of
from .posterior import WindowPosteriors
from .softmax import safe_log

__all__ = [
    "VerificationAnswers",
    "VerificationEvidence",
    "log_sure_by_start",
    "probability_all_right",
    "verification_posteriors",
    "verification_reliability",
]


@dataclass(frozen=True)
class VerificationAnswers:
    """Validated verification answers; one row per answer.

    Attributes
    ----------
    sentence, start, length : (n,) int64 — the window, as for count observations.
    shown : (n, w_max) int64 — the tag index shown under each word, −1 past the window's end.
    answer : (n,) bool — True for Yes.
    wrong : (n,) int64 — for a No, the position in the window (0-based) of the first wrong word,
        or −1 when none was tapped; −1 for a Yes.
    annotator : (n,) int64.
    """

    sentence: np.ndarray
    start: np.ndarray
    length: np.ndarray
    shown: np.ndarray
    answer: np.ndarray
    wrong: np.ndarray
    annotator: np.ndarray

    @classmethod
    def create(
        cls,
        *,
        sentence: Sequence[int] | np.ndarray,
        start: Sequence[int] | np.ndarray,
        shown: Sequence[Sequence[int]] | np.ndarray,
        answer: Sequence[bool] | np.ndarray,
        wrong: Sequence[int] | np.ndarray | None = None,
        annotator: Sequence[int] | np.ndarray | None = None,
        sentence_lengths: Sequence[int] | np.ndarray,
        n_tags: int,
    ) -> VerificationAnswers:
        """Validate and return new answers; ``shown`` may be a list of per-window tag lists.
        Raises ``ValueError`` naming the first offending answer."""
        sentence = np.asarray(sentence, dtype=np.int64).reshape(-1)
        n = sentence.shape[0]
        start = np.asarray(start, dtype=np.int64).reshape(-1)
        answer = np.asarray(answer)
        if answer.dtype != bool:
            raise ValueError("answer must be booleans (True for Yes)")
        if isinstance(shown, np.ndarray):
            shown = shown.astype(np.int64)
            length = (shown >= 0).sum(axis=1) if shown.ndim == 2 else np.zeros(0, np.int64)
        else:
            rows = [list(row) for row in shown]
            length = np.array([len(row) for row in rows], dtype=np.int64)
            w_max = int(length.max()) if n else 0
            shown = np.full((len(rows), w_max), -1, dtype=np.int64)
            for i, row in enumerate(rows):
                shown[i, : len(row)] = row
        wrong = np.full(n, -1) if wrong is None else np.asarray(wrong, dtype=np.int64)
        annotator = np.zeros(n, np.int64) if annotator is None else np.asarray(annotator, np.int64)
        lengths = np.asarray(sentence_lengths, dtype=np.int64)
        given = {"start": start, "answer": answer, "wrong": wrong, "annotator": annotator,
                 "shown": shown, "length": length}  # fmt: skip
        for name, values in given.items():
            if values.shape[0] != n:
                raise ValueError(f"{name} must have one row per answer ({n})")
        checks = [
            ((sentence < 0) | (sentence >= lengths.shape[0]), "sentence index out of range"),
            (length < 1, "a window shows at least one tag"),
            (start < 0, "start must be non-negative"),
        ]
        for bad, message in checks:
            _fail_at(bad, message)
        _fail_at(start + length > lengths[sentence], "window reaches past the end of its sentence")
        inside = np.arange(shown.shape[1])[None, :] < length[:, None]
        _fail_at(
            (((shown < 0) | (shown >= n_tags)) & inside).any(axis=1),
            f"shown tags must be tag indices 0..{n_tags - 1}",
        )
        _fail_at(answer & (wrong != -1), "a Yes has no wrong word")
        _fail_at((wrong < -1) | (wrong >= length), "the wrong word must lie in the window")
        return cls(
            sentence=sentence,
            start=start,
            length=length,
            shown=shown,
            answer=answer,
            wrong=wrong,
            annotator=annotator,
        )

    def __len__(self) -> int:
        return int(self.sentence.shape[0])

    def subset(self, index: np.ndarray) -> VerificationAnswers:
        """The answers selected by an integer or boolean index (already valid)."""
        return rows_of(self, index)


def _fail_at(bad: np.ndarray, message: str) -> None:
    if bad.any():
        raise ValueError(f"answer {int(np.flatnonzero(bad)[0])}: {message}")


def verification_posteriors(
    probs: np.ndarray,
    shown: np.ndarray,
    answer: np.ndarray,
    wrong: np.ndarray,
    *,
    floor: float = 0.0,
) -> WindowPosteriors:
    """Exact posteriors (module docstring) of a batch of windows under token priors ``probs``
    (n, w_max, K); ``shown`` (n, w_max) with −1 past each window's end."""
    probs = np.asarray(probs, dtype=np.float64)
    n, w_max, n_tags = probs.shape
    if floor > 0:
        probs = (probs + floor) / (1.0 + n_tags * floor)
    inside = shown >= 0
    position = np.arange(w_max)[None, :]
    safe = np.where(inside, shown, 0)
    p_shown = np.where(inside, np.take_along_axis(probs, safe[:, :, None], 2)[:, :, 0], 1.0)
    is_shown = np.zeros(probs.shape, dtype=bool)
    np.put_along_axis(is_shown, safe[:, :, None], inside[:, :, None], 2)
    log_shown = safe_log(p_shown)
    all_right = np.exp(log_shown.sum(axis=1))

    marginals = np.where(inside[:, :, None], probs, 0.0)
    log_z = np.empty(n)
    # Yes: the shown tags.
    yes = answer
    marginals[yes] = is_shown[yes]
    log_z[yes] = log_shown[yes].sum(axis=1)
    # No without a tap: the prior minus the shown sequence, renormalised.
    plain = ~answer & (wrong < 0)
    p_no = 1.0 - all_right[plain]
    marginals[plain] = (probs[plain] - is_shown[plain] * all_right[plain, None, None]) / np.maximum(
        p_no, 1e-300
    )[:, None, None]
    marginals[plain] = np.where(inside[plain][:, :, None], np.maximum(marginals[plain], 0.0), 0.0)
    log_z[plain] = safe_log(p_no)
    # No with the first wrong word t.
    tapped = ~answer & (wrong >= 0)
    t = wrong[tapped][:, None]
    before, at = position < t, position == t
    p_t = np.take_along_axis(p_shown[tapped], np.maximum(t, 0), 1)[:, 0]
    excluded = probs[tapped] * ~is_shown[tapped] / np.maximum(1.0 - p_t, 1e-300)[:, None, None]
    marginals[tapped] = np.where(
        before[:, :, None], is_shown[tapped], np.where(at[:, :, None], excluded, marginals[tapped])
    )
    log_z[tapped] = np.where(before, log_shown[tapped], 0.0).sum(axis=1) + safe_log(1.0 - p_t)
    feasible = np.isfinite(log_z) & (log_z > -690.0)
    marginals[~feasible] = 0.0
    log_z[~feasible] = -np.inf
    return WindowPosteriors(marginals=marginals, log_z=log_z, feasible=feasible)


@dataclass(frozen=True)
class VerificationEvidence:
    """Verification answers placed on tokens (as :class:`.counts.CountEvidence`)."""

    answers: VerificationAnswers
    windows: np.ndarray

    def posteriors(self, cavity: np.ndarray, rows: np.ndarray, floor: float) -> WindowPosteriors:
        a = self.answers
        width = cavity.shape[1]
        return verification_posteriors(
            cavity, a.shown[rows, :width], a.answer[rows], a.wrong[rows], floor=floor
        )

    def probability_yes(self, token_probs: np.ndarray) -> np.ndarray:
        """The model's ``P(Yes)`` of every answer's window (the shown tags all right)."""
        return probability_all_right(
            token_probs, self.windows, self.answers.shown[:, : self.windows.shape[1]]
        )


def probability_all_right(
    token_probs: np.ndarray, windows: np.ndarray, shown: np.ndarray
) -> np.ndarray:
    """``P(Yes)`` of each window: the product over its tokens ``windows`` (rows of
    ``token_probs``, −1 past the window's end) of the probability of the ``shown`` tag."""
    inside = windows >= 0
    p = token_probs[np.maximum(windows, 0), np.maximum(shown, 0)]
    return np.exp(np.where(inside, safe_log(p), 0.0).sum(axis=1))


def log_sure_by_start(token_probs: np.ndarray, width: int) -> np.ndarray:
    """``log P(every tag right)`` of the model's most likely tags in each window of ``width``
    tokens of one sentence (``token_probs``: its tokens' probabilities), by window start: where
    the model is least sure is where a verification teaches most."""
    log_sure = safe_log(token_probs.max(axis=1))
    cumulative = np.concatenate([[0.0], np.cumsum(log_sure)])
    return cumulative[width:] - cumulative[:-width]


def verification_reliability(
    annotator: np.ndarray,
    answer: np.ndarray,
    probability_yes: np.ndarray,
    *,
    flag_threshold: float = 0.5,
    min_observations: int = 10,
    z: float = 2.0,
) -> dict[int, dict]:
    """Per annotator (module docstring): ``{id: {n_observations, skill, yes_rate, flagged}}``.
    An annotator whose windows' ``μ`` hardly vary cannot be judged: skill is None, no flag.
    Flagged: over at least ``min_observations`` answers, skill below ``flag_threshold`` times
    the crowd's reference skill, and below the reference by more than ``z`` standard errors."""
    annotators, which = np.unique(annotator, return_inverse=True)
    which = which.ravel()
    m = annotators.shape[0]
    mu = np.asarray(probability_yes, dtype=np.float64)
    yes = np.asarray(answer, dtype=np.float64)
    n = np.bincount(which, minlength=m)
    mean_mu = np.bincount(which, mu, m) / np.maximum(n, 1)
    rate = np.bincount(which, yes, m) / np.maximum(n, 1)
    centred = mu - mean_mu[which]
    spread = np.bincount(which, centred**2, m)
    covariance = np.bincount(which, centred * (yes - rate[which]), m)
    judged = spread > 1e-3 * np.maximum(n, 1)  # Var(μ) of at least 0.001
    skill = np.where(judged, covariance / np.where(judged, spread, 1.0), np.nan)
    enough = judged & (n >= min_observations)
    reference = float(np.clip(np.percentile(skill[enough], 75), 0.0, 1.0)) if enough.any() else 1.0
    # The slope's standard error were the annotator to answer like the crowd.
    like_crowd = np.clip(rate[which] + reference * centred, 0.01, 0.99)
    variance = np.bincount(which, centred**2 * like_crowd * (1.0 - like_crowd), m)
    error = np.sqrt(variance) / np.where(judged, spread, 1.0)
    flagged = enough & (skill < flag_threshold * reference) & (reference - skill > z * error)
    return {
        int(k): {
            "n_observations": int(c),
            "skill": None if np.isnan(j) else float(j),
            "yes_rate": float(r),
            "flagged": bool(f),
        }
        for k, c, j, r, f in zip(annotators, n, skill, rate, flagged, strict=True)
    }
