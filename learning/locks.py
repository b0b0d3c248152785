"""One retrain per project at a time: a lock row claimed by a conditional UPDATE, kept alive by
its holder while the job runs.

`lock_claim` succeeds when its UPDATE changes one row, which happens only while the lock is free
(`locked_until` null) or expired (`locked_until` in the past); the database serializes concurrent
UPDATEs of one row, so exactly one caller wins on SQLite and PostgreSQL alike.

A claim lasts `TALLY_RETRAIN_LOCK_SECONDS` (15 s by default) and the process that holds it renews
it every third of that from a thread of its own, until `lock_release`. So a live job keeps its
lock however long it runs, and a worker killed mid-retrain (`kill -9`, out of memory, its machine
gone) holds the project for at most that long: the next retrain can start then. (Without the
renewal the claim had to outlast the longest retrain, 16 minutes, and a killed worker stopped the
project's retraining for as long; `benchmark_faults` found it.)

`lock_confirm` re-checks ownership inside the transaction that writes the new version, so a
worker whose claim expired (its renewals could not reach the database for a whole claim) and was
taken over writes nothing. A renewal never revives an expired claim.
"""

import logging
import os
import secrets
import socket
import threading
from datetime import datetime, timedelta

from django.conf import settings
from django.db import DatabaseError, connection
from django.db.models import Q
from django.utils import timezone

from learning.models import RetrainLock

logger = logging.getLogger(__name__)

_renewals: dict[tuple[int, str], threading.Event] = {}
_renewals_lock = threading.Lock()


def new_owner() -> str:
    """A claimant's name: where it runs (host and process id, for whoever looks at the lock),
    and a random part that makes it unique."""
    return f"{socket.gethostname()[:32]}:{os.getpid()}:{secrets.token_hex(8)}"


def _ttl() -> timedelta:
    return timedelta(seconds=settings.TALLY_RETRAIN_LOCK_SECONDS)


def lock_claim(*, project_id: int, owner: str, now: datetime | None = None) -> bool:
    """Claim the project's retrain lock for `owner`; False if someone else holds it. A claim
    made is renewed in the background until `lock_release`."""
    now = now or timezone.now()
    RetrainLock.objects.bulk_create([RetrainLock(project_id=project_id)], ignore_conflicts=True)
    claimed = (
        RetrainLock.objects.filter(project_id=project_id)
        .filter(Q(locked_until__isnull=True) | Q(locked_until__lt=now))
        .update(owner=owner, locked_until=now + _ttl())
    )
    if claimed == 1:
        _start_renewing(project_id, owner)
    return claimed == 1


def lock_confirm(*, project_id: int, owner: str) -> bool:
    """Extend the claim if `owner` still holds it (call inside the writing transaction: on
    PostgreSQL the row stays locked until commit, so nobody can take it over meanwhile)."""
    now = timezone.now()
    return (
        RetrainLock.objects.filter(
            project_id=project_id, owner=owner, locked_until__gte=now
        ).update(locked_until=now + _ttl())
        == 1
    )


def lock_release(*, project_id: int, owner: str) -> None:
    _stop_renewing(project_id, owner)
    RetrainLock.objects.filter(project_id=project_id, owner=owner).update(
        owner="", locked_until=None
    )


def lock_state(*, project_id: int) -> datetime | None:
    """`locked_until` if the lock is held now, else None."""
    row = RetrainLock.objects.filter(project_id=project_id, locked_until__gte=timezone.now())
    return row.values_list("locked_until", flat=True).first()


def renewal_interval() -> float:
    return max(settings.TALLY_RETRAIN_LOCK_SECONDS / 3, 1.0)


def _start_renewing(project_id: int, owner: str) -> None:
    stop = threading.Event()
    with _renewals_lock:
        _renewals[(project_id, owner)] = stop
    threading.Thread(
        target=_renew,
        args=(project_id, owner, stop, renewal_interval()),
        name=f"retrain-lock-{project_id}",
        daemon=True,  # dies with the process: that is what lets a dead worker's claim expire
    ).start()


def _stop_renewing(project_id: int, owner: str) -> None:
    with _renewals_lock:
        stop = _renewals.pop((project_id, owner), None)
    if stop is not None:
        stop.set()


def _renew(project_id: int, owner: str, stop: threading.Event, interval: float) -> None:
    while not stop.wait(interval):
        try:
            held = lock_confirm(project_id=project_id, owner=owner)
        except DatabaseError as exc:  # the database away for a moment: try again next time
            logger.warning(
                "cannot renew the retrain lock",
                extra={"project_id": project_id, "error": str(exc)[:200]},
            )
            held = True
        finally:
            connection.close()  # this thread's own connection; none is kept between renewals
        if not held or stop.is_set():
            break
    _stop_renewing(project_id, owner)
