"""End to end with real Celery worker processes on PostgreSQL and Redis: a retrain from
API-submitted observations to a report, a worker killed mid-retrain, Redis down, and two
concurrent triggers."""

import hashlib
import hmac
import json
import threading
import uuid

import pytest
from django.db import connection

from annotation.models import Assignment, Observation
from delivery.webhooks import services as webhook_services
from learning import selectors, services
from learning.models import ModelVersion, RetrainLock, RetrainRun
from tests.support.crowd import answer_tasks
from tests.support.factories import client_for
from tests.support.receivers import start_receiver
from tests.support.workers import Worker, broker_at, purge_queue, rows_held, wait_for

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.slow]
SECRET = "worker-test-secret-0123456789"


@pytest.fixture
def workers(tmp_path, transactional_db):
    purge_queue()
    started = []

    def start(name="worker", **kwargs):
        worker = Worker(tmp_path / f"{name}.log", **kwargs)
        started.append(worker)
        return worker.wait_ready()

    yield start
    for worker in started:
        worker.stop()
    purge_queue()


def submit_through_api(project, annotators, n) -> int:
    """Annotators ask for tasks and answer them over HTTP, with the true counts."""
    submitted = 0
    clients = [client_for(user) for user in annotators]
    for i in range(n):
        client = clients[i % len(clients)]
        task = client.post(f"/api/projects/{project.pk}/tasks/next/")
        if task.status_code == 204:
            continue
        task = task.json()
        gold = Assignment.objects.get(pk=task["assignment"]).task.sentence.gold_tags
        start, length = task["window"]["start"], task["window"]["length"]
        window = gold[start : start + length]
        counts = {t["name"]: sum(1 for g in window if g == t["index"]) for t in task["tags"]}
        response = client.post(
            "/api/observations/",
            {"assignment": task["assignment"], "counts": counts,
             "idempotency_key": uuid.uuid4().hex, "seconds_on_device": 3.0},
            format="json",
        )  # fmt: skip
        assert response.status_code == 201, response.content
        submitted += 1
    return submitted


def test_retrain_end_to_end_through_a_real_worker(project, crowd, manager, workers, settings):
    settings.TALLY_WEBHOOK_ALLOW_INTERNAL = True
    receiver = start_receiver([200])
    try:
        webhook_services.webhook_create(project=project, url=receiver.url, secret=SECRET)
        workers(TALLY_WEBHOOK_ALLOW_INTERNAL="1")
        assert submit_through_api(project, crowd, 80) == 80
        client = client_for(manager)
        response = client.post(f"/api/projects/{project.pk}/retrain/")
        assert response.status_code == 202 and response.json()["queued"] is True
        wait_for(
            lambda: ModelVersion.objects.filter(project=project).exists(),
            60,
            "the worker wrote no model version",
        )
        report = client.get(f"/api/projects/{project.pk}/reports/latest/").json()
        assert report["version"] == 1 and report["observations"] == 80
        assert report["accuracy"] > 0.8
        assert {row["username"] for row in report["annotators"]} == {u.username for u in crowd}
        tagged = client.post(
            f"/api/projects/{project.pk}/predict/", {"text": "the dog runs"}, format="json"
        )
        assert tagged.json()["tags"] == ["DET", "NOUN", "VERB"]
        wait_for(lambda: receiver.requests, 30, "the webhook was not delivered")
        body = receiver.requests[0]["body"]
        signature = receiver.requests[0]["headers"]["X-Tally-Signature"]
        expected = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
        assert hmac.compare_digest(signature, expected)
        assert json.loads(body)["version"] == 1
        run = RetrainRun.objects.get(project=project, status="succeeded")
        assert run.trigger == "manual" and run.task_id
    finally:
        receiver.close()


def _job_blocked_in_write(project_id: int) -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
            "AND query ILIKE '%%learning_annotatorquality%%' AND datname = current_database()"
        )
        return cursor.fetchone()[0] > 0


def test_worker_killed_mid_retrain_leaves_the_previous_version_current(
    project, crowd, manager, workers
):
    answer_tasks(project, crowd, 60)
    services.retrain_run(project_id=project.pk, trigger="manual")
    answer_tasks(project, crowd, 20, seed=7)
    env = {"TALLY_RETRAIN_LOCK_SECONDS": "4"}
    first = workers("doomed", **env)
    holder = rows_held("learning_annotatorquality", project.pk)
    try:
        client = client_for(manager)
        assert client.post(f"/api/projects/{project.pk}/retrain/").status_code == 202
        wait_for(lambda: _job_blocked_in_write(project.pk), 60, "the job never reached its write")
        first.kill()
    finally:
        holder.rollback()
        holder.close()
    # Version 2 was inserted but never committed: version 1 stays current, nothing half-written.
    assert selectors.current_version(project_id=project.pk).number == 1
    assert ModelVersion.objects.filter(project=project).count() == 1
    assert RetrainRun.objects.filter(project=project, status="running").count() == 1
    assert RetrainLock.objects.get(project=project).locked_until is not None
    status = client.get(f"/api/projects/{project.pk}/retrain-status/").json()
    assert status["current_version"] == 1 and status["due"] is True

    # After the lock expires, the next run succeeds.
    workers("replacement", **env)
    wait_for(
        lambda: (
            client.get(f"/api/projects/{project.pk}/retrain-status/").json()["running"] is False
        ),
        15,
        "the dead worker's lock never expired",
    )
    assert client.post(f"/api/projects/{project.pk}/retrain/").status_code == 202
    wait_for(
        lambda: selectors.current_version(project_id=project.pk).number == 2,
        60,
        "no retrain succeeded after the kill",
    )
    killed = RetrainRun.objects.filter(project=project).exclude(status="succeeded").first()
    assert killed.status == "failed" and "stopped before finishing" in killed.error
    report = client.get(f"/api/projects/{project.pk}/reports/latest/").json()
    assert report["observations"] == 80 and [p["version"] for p in report["learning_curve"]] == [
        1,
        2,
    ]


def test_redis_down_annotations_are_stored_and_retraining_catches_up(
    project, crowd, manager, workers
):
    client = client_for(manager)
    with broker_at("redis://127.0.0.1:1/15"):  # nothing listens on port 1
        assert submit_through_api(project, crowd, 60) == 60
        response = client.post(f"/api/projects/{project.pk}/retrain/")
        assert response.status_code == 202
        assert response.json()["queued"] is False and response.json()["due"] is True
    assert Observation.objects.filter(project=project).count() == 60
    assert not ModelVersion.objects.filter(project=project).exists()
    # The broker is back: beat's periodic sweep finds the project due and a worker retrains it.
    workers("with-beat", beat=True, TALLY_RETRAIN_SWEEP_SECONDS="1")
    wait_for(
        lambda: ModelVersion.objects.filter(project=project).exists(),
        60,
        "retraining did not catch up after the broker came back",
    )
    run = RetrainRun.objects.get(project=project, status="succeeded")
    assert run.trigger == "schedule"


def test_two_concurrent_triggers_make_one_version(project, crowd, transactional_db):
    answer_tasks(project, crowd, 60)
    barrier = threading.Barrier(2)
    outcomes = []

    def trigger():
        try:
            barrier.wait()
            outcomes.append(services.retrain_run(project_id=project.pk, trigger="manual"))
        finally:
            connection.close()

    threads = [threading.Thread(target=trigger) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert sorted(o.status for o in outcomes) == ["skipped", "succeeded"]
    assert ModelVersion.objects.filter(project=project).count() == 1
