"""One Redis subscription per event-server process, fanned out to its open streams.

The asynchronous event streams (delivery/push.py, served by the ASGI process) do not each hold a
Redis connection: the process's hub subscribes once to every project's report channel and hands
each published version number to the queues of the streams open on that project. If Redis goes
away, every open stream is told (`LOST`) and polls the database instead; the hub reconnects in
the background for the streams that open later.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Iterator

import redis
import redis.asyncio
from django.conf import settings

logger = logging.getLogger(__name__)

PATTERN = "tally:project:*:reports"  # push.channel_name's
LOST = object()  # put in a stream's queue when the subscription is gone
_READY_TIMEOUT = 1.0
_BACKOFF_SECONDS = 2.0


class _Hub:
    def __init__(self, url: str, loop: asyncio.AbstractEventLoop) -> None:
        self.url = url
        self.loop = loop
        self.queues: dict[int, set[asyncio.Queue]] = {}
        self.ready = asyncio.Event()
        self.task = loop.create_task(self._run())

    async def _run(self) -> None:
        while True:
            client = redis.asyncio.Redis.from_url(self.url, socket_connect_timeout=1)
            try:
                pubsub = client.pubsub()
                await pubsub.psubscribe(PATTERN)
                async for message in pubsub.listen():
                    if message["type"] == "psubscribe":
                        self.ready.set()  # Redis confirmed: nothing published from now is missed
                    elif message["type"] == "pmessage":
                        self._dispatch(message["channel"], message["data"])
            except (redis.RedisError, OSError) as exc:
                logger.warning("push hub lost Redis", extra={"error": str(exc)[:200]})
            finally:
                self.ready.clear()
                for queue in self._all_queues():
                    queue.put_nowait(LOST)
                with contextlib.suppress(redis.RedisError, OSError):
                    await client.aclose()
            await asyncio.sleep(_BACKOFF_SECONDS)

    def _all_queues(self) -> Iterator[asyncio.Queue]:
        for queues in self.queues.values():
            yield from queues

    def _dispatch(self, channel: bytes, data: bytes) -> None:
        try:
            project_id = int(channel.split(b":")[2])
            version = json.loads(data).get("version")
        except (ValueError, IndexError, AttributeError):
            logger.warning("push hub: unreadable message", extra={"channel": channel[:100]})
            return
        if isinstance(version, int):
            for queue in self.queues.get(project_id, ()):
                queue.put_nowait(version)


_hubs: dict[asyncio.AbstractEventLoop, _Hub] = {}


class Subscription:
    """A stream's queue of published version numbers (ints) for its project, or `LOST`."""

    def __init__(self, hub: _Hub, project_id: int) -> None:
        self.hub = hub
        self.project_id = project_id
        self.queue: asyncio.Queue = asyncio.Queue()
        hub.queues.setdefault(project_id, set()).add(self.queue)

    def close(self) -> None:
        queues = self.hub.queues.get(self.project_id)
        if queues is not None:
            queues.discard(self.queue)
            if not queues:
                del self.hub.queues[self.project_id]


async def subscribe(project_id: int) -> Subscription | None:
    """Subscribe a stream to its project's reports; None without Redis or while it is away."""
    if not settings.REDIS_URL:
        return None
    loop = asyncio.get_running_loop()
    hub = _hubs.get(loop)
    if hub is None or hub.task.done():
        for stale in [other for other in _hubs if other.is_closed()]:
            del _hubs[stale]
        hub = _hubs[loop] = _Hub(settings.REDIS_URL, loop)
    subscription = Subscription(hub, project_id)
    try:
        await asyncio.wait_for(hub.ready.wait(), _READY_TIMEOUT)
    except TimeoutError:
        subscription.close()
        return None
    return subscription
