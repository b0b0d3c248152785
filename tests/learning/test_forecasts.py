"""The learning curve's forecast: the selector on stored versions and the report API's contract."""

import pytest

from common.exceptions import InvalidInput
from learning import forecasts
from tests.support.factories import client_for
from tests.support.versions import known_accuracy as _accuracy
from tests.support.versions import store_versions as _store_versions

pytestmark = pytest.mark.django_db

ANSWERS = [1000, 1500, 2000, 3000, 4000]


def test_forecast_ahead_follows_the_versions_curve(project):
    _store_versions(project, ANSWERS)
    forecast = forecasts.learning_forecast(project_id=project.pk)
    assert forecast["metric"] == "accuracy" and forecast["available"] and forecast["versions"] == 5
    assert [p["more"] for p in forecast["ahead"]] == [0.25, 1.0]
    assert [p["observations"] for p in forecast["ahead"]] == [5000, 8000]
    for point in forecast["ahead"]:
        # Within half a point: the prior leans to a nearer asymptote than this curve's 6 %.
        assert point["value"] == pytest.approx(_accuracy(point["observations"]), abs=0.005)
        assert point["low"] < _accuracy(point["observations"]) < point["high"]
    near, far = forecast["ahead"]
    assert far["high"] - far["low"] > near["high"] - near["low"]
    assert forecast["target"] is None


def test_answers_needed_for_a_target(project):
    _store_versions(project, ANSWERS)
    target = forecasts.learning_forecast(project_id=project.pk, target=0.90)["target"]
    assert target["reached"] and target["target"] == 0.90
    assert target["value"] == pytest.approx(1000 * (0.04 / 0.10) ** -2, rel=0.15)  # 6250
    assert target["low"] < target["value"] < target["high"]
    never = forecasts.learning_forecast(project_id=project.pk, target=0.999)["target"]
    assert never == {"target": 0.999, "reached": False, "value": None, "low": None, "high": None}


def test_without_gold_the_forecast_is_of_the_count_error(project):
    _store_versions(project, ANSWERS, accuracy=False)
    forecast = forecasts.learning_forecast(project_id=project.pk, target=0.3)
    assert forecast["metric"] == "count_consistency" and forecast["available"]
    assert forecast["ahead"][1]["value"] == pytest.approx(0.2 + 0.5 * 8**-0.7, abs=0.003)
    assert forecast["target"]["value"] == pytest.approx(1000 * 0.2 ** (-1 / 0.7), rel=0.05)


def test_one_version_is_not_enough(project):
    _store_versions(project, ANSWERS[:1])
    forecast = forecasts.learning_forecast(project_id=project.pk, target=0.9)
    assert not forecast["available"] and forecast["ahead"] == [] and forecast["target"] is None
    assert forecast["reason"] == forecasts.NOT_ENOUGH_VERSIONS


def test_a_smaller_evaluation_set_gives_a_wider_interval(project, other_project):
    _store_versions(project, ANSWERS[:3], tokens=100_000)
    _store_versions(other_project, ANSWERS[:3], tokens=300)
    wide = forecasts.learning_forecast(project_id=other_project.pk)["ahead"][1]
    narrow = forecasts.learning_forecast(project_id=project.pk)["ahead"][1]
    assert wide["high"] - wide["low"] > narrow["high"] - narrow["low"]


@pytest.mark.parametrize("raw", ["abc", "-0.1", "nan", "inf"])
def test_a_target_that_is_not_a_number_is_refused(raw):
    with pytest.raises(InvalidInput, match="must be a number"):
        forecasts.forecast_target_parse(raw)


def test_report_api_carries_the_forecast_and_checks_the_target(project, manager):
    _store_versions(project, ANSWERS)
    client = client_for(manager)
    url = f"/api/projects/{project.pk}/reports/latest/"
    report = client.get(url, {"target": "0.9"}).json()
    assert report["forecast"]["available"] and report["forecast"]["target"]["reached"]
    assert report["forecast"] == forecasts.learning_forecast(project_id=project.pk, target=0.9)
    for raw, says in (("95", "above 1"), ("ninety", "Not a target")):
        response = client.get(url, {"target": raw})
        assert response.status_code == 400
        error = response.json()["error"]
        assert error["code"] == "invalid" and says in error["fields"]["target"][0]
    assert client.get(url).json()["forecast"]["target"] is None
