"""Other users' requests while uploads of megabyte gzip bombs are answered, on PostgreSQL through
a real server (issue 24 item 1: five later uploads queued behind a 7-minute import, holding the
project's row lock). Each upload answers within 2 s; another user's requests keep p99 <= 150 ms.
"""

import threading
import time

import httpx
import pytest

from tests.support.crowd import import_corpus, toy_sentences
from tests.support.factories import UserFactory, gzipped, make_project

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


BOMBS = [
    gzipped(b"a .\n" * 262_144),  # the 1,059 bytes: refused
    gzipped(b"a .\n" * (12 * 1024 * 1024)),  # 13 million sentences: refused
    gzipped(b"\n" * (49 * 1024 * 1024)),  # 49 MB read through: a job
    gzipped(b"w .\n" * 90_000),  # under the caps: a job
]


def test_uploads_answer_in_two_seconds_and_others_keep_their_p99(live_server, manager, settings):
    # Every job stays queued here (no worker): room for all of them past the queue caps.
    settings.TALLY_IMPORT_JOBS_PER_PROJECT = settings.TALLY_IMPORT_JOBS_PER_USER = 100
    project = make_project(owner=manager)
    other_user = UserFactory()
    other = make_project(owner=other_user)
    import_corpus(other, other_user, toy_sentences(20))
    # A timing on a shared machine: the uploads must be answered right and within 2 s every
    # time; the other user's p99 must hold in one of three rounds (another process's burst of
    # CPU on this 2-core machine is not the server's doing).
    p99s = []
    for _ in range(3):
        uploads, latencies = _round(live_server, project, manager, other, other_user)
        assert [status for status, _ in uploads] == [413, 413, 202, 202] * 2
        assert max(seconds for _, seconds in uploads) <= 2.0
        p99s.append(latencies[int(0.99 * (len(latencies) - 1))])
        if p99s[-1] <= 0.150:
            break
    assert min(p99s) <= 0.150, p99s


def _round(live_server, project, manager, other, other_user):
    """Upload every bomb twice while the other user reads their project: (status and seconds
    of each upload, the other user's latencies, sorted)."""
    uploads: list[tuple[int, float]] = []
    done = threading.Event()

    def upload_all() -> None:
        with httpx.Client(base_url=live_server.url, timeout=60) as client:
            for bomb in BOMBS + BOMBS:
                tic = time.perf_counter()
                response = client.post(
                    f"/api/projects/{project.pk}/corpus/",
                    headers={"Authorization": f"Token {manager.auth_token.key}"},
                    data={"format": "tokenized", "allow_duplicate": "true"},
                    files={"file": ("bomb.gz", bomb, "application/gzip")},
                )
                uploads.append((response.status_code, time.perf_counter() - tic))
        done.set()

    latencies = []
    with httpx.Client(base_url=live_server.url, timeout=30) as client:
        headers = {"Authorization": f"Token {other_user.auth_token.key}"}
        url = f"/api/projects/{other.pk}/"
        resting = []
        for _ in range(30):
            tic = time.perf_counter()
            assert client.get(url, headers=headers).status_code == 200
            resting.append(time.perf_counter() - tic)
        thread = threading.Thread(target=upload_all)
        thread.start()
        while not done.is_set():
            tic = time.perf_counter()
            response = client.get(url, headers=headers)
            latencies.append(time.perf_counter() - tic)
            assert response.status_code == 200
        thread.join()
    latencies.sort()
    p99 = latencies[int(0.99 * (len(latencies) - 1))]
    print(
        f"uploads {[(s, round(t, 2)) for s, t in uploads]}; other user: "
        f"{len(latencies)} requests, p50 {latencies[len(latencies) // 2] * 1000:.0f} ms, "
        f"p99 {p99 * 1000:.0f} ms (at rest: p50 {sorted(resting)[15] * 1000:.0f} ms)"
    )
    return uploads, latencies
