"""Helpers of the tests that retrain: a retrain as "retrain now" runs it, the retrain job as a
worker runs it, and a project trained once."""

import importlib

import pytest

from learning import services
from tests.support.crowd import answer_tasks


def retrain(project, trigger: str = "manual"):
    """Retrain `project` now, in this process (`services.retrain_run`); the outcome."""
    return services.retrain_run(project_id=project.pk, trigger=trigger)


def retrain_job(project_id: int) -> dict:
    """Run the retraining Celery task in this process, as a worker would (then it pushes)."""
    try:
        tasks = importlib.import_module("learning.tasks")
    except ImportError:
        pytest.skip("the retraining job (learning.tasks) is not here yet")
    outcome = tasks.retrain_project.apply(args=[project_id], kwargs={"trigger": "manual"}).get()
    assert outcome["version"] is not None, outcome
    return outcome


def trained(project, crowd, answers: int = 80):
    """`project` after `answers` exact answers by `crowd` and one retrain."""
    answer_tasks(project, crowd, answers)
    retrain(project)
    return project
