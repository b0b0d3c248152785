"""The E-step of EM with exact window posteriors, for any kind of evidence.

Tokens are variables with model priors ``p_j = p_θ(· | x, j)``; each observation ``i`` is a
factor on the tokens of its window, whose exact posterior its evidence kind computes (counts:
:class:`.counts.CountEvidence`). When windows overlap (several observations per sentence), the
evidence is combined by loopy belief propagation: observation ``i`` sends token ``j`` the
message ``m_ij = q_ij / c_ij``, where ``c_ij ∝ p_j Π_{i'≠i} m_{i'j}^{ω_{i'}}`` is the cavity
prior it was run with and ``q_ij`` its exact posterior; the token's belief is
``b_j ∝ p_j Π_i m_ij^{ω_i}``. The reliability weight ``ω_i ∈ [0, 1]`` tempers the evidence of
doubtful annotators (ω = 0: ignored). With non-overlapping windows one round is the exact
E-step; with overlapping windows one round treats each window's evidence as independent (a
composite likelihood, the pipeline's default — further loopy rounds over-counted evidence on
real data).

The M-step (in :mod:`.pipeline`) refits the tagger to the beliefs of covered tokens, each token
weighted by ``ρ_j``, the largest weight among the windows covering it; this maximizes the
expected complete log-likelihood.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from .design import Corpus
from .observations import Observations
from .posterior import WindowPosteriors
from .softmax import safe_log

__all__ = ["EStepResult", "Evidence", "window_token_index", "expected_labels"]

_CHUNK = 32768
_LOG_FLOOR = -30.0  # messages are clipped at e^-30: "impossible" without -inf arithmetic


class Evidence(Protocol):
    """A kind of observation, placed on tokens (see :class:`.counts.CountEvidence`)."""

    windows: np.ndarray  # (n, w_max) token rows, −1 past each window's end

    def posteriors(
        self, cavity: np.ndarray, rows: np.ndarray, floor: float
    ) -> WindowPosteriors: ...


@dataclass(frozen=True)
class EStepResult:
    """``beliefs`` (n_tokens, K) for every token (zero rows where uncovered); ``token_weight``
    (n_tokens,) ρ_j; ``log_z`` and ``feasible``: one array per evidence, ``log P(answer | x)``
    under the cavity priors of the last round, and whether the answer is possible at all."""

    beliefs: np.ndarray
    token_weight: np.ndarray
    log_z: list[np.ndarray]
    feasible: list[np.ndarray]


def window_token_index(corpus: Corpus, observations: Observations) -> np.ndarray:
    """(n_obs, w_max) flat token index of each window position, −1 past the window's end."""
    w_max = int(observations.length.max()) if len(observations) else 0
    positions = np.arange(w_max)[None, :]
    first = corpus.offsets[observations.sentence] + observations.start
    index = first[:, None] + positions
    return np.where(positions < observations.length[:, None], index, -1)


def expected_labels(
    token_probs: np.ndarray,
    evidence: Sequence[Evidence],
    weights: Sequence[np.ndarray],
    *,
    n_rounds: int = 1,
    floor: float = 1e-6,
) -> EStepResult:
    """The E-step above. ``token_probs`` (n_tokens, K): model priors; ``evidence``: observations
    of one or more kinds whose windows index ``token_probs``' rows; ``weights``: ω per
    observation, one array per evidence."""
    n_tokens, n_tags = token_probs.shape
    sizes = [e.windows.shape[0] for e in evidence]
    w_max = max([e.windows.shape[1] for e in evidence] + [1])
    window_tokens = np.full((sum(sizes), w_max), -1, dtype=np.int64)
    kind = np.repeat(np.arange(len(evidence)), sizes)
    bounds = np.concatenate([[0], np.cumsum(sizes)])
    for k, e in enumerate(evidence):
        window_tokens[bounds[k] : bounds[k + 1], : e.windows.shape[1]] = e.windows
    all_weights = np.concatenate([np.asarray(w, dtype=np.float64) for w in weights] + [[]])
    n_obs = window_tokens.shape[0]
    active = all_weights > 0
    inside = window_tokens >= 0
    safe_tokens = np.where(inside, window_tokens, 0)
    log_prior = safe_log(token_probs)
    omega = np.where(active, all_weights, 0.0)[:, None, None]

    def messages(cavity, rows):
        """Log messages ``log q − log cavity`` (clipped, max-normalised) of observations
        ``rows``, each computed by its own evidence."""
        out = np.zeros(cavity.shape)
        log_z = np.full(rows.shape[0], -np.inf)
        feasible = np.zeros(rows.shape[0], dtype=bool)
        for k, e in enumerate(evidence):
            mine = np.flatnonzero(kind[rows] == k)
            if mine.size == 0:
                continue
            width = e.windows.shape[1]
            result = e.posteriors(cavity[mine, :width], rows[mine] - bounds[k], floor)
            new = safe_log(result.marginals) - safe_log(cavity[mine, :width])
            new = np.maximum(new, _LOG_FLOOR)
            new -= new.max(axis=2, keepdims=True)
            usable = (result.feasible & active[rows[mine]])[:, None, None] & inside[
                rows[mine], :width, None
            ]
            out[mine, :width] = np.where(usable, new, 0.0)
            log_z[mine] = result.log_z
            feasible[mine] = result.feasible
        return out, log_z, feasible

    covered_by = np.bincount(window_tokens[inside & active[:, None]], minlength=n_tokens)
    rounds = n_rounds if (covered_by > 1).any() else 1
    log_z = np.full(n_obs, -np.inf)
    feasible = np.zeros(n_obs, dtype=bool)
    if rounds == 1:
        # Every message is computed with the plain prior as cavity: observations are
        # independent, so process them in chunks to bound memory.
        log_belief = log_prior.copy()
        for chunk in np.array_split(np.arange(n_obs), max(1, -(-n_obs // _CHUNK))):
            cavity = token_probs[safe_tokens[chunk]]
            message, log_z[chunk], feasible[chunk] = messages(cavity, chunk)
            ok = inside[chunk]
            np.add.at(log_belief, window_tokens[chunk][ok], (omega[chunk] * message)[ok])
    else:
        message = np.zeros((n_obs, w_max, n_tags))
        everything = np.arange(n_obs)
        for _ in range(rounds):
            log_belief = _log_beliefs(log_prior, window_tokens, inside, omega, message)
            log_cavity = log_belief[safe_tokens] - omega * message
            cavity = np.exp(log_cavity - log_cavity.max(axis=2, keepdims=True))
            cavity /= cavity.sum(axis=2, keepdims=True)
            message, log_z, feasible = messages(cavity, everything)
        log_belief = _log_beliefs(log_prior, window_tokens, inside, omega, message)
    beliefs = np.exp(log_belief - log_belief.max(axis=1, keepdims=True))
    beliefs /= beliefs.sum(axis=1, keepdims=True)

    token_weight = np.zeros(n_tokens)
    ok = inside & (feasible & active)[:, None]
    np.maximum.at(
        token_weight, window_tokens[ok], np.broadcast_to(all_weights[:, None], ok.shape)[ok]
    )
    beliefs[token_weight == 0] = 0.0
    return EStepResult(
        beliefs=beliefs,
        token_weight=token_weight,
        log_z=[log_z[bounds[k] : bounds[k + 1]] for k in range(len(evidence))],
        feasible=[feasible[bounds[k] : bounds[k + 1]] for k in range(len(evidence))],
    )


def _log_beliefs(log_prior, window_tokens, inside, omega, messages):
    log_belief = log_prior.copy()
    contribution = (omega * messages)[inside]
    np.add.at(log_belief, window_tokens[inside], contribution)
    return log_belief
