"""One retrain per project at a time: a lock row claimed by a conditional UPDATE.

`lock_claim` succeeds when its UPDATE changes one row, which happens only while the lock is free
(`locked_until` null) or expired (`locked_until` in the past); the database serializes concurrent
UPDATEs of one row, so exactly one caller wins on SQLite and PostgreSQL alike. A worker killed
while holding the lock leaves `locked_until` behind, and the lock frees itself when that passes
(`TALLY_RETRAIN_LOCK_SECONDS`, longer than a retrain takes). `lock_confirm` re-checks ownership
inside the transaction that writes the new version, so a worker whose claim expired and was taken
over writes nothing.
"""

import secrets
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from learning.models import RetrainLock


def new_owner() -> str:
    return secrets.token_hex(16)


def _ttl() -> timedelta:
    return timedelta(seconds=settings.TALLY_RETRAIN_LOCK_SECONDS)


def lock_claim(*, project_id: int, owner: str, now: datetime | None = None) -> bool:
    """Claim the project's retrain lock for `owner`; False if someone else holds it."""
    now = now or timezone.now()
    RetrainLock.objects.bulk_create([RetrainLock(project_id=project_id)], ignore_conflicts=True)
    claimed = (
        RetrainLock.objects.filter(project_id=project_id)
        .filter(Q(locked_until__isnull=True) | Q(locked_until__lt=now))
        .update(owner=owner, locked_until=now + _ttl())
    )
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
    RetrainLock.objects.filter(project_id=project_id, owner=owner).update(
        owner="", locked_until=None
    )


def lock_state(*, project_id: int) -> datetime | None:
    """`locked_until` if the lock is held now, else None."""
    row = RetrainLock.objects.filter(project_id=project_id, locked_until__gte=timezone.now())
    return row.values_list("locked_until", flat=True).first()
