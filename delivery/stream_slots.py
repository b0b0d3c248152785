"""How many event streams one user may hold open at once (`TALLY_SSE_STREAMS_PER_USER`).

A slot is a lease with an expiry: with `REDIS_URL`, a sorted set per user in Redis whose members
are the open streams and whose scores are their expiry times, checked and added to in one Lua
script (so two processes cannot both take the last slot); a process that dies with streams open
leaves slots that expire a minute after those streams would have ended. Without Redis (the
embedded default: one process) the same lease lives in this process's memory. If Redis fails,
the stream is allowed: the cap protects the event server, it is not worth a dashboard going dark.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time

import redis
from django.conf import settings

logger = logging.getLogger(__name__)

_MARGIN_SECONDS = 60
# KEYS[1] the user's set; ARGV: now, expiry, cap, slot id.
_ACQUIRE = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[4])
redis.call('EXPIRE', KEYS[1], math.ceil(ARGV[2] - ARGV[1]) + 1)
return 1
"""

_local_lock = threading.Lock()
_local: dict[int, dict[str, float]] = {}


def _key(user_id: int) -> str:
    return f"tally:streams:user:{user_id}"


def _client() -> redis.Redis:
    return redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=1, socket_timeout=2)


def stream_slot_acquire(*, user_id: int, seconds: float) -> str | None:
    """A slot id for one stream of `seconds`, or None when the user holds the maximum already."""
    cap = settings.TALLY_SSE_STREAMS_PER_USER
    slot = secrets.token_hex(8)
    now = time.time()
    expiry = now + seconds + _MARGIN_SECONDS
    if settings.REDIS_URL:
        try:
            taken = _client().eval(_ACQUIRE, 1, _key(user_id), now, expiry, cap, slot)
        except redis.RedisError as exc:
            logger.warning("stream slot check failed; allowing", extra={"error": str(exc)[:200]})
            return slot
        return slot if taken else None
    with _local_lock:
        held = {s: e for s, e in _local.get(user_id, {}).items() if e > now}
        if len(held) >= cap:
            _local[user_id] = held
            return None
        held[slot] = expiry
        _local[user_id] = held
    return slot


def stream_slot_release(*, user_id: int, slot: str) -> None:
    if settings.REDIS_URL:
        try:
            _client().zrem(_key(user_id), slot)
        except redis.RedisError as exc:  # the slot expires by itself
            logger.warning("stream slot release failed", extra={"error": str(exc)[:200]})
        return
    with _local_lock:
        _local.get(user_id, {}).pop(slot, None)
