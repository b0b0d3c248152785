"""Deleting a project while other work runs, on PostgreSQL (issue 24 item 3): three DELETEs at
once gave one 204 and two 500s; a delete waited 38.8 s for a running retrain."""

import threading
import time

import httpx
import pytest
from django.core.files.storage import default_storage
from django.db import connection

from annotation.models import Project, Sentence
from learning import services as learning_services
from learning.core.pipeline import CountTagger
from learning.models import ModelVersion, RetrainRun
from tests.support.crowd import add_annotators, answer_tasks, import_corpus, toy_sentences
from tests.support.factories import make_project

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def _delete_at_once(url: str, token: str, n: int) -> list[int]:
    barrier = threading.Barrier(n)
    statuses: list = [None] * n

    def send(i: int) -> None:
        barrier.wait()
        response = httpx.delete(url, headers={"Authorization": f"Token {token}"}, timeout=30)
        statuses[i] = response.status_code

    threads = [threading.Thread(target=send, args=(i,)) for i in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return statuses


def test_deletes_at_once_give_one_204_and_404s(live_server, manager):
    for _ in range(5):  # a race shows only when one starts before another commits
        project = make_project(owner=manager)
        import_corpus(project, manager, toy_sentences(30))
        url = f"{live_server.url}/api/projects/{project.pk}/"
        statuses = _delete_at_once(url, manager.auth_token.key, 3)
        assert sorted(statuses) == [204, 404, 404], statuses
        assert not Project.objects.filter(pk=project.pk).exists()
        assert not Sentence.objects.filter(project_id=project.pk).exists()


def test_a_delete_does_not_wait_for_a_running_retrain(live_server, manager, monkeypatch):
    project = make_project(owner=manager, window_size=3, tags_per_task=None)
    import_corpus(project, manager, toy_sentences(60))
    answer_tasks(project, add_annotators(project, 3), 60)

    fitting, deleted = threading.Event(), threading.Event()
    real_fit = CountTagger.fit

    def slow_fit(self, *args, **kwargs):  # the retrain is in its fit when the delete comes
        fitting.set()
        deleted.wait(timeout=60)
        return real_fit(self, *args, **kwargs)

    monkeypatch.setattr(CountTagger, "fit", slow_fit)
    outcome = {}

    def retrain() -> None:
        try:
            outcome["value"] = learning_services.retrain_run(
                project_id=project.pk, trigger="manual"
            )
        finally:
            connection.close()

    thread = threading.Thread(target=retrain)
    thread.start()
    assert fitting.wait(timeout=60)
    tic = time.perf_counter()
    response = httpx.delete(
        f"{live_server.url}/api/projects/{project.pk}/",
        headers={"Authorization": f"Token {manager.auth_token.key}"},
        timeout=60,
    )
    seconds = time.perf_counter() - tic
    deleted.set()
    thread.join(timeout=120)
    assert response.status_code == 204 and seconds < 2.0, (response.status_code, seconds)
    # The retrain noticed: nothing written, no model file left behind, no error raised.
    result = outcome["value"]
    assert result.status == RetrainRun.Status.SKIPPED and "deleted" in result.message
    assert not ModelVersion.objects.filter(project_id=project.pk).exists()
    _, files = (
        default_storage.listdir(f"models/project-{project.pk}")
        if default_storage.exists(f"models/project-{project.pk}")
        else ([], [])
    )
    assert files == []
