"""A retrain, and a cost-matrix change, timed as the worker runs them, for the benchmarks
(`benchmark_retrain`, `benchmark_scale`)."""

from __future__ import annotations

import time
from unittest.mock import patch

from django.core.management.base import CommandError

from annotation.models import Project
from learning import adapter, tasks
from learning.core.evaluate import accuracy


def timed_retrain(project: Project, test) -> dict:
    """A full retrain as the Celery job runs it (read, learn, write, push:
    `retrain_and_push`), timed; its version, stages, CPU and accuracy on ``test``."""
    tic = time.perf_counter()
    outcome = tasks.retrain_and_push(project_id=project.pk, trigger="manual")
    seconds = time.perf_counter() - tic
    if outcome.version is None:
        raise CommandError(f"no version: {outcome.status} {outcome.message}")
    version = outcome.version
    timings = {k: round(v, 3) for k, v in version.timings.items() if not k.startswith("cpu_")}
    timings["commit_and_push"] = round(seconds - version.timings["total"], 3)
    return {
        "seconds": round(seconds, 3),
        "version": version.number,
        "warm_started_from": version.warm_started_from,
        "observations": version.observations_count,
        "fitted_observations": version.hyperparameters["fitted_observations"],
        "em_iterations": version.hyperparameters["em_iterations"],
        "accuracy_ewt_dev": version.report.accuracy,
        "accuracy_ewt_test": accuracy(
            [s.tags("upos") for s in test],
            adapter.model_load(version.file.name).predict([s.tokens for s in test]),
        ),
        "schedule": version.hyperparameters["schedule"]["name"],
        "count_consistency": version.report.count_consistency,
        "breakdown": timings,
        "cpu_seconds": {
            k.removeprefix("cpu_"): round(v, 3)
            for k, v in version.timings.items()
            if k.startswith("cpu_")
        },
    }


def timed_cost_change(project: Project, *, preset: str = "ordinal") -> dict:
    """A cost-matrix change as a manager makes it (``PUT cost-matrix/`` through the API), then
    every task its commit queued run as the worker runs it, each timed: what a change costs a
    worker (`learning.costs`: the re-scoring of every version's report, nothing else)."""
    from celery.app.task import Task
    from rest_framework.test import APIClient

    queued: list[tuple] = []

    def record(task, args=None, kwargs=None, **options):
        queued.append((task, list(args or []), dict(kwargs or {})))

    client = APIClient()
    client.force_authenticate(project.owner)
    with patch.object(Task, "apply_async", record):
        response = client.put(
            f"/api/projects/{project.pk}/cost-matrix/", {"preset": preset}, format="json"
        )
    if response.status_code != 200:
        raise CommandError(f"the cost-matrix change failed: {response.content[:300]!r}")
    ran = []
    for task, args, kwargs in queued:
        tic = time.perf_counter()
        task.run(*args, **kwargs)
        ran.append({"task": task.name, "seconds": round(time.perf_counter() - tic, 3)})
    return {
        "revision": response.json()["revision"],
        "tasks": ran,
        "worker_seconds": round(sum(task["seconds"] for task in ran), 3),
    }
