"""The dashboard has the server load what "try the model" needs as it opens (issue 26, item 7):
the first try no longer waits seconds for spaCy's rules and NLTK's Punkt to load."""

import pytest

from common import text
from learning import predictions

pytestmark = pytest.mark.django_db


@pytest.fixture
def cold(monkeypatch):
    monkeypatch.setattr(predictions, "_warmed", set())
    monkeypatch.setattr(text, "_pools", {})  # no tokenizer made yet in this process


def test_warm_up_loads_the_tokenizer_once_per_process(cold, project):
    thread = predictions.warm_up(language="fr")
    thread.join(timeout=120)
    assert not thread.is_alive()
    assert list(text._pools) == ["fr"] and text._pools["fr"].qsize() == 1  # one, kept
    assert predictions.warm_up(language="fr") is None


def test_opening_the_dashboard_starts_the_warm_up(cold, personas, project):
    assert personas["manager"].get(f"/projects/{project.pk}/").status_code == 200
    assert project.language in predictions._warmed
    assert personas["annotator"].get(f"/projects/{project.pk}/").status_code == 403
