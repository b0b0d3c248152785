"""Submission of an answer to a lease, and the rule set of its counts (a verification answer's
rule set is `services.verification.verification_check`).

The rule set has two parts: what holds whatever the task (`counts_well_formed`), and the task's
own rules (`counts_check`, which applies both). On PostgreSQL the annotator's submission checks
the second part in SQL (`annotation.hotpath`); tests/annotation/test_hotpath.py proves that it
stores exactly what `counts_check` and `privacy_check` accept.

Private projects (issue 13): the phone sends `released` values, randomized by the project's
mechanism, with the mechanism's parameters (`privacy`: name and alpha), never the true counts.
A released value is a whole number from 0 to the window (the releases of several tags are
independent, so their sum may exceed the window).
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
from annotation.models import MAX_TAGS, Assignment, Membership, Observation, Project, TaskKind
from annotation.services.verification import verification_check
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
    counts: Mapping[str, Any], *, names: list[str], length: int, released: bool = False
) -> tuple[list[int], dict[str, list[str]]]:
    """(the counts in the order of `names`, errors by field): one count for each of the task's
    tag `names` and no other, each a whole number from 0 to the window's `length`, together at
    most `length` (unless they are `released` values of a private project, each drawn on its
    own)."""
    field = "released" if released else "counts"
    if not isinstance(counts, Mapping) or set(counts) != set(names):
        return [], {field: [f"Give exactly one count for each of: {', '.join(names)}."]}
    errors: dict[str, list[str]] = {}
    values = []
    for name in names:
        value = counts[name]
        if not _is_whole(value) or not 0 <= value <= length:
            errors.setdefault(field, []).append(
                f"Count for {name} must be a whole number between 0 and {length}."
            )
        else:
            values.append(value)
    if not errors and not released and sum(values) > length:
        errors["counts"] = [f"The counts add up to more than the {length} highlighted words."]
    return values, errors


def privacy_check(
    project: Project, *, counts_given: bool, privacy: Mapping[str, Any] | None
) -> dict[str, list[str]]:
    """Errors by field of an answer's form against the project's privacy: a private project
    takes only `released` values with the project's own mechanism parameters (`privacy`); any
    other project only `counts`."""
    if not project.private:
        if counts_given and privacy is None:
            return {}
        return {"released": ["This project is not private: send the true `counts`."]}
    if counts_given:
        return {
            "counts": [
                "This project is private: send the values released on the phone (`released`) "
                "and the mechanism's parameters (`privacy`), never the true counts."
            ]
        }
    expected = f'{{"mechanism": "{project.mechanism}", "alpha": {project.alpha}}}'
    if privacy is None:
        return {"privacy": [f"Required in this private project: {expected}."]}
    if privacy.get("mechanism") != project.mechanism or privacy.get("alpha") != project.alpha:
        return {
            "privacy": [
                f"The values were released with other parameters than the project's ({expected})."
            ]
        }
    return {}


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
    """(count values, answer, wrong) of `given` for `task`, checked against the task's kind and
    the project as it stands; `InvalidInput` or `ProjectNotActive` says what is wrong."""
    if project.status == Project.Status.ARCHIVED:
        raise ProjectNotActive("This project is archived; it accepts no answers.")
    if task.kind == TaskKind.VERIFY:
        if project.private:  # a Yes / No is not released through the project's mechanism
            raise InvalidInput(
                "This project became private after this task was given: a verification "
                "answer would not be randomized, so it is not taken. Take a new task.",
                fields={"answer": ["Not in a private project."]},
            )
        if given.values is not None or given.privacy is not None:
            raise InvalidInput(
                "This is a verification task: answer it with `answer` (and optionally `wrong`).",
                fields={"counts": ["Not for a verification task."]},
            )
        (answer, wrong), errors = verification_check(given.answer, given.wrong, length=task.length)
        if errors:
            raise InvalidInput("The answer is not valid for this task.", fields=errors)
        return [], answer, wrong
    if given.answer is not None or given.wrong is not None:
        raise InvalidInput(
            "This is a count task: answer it with `counts`.",
            fields={"answer": ["Only for a verification task."]},
        )
    errors = privacy_check(project, counts_given=given.counts is not None, privacy=given.privacy)
    if errors:
        raise InvalidInput("The answer does not fit this project's privacy.", fields=errors)
    all_names = selectors.project_tag_names(project=project)
    values, errors = counts_check(
        given.values,
        names=[all_names[i] for i in task.tags],
        length=task.length,
        released=project.private,
    )
    if errors:
        raise InvalidInput("The counts are not valid for this task.", fields=errors)
    return values, None, None


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
