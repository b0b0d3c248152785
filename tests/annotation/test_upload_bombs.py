"""Upload bombs against a real gunicorn worker: memory and time to refuse (issue 16, finding 4).

The worker's peak resident memory (VmHWM, reset through /proc/PID/clear_refs before each upload)
may rise above its resting level by at most the file's size plus 64 MB, whatever the file holds;
a 45 MiB line is refused within 2 s. Before reading became bounded per line, a 1 MiB gzip file
inflating to 1 GiB without a newline raised the worker's peak by 2.2 GB.
"""

import json
import time
from pathlib import Path

import httpx
import pytest

from tests.support.factories import gzipped
from tests.support.servers import gunicorn_scratch, proc_status

MiB = 1024 * 1024

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="needs Linux /proc"),
]


def _conllu_endless_sentence(size: int) -> bytes:
    lines, total, number = [], 0, 0
    while total < size:
        number += 1
        line = f"{number}\tword\tword\tNOUN\tNN\t_\t0\troot\t_\t_\n".encode()
        lines.append(line)
        total += len(line)
    return b"".join(lines)


BOMBS = {
    # name: (format, file bytes, the refusal's status)
    "gzip 1 GiB, no newline": ("text", lambda: gzipped(b"\0" * MiB, 1024), 400),
    "gzip 1 GiB, a newline every 100 MiB": (
        "jsonl",
        lambda: gzipped(b"x" * (100 * MiB) + b"\n", 10),
        400,
    ),
    # Over the 50 MB cap once inflated: refused by the scan before any line is parsed (issue 24).
    "gzip 1 GiB of 1 MiB lines": ("text", lambda: gzipped(b"x" * (MiB - 1) + b"\n", 1024), 413),
    "gzip 45 MiB, one CoNLL-U sentence": (
        "conllu",
        lambda: gzipped(_conllu_endless_sentence(45 * MiB), 1),
        400,
    ),
    "plain 45 MiB, one line": ("text", lambda: b"x" * (45 * MiB), 400),
    "plain 45 MiB, one line of words": ("text", lambda: b"ab " * (15 * MiB), 400),
    "plain 45 MiB, 1 MiB lines": ("text", lambda: (b"x" * (MiB - 1) + b"\n") * 45, 400),
    "CoNLL-U 45 MiB, one sentence": ("conllu", lambda: _conllu_endless_sentence(45 * MiB), 400),
}


@pytest.fixture(scope="module")
def web(tmp_path_factory):
    """gunicorn with gunicorn.conf.py, one worker process, on a scratch SQLite database."""
    tmp = tmp_path_factory.mktemp("bombs")
    with gunicorn_scratch(tmp, TALLY_LOGIN_RATE="1000/min") as (url, master):
        children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
        assert len(children) == 1
        yield url, int(children[0])


@pytest.fixture(scope="module")
def manager_project(web):
    url, _ = web
    client = httpx.Client(base_url=url, timeout=60)
    response = client.post(
        "/api/auth/register/", json={"username": "bomber", "password": "correct horse 42"}
    )
    assert response.status_code == 201, response.text
    headers = {"Authorization": f"Token {response.json()['token']}"}
    response = client.post(
        "/api/projects/", headers=headers, json={"name": "Bombs", "tag_preset": "ud_upos"}
    )
    assert response.status_code == 201, response.text
    # One ordinary import first, so the worker's resting memory includes the import path.
    ok = client.post(
        f"/api/projects/{response.json()['id']}/corpus/",
        headers=headers,
        data={"format": "text"},
        files={"file": ("ok.txt", b"a small sentence\n" * 100, "text/plain")},
    )
    assert ok.status_code == 201, ok.text
    return client, headers, response.json()["id"]


@pytest.mark.parametrize("name", list(BOMBS))
def test_worker_memory_and_time_while_refusing_an_upload_bomb(web, manager_project, name):
    _, worker = web
    client, headers, project_id = manager_project
    format, make, status = BOMBS[name]
    data = make()
    resting = proc_status(worker, "VmRSS")
    Path(f"/proc/{worker}/clear_refs").write_text("5")  # reset the peak to the current RSS
    started = time.monotonic()
    response = client.post(
        f"/api/projects/{project_id}/corpus/",
        headers=headers,
        data={"format": format},
        files={"file": ("bomb", data, "application/octet-stream")},
    )
    seconds = time.monotonic() - started
    rise_mb = (proc_status(worker, "VmHWM") - resting) / 1024
    print(json.dumps({"bomb": name, "file_mb": round(len(data) / MiB, 2),
                      "status": response.status_code, "seconds": round(seconds, 2),
                      "peak_rss_rise_mb": round(rise_mb, 1)}))  # fmt: skip
    assert response.status_code == status, response.text[:300]
    assert rise_mb <= len(data) / MiB + 64
    if name.startswith("plain 45 MiB, one line"):
        assert seconds <= 2.0
