"""A large corpus upload imported by a real Celery worker process, on PostgreSQL and Redis
(issue 24 item 1): the API answers 202 at once, the job's status URL shows it running and then
done, and the sentences appear together."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotation.models import ImportJob
from tests.support.factories import client_for, make_project
from tests.support.workers import Worker, purge_queue, wait_for

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.slow]


@pytest.fixture
def worker(tmp_path, transactional_db):
    purge_queue()
    started = Worker(tmp_path / "worker.log").wait_ready()
    yield started
    started.stop()
    purge_queue()


def test_a_large_upload_is_imported_by_a_worker(worker, manager, settings):
    settings.TALLY_IMPORT_SYNC_SENTENCES = 100
    project = make_project(owner=manager)
    client = client_for(manager)
    data = "".join(f"w{i} runs fast .\n" for i in range(20_000)).encode()
    response = client.post(
        f"/api/projects/{project.pk}/corpus/",
        {"file": SimpleUploadedFile("big.txt", data), "format": "tokenized"},
        format="multipart",
    )
    assert response.status_code == 202, response.content
    url = response["Location"]
    job = wait_for(
        lambda: (body := client.get(url).json())["status"] in ("done", "failed") and body,
        timeout=120,
        message="the worker did not finish the job:\n" + worker.log.read_text()[-3000:],
        interval=0.5,
    )
    assert job["status"] == "done", job
    assert job["sentences_read"] == 20_000 and job["progress"] == 1.0
    assert project.sentences.count() == 20_000
    assert ImportJob.objects.get(pk=job["id"]).corpus_import.sentences == 20_000
    listed = client.get(f"/api/projects/{project.pk}/corpus/").json()["results"]
    assert [item["id"] for item in listed] == [job["import"]]


def test_a_job_queued_while_the_broker_was_down_is_run_by_the_sweep(worker, manager, settings):
    from datetime import timedelta

    from annotation.tasks import import_sweep
    from tests.support.workers import broker_at

    settings.TALLY_IMPORT_SYNC_SENTENCES = 100
    project = make_project(owner=manager)
    client = client_for(manager)
    data = "".join(f"v{i} sleeps .\n" for i in range(500)).encode()
    with broker_at("redis://127.0.0.1:1/15"):  # nothing listens on port 1
        response = client.post(
            f"/api/projects/{project.pk}/corpus/",
            {"file": SimpleUploadedFile("lost.txt", data), "format": "tokenized"},
            format="multipart",
        )
    assert response.status_code == 202, response.content  # accepted: the job is stored
    job = ImportJob.objects.get(pk=response.json()["id"])
    assert import_sweep() == []  # within its grace: its message may be on the way
    ImportJob.objects.filter(pk=job.pk).update(created_at=job.created_at - timedelta(minutes=2))
    assert import_sweep() == [job.pk]
    wait_for(
        lambda: ImportJob.objects.get(pk=job.pk).status == "done",
        timeout=120,
        message="the swept job was not run:\n" + worker.log.read_text()[-3000:],
        interval=0.5,
    )
    assert project.sentences.count() == 500
