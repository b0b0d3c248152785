"""Calibrated token probabilities: temperature scaling, fitted with or without gold tags.

A temperature ``T`` turns token marginals ``p`` into ``q_T ∝ p^{1/T}`` (the softmax of the
scores divided by ``T``): it keeps each token's argmax and moves the confidence only. The
probabilities mean what they say when the confidence matches the accuracy; the **expected
calibration error** measures the gap: tokens binned by the confidence of their top tag,
``ECE = Σ_bins (n_bin / n) |accuracy_bin − mean confidence_bin|``.

``T`` is fitted by maximum likelihood with ``β = 1/T``:

- **from gold tags** (:func:`fit_temperature_gold`): ``Σ_t log q_T(gold_t)``, the usual
  temperature scaling (Guo et al., 2017);
- **from count answers** (:func:`fit_temperature_answers`), without gold: the exact marginal
  likelihood ``Σ_i ω_i log P_T(N_i | x)`` of held-out answers under the tempered marginals of
  their windows' tokens, by the count dynamic program (:mod:`.posterior`). Its derivative is
  exact too: ``∂ log P_T(N | x) / ∂β = Σ_j Σ_k (γ_jk − q_jk) log p_jk`` with ``γ`` the posterior
  marginals of the window given its counts.
- **from the answers' posterior tags** (:func:`fit_temperatures_posterior`, what a fit
  serves): the gold fit to the soft tags ``γ`` of the held-out windows given their counts under
  the untempered marginals, one EM step of the likelihood from ``T = 1``, which keeps ``T`` at 1
  where the counts cannot tell a token's tag.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from scipy.optimize import minimize_scalar

from .posterior import WindowPosteriors

__all__ = [
    "MIN_GOLD_TOKENS",
    "TEMPERATURE_BOUNDS",
    "answers_log_likelihood",
    "expected_calibration_error",
    "fit_temperature_answers",
    "fit_temperature_gold",
    "fit_temperatures_posterior",
    "gold_calibrates",
    "gold_calibration",
    "tempered",
    "tempered_groups",
]

TEMPERATURE_BOUNDS = (0.2, 10.0)  # beyond, the answers or the model are broken, not shy
_LOG_P_FLOOR = -700.0  # log of a probability that underflowed to 0


def tempered(probs: np.ndarray, temperature: float) -> np.ndarray:
    """``probs ** (1 / temperature)`` renormalised over the last axis, in log space (rows of
    zeros, e.g. padding past a window's end, stay zero)."""
    probs = np.asarray(probs, dtype=np.float64)
    if temperature == 1.0:
        return probs.copy()
    with np.errstate(divide="ignore"):
        scaled = np.maximum(np.log(probs), _LOG_P_FLOOR) / temperature
    scaled -= scaled.max(axis=-1, keepdims=True)
    out = np.exp(scaled)
    out /= out.sum(axis=-1, keepdims=True)
    return np.where(probs.sum(axis=-1, keepdims=True) > 0, out, 0.0)


def tempered_groups(probs: np.ndarray, groups: np.ndarray, temperatures) -> np.ndarray:
    """``probs`` (…, K) tempered row by row, each by ``temperatures[groups[…]]``."""
    probs = np.asarray(probs, dtype=np.float64)
    out = np.empty_like(probs)
    for g, temperature in enumerate(temperatures):
        mine = groups == g
        out[mine] = tempered(probs[mine], float(temperature))
    return out


def expected_calibration_error(probs: np.ndarray, gold: np.ndarray, n_bins: int = 15) -> float:
    """Top-label ECE (a fraction) of token marginals ``probs`` (n, K) against gold tag indices,
    with ``n_bins`` equal-width confidence bins."""
    probs = np.asarray(probs)
    gold = np.asarray(gold, dtype=np.int64)
    if gold.size == 0:
        raise ValueError("no tokens to score")
    confidence = probs.max(axis=1)
    right = probs.argmax(axis=1) == gold
    bins = np.minimum((confidence * n_bins).astype(np.int64), n_bins - 1)
    gap = np.bincount(bins, weights=right - confidence, minlength=n_bins)
    return float(np.abs(gap).sum() / gold.size)


def fit_temperature_gold(probs: np.ndarray, gold: np.ndarray) -> float:
    """The temperature maximising the log-likelihood of the gold tag indices ``gold``."""
    probs = np.asarray(probs, dtype=np.float64)
    gold = np.asarray(gold, dtype=np.int64)
    if gold.size == 0:
        raise ValueError("no tokens to calibrate on")
    rows = np.arange(gold.size)

    def loss(log_t: float) -> float:
        return -float(np.log(np.maximum(tempered(probs, np.exp(log_t))[rows, gold], 1e-300)).sum())

    return _minimise_log_temperature(loss)


def answers_log_likelihood(
    beta: float,
    window_probs: np.ndarray,
    posteriors: Callable[[np.ndarray], WindowPosteriors],
    weights: np.ndarray,
) -> tuple[float, float]:
    """``(Σ_i ω_i log P(N_i | x), its derivative in β)`` under the marginals ``window_probs``
    (n, w_max, K; zero rows past a window's end) tempered to ``p^β``; ``posteriors(q)`` returns
    the exact count posteriors of the windows under token priors ``q``. Answers that cannot be
    realised, or weigh 0, are left out."""
    with np.errstate(divide="ignore"):
        log_p = np.maximum(np.log(window_probs), _LOG_P_FLOOR)
    q = tempered(window_probs, 1.0 / beta)
    result = posteriors(q)
    used = result.feasible & (weights > 0) & np.isfinite(result.log_z)
    w = np.where(used, weights, 0.0)
    value = float((w[used] * result.log_z[used]).sum())
    inside = (window_probs.sum(axis=2) > 0)[:, :, None]
    per_window = np.where(inside, (result.marginals - q) * log_p, 0.0).sum(axis=(1, 2))
    return value, float((w[used] * per_window[used]).sum())


def fit_temperature_answers(
    window_probs: np.ndarray,
    posteriors: Callable[[np.ndarray], WindowPosteriors],
    weights: np.ndarray | None = None,
) -> float:
    """The temperature maximising the held-out answers' weighted marginal log-likelihood (see
    :func:`answers_log_likelihood`)."""
    window_probs = np.asarray(window_probs, dtype=np.float64)
    if window_probs.shape[0] == 0:
        raise ValueError("no answers to calibrate on")
    weights = np.ones(window_probs.shape[0]) if weights is None else np.asarray(weights)

    def loss(log_t: float) -> float:
        value, _ = answers_log_likelihood(np.exp(-log_t), window_probs, posteriors, weights)
        return -value

    return _minimise_log_temperature(loss)


def fit_temperatures_posterior(
    window_probs: np.ndarray,
    window_groups: np.ndarray,
    posteriors: Callable[[np.ndarray], WindowPosteriors],
    weights: np.ndarray | None = None,
    n_groups: int = 2,
) -> tuple[float, ...]:
    """One temperature per group of tokens (``window_groups``: (n, w_max) group of each window
    position) fitted to the answers' posterior tags instead of their likelihood: with ``γ`` the
    exact posterior marginals of each window given its counts under the untempered marginals
    ``p`` (one call of ``posteriors``), each group's ``T`` maximises
    ``Σ_i ω_i Σ_j Σ_k γ_ijk log q_T,ijk``, a gold fit (:func:`fit_temperature_gold`) to soft tags.

    Where the counts pin a token's tag, ``γ`` is its gold tag; where they cannot tell (a tag
    outside the asked subset among the others, two tokens whose tags could swap), ``γ`` is the
    prior ``p`` itself, whose cross-entropy is least at ``T = 1``: the fit leaves the
    probabilities alone in proportion to what the answers do not say. It is the first EM step
    of the answers' likelihood (:func:`answers_log_likelihood`, one temperature per group) from
    ``T = 1``; the likelihood's own optimum would
    calibrate the events the answers see (is this token one of the asked tags?), which with
    tag subsets are far easier than the top tag, and sharpens too much
    (docs/learning-notes.md, "Calibration from the answers' posterior"). A group absent from
    the windows keeps the others' joint temperature."""
    window_probs = np.asarray(window_probs, dtype=np.float64)
    if window_probs.shape[0] == 0:
        raise ValueError("no answers to calibrate on")
    weights = np.ones(window_probs.shape[0]) if weights is None else np.asarray(weights)
    result = posteriors(window_probs)
    used = result.feasible & (weights > 0) & np.isfinite(result.log_z)
    soft = result.marginals * np.where(used, weights, 0.0)[:, None, None]
    inside = window_probs.sum(axis=2) > 0
    with np.errstate(divide="ignore"):
        log_p = np.maximum(np.log(window_probs), _LOG_P_FLOOR)

    def fit(mine: np.ndarray) -> float:
        targets, scores = soft[mine], log_p[mine]
        keep = targets.sum(axis=1) > 0
        targets, scores = targets[keep], scores[keep]

        def loss(log_t: float) -> float:
            scaled = scores / np.exp(log_t)
            scaled -= scaled.max(axis=1, keepdims=True)
            log_q = scaled - np.log(np.exp(scaled).sum(axis=1, keepdims=True))
            return -float((targets * log_q).sum())

        return _minimise_log_temperature(loss) if targets.size else 1.0

    joint = fit(inside)
    return tuple(
        fit(inside & (window_groups == g)) if (inside & (window_groups == g)).any() else joint
        for g in range(n_groups)
    )


def _minimise_log_temperature(loss: Callable[[float], float]) -> float:
    """One-dimensional: bounded Brent on ``log T`` (the likelihood is smooth and unimodal in
    practice; no gradient needed)."""
    low, high = np.log(TEMPERATURE_BOUNDS)
    result = minimize_scalar(loss, bounds=(low, high), method="bounded", options={"xatol": 1e-4})
    return float(np.exp(result.x))


MIN_GOLD_TOKENS = 200


def gold_calibrates(sentences: Sequence[Sequence[str]]) -> bool:
    """Whether ``sentences`` hold enough gold tokens for :func:`gold_calibration`."""
    return sum(len(sentence) for sentence in sentences) >= MIN_GOLD_TOKENS


def gold_calibration(
    tagger,
    sentences: Sequence[Sequence[str]],
    tags: Sequence[Sequence[str]],
    raw: np.ndarray | None = None,
):
    """Temperatures of ``tagger`` fitted to gold ``sentences`` (one for the words its answers
    covered, one for the others: the gold log-likelihood separates by token, so each is its own
    one-dimensional fit), or None with fewer than ``MIN_GOLD_TOKENS`` tokens. Also the expected
    calibration error on those sentences at the tagger's own temperatures (``ece_before``) and
    at gold temperatures fitted on the other half of the sentences (``ece_after``: the report
    is then not scored on what was fitted to it). ``raw``: the tokens' uncalibrated
    probabilities, when already computed."""
    if not gold_calibrates(sentences):
        return None
    flat = [form for sentence in sentences for form in sentence]
    index = {tag: k for k, tag in enumerate(tagger.tagset_)}
    gold = np.array([index[t] for sentence in tags for t in sentence], dtype=np.int64)
    if raw is None:
        raw = tagger.token_proba(sentences, calibrated=False)
    groups = (~tagger.seen(flat)).astype(np.int64)
    half = np.repeat(np.arange(len(sentences)) % 2, [len(s) for s in sentences])

    def fit(mask):
        temperatures = []
        for g in (0, 1):
            mine = mask & (groups == g)
            both = mask if mine.sum() < MIN_GOLD_TOKENS // 4 else mine
            temperatures.append(fit_temperature_gold(raw[both], gold[both]))
        return temperatures

    crossed = np.empty_like(raw)
    for h in (0, 1):
        other = fit(half != h)
        mine = half == h
        crossed[mine] = tempered_groups(raw[mine], groups[mine], other)
    temperature, unseen = fit(np.ones(gold.size, dtype=bool))
    return {
        "source": "gold",
        "temperature": temperature,
        "unseen_temperature": unseen,
        "ece_before": expected_calibration_error(tagger.calibrated(raw, flat), gold),
        "ece_after": expected_calibration_error(crossed, gold),
        "tokens": int(gold.size),
    }
