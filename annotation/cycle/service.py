"""The annotator's cycle as two services: lease the next task (`task_next_for_annotator`) and
store an answer, leasing the next task with it when the phone asks (`answer_submit`).

They own what the views used to decide: the random draws of a lease, which database path runs
(on PostgreSQL the plain case is one statement each: the lease in `annotation.hotpath`,
each kind's answer in `annotation.kinds`), and the fallback to
the scheduler and the submission service, which hold the whole rule and say why when the
statement did not lease or store. On any other database they are the only path.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.db import connection
from django.utils import timezone

from annotation import hotpath, scheduler, selectors, services
from annotation.cycle.submission import NextTaskRequest, Submission
from annotation.kinds import KINDS
from annotation.scheduler import Lease
from common.exceptions import AuthenticationFailed, DomainError, NotFound
from learning.core.privacy import Mechanism

if TYPE_CHECKING:
    from common.api.plain import Caller


@dataclass(frozen=True, slots=True)
class Offer:
    """A leased task with what the phone needs to show it: the project's tags and, in a
    private project, its privacy mechanism."""

    lease: Lease
    tags: list[dict]
    mechanism: Mechanism | None


@dataclass(frozen=True, slots=True)
class Stored:
    """An answer as stored (an `Observation`, or the row the one statement returned), the
    project's tag names to show it with, whether it was a replay of the same answer, and, when
    the phone asked for it, the next task (`next`: an `Offer`, or None when there is none for
    them) or why it could not be leased (`next_error`; the answer is stored all the same)."""

    observation: Any
    names: list[str]
    replayed: bool
    next: Offer | None = None
    next_error: DomainError | None = None


def _on_postgresql() -> bool:
    return connection.vendor == "postgresql"


def task_next_for_annotator(
    *,
    caller: Caller,
    project_id: int,
    request: NextTaskRequest = NextTaskRequest(),  # noqa: B008 (frozen, empty)
    now: datetime | None = None,
) -> Offer | None:
    """Lease the caller's next task in the project; None when there is none for them.
    `NotFound` when they are not a member, `LeaseLimit` when they hold as many as they may,
    `ProjectNotActive` when the project serves no tasks, `AuthenticationFailed` when the token
    names no active user."""
    now = now or timezone.now()
    gold_draw, kind_draw = scheduler.gold_draw(), scheduler.gold_draw()
    if _on_postgresql():
        row = hotpath.next_task(
            key=caller.key,
            user_id=caller.user_id,
            project_id=project_id,
            holding=list(request.holding),
            max_leases=scheduler.MAX_LEASES,
            now=now,
            gold_draw=gold_draw,
            kind_draw=kind_draw,
            reclaim_due_before=now - scheduler.RECLAIM_INTERVAL,
        )
        if row is None or not row.is_active:
            raise AuthenticationFailed("Invalid token.")
        if row.membership_id is None:
            raise NotFound("Not found.")
        lease = row.lease()
        if lease is not None:
            tags = selectors.project_tags_at(
                project_id=project_id, updated_at=row.project_updated_at
            )
            mechanism = selectors.mechanism_of(
                private=row.private, mechanism=row.mechanism, alpha=row.alpha, n_tags=len(tags)
            )
            return Offer(lease=lease, tags=tags, mechanism=mechanism)
    # Not the plain case (or not PostgreSQL): the scheduler decides, with the same draws.
    user = caller.user()
    membership = selectors.membership_for(user=user, project_id=project_id)
    project = membership.project
    lease = scheduler.task_lease_next(
        project=project,
        annotator=user,
        holding=request.holding,
        now=now,
        flagged=membership.flagged,
        gold_draw=gold_draw,
        kind_draw=kind_draw,
    )
    if lease is None:
        return None
    return Offer(
        lease=lease,
        tags=selectors.project_tags(project=project),
        mechanism=selectors.project_mechanism(project=project),
    )


def answer_submit(*, caller: Caller, submission: Submission, now: datetime | None = None) -> Stored:
    """Store the answer to a lease (or find the one a replay of its idempotency key stored), and
    lease the caller's next task in the same project when the submission asks (`next`). The
    answer's errors are the submission service's (`services.observation_submit`); the next
    task's never undo the answer, and come back in `next_error`."""
    stored = _answer_store(caller=caller, submission=submission, now=now or timezone.now())
    if submission.next is None:
        return stored
    try:
        offer = task_next_for_annotator(
            caller=caller, project_id=stored.observation.project_id, request=submission.next
        )
    except AuthenticationFailed:
        raise
    except DomainError as exc:  # not a member any more, the lease cap, the project paused
        return Stored(stored.observation, stored.names, stored.replayed, next_error=exc)
    return Stored(stored.observation, stored.names, stored.replayed, next=offer)


def _answer_store(*, caller: Caller, submission: Submission, now: datetime) -> Stored:
    if _on_postgresql():
        row = _stored_by_statement(caller=caller, submission=submission, now=now)
        if row is not None:
            names = selectors.project_tag_names_at(
                project_id=row.project_id, updated_at=row.project_updated_at
            )
            return Stored(row, names, replayed=False)
    # Not stored by a statement: the service says why, or returns the answer a replay stored.
    observation, replayed = services.observation_submit(
        annotator=caller.user(), now=now, **submission.service_fields()
    )
    names = selectors.project_tag_names(project=observation.project)
    return Stored(observation, names, replayed=replayed)


def _stored_by_statement(*, caller: Caller, submission: Submission, now: datetime):
    """The row of the answer the statement of its kind stored; None when the statement left it
    to the service (or the answer is not one the statement checks)."""
    kind = KINDS[submission.kind]
    if not kind.fits_statement(submission):
        return None
    row = kind.submit_plain(key=caller.key, user_id=caller.user_id, submission=submission, now=now)
    if row is None or not row.is_active:
        raise AuthenticationFailed("Invalid token.")
    return row if row.id is not None else None
