"""Reads: what more answers buy, forecast from a project's own model versions.

The learning curve (accuracy on the evaluation sentences, or without them the label-free count
error) is fitted by :class:`learning.core.forecast.LearningCurve` to every version on the
dashboard's curve; the forecast is for the answers ahead (+25 % and +100 % of the newest
version's) and, for a target the manager types, the answers needed to reach it.
"""

from __future__ import annotations

import math

from common.exceptions import InvalidInput
from learning import selectors
from learning.core.forecast import Forecast, LearningCurve
from learning.models import AccuracyReport

FORECAST_AHEAD = (0.25, 1.0)  # more answers, as a share of the newest version's
FORECAST_LEVEL = 0.8
NOT_ENOUGH_VERSIONS = "A forecast needs model versions trained on two or more answer counts."


def forecast_target_parse(raw: str | None) -> float | None:
    """The `target` query parameter: an accuracy (a fraction, 0.95) or a count error (≥ 0)."""
    if raw is None or raw == "":
        return None
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise InvalidInput(
            "The target must be a number: an accuracy as a fraction (0.95 for 95 %), or a count "
            "error of 0 or more.",
            fields={"target": [f"Not a target: {raw[:20]!r}."]},
        )
    return value


def learning_forecast(
    *, project_id: int, curve: list[dict] | None = None, target: float | None = None
) -> dict:
    """The forecast shown under the learning curve (`curve`: `selectors.learning_curve`'s points,
    read here when not given). Raises `InvalidInput` for an accuracy target above 1."""
    points = selectors.learning_curve(project_id=project_id) if curve is None else curve
    evaluated = [p for p in points if p["accuracy"] is not None]
    metric = "accuracy" if evaluated else "count_consistency"
    if metric == "accuracy" and target is not None and target > 1:
        raise InvalidInput(
            "An accuracy target is a fraction between 0 and 1 (0.95 for 95 %).",
            fields={"target": [f"{target} is above 1."]},
        )
    used = evaluated or [p for p in points if p["count_consistency"] is not None]
    out = {
        "metric": metric,
        "level": FORECAST_LEVEL,
        "versions": len(used),
        "available": False,
        "reason": NOT_ENOUGH_VERSIONS,
        "ahead": [],
        "target": None,
    }
    answers = [p["observations"] for p in used if p["observations"] > 0]
    values = [p[metric] for p in used if p["observations"] > 0]
    if len(set(answers)) < 2:
        return out
    model = LearningCurve(
        higher_is_better=metric == "accuracy", level=FORECAST_LEVEL, random_state=0
    ).fit(answers, values, n_eval=_evaluated_tokens(project_id) if evaluated else None)
    newest = used[-1]["observations"]
    out.update(available=True, reason="")
    out["ahead"] = [
        {"more": more, "observations": round(newest * (1 + more)), **_interval(forecast)}
        for more in FORECAST_AHEAD
        for forecast in [model.predict(newest * (1 + more))]
    ]
    if target is not None:
        needed = model.answers_for(target)
        out["target"] = {
            "target": target,
            "reached": needed is not None,
            **(_interval(needed) if needed else {"value": None, "low": None, "high": None}),
        }
    return out


def _interval(forecast: Forecast) -> dict:
    """JSON numbers; an unbounded end (answers the curve may never reach) is null."""
    return {
        key: getattr(forecast, key) if math.isfinite(getattr(forecast, key)) else None
        for key in ("value", "low", "high")
    }


def _evaluated_tokens(project_id: int) -> int | None:
    """Tokens the newest evaluated report was scored on (its binomial noise floors the fit's)."""
    evaluation = (
        AccuracyReport.objects.filter(version__project_id=project_id, accuracy__isnull=False)
        .order_by("-version__number")
        .values_list("evaluation", flat=True)
        .first()
    )
    tokens = (evaluation or {}).get("tokens")
    return tokens if isinstance(tokens, int) and tokens > 0 else None
