"""The annotator's cycle as two services: lease the next task (`task_next_for_annotator`) and
store an answer, leasing the next task with it when the phone asks (`answer_submit`).

They own what the views used to decide: the random draws of a lease, which database path runs
(on PostgreSQL the plain case is one statement: the lease in `annotation.hotpath`, each kind's
answer in `annotation.kinds`, an answer with its next task in one statement and one commit),
and the fallback to the scheduler and the submission service, which hold the whole rule and
say why when the statement did not lease or store. On any other database they are the only path."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.db import connection
from django.utils import timezone

from annotation import hotpath, kinds, scheduler, selectors, services
from annotation.cycle.submission import NextTaskRequest, Submission
from annotation.kinds import KINDS
from annotation.scheduler import Lease
from common.exceptions import AnsweredAsAnother, AuthenticationFailed, DomainError, NotFound
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
    draws = _Draws.new()
    if _on_postgresql():
        row = hotpath.next_task(
            key=caller.key,
            user_id=caller.user_id,
            project_id=project_id,
            lease=_lease_params(request=request, now=now, draws=draws),
        )
        if row is None or not row.is_active:
            raise AuthenticationFailed("Invalid token.")
        if row.membership_id is None:
            raise NotFound("Not found.")
        offer = _offer_of(row, project_id=project_id)
        if offer is not None:
            return offer
    return _offer_by_scheduler(
        caller=caller, project_id=project_id, request=request, now=now, draws=draws
    )


def answer_submit(*, caller: Caller, submission: Submission, now: datetime | None = None) -> Stored:
    """Store the answer to a lease (or find the one a replay of its idempotency key stored), and
    lease the caller's next task in the same project when the submission asks (`next`). The
    answer's errors are the submission service's (`services.observation_submit`); the next
    task's never undo the answer, and come back in `next_error`."""
    now = now or timezone.now()
    _check_device_user(caller=caller, submission=submission)
    if _on_postgresql():
        stored = _stored_by_statement(caller=caller, submission=submission, now=now)
        if stored is not None:
            return stored
    # Not stored by a statement: the service says why, or returns the answer a replay stored.
    observation, replayed = services.observation_submit(
        annotator=caller.user(), now=now, **submission.service_fields()
    )
    names = selectors.project_tag_names(project=observation.project)
    stored = Stored(observation, names, replayed=replayed)
    if submission.next is None:
        return stored
    return _with_next(
        stored,
        lambda: task_next_for_annotator(
            caller=caller, project_id=observation.project_id, request=submission.next
        ),
    )


def _check_device_user(*, caller: Caller, submission: Submission) -> None:
    """An answer given on its device as another account than the caller's is not theirs to
    send: refused before anything is stored (docs/decisions/045-shared-phone.md)."""
    if submission.device_user is None:
        return
    user_id = caller.user_id
    if user_id is None:  # a token: its owner, looked up only when the answer names an account
        user = caller.user()
        user_id = None if user is None else user.pk
    if submission.device_user != user_id:
        raise AnsweredAsAnother(
            "This answer was given on this device by another account, so it is not stored as "
            "yours. Sign in as that account to send it."
        )


@dataclass(frozen=True, slots=True)
class _Draws:
    """A lease's random draws: whether it is a gold check, and which kind of task. The statement
    and the scheduler's fallback after it use the same ones."""

    gold: float
    kind: float

    @classmethod
    def new(cls) -> _Draws:
        return cls(gold=scheduler.gold_draw(), kind=scheduler.gold_draw())


def _lease_params(*, request: NextTaskRequest, now: datetime, draws: _Draws) -> dict:
    return hotpath.lease_params(
        holding=list(request.holding),
        max_leases=scheduler.MAX_LEASES,
        now=now,
        gold_draw=draws.gold,
        kind_draw=draws.kind,
        reclaim_due_before=now - scheduler.RECLAIM_INTERVAL,
    )


def _offer_of(row: hotpath.NextTaskRow, *, project_id: int) -> Offer | None:
    """The offer of the lease the statement made or handed back, if it did."""
    lease = row.lease()
    if lease is None:
        return None
    tags = selectors.project_tags_at(project_id=project_id, updated_at=row.project_updated_at)
    mechanism = selectors.mechanism_of(
        private=row.private, mechanism=row.mechanism, alpha=row.alpha, n_tags=len(tags)
    )
    return Offer(lease=lease, tags=tags, mechanism=mechanism)


def _offer_by_scheduler(
    *, caller: Caller, project_id: int, request: NextTaskRequest, now: datetime, draws: _Draws
) -> Offer | None:
    """Not the plain case (or not PostgreSQL): the scheduler decides, with the same draws."""
    user = caller.user()
    membership = selectors.membership_for(user=user, project_id=project_id)
    project = membership.project
    lease = scheduler.task_lease_next(
        project=project,
        annotator=user,
        holding=request.holding,
        now=now,
        flagged=membership.flagged,
        gold_draw=draws.gold,
        kind_draw=draws.kind,
    )
    if lease is None:
        return None
    return Offer(
        lease=lease,
        tags=selectors.project_tags(project=project),
        mechanism=selectors.project_mechanism(project=project),
    )


def _with_next(stored: Stored, lease_next) -> Stored:
    """The stored answer with the next task `lease_next()` leases, or why it could not."""
    try:
        offer = lease_next()
    except AuthenticationFailed:
        raise
    except DomainError as exc:  # not a member any more, the lease cap, the project paused
        return Stored(stored.observation, stored.names, stored.replayed, next_error=exc)
    return Stored(stored.observation, stored.names, stored.replayed, next=offer)


def _stored_by_statement(*, caller: Caller, submission: Submission, now: datetime) -> Stored | None:
    """The answer stored by its kind's statement and, when the phone asks, the next task, leased
    by the same statement (`SUBMIT_AND_LEASE`) or, when that leased none, by the scheduler after
    it; None when the statement left the answer to the service (or it is not one the statement
    checks)."""
    kind = KINDS[submission.kind]
    if not kind.fits_statement(submission):
        return None
    draws = lease = None
    if submission.next is not None:
        draws = _Draws.new()
        lease = _lease_params(request=submission.next, now=now, draws=draws)
    result = kinds.submit_plain(
        kind, key=caller.key, user_id=caller.user_id, submission=submission, now=now, lease=lease
    )
    row, next_row = result if lease is not None and result is not None else (result, None)
    if row is None or not row.is_active:
        raise AuthenticationFailed("Invalid token.")
    if row.id is None:
        return None
    names = selectors.project_tag_names_at(
        project_id=row.project_id, updated_at=row.project_updated_at
    )
    stored = Stored(row, names, replayed=False)
    if next_row is None:
        return stored
    offer = _offer_of(next_row, project_id=row.project_id)
    if offer is not None:
        return Stored(row, names, replayed=False, next=offer)
    return _with_next(
        stored,
        lambda: _offer_by_scheduler(
            caller=caller,
            project_id=row.project_id,
            request=submission.next,
            now=now,
            draws=draws,
        ),
    )
