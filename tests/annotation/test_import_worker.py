"""A large corpus upload imported by a real Celery worker process, on PostgreSQL and Redis
(issue 24 item 1): the API answers 202 at once, the job's status URL shows it running and then
done, and the sentences appear together."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotation.models import ImportJob
from tests.factories import client_for, make_project
from tests.learning.workers import Worker, purge_queue, wait_for

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
