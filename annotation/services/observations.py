"""Submission of an answer to a lease, and the rule set of its counts.

The rule set has two parts: what holds whatever the task (`counts_well_formed`), and the task's
own rules (`counts_check`, which applies both). On PostgreSQL the annotator's submission checks
the second part in SQL (`annotation.hotpath`); tests/annotation/test_hotpath.py proves that it
stores exactly what `counts_check` accepts.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Exists, OuterRef, Subquery
from django.utils import timezone

from annotation import selectors
from annotation.models import MAX_TAGS, Assignment, Membership, Observation, Project
from common.exceptions import (
    Conflict,
    IdempotencyKeyReused,
    InvalidInput,
    LeaseNotYours,
    ProjectNotActive,
)

_INT32 = 2**31


def _is_whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def counts_well_formed(counts: Mapping[str, Any]) -> bool:
    """The counts are at most `MAX_TAGS` whole numbers that fit a 32-bit integer, by tag name:
    what any task's answer is, before its own rules."""
    return len(counts) <= MAX_TAGS and all(
        isinstance(name, str) and _is_whole(value) and -_INT32 < value < _INT32
        for name, value in counts.items()
    )


def counts_check(
    counts: Mapping[str, Any], *, names: list[str], length: int
) -> tuple[list[int], dict[str, list[str]]]:
    """(the counts in the order of `names`, errors by field): one count for each of the task's
    tag `names` and no other, each a whole number from 0 to the window's `length`, together at
    most `length`."""
    if not isinstance(counts, Mapping) or set(counts) != set(names):
        return [], {"counts": [f"Give exactly one count for each of: {', '.join(names)}."]}
    errors: dict[str, list[str]] = {}
    values = []
    for name in names:
        value = counts[name]
        if not _is_whole(value) or not 0 <= value <= length:
            errors.setdefault("counts", []).append(
                f"Count for {name} must be a whole number between 0 and {length}."
            )
        else:
            values.append(value)
    if not errors and sum(values) > length:
        errors["counts"] = [f"The counts add up to more than the {length} highlighted words."]
    return values, errors


def observation_submit(
    *,
    annotator,
    assignment_id: int,
    counts: Mapping[str, Any],
    idempotency_key: str,
    seconds_on_device: float | None = None,
    now: datetime | None = None,
) -> tuple[Observation, bool]:
    """Store the answer to a lease. Returns (observation, replayed), the observation with its
    project loaded.

    Replaying an idempotency key returns the stored observation; an answer that arrives after
    the lease expired is still stored unless the project is archived.
    """
    now = now or timezone.now()
    # One read, so that what it says of the lease, the membership and the key holds together.
    assignment = (
        Assignment.objects.select_related("task", "project")
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
        return _replayed(stored, counts=counts, seconds_on_device=seconds_on_device), True
    if not assignment.is_member:
        raise LeaseNotYours("No such assignment of yours.")
    project, task = assignment.project, assignment.task
    if project.status == Project.Status.ARCHIVED:
        raise ProjectNotActive("This project is archived; it accepts no answers.")
    if assignment.status == Assignment.Status.SUBMITTED:
        raise Conflict("This assignment has already been answered.")
    all_names = selectors.project_tag_names(project=project)
    values, errors = counts_check(
        counts, names=[all_names[i] for i in task.tags], length=task.length
    )
    if errors:
        raise InvalidInput("The counts are not valid for this task.", fields=errors)
    try:
        with transaction.atomic():
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
                tags=task.tags,
                counts=values,
                is_gold=task.is_gold,
                seconds_on_device=seconds_on_device,
                idempotency_key=idempotency_key,
                submitted_at=now,
            )
    except IntegrityError as exc:
        # A concurrent submission won: a replay of this key, or a different answer.
        stored = _stored_answer(annotator=annotator, idempotency_key=idempotency_key)
        if stored is not None and stored.assignment_id == assignment_id:
            return _replayed(stored, counts=counts, seconds_on_device=seconds_on_device), True
        raise Conflict("This assignment has already been answered.") from exc
    return observation, False


_KEY_OTHER_ASSIGNMENT = (
    "This idempotency key was already used for another assignment; that answer stands and "
    "this one was not stored."
)


def _replayed(stored: Observation, *, counts, seconds_on_device) -> Observation:
    """`stored` when the resent body is the one it stored (a replay), else
    `IdempotencyKeyReused`: a client told "replayed" would believe its new answer was taken."""
    names = selectors.project_tag_names(project=stored.project)
    answer = {names[t]: c for t, c in zip(stored.tags, stored.counts, strict=True)}
    if answer != counts or stored.seconds_on_device != seconds_on_device:
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
