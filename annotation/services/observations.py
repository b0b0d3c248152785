"""Submission of an answer to a lease, on the ORM: the whole rule, which says why an answer is
refused. Each task kind's rules are in its module (`annotation.kinds`: `count.counts_check` and
`count.privacy_check`, `verify.verification_check`), beside the statement that stores the plain
case on PostgreSQL; whatever that statement does not store comes here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Exists, OuterRef, Subquery
from django.utils import timezone

from annotation import selectors
from annotation.kinds import KINDS
from annotation.kinds.count import counts_check, counts_well_formed, privacy_check
from annotation.models import Assignment, Membership, Observation, Project, TaskKind
from common.exceptions import (
    Conflict,
    IdempotencyKeyReused,
    LeaseNotYours,
    ProjectNotActive,
)

__all__ = ["counts_check", "counts_well_formed", "observation_submit", "privacy_check"]


def observation_submit(
    *,
    annotator,
    assignment_id: int,
    idempotency_key: str,
    counts: Mapping[str, Any] | None = None,
    answer: bool | None = None,
    wrong: int | None = None,
    seconds_on_device: float | None = None,
    now: datetime | None = None,
    released: Mapping[str, Any] | None = None,
    privacy: Mapping[str, Any] | None = None,
) -> tuple[Observation, bool]:
    """Store the answer to a lease: the `counts` of a count task, or in a private project the
    `released` values with the mechanism's parameters `privacy` ({"mechanism", "alpha"}); the
    `answer` (and optionally the `wrong` word) of a verification task. Returns
    (observation, replayed), the observation with its project loaded.

    Replaying an idempotency key returns the stored observation; an answer that arrives after
    the lease expired is still stored unless the project is archived.
    """
    given = Answer(counts=counts, released=released, privacy=privacy, answer=answer, wrong=wrong)
    now = now or timezone.now()
    # One read, so that what it says of the lease, the membership and the key holds together.
    assignment = (
        Assignment.objects.select_related("task")
        .annotate(
            is_member=Exists(
                Membership.objects.filter(project=OuterRef("project"), user=annotator)
            ),
            replay_of=Subquery(
                Observation.objects.filter(
                    annotator=annotator, idempotency_key=idempotency_key
                ).values("assignment_id")[:1]
            ),
        )
        .filter(pk=assignment_id, annotator=annotator)
        .first()
    )
    if assignment is None:
        if _stored_answer(annotator=annotator, idempotency_key=idempotency_key) is not None:
            raise IdempotencyKeyReused(_KEY_OTHER_ASSIGNMENT)
        raise LeaseNotYours("No such assignment of yours.")
    if assignment.replay_of is not None:
        if assignment.replay_of != assignment_id:
            raise IdempotencyKeyReused(_KEY_OTHER_ASSIGNMENT)
        stored = _stored_answer(annotator=annotator, idempotency_key=idempotency_key)
        return _replayed(stored, answer=given, seconds_on_device=seconds_on_device), True
    if not assignment.is_member:
        raise LeaseNotYours("No such assignment of yours.")
    task = assignment.task
    if assignment.status == Assignment.Status.SUBMITTED:
        raise Conflict("This assignment has already been answered.")
    try:
        with transaction.atomic():
            # The project's status and privacy as they stand, its row locked until the answer
            # is stored: a switch to private committed while this answer was on its way is
            # seen here, and a switch that comes later waits and then sees the answer (issue
            # 24; the one statement takes the same row lock).
            project = _project_locked(assignment.project_id)
            values, answer, wrong = _answer_checked(project, task, given)
            answered = Assignment.objects.filter(
                pk=assignment_id,
                status__in=[Assignment.Status.LEASED, Assignment.Status.EXPIRED],
            ).update(status=Assignment.Status.SUBMITTED, submitted_at=now)
            if not answered:
                raise IntegrityError("assignment answered concurrently")
            observation = Observation.objects.create(
                project=project,
                annotator=annotator,
                assignment=assignment,
                sentence_id=task.sentence_id,
                start=task.start,
                length=task.length,
                kind=task.kind,
                tags=task.tags,
                counts=values,
                shown_tags=task.shown_tags,
                model_version=task.model_version,
                answer=answer,
                wrong=wrong,
                is_gold=task.is_gold,
                seconds_on_device=seconds_on_device,
                idempotency_key=idempotency_key,
                submitted_at=now,
                mechanism=project.mechanism if project.private else "",
                alpha=project.alpha if project.private else None,
            )
    except IntegrityError as exc:
        # A concurrent submission won: a replay of this key, or a different answer.
        stored = _stored_answer(annotator=annotator, idempotency_key=idempotency_key)
        if stored is not None and stored.assignment_id == assignment_id:
            return _replayed(stored, answer=given, seconds_on_device=seconds_on_device), True
        raise Conflict("This assignment has already been answered.") from exc
    return observation, False


def _project_locked(project_id: int) -> Project:
    """The project, its row locked against a concurrent change of its settings (FOR NO KEY
    UPDATE: `project_update` waits for it; the one statement's FOR KEY SHARE does not)."""
    return Project.objects.select_for_update(no_key=True).get(pk=project_id)


def _answer_checked(
    project: Project, task, given: Answer
) -> tuple[list[int], bool | None, int | None]:
    """(count values, answer, wrong) of `given` for `task`, by the rules of the task's kind,
    against the project as it stands; `InvalidInput` or `ProjectNotActive` says what is wrong."""
    if project.status == Project.Status.ARCHIVED:
        raise ProjectNotActive("This project is archived; it accepts no answers.")
    return KINDS[task.kind].answer_check(project, task, given)


_KEY_OTHER_ASSIGNMENT = (
    "This idempotency key was already used for another assignment; that answer stands and "
    "this one was not stored."
)


@dataclass(frozen=True)
class Answer:
    """What a submission says: `counts`, or `released` values and their `privacy`; or for a
    verification task its `answer` and `wrong` word."""

    counts: Mapping[str, Any] | None
    released: Mapping[str, Any] | None
    privacy: Mapping[str, Any] | None
    answer: bool | None = None
    wrong: int | None = None

    @property
    def values(self) -> Mapping[str, Any] | None:
        return self.counts if self.counts is not None else self.released

    def same_as(self, stored: Observation, names: list[str]) -> bool:
        if stored.kind == TaskKind.VERIFY:
            return (
                self.values is None
                and self.privacy is None
                and self.answer is stored.answer
                and self.wrong == stored.wrong
            )
        if self.answer is not None or self.wrong is not None:
            return False
        values = {names[t]: c for t, c in zip(stored.tags, stored.counts, strict=True)}
        if not stored.mechanism:
            return self.released is None and self.privacy is None and self.counts == values
        return (
            self.counts is None
            and self.released == values
            and self.privacy is not None
            and self.privacy.get("mechanism") == stored.mechanism
            and self.privacy.get("alpha") == stored.alpha
        )


def _replayed(stored: Observation, *, answer: Answer, seconds_on_device) -> Observation:
    """`stored` when the resent body is the one it stored (a replay), else
    `IdempotencyKeyReused`: a client told "replayed" would believe its new answer was taken."""
    names = selectors.project_tag_names(project=stored.project)
    if not answer.same_as(stored, names) or stored.seconds_on_device != seconds_on_device:
        raise IdempotencyKeyReused(
            "This idempotency key was already used with a different answer; the first answer "
            "stands and this one was not stored. Use a new key for a new answer."
        )
    return stored


def _stored_answer(*, annotator, idempotency_key: str) -> Observation | None:
    return (
        Observation.objects.select_related("project")
        .filter(annotator=annotator, idempotency_key=idempotency_key)
        .first()
    )
