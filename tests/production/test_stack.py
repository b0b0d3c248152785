"""End-to-end smoke test of the production configuration, without Docker.

Starts what docker-compose starts — nginx with deploy/nginx.conf.template in front, gunicorn with
`gunicorn.conf.py`, the event server (uvicorn, `config.asgi`), a Celery worker and beat as
separate processes, production settings, PostgreSQL and Redis — on a scratch database, then goes
through the proxy only: create a project, upload a corpus, annotate, retrain, read the report,
and receive it on a dashboard's event stream, which the proxy routed to the event server.
"""

import itertools
import json
import os
import shutil
import string
import threading
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import psycopg
import pytest
import redis

from devtools.stack import PROXY_HEADERS, Platform, StackError, free_port, production_env
from devtools.stack import tail as _tail
from tests.support.ewt import ewt_slice

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.nginx, pytest.mark.slow]


def _nginx_config(tmp: Path, listen: int, web: int, events: int) -> Path:
    """The production proxy's routes (deploy/nginx.conf.template) in a private nginx."""
    routes = string.Template((ROOT / "deploy/nginx.conf.template").read_text()).safe_substitute(
        TALLY_WEB_UPSTREAM=f"127.0.0.1:{web}",
        TALLY_EVENTS_UPSTREAM=f"127.0.0.1:{events}",
        TALLY_PROXY_LISTEN=f"127.0.0.1:{listen}",
    )
    (tmp / "tally.conf").write_text(routes)
    temp_paths = "\n".join(
        f"    {kind}_temp_path {tmp}/{kind};"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    config = tmp / "nginx.conf"
    config.write_text(
        ("user root;\n" if os.geteuid() == 0 else "")
        + f"daemon off;\nworker_processes 1;\npid {tmp}/nginx.pid;\nerror_log {tmp}/error.log;\n"
        + "events { worker_connections 1024; }\n"
        + f"http {{\n    access_log {tmp}/access.log;\n{temp_paths}\n"
        + f"    include {tmp}/tally.conf;\n}}\n"
    )
    return config


@pytest.fixture
def production_stack(tmp_path):
    base = psycopg.conninfo.conninfo_to_dict(os.environ["DATABASE_URL"])
    database = f"tally_smoke_{os.getpid()}"
    admin = psycopg.conninfo.make_conninfo(**{**base, "dbname": "postgres"})
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{database}"')
        conn.execute(f'CREATE DATABASE "{database}"')
    redis_url = "redis://127.0.0.1:6379/14"
    redis.Redis.from_url(redis_url).flushdb()
    port, web_port, events_port = free_port(), free_port(), free_port()
    env = production_env(
        database_url=urlsplit(os.environ["DATABASE_URL"])._replace(path=f"/{database}").geturl(),
        redis_url=redis_url,
        data_dir=tmp_path / "data",
        port=web_port,
        WEB_WORKERS="2",
        WEB_ACCESS_LOG="1",  # to see below which requests reached gunicorn
    )
    platform = Platform(tmp_path, env)
    platform.manage("migrate", "--noinput", "-v0")
    platform.manage("collectstatic", "--noinput", "-v0")
    proxy_dir = tmp_path / "proxy"
    proxy_dir.mkdir()
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    platform.add("proxy", [nginx, "-p", str(proxy_dir), "-c",
                           str(_nginx_config(proxy_dir, port, web_port, events_port))])  # fmt: skip
    platform.add_web()
    platform.add_events(events_port)
    platform.add_worker("worker", "-c", "1")
    platform.add_beat()
    platform.start_all()
    url = f"http://127.0.0.1:{port}"
    try:
        try:
            platform.wait_healthy(timeout=60, name="proxy", url=url)
        except StackError as exc:
            tails = "\n".join(platform.tail(name) for name in ("proxy", "web", "events"))
            pytest.fail(f"web server did not become healthy: {exc}\n{tails}")
        processes = {name: service.process for name, service in platform.services.items()}
        yield url, processes, platform.logs
    finally:
        platform.close()
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


def _read_stream(url: str, path: str, headers: dict, events: list[str]) -> None:
    """Follow an event stream as EventSource does (reconnecting with the last event's id) until
    a report arrives."""
    deadline = time.monotonic() + 240
    last_id = "0"
    with httpx.Client(base_url=url, headers=PROXY_HEADERS | headers, timeout=60) as client:
        while time.monotonic() < deadline:
            accept = {"Accept": "text/event-stream", "Last-Event-ID": last_id}
            with client.stream("GET", path, headers=accept) as response:
                assert response.status_code == 200, response.read()
                for line in response.iter_lines():
                    if line.startswith("event: "):
                        events.append(line)
                    if line == "event: report":
                        return


def _ok(response: httpx.Response, status: int) -> dict:
    assert response.status_code == status, f"{response.request.url}: {response.text[:500]}"
    return response.json() if response.content else {}


def test_create_upload_annotate_retrain_report(production_stack):
    url, processes, logs = production_stack
    client = httpx.Client(base_url=url, headers=PROXY_HEADERS, timeout=30)

    manager = _ok(
        client.post(
            "/api/auth/register/", json={"username": "maria", "password": "correct horse 42"}
        ),
        201,
    )
    as_manager = {"Authorization": f"Token {manager['token']}"}
    project = _ok(client.post("/api/projects/", headers=as_manager, json={
        "name": "Smoke", "tag_preset": "ud_upos", "window_size": 5, "tags_per_task": None,
        "redundancy": 1,
    }), 201)  # fmt: skip
    project_id = project["id"]
    corpus = _ok(client.post(
        f"/api/projects/{project_id}/corpus/", headers=as_manager,
        data={"format": "conllu", "evaluation_fraction": "0.2", "seed": "1"},
        files={"file": ("ewt.conllu", ewt_slice(300).encode(), "text/plain")},
    ), 201)  # fmt: skip
    assert corpus["sentences"] == 300

    # Gold tags of every sentence, to answer as an exact annotator would.
    gold = {}
    next_page = f"/api/projects/{project_id}/sentences/?limit=500"
    while next_page:
        page = _ok(client.get(next_page, headers=as_manager), 200)
        gold.update({tuple(s["tokens"]): s["gold_tags"] for s in page["results"]})
        next_page = page["next"]

    annotator = _ok(
        client.post(
            "/api/auth/register/", json={"username": "ann", "password": "battery staple 42"}
        ),
        201,
    )
    as_annotator = {"Authorization": f"Token {annotator['token']}"}
    _ok(client.post("/api/join/", headers=as_annotator, json={"code": project["invite_code"]}), 201)
    answered = 0
    for _ in itertools.repeat(None, 200):
        response = client.post(f"/api/projects/{project_id}/tasks/next/", headers=as_annotator)
        if response.status_code == 204:
            break
        task = _ok(response, 200)
        start, length = task["window"]["start"], task["window"]["length"]
        tags = gold[tuple(task["tokens"])][start : start + length]
        counts = {tag["name"]: tags.count(tag["name"]) for tag in task["tags"]}
        _ok(client.post("/api/observations/", headers=as_annotator, json={
            "assignment": task["assignment"], "counts": counts,
            "idempotency_key": str(uuid.uuid4()), "seconds_on_device": 3.0,
        }), 201)  # fmt: skip
        answered += 1
    assert answered >= 150

    # A dashboard's event stream, open (its hello received) before the retrain, via the proxy.
    stream_events: list[str] = []
    stream = threading.Thread(
        target=_read_stream,
        args=(url, f"/api/projects/{project_id}/events/", as_manager, stream_events),
        daemon=True,
    )
    stream.start()
    deadline = time.monotonic() + 20
    while "event: hello" not in stream_events:
        assert time.monotonic() < deadline and stream.is_alive(), _tail(logs / "events.log")
        time.sleep(0.1)
    _ok(client.post(f"/api/projects/{project_id}/retrain/", headers=as_manager), 202)
    deadline = time.monotonic() + 180
    while True:
        response = client.get(f"/api/projects/{project_id}/reports/latest/", headers=as_manager)
        if response.status_code == 200:
            break
        assert response.status_code == 404, response.text
        assert all(p.poll() is None for p in processes.values()), _tail(logs / "worker.log")
        if time.monotonic() > deadline:
            pytest.fail("no report within 180 s:\n" + _tail(logs / "worker.log"))
        time.sleep(1)
    report = response.json()
    stream.join(timeout=30)
    assert any(e.startswith("event: report") for e in stream_events), stream_events
    # The proxy sent the stream to the event server, never to gunicorn.
    assert f"/api/projects/{project_id}/events/" in (logs / "events.log").read_text()
    served = (logs / "web.log").read_text()
    assert f"/api/projects/{project_id}/reports/latest/" in served
    assert "/events/" not in served
    assert report["observations"] == answered
    # 240 training sentences of exact answers: far better than chance on the evaluation split.
    assert report["accuracy"] > 0.5
    assert {row["tag"] for row in report["per_tag"]} <= set(report["tags"])
    assert len(report["tags"]) == 17

    tagged = _ok(client.post(f"/api/projects/{project_id}/predict/", headers=as_manager,
                             json={"text": "The dog barked at the mailman ."}), 200)  # fmt: skip
    assert tagged["tokens"][:2] == ["The", "dog"] and len(tagged["tags"]) == 7
    assert tagged["tags"][0] == "DET"

    # Structured logs: the worker's record of the retrain is one JSON object on a line.
    records = [json.loads(line) for line in (logs / "worker.log").read_text().splitlines()
               if line.startswith("{")]  # fmt: skip
    succeeded = [r for r in records if r["message"] == "retrain succeeded"]
    assert succeeded and succeeded[0]["project_id"] == project_id

    health = _ok(client.get("/healthz"), 200)
    assert health["checks"]["broker"]["ok"]
    # Production settings really are on: plain HTTP is redirected to HTTPS.
    assert httpx.get(f"{url}/healthz").status_code == 301
