"""How many event streams may be open at once: per user (`TALLY_SSE_STREAMS_PER_USER`), per
client address (`TALLY_SSE_STREAMS_PER_ADDRESS`: accounts are free to make, so one machine could
open ten streams for each of many) and in all (`TALLY_SSE_STREAMS_TOTAL`: what the event servers
hold; `manage.py benchmark_streams` measures one process).

A slot is a lease with an expiry, taken in each of the three pools at once or in none: with
`REDIS_URL`, a sorted set per pool in Redis whose members are the open streams and whose scores
are their expiry times, checked and added to in one Lua script (so two processes cannot both take
the last slot); a process that dies with streams open leaves slots that expire a minute after
those streams would have ended. Without Redis (the embedded default: one process) the same leases
live in this process's memory. If Redis fails, the stream is allowed: the cap protects the event
server, it is not worth a dashboard going dark.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from dataclasses import dataclass

import redis
from django.conf import settings

logger = logging.getLogger(__name__)

_MARGIN_SECONDS = 60
# KEYS: the pools; ARGV: now, expiry, slot id, then each pool's cap. Returns 0 when the slot was
# taken in every pool, else the (1-based) number of the first pool that is full.
_ACQUIRE = """
for i, key in ipairs(KEYS) do
  redis.call('ZREMRANGEBYSCORE', key, '-inf', ARGV[1])
  if redis.call('ZCARD', key) >= tonumber(ARGV[3 + i]) then return i end
end
for i, key in ipairs(KEYS) do
  redis.call('ZADD', key, ARGV[2], ARGV[3])
  redis.call('EXPIRE', key, math.ceil(ARGV[2] - ARGV[1]) + 1)
end
return 0
"""

_local_lock = threading.Lock()
_local: dict[str, dict[str, float]] = {}


@dataclass(frozen=True)
class StreamSlot:
    """One open stream's place in each pool it counts in."""

    slot: str
    keys: tuple[str, ...]


class StreamsFull(Exception):
    """A pool is full: `scope` is "user", "address" or "total", `cap` its size."""

    def __init__(self, scope: str, cap: int) -> None:
        super().__init__(f"{scope} streams full ({cap})")
        self.scope = scope
        self.cap = cap


def _pools(user_id: int, address: str) -> list[tuple[str, str, int]]:
    """(scope, key, cap) of each pool a stream of this user from this address counts in."""
    return [
        ("user", f"tally:streams:user:{user_id}", settings.TALLY_SSE_STREAMS_PER_USER),
        ("address", f"tally:streams:address:{address}", settings.TALLY_SSE_STREAMS_PER_ADDRESS),
        ("total", "tally:streams:total", settings.TALLY_SSE_STREAMS_TOTAL),
    ]


def _client() -> redis.Redis:
    return redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=1, socket_timeout=2)


def stream_slot_acquire(*, user_id: int, address: str, seconds: float) -> StreamSlot:
    """A slot for one stream of `seconds`, or `StreamsFull` naming the first pool (the user's,
    the address's, all streams') that holds its maximum already."""
    pools = _pools(user_id, address)
    taken = StreamSlot(secrets.token_hex(8), tuple(key for _, key, _ in pools))
    now = time.time()
    expiry = now + seconds + _MARGIN_SECONDS
    caps = [cap for _, _, cap in pools]
    if settings.REDIS_URL:
        try:
            full = _client().eval(_ACQUIRE, len(pools), *taken.keys, now, expiry, taken.slot, *caps)
        except redis.RedisError as exc:
            logger.warning("stream slot check failed; allowing", extra={"error": str(exc)[:200]})
            return taken
        if full:
            scope, _, cap = pools[int(full) - 1]
            raise StreamsFull(scope, cap)
        return taken
    with _local_lock:
        held = [{s: e for s, e in _local.get(key, {}).items() if e > now} for key in taken.keys]
        for (scope, key, cap), slots in zip(pools, held, strict=True):
            _local[key] = slots
            if len(slots) >= cap:
                raise StreamsFull(scope, cap)
        for slots in held:
            slots[taken.slot] = expiry
    return taken


def stream_slot_release(*, slot: StreamSlot) -> None:
    if settings.REDIS_URL:
        try:
            pipeline = _client().pipeline(transaction=False)
            for key in slot.keys:
                pipeline.zrem(key, slot.slot)
            pipeline.execute()
        except redis.RedisError as exc:  # the slot expires by itself
            logger.warning("stream slot release failed", extra={"error": str(exc)[:200]})
        return
    with _local_lock:
        for key in slot.keys:
            _local.get(key, {}).pop(slot.slot, None)
