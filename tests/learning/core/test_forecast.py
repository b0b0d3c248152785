import math

import numpy as np
import pytest

from learning.core.forecast import Forecast, LearningCurve

ANSWERS = np.array([1000, 1500, 2000, 3000, 4000, 6000, 8000], dtype=float)


def _accuracy(n, a=0.06, b=0.10, c=0.5):
    """A known curve: loss 0.06 + 0.10·(n/1000)^−0.5, accuracy 1 − loss."""
    return 1.0 - (a + b * (np.asarray(n, dtype=float) / 1000) ** -c)


def test_recovers_a_known_curve_as_points_grow():
    with np.errstate(invalid="raise"):
        model = LearningCurve(random_state=0, asymptote_scale=None).fit(ANSWERS, _accuracy(ANSWERS))
    a, b, c = model.params_
    assert a == pytest.approx(0.06, abs=1e-4)
    assert c == pytest.approx(0.5, rel=1e-3)
    assert b == pytest.approx(0.10 * (model.n_ref_ / 1000) ** -0.5, rel=1e-3)  # b at n_ref
    for n in (10000, 16000, 32000):
        forecast = model.predict(n)
        assert forecast.value == pytest.approx(_accuracy(n), abs=2e-3)
        assert forecast.low <= _accuracy(n) <= forecast.high


def test_predictions_improve_with_more_points_of_a_noisy_curve():
    rng = np.random.default_rng(3)
    errors = {3: [], 7: []}
    for _ in range(40):
        observed = _accuracy(ANSWERS) + rng.normal(0, 0.003, len(ANSWERS))
        for k in errors:
            model = LearningCurve(random_state=0, n_draws=500).fit(ANSWERS[:k], observed[:k])
            errors[k].append(abs(model.predict(16000).value - _accuracy(16000)))
    assert np.mean(errors[7]) < 0.6 * np.mean(errors[3])
    assert np.mean(errors[7]) < 0.01


def test_interval_widens_with_fewer_points():
    observed = _accuracy(ANSWERS) + np.random.default_rng(0).normal(0, 0.003, len(ANSWERS))
    widths = []
    for k in (7, 5, 3, 2):
        forecast = LearningCurve(random_state=0).fit(ANSWERS[:k], observed[:k]).predict(16000)
        assert forecast.low <= forecast.value <= forecast.high
        widths.append(forecast.high - forecast.low)
    assert all(np.diff(widths) > 0), widths
    assert math.isfinite(widths[-1])


def test_interval_widens_with_a_smaller_evaluation_set():
    observed = _accuracy(ANSWERS[:4])
    widths = []
    for n_eval in (100_000, 2000, 200):
        model = LearningCurve(random_state=0).fit(ANSWERS[:4], observed, n_eval=n_eval)
        widths.append(model.predict(16000).high - model.predict(16000).low)
    assert widths[0] < widths[1] < widths[2]


def test_evaluation_noise_adds_to_the_retrains():
    """Two independent sources: an evaluation set whose binomial noise equals the retrain's
    noise widens σ by √2 (a version's accuracy moves with both)."""
    observed = _accuracy(ANSWERS[:4])  # on the curve: σ is its floor, pooled
    loss = 1.0 - observed[-1]
    n_eval = round(loss * (1 - loss) / 0.003**2)
    curve = dict(random_state=0, min_noise=0.003, answer_noise=0.0)
    alone = LearningCurve(**curve).fit(ANSWERS[:4], observed)
    both = LearningCurve(**curve).fit(ANSWERS[:4], observed, n_eval=n_eval)
    assert both.noise_ / alone.noise_ == pytest.approx(math.sqrt(2), rel=0.01)


def test_a_project_of_fewer_answers_gets_a_wider_interval():
    """The same accuracies reached on a tenth of the answers: each version learnt from fewer
    answers moves more from one retrain to the next, so the forecast is less sure."""
    observed = _accuracy(ANSWERS[:4])
    widths = []
    for scale in (100.0, 1.0, 0.1):
        answers = ANSWERS[:4] * scale
        forecast = LearningCurve(random_state=0).fit(answers, observed).predict(4 * answers[-1])
        widths.append(forecast.high - forecast.low)
    assert widths[0] < widths[1] < widths[2]
    assert widths[2] > 2 * widths[0]


@pytest.mark.parametrize(
    "draw_asymptote, asymptote_scale",
    [
        (lambda rng: abs(rng.normal(0, 0.02)), "auto"),  # curves as the default prior sees them
        (lambda rng: rng.uniform(0.02, 0.15), None),  # any asymptote, flat prior
    ],
)
def test_coverage_on_random_curves_is_near_the_level(draw_asymptote, asymptote_scale):
    """Random curves, four versions from 1000 to 4000 answers, forecast at 16000: the interval
    holds the next version's accuracy about as often as it says."""
    rng = np.random.default_rng(1)
    hits, trials = 0, 150
    for trial in range(trials):
        a, b, c = draw_asymptote(rng), rng.uniform(0.03, 0.2), rng.uniform(0.2, 1.0)
        n = np.geomspace(1000, 4000, 4)
        observed = _accuracy(n, a, b, c) + rng.normal(0, 0.003, len(n))
        truth = _accuracy(16000, a, b, c) + rng.normal(0, 0.003)
        model = LearningCurve(random_state=trial, n_draws=500, asymptote_scale=asymptote_scale)
        forecast = model.fit(n, observed).predict(16000)
        hits += forecast.low <= truth <= forecast.high
    assert 0.72 <= hits / trials <= 0.95


def test_answers_for_inverts_predict():
    observed = _accuracy(ANSWERS[:5]) + np.random.default_rng(2).normal(0, 0.003, 5)
    model = LearningCurve(random_state=0).fit(ANSWERS[:5], observed)
    for n in (5000, 12000, 30000):
        needed = model.answers_for(model.predict(n).value)
        assert needed.value == pytest.approx(n, rel=0.02)
        assert needed.low < n < needed.high


def test_answers_for_a_target_the_curve_never_reaches_is_none():
    model = LearningCurve(random_state=0, asymptote_scale=None).fit(ANSWERS, _accuracy(ANSWERS))
    assert model.answers_for(0.99) is None  # the curve tends to 94 %
    reached = model.answers_for(0.90)
    assert reached.value == pytest.approx(1000 * (0.04 / 0.10) ** -2, rel=0.02)
    assert reached.low <= reached.value <= reached.high


def test_a_falling_loss_such_as_the_count_error():
    error = 0.2 + 0.5 * (ANSWERS / 1000) ** -0.7
    model = LearningCurve(higher_is_better=False, random_state=0).fit(ANSWERS, error)
    forecast = model.predict(16000)
    assert forecast.value == pytest.approx(0.2 + 0.5 * 16**-0.7, abs=2e-3)
    assert forecast.low <= forecast.value <= forecast.high
    needed = model.answers_for(0.3)
    assert needed.value == pytest.approx(1000 * (0.1 / 0.5) ** (-1 / 0.7), rel=0.02)
    assert model.answers_for(0.1) is None


def test_two_versions_give_a_wide_finite_interval_and_one_is_refused():
    forecast = LearningCurve(random_state=0).fit([1000, 2000], [0.85, 0.88]).predict(8000)
    assert isinstance(forecast, Forecast)
    assert 0.88 < forecast.value < 1.0
    assert forecast.high - forecast.low > 0.015
    assert math.isfinite(forecast.low) and math.isfinite(forecast.high)
    with pytest.raises(ValueError, match="two or more answer counts"):
        LearningCurve().fit([1000, 1000], [0.85, 0.86])


@pytest.mark.parametrize(
    "answers, metric, message",
    [
        ([1000, 2000], [0.8], "same length"),
        ([0, 2000], [0.8, 0.9], "at least one answer"),
        ([1000, 2000], [80, 90], "fraction between 0 and 1"),
        ([1000, float("nan")], [0.8, 0.9], "finite"),
    ],
)
def test_bad_input_is_refused_with_its_reason(answers, metric, message):
    with pytest.raises(ValueError, match=message):
        LearningCurve().fit(answers, metric)


def test_fit_is_seeded_and_leaves_its_inputs_alone():
    answers, observed = ANSWERS[:4].copy(), _accuracy(ANSWERS[:4])
    original = observed.copy()
    first = LearningCurve(random_state=5).fit(answers, observed).predict(16000)
    second = LearningCurve(random_state=5).fit(answers, observed).predict(16000)
    assert first == second
    np.testing.assert_array_equal(observed, original)
