"""The event server as production runs it: uvicorn serving config.asgi (issue 16, finding 10).

Streams wait on the event loop: 30 streams open at once on a real uvicorn process all get their
first events at once while its thread count stays flat, a new report reaches every one of them,
and a user's streams are capped, their slots given back when the client goes away.
"""

import asyncio
import json
import sys
import time

import httpx
import pytest

from tests.support.servers import free_port, manage, proc_status, scratch_env, serving

pytestmark = pytest.mark.slow

SEED = """
import json
from django.contrib.auth import get_user_model
from accounts.services import token_issue
from annotation import services
from annotation.models import Membership
User = get_user_model()
owner = User.objects.create_user("owner")
project = services.project_create(owner=owner, name="Live", tag_preset="ud_upos", window_size=5,
                                  tags_per_task=2, redundancy=1, gold_fraction=0.0)
tokens = []
for i in range(3):
    user = User.objects.create_user(f"manager-{i}")
    Membership.objects.create(project=project, user=user, role="manager")
    tokens.append(token_issue(user=user, name="benchmark").key)
print(json.dumps({"project": project.pk, "tokens": tokens}))
"""

# A new model version, as a retrain writes it (the streams poll for it: no Redis here).
NEW_VERSION = """
from learning.models import AccuracyReport, ModelVersion
version = ModelVersion.objects.create(project_id={project}, number=1, file="none.npz",
                                      observations_count=0, newest_observation=0)
AccuracyReport.objects.create(version=version)
"""


@pytest.fixture(scope="module")
def events_server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("events")
    port = free_port()
    env = scratch_env(
        tmp / "data",
        TALLY_SSE_POLL_SECONDS="1",
        TALLY_SSE_STREAM_SECONDS="30",
        TALLY_SSE_STREAMS_PER_USER="10",
    )
    seed = json.loads(manage(env, "shell", "-c", SEED).strip().splitlines()[-1])
    url = f"http://127.0.0.1:{port}"
    command = [sys.executable, "-m", "uvicorn", "config.asgi:application",
               "--host", "127.0.0.1", "--port", str(port), "--lifespan", "off"]  # fmt: skip
    with serving(command, env, url, tmp / "events.log") as pid:
        yield url, pid, env, seed


async def _open(client: httpx.AsyncClient, path: str, token: str):
    request = client.build_request(
        "GET", path, headers={"Authorization": f"Token {token}", "Accept": "text/event-stream"}
    )
    return await client.send(request, stream=True)


async def _until(name: str, lines) -> float:
    started = time.monotonic()
    async for line in lines:
        if line == f"event: {name}":
            return time.monotonic() - started
    raise AssertionError(f"stream ended without {name}")


def test_thirty_streams_get_their_events_at_once_on_a_flat_thread_count(events_server):
    url, pid, env, seed = events_server
    path = f"/api/projects/{seed['project']}/events/"
    threads_idle = proc_status(pid, "Threads")

    async def scenario():
        limits = httpx.Limits(max_connections=100)
        async with httpx.AsyncClient(base_url=url, timeout=20, limits=limits) as client:
            responses = await asyncio.gather(
                *(_open(client, path, token) for token in seed["tokens"] for _ in range(10))
            )
            assert [r.status_code for r in responses] == [200] * 30
            lines = [r.aiter_lines() for r in responses]
            hello = await asyncio.gather(*(_until("hello", stream) for stream in lines))
            threads_open = proc_status(pid, "Threads")
            # An eleventh stream of the same manager is refused.
            refused = await _open(client, path, seed["tokens"][0])
            assert refused.status_code == 429
            assert json.loads(await refused.aread())["error"]["code"] == "too_many_streams"
            await asyncio.to_thread(
                manage, env, "shell", "-c", NEW_VERSION.format(project=seed["project"])
            )
            report = await asyncio.gather(*(_until("report", stream) for stream in lines))
            for response in responses:
                await response.aclose()
            return max(hello), threads_open, max(report)

    slowest_hello, threads_open, slowest_report = asyncio.run(scenario())
    assert slowest_hello < 3
    assert slowest_report < 4  # polled every second
    assert threads_open - threads_idle <= 4

    async def reopen():
        # The closed streams' slots came back: each manager may open ten again.
        await asyncio.sleep(0.5)
        async with httpx.AsyncClient(base_url=url, timeout=20) as client:
            responses = await asyncio.gather(
                *(_open(client, path, seed["tokens"][0]) for _ in range(10))
            )
            statuses = [r.status_code for r in responses]
            for response in responses:
                await response.aclose()
            return statuses

    assert asyncio.run(reopen()) == [200] * 10
