"""EM refinement with exact count posteriors.

E-step. Tokens are variables with model priors ``p_j = p_θ(· | x_j)``; each observation ``i`` is a
factor on the tokens of its window. For one observation the exact posterior comes from
:func:`.posterior.window_posteriors`. When windows overlap (several observations per sentence),
the evidence is combined by loopy belief propagation: observation ``i`` sends token ``j`` the
message ``m_ij = q_ij / c_ij``, where ``c_ij ∝ p_j Π_{i'≠i} m_{i'j}^{ω_{i'}}`` is the cavity
prior it was run with and ``q_ij`` its exact posterior; the token's belief is
``b_j ∝ p_j Π_i m_ij^{ω_i}``. The reliability weight ``ω_i ∈ [0, 1]`` tempers the evidence of
doubtful annotators (ω = 0: ignored). With non-overlapping windows one round is the exact E-step;
with overlapping windows one round treats each window's evidence as independent (a composite
likelihood, the pipeline's default — further loopy rounds over-counted evidence on real data).

M-step. The tagger is refitted (warm-started) to the beliefs of covered tokens, aggregated per
word type: ``Q[a, b] = Σ_{j : x_j = a} ρ_j b_j(b)`` with ``ρ_j`` the largest weight among the
windows covering token ``j``; this maximizes the expected complete log-likelihood.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .design import Corpus
from .observations import Observations
from .posterior import window_posteriors

__all__ = ["EStepResult", "window_token_index", "expected_labels", "aggregate_by_type"]

_CHUNK = 32768
_LOG_FLOOR = -30.0  # messages are clipped at e^-30: "impossible" without -inf arithmetic


@dataclass(frozen=True)
class EStepResult:
    """``beliefs`` (n_tokens, K) for every flat token (zero rows where uncovered);
    ``token_weight`` (n_tokens,) ρ_j; ``log_z`` (n_obs,) log P(N_i | x) under the cavity priors of
    the last round; ``feasible`` (n_obs,)."""

    beliefs: np.ndarray
    token_weight: np.ndarray
    log_z: np.ndarray
    feasible: np.ndarray


def window_token_index(corpus: Corpus, observations: Observations) -> np.ndarray:
    """(n_obs, w_max) flat token index of each window position, −1 past the window's end."""
    w_max = int(observations.length.max()) if len(observations) else 0
    positions = np.arange(w_max)[None, :]
    first = corpus.offsets[observations.sentence] + observations.start
    index = first[:, None] + positions
    return np.where(positions < observations.length[:, None], index, -1)


def expected_labels(
    token_probs: np.ndarray,
    window_tokens: np.ndarray,
    observations: Observations,
    weights: np.ndarray,
    *,
    n_rounds: int = 1,
    floor: float = 1e-6,
) -> EStepResult:
    """The E-step above. ``token_probs`` (n_tokens, K): model priors of every flat token;
    ``window_tokens`` from :func:`window_token_index`; ``weights`` (n_obs,) ω."""
    n_tokens, n_tags = token_probs.shape
    n_obs, w_max = window_tokens.shape
    active = np.asarray(weights) > 0
    inside = window_tokens >= 0
    safe_tokens = np.where(inside, window_tokens, 0)
    log_prior = np.log(np.maximum(token_probs, 1e-300))
    omega = np.where(active, weights, 0.0)[:, None, None]

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
            messages, log_z[chunk], feasible[chunk] = _messages(
                cavity, observations, chunk, inside[chunk], active[chunk], floor
            )
            ok = inside[chunk]
            np.add.at(log_belief, window_tokens[chunk][ok], (omega[chunk] * messages)[ok])
    else:
        messages = np.zeros((n_obs, w_max, n_tags))
        everything = np.arange(n_obs)
        for _ in range(rounds):
            log_belief = _log_beliefs(log_prior, window_tokens, inside, omega, messages)
            log_cavity = log_belief[safe_tokens] - omega * messages
            cavity = np.exp(log_cavity - log_cavity.max(axis=2, keepdims=True))
            cavity /= cavity.sum(axis=2, keepdims=True)
            messages, log_z, feasible = _messages(
                cavity, observations, everything, inside, active, floor
            )
        log_belief = _log_beliefs(log_prior, window_tokens, inside, omega, messages)
    beliefs = np.exp(log_belief - log_belief.max(axis=1, keepdims=True))
    beliefs /= beliefs.sum(axis=1, keepdims=True)

    token_weight = np.zeros(n_tokens)
    ok = inside & (feasible & active)[:, None]
    np.maximum.at(
        token_weight, window_tokens[ok], np.broadcast_to(np.asarray(weights)[:, None], ok.shape)[ok]
    )
    beliefs[token_weight == 0] = 0.0
    return EStepResult(beliefs=beliefs, token_weight=token_weight, log_z=log_z, feasible=feasible)


def _messages(cavity, observations, rows, inside, active, floor):
    """Log messages ``log q − log cavity`` (clipped, max-normalised) of observations ``rows``."""
    result = window_posteriors(
        cavity,
        observations.length[rows],
        observations.tag_mask[rows],
        observations.counts[rows],
        floor=floor,
    )
    new = np.log(np.maximum(result.marginals, 1e-300)) - np.log(np.maximum(cavity, 1e-300))
    new = np.maximum(new, _LOG_FLOOR)
    new -= new.max(axis=2, keepdims=True)
    usable = (result.feasible & active)[:, None, None] & inside[:, :, None]
    return np.where(usable, new, 0.0), result.log_z, result.feasible


def _log_beliefs(log_prior, window_tokens, inside, omega, messages):
    log_belief = log_prior.copy()
    contribution = (omega * messages)[inside]
    np.add.at(log_belief, window_tokens[inside], contribution)
    return log_belief


def aggregate_by_type(
    type_ids: np.ndarray, n_types: int, labels: np.ndarray, token_weight: np.ndarray
) -> np.ndarray:
    """``Q[a, b] = Σ_{j : type_ids[j] = a} token_weight[j] · labels[j, b]`` (n_types, K)."""
    n_tags = labels.shape[1]
    weighted = labels * token_weight[:, None]
    keep = token_weight > 0
    q = np.zeros((n_types, n_tags))
    for b in range(n_tags):
        q[:, b] = np.bincount(type_ids[keep], weights=weighted[keep, b], minlength=n_types)
    return q
