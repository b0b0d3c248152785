"""Writes of projects, their tag sets and their members."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from django.core.files.storage import default_storage
from django.db import transaction
from django.db.models import F

from annotation import scheduler
from annotation.models import (
    DEFAULT_ALPHA,
    DEFAULT_MECHANISM,
    MAX_ALPHA,
    MAX_PRIVATE_TAGS,
    MAX_TAGS,
    Assignment,
    CorpusImport,
    ImportJob,
    Membership,
    Observation,
    Project,
    Sentence,
    Tag,
    Task,
    new_invite_code,
)
from annotation.tagsets import PRESETS, preset_tags
from common.exceptions import Conflict, InvalidInput, NotFound, ProjectNotActive
from common.text import DEFAULT_LANGUAGE

_PROJECT_FIELDS = (
    "name",
    "description",
    "status",
    "language",
    "window_size",
    "tags_per_task",
    "redundancy",
    "gold_fraction",
    "verification_share",
    "lease_seconds",
    "annotators_may_predict",
    "private",
    "alpha",
    "mechanism",
)
PRIVACY_FIELDS = ("private", "alpha", "mechanism")


def _clean_tags(tags: Sequence[Mapping[str, Any]]) -> list[dict]:
    if not tags:
        raise InvalidInput("A project needs at least one tag.", fields={"tags": ["Required."]})
    if len(tags) > MAX_TAGS:
        raise InvalidInput(f"At most {MAX_TAGS} tags.", fields={"tags": ["Too many tags."]})
    names = [tag["name"] for tag in tags]
    if len(set(names)) != len(names):
        raise InvalidInput("Tag names must be unique.", fields={"tags": ["Duplicate names."]})
    return [
        {
            "name": tag["name"],
            "guideline": tag.get("guideline", ""),
            "examples": list(tag.get("examples", [])),
        }
        for tag in tags
    ]


def _check_settings(project: Project, n_tags: int) -> None:
    if project.tags_per_task is not None and project.tags_per_task > n_tags:
        raise InvalidInput(
            "tags_per_task cannot exceed the number of tags.",
            fields={"tags_per_task": [f"At most {n_tags}."]},
        )
    asked = n_tags if project.tags_per_task is None else project.tags_per_task
    if project.private and n_tags < 2:
        raise InvalidInput(
            "A private project needs at least two tags.", fields={"tags": ["At least 2."]}
        )
    if project.private and asked > MAX_PRIVATE_TAGS:
        raise InvalidInput(
            f"A private project asks at most {MAX_PRIVATE_TAGS} tags per task: the privacy "
            "budget of each answer is split across the tags it asks.",
            fields={"tags_per_task": [f"At most {MAX_PRIVATE_TAGS} in a private project."]},
        )


ALPHA_LIMIT_MESSAGE = (
    f"α is at most {MAX_ALPHA:g}: above it the phone sends the true count almost every time, "
    "so the answers would no longer be private."
)


def _settle_privacy(project: Project, *, previous_alpha: float | None = None) -> None:
    """A private project gets the default level and mechanism where none is given; a project
    that is not private keeps neither. A new level is at most MAX_ALPHA (a project made before
    that cap keeps its own, `previous_alpha`: its answers were released with it)."""
    if project.private:
        project.alpha = DEFAULT_ALPHA if project.alpha is None else float(project.alpha)
        project.mechanism = project.mechanism or DEFAULT_MECHANISM
        if project.alpha > MAX_ALPHA and project.alpha != previous_alpha:
            raise InvalidInput(ALPHA_LIMIT_MESSAGE, fields={"alpha": [ALPHA_LIMIT_MESSAGE]})
    elif project.alpha is not None or project.mechanism:
        raise InvalidInput(
            "alpha and mechanism apply to private projects only: set private to true.",
            fields={
                name: ["Only for a private project."]
                for name in ("alpha", "mechanism")
                if getattr(project, name) not in (None, "")
            },
        )


def _leases_hold(project: Project) -> None:
    """Every lease bumps its annotator's `lease_serial` under that row's lock: bumping them all
    waits for the leases being made now (their tasks are then seen), and a lease begun before
    this transaction commits leases nothing and asks the scheduler again, which reads the
    project afresh (`annotation.hotpath`: `fresh`). Taken before the project's row, as a lease
    takes them (its membership, then the project's row for its assignment's foreign key): the
    other order deadlocked with a lease."""
    Membership.objects.filter(project=project).update(lease_serial=F("lease_serial") + 1)


def _privacy_change_check(project: Project, changed: list[str]) -> None:
    """Privacy is chosen before annotators start: a phone may hold a task leased under the old
    settings and answer it offline, and a true count (or a Yes / No) that has left the phone
    cannot be taken back (the leases being made were waited for: `_leases_hold`)."""
    if project.observations.exists():
        raise Conflict(
            "The privacy settings cannot change once the project has answers: every answer "
            "was released under them.",
            fields={name: ["Fixed: the project has answers."] for name in changed},
        )
    if Assignment.objects.filter(project=project).exists():
        raise Conflict(
            "The privacy settings cannot change once annotators have been given tasks: a "
            "phone may hold one under the old settings and answer it offline. Create a new "
            "project with the privacy settings you want.",
            fields={name: ["Fixed: annotators have been given tasks."] for name in changed},
        )


@transaction.atomic
def project_create(
    *,
    owner,
    name: str,
    tags: Sequence[Mapping[str, Any]] | None = None,
    tag_preset: str | None = None,
    description: str = "",
    language: str = DEFAULT_LANGUAGE,
    window_size: int = 5,
    tags_per_task: int | None = None,
    redundancy: int = 3,
    gold_fraction: float = 0.0,
    verification_share: float | None = None,  # automatic: by value per second
    lease_seconds: int = 600,
    annotators_may_predict: bool = False,
    private: bool = False,
    alpha: float | None = None,
    mechanism: str = "",
) -> Project:
    if tag_preset is not None:
        if tag_preset not in PRESETS:
            raise InvalidInput("Unknown tag preset.", fields={"tag_preset": ["Unknown preset."]})
        tags = preset_tags(tag_preset, language)  # guidelines in the project's language
    clean = _clean_tags(tags or [])
    project = Project(
        owner=owner,
        name=name,
        description=description,
        language=language,
        window_size=window_size,
        tags_per_task=tags_per_task,
        redundancy=redundancy,
        gold_fraction=gold_fraction,
        verification_share=verification_share,
        lease_seconds=lease_seconds,
        annotators_may_predict=annotators_may_predict,
        private=private,
        alpha=alpha,
        mechanism=mechanism or "",
    )
    _settle_privacy(project)
    _check_settings(project, len(clean))
    project.save()
    Tag.objects.bulk_create(Tag(project=project, position=i, **tag) for i, tag in enumerate(clean))
    Membership.objects.create(project=project, user=owner, role=Membership.Role.MANAGER)
    return project


@transaction.atomic
def project_update(
    *, project: Project, tags: Sequence[Mapping[str, Any]] | None = None, **fields: Any
) -> Project:
    """Change settings and/or the tag set. Tag names and order are frozen once there are
    sentences; guidelines and examples stay editable."""
    unknown = set(fields) - set(_PROJECT_FIELDS)
    if unknown:
        raise InvalidInput(f"Unknown fields: {', '.join(sorted(unknown))}.")
    if set(fields) & set(PRIVACY_FIELDS):
        _leases_hold(project)  # before the project's row: the order a lease takes them in
    project = Project.objects.select_for_update().get(pk=project.pk)
    changes_language = fields.get("language", project.language) != project.language
    if changes_language and project.sentences.exists():
        raise Conflict(
            "The language cannot change once the project has sentences: they were cut "
            "into words by the language's rules.",
            fields={"language": ["Frozen: the project has sentences."]},
        )
    before = {name: getattr(project, name) for name in PRIVACY_FIELDS}
    if fields.get("private") is False:  # no longer private: its level and mechanism go too
        project.alpha, project.mechanism = None, ""
    for name, value in fields.items():
        setattr(project, name, "" if name == "mechanism" and value is None else value)
    _settle_privacy(project, previous_alpha=before["alpha"])
    changed = [name for name in PRIVACY_FIELDS if getattr(project, name) != before[name]]
    if changed:
        _privacy_change_check(project, changed)
    n_tags = project.tags.count()
    if tags is not None:
        clean = _clean_tags(tags)
        current = list(project.tags.order_by("position"))
        if [t.name for t in current] != [t["name"] for t in clean]:
            if project.sentences.exists():
                raise Conflict(
                    "Tag names and order cannot change once the project has sentences; "
                    "guidelines and examples can.",
                    fields={"tags": ["Frozen: the project has sentences."]},
                )
            project.tags.all().delete()
            Tag.objects.bulk_create(
                Tag(project=project, position=i, **tag) for i, tag in enumerate(clean)
            )
        else:
            for tag, new in zip(current, clean, strict=True):
                tag.guideline, tag.examples = new["guideline"], new["examples"]
            Tag.objects.bulk_update(current, ["guideline", "examples"])
        n_tags = len(clean)
    _check_settings(project, n_tags)
    project.save()  # also bumps updated_at, which keys the cached tag list
    return project


@transaction.atomic
def project_delete(*, project: Project, before: Callable[[], None] | None = None) -> None:
    """Delete a project and everything in it (sentences, tasks, answers, models' rows).

    Requests that delete one project at once: the first deletes it, the others find it gone
    (`NotFound`). A retrain running meanwhile is not waited for: its lock row goes with the
    project, so it writes nothing (`learning.locks.lock_confirm`). `before()` runs once the
    project is locked (the caller lists what to delete outside the database). The answers
    first: an answer protects its assignment from a cascade."""
    project = Project.objects.select_for_update().filter(pk=project.pk).first()
    if project is None:
        raise NotFound("No such project.")
    if before is not None:
        before()
    uploads = list(
        ImportJob.objects.filter(project=project)
        .exclude(upload="")
        .values_list("upload", flat=True)
    )
    transaction.on_commit(lambda: [default_storage.delete(name) for name in uploads])
    for model in (Observation, Assignment, Task, Sentence, ImportJob, CorpusImport):
        model.objects.filter(project=project).delete()
    project.delete()


def project_rotate_invite(*, project: Project) -> str:
    project.invite_code = new_invite_code()
    project.save(update_fields=["invite_code", "updated_at"])
    return project.invite_code


def membership_join(*, user, code: str) -> tuple[Membership, bool]:
    """Join the project whose invite code is `code` as an annotator (no-op if a member)."""
    project = Project.objects.filter(invite_code=code).first() if code else None
    if project is None:
        raise NotFound("No project has this invite code.")
    if project.status == Project.Status.ARCHIVED:
        raise ProjectNotActive("This project is archived.")
    membership, created = Membership.objects.get_or_create(
        project=project, user=user, defaults={"role": Membership.Role.ANNOTATOR}
    )
    return membership, created


@transaction.atomic
def memberships_flag_update(*, project_id: int, flags: Mapping[int, str]) -> list[int]:
    """Flag exactly the annotators in `flags` (user id → reason) and clear everyone else.

    The regions a newly flagged annotator answered get their slot back, so that the redundancy a
    manager asked for is met by answers that count. Returns the newly flagged user ids.
    """
    members = Membership.objects.select_for_update().filter(
        project_id=project_id, role=Membership.Role.ANNOTATOR
    )
    newly = list(
        members.filter(user_id__in=list(flags), flagged=False).values_list("user_id", flat=True)
    )
    members.filter(flagged=True).exclude(user_id__in=list(flags)).update(
        flagged=False, flag_reason=""
    )
    for user_id, reason in flags.items():
        members.filter(user_id=user_id).update(flagged=True, flag_reason=reason[:300])
    answered = Assignment.objects.filter(
        project_id=project_id,
        annotator_id__in=newly,
        status=Assignment.Status.SUBMITTED,
        task__is_gold=False,
        holds_slot=True,  # answers given while flagged took no slot
    ).values("task_id")
    Task.objects.filter(pk__in=answered).update(open_slots=F("open_slots") + 1)
    return newly


@transaction.atomic
def membership_remove(*, project: Project, user_id: int) -> None:
    """Remove a member; their unanswered leases are released (a rejoin starts clean)."""
    if user_id == project.owner_id:
        raise Conflict("The owner of a project cannot be removed from it.")
    deleted, _ = Membership.objects.filter(project=project, user_id=user_id).delete()
    if not deleted:
        raise NotFound("No such member.")
    scheduler.assignments_release(project=project, annotator_id=user_id)
