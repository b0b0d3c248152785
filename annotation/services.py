"""Every write of the annotation app: typed, keyword-only `<thing>_<action>` functions.

Task leasing lives in `annotation.scheduler`; reading lives in `annotation.selectors`; accounts
in `accounts.services`.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, BinaryIO

from django.db import IntegrityError, transaction
from django.db.models import Exists, F, Max, OuterRef, Subquery
from django.utils import timezone

from annotation import importers, scheduler, selectors
from annotation.models import (
    MAX_TAGS,
    Assignment,
    CorpusImport,
    Membership,
    Observation,
    Project,
    Sentence,
    Tag,
    Task,
    new_invite_code,
)
from annotation.tagsets import PRESETS
from common.exceptions import (
    Conflict,
    InvalidCorpus,
    InvalidInput,
    LeaseNotYours,
    NotFound,
    PayloadTooLarge,
    ProjectNotActive,
)

# Sentences are stored a batch at a time, so an import holds at most a batch in memory, however
# large the file: at most this many sentences, and at most this many tokens (long sentences).
_SENTENCE_BATCH = 1000
_TOKEN_BATCH = 20_000
_PROJECT_FIELDS = (
    "name",
    "description",
    "status",
    "window_size",
    "tags_per_task",
    "redundancy",
    "gold_fraction",
    "lease_seconds",
)


# Projects ---------------------------------------------------------------------------------------


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


@transaction.atomic
def project_create(
    *,
    owner,
    name: str,
    tags: Sequence[Mapping[str, Any]] | None = None,
    tag_preset: str | None = None,
    description: str = "",
    window_size: int = 5,
    tags_per_task: int | None = None,
    redundancy: int = 3,
    gold_fraction: float = 0.0,
    lease_seconds: int = 600,
) -> Project:
    if tag_preset is not None:
        if tag_preset not in PRESETS:
            raise InvalidInput("Unknown tag preset.", fields={"tag_preset": ["Unknown preset."]})
        tags = PRESETS[tag_preset]
    clean = _clean_tags(tags or [])
    project = Project(
        owner=owner,
        name=name,
        description=description,
        window_size=window_size,
        tags_per_task=tags_per_task,
        redundancy=redundancy,
        gold_fraction=gold_fraction,
        lease_seconds=lease_seconds,
    )
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
    project = Project.objects.select_for_update().get(pk=project.pk)
    for name, value in fields.items():
        setattr(project, name, value)
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
    ).values("task_id")
    Task.objects.filter(pk__in=answered).update(open_slots=F("open_slots") + 1)
    return newly


def membership_remove(*, project: Project, user_id: int) -> None:
    if user_id == project.owner_id:
        raise Conflict("The owner of a project cannot be removed from it.")
    deleted, _ = Membership.objects.filter(project=project, user_id=user_id).delete()
    if not deleted:
        raise NotFound("No such member.")


# Corpus -----------------------------------------------------------------------------------------


def _split_for(
    tags: list[str] | None, rng: random.Random, evaluation: float, gold_check: float
) -> str:
    if tags is None:
        return Sentence.Split.TRAIN
    draw = rng.random()
    if draw < evaluation:
        return Sentence.Split.EVALUATION
    if draw < evaluation + gold_check:
        return Sentence.Split.GOLD_CHECK
    return Sentence.Split.TRAIN


@transaction.atomic
def corpus_import(
    *,
    project: Project,
    user,
    file: BinaryIO,
    filename: str = "",
    format: str,
    tag_column: str = "upos",
    evaluation_fraction: float = 0.0,
    gold_check_fraction: float = 0.0,
    seed: int | None = None,
    max_bytes: int,
) -> CorpusImport:
    """Import a corpus file, streaming, all or nothing; generate a round of tasks for it."""
    if not (0 <= evaluation_fraction <= 1 and 0 <= gold_check_fraction <= 1) or (
        evaluation_fraction + gold_check_fraction > 1
    ):
        raise InvalidInput(
            "evaluation_fraction and gold_check_fraction must be in 0..1 and sum to at most 1."
        )
    if project.status == Project.Status.ARCHIVED:
        raise ProjectNotActive("This project is archived.")
    project = Project.objects.select_for_update().get(pk=project.pk)  # one import at a time
    tag_index = {name: i for i, name in enumerate(selectors.project_tag_names(project=project))}
    rng = random.Random(seed)
    record = CorpusImport.objects.create(
        project=project,
        created_by=user,
        filename=filename[:255],
        format=format,
        tag_column=tag_column if format == CorpusImport.Format.CONLLU else "",
    )
    position = (project.sentences.aggregate(m=Max("position"))["m"] or -1) + 1
    batch: list[Sentence] = []
    n_sentences = n_gold = batch_tokens = 0
    try:
        lines = importers.read_lines(file, max_bytes=max_bytes)
        for parsed in importers.parse(lines, format=format, tag_column=tag_column):
            gold = None
            if parsed.tags is not None:
                try:
                    gold = [tag_index[tag] for tag in parsed.tags]
                except KeyError as exc:
                    raise importers.CorpusError(
                        parsed.line_number,
                        f"tag {exc.args[0]!r} is not in the project's tag set",
                    ) from exc
                n_gold += 1
            batch.append(
                Sentence(
                    project=project,
                    corpus_import=record,
                    position=position,
                    tokens=parsed.tokens,
                    length=len(parsed.tokens),
                    gold_tags=gold,
                    split=_split_for(gold, rng, evaluation_fraction, gold_check_fraction),
                )
            )
            position += 1
            n_sentences += 1
            batch_tokens += len(parsed.tokens)
            if len(batch) >= _SENTENCE_BATCH or batch_tokens >= _TOKEN_BATCH:
                Sentence.objects.bulk_create(batch)
                batch.clear()
                batch_tokens = 0
    except importers.CorpusError as exc:
        raise InvalidCorpus(str(exc), line_number=exc.line_number) from exc
    except importers.CorpusTooLarge as exc:
        raise PayloadTooLarge(f"The corpus is larger than {max_bytes} bytes.") from exc
    Sentence.objects.bulk_create(batch)
    if not n_sentences:
        raise InvalidCorpus("line 1: the file contains no sentences", line_number=1)
    record.sentences, record.gold_sentences = n_sentences, n_gold
    record.save(update_fields=["sentences", "gold_sentences"])
    scheduler.tasks_generate(
        project=project,
        sentences=record.sentence_set.filter(split=Sentence.Split.TRAIN)
        .order_by("position")
        .values_list("id", "length")
        .iterator(chunk_size=2000),
        n_tags=len(tag_index),
        rng=rng,
        round=project.task_rounds,
    )
    return record


# Observations -----------------------------------------------------------------------------------
#
# The rule set of an answer's counts, in two parts: what holds whatever the task
# (`counts_well_formed`), and the task's own rules (`counts_check`, which applies both). On
# PostgreSQL the annotator's submission checks the second part in SQL (`annotation.hotpath`);
# tests/annotation/test_hotpath.py proves it stores exactly what `counts_check` accepts.

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
            raise Conflict("This idempotency key was already used for another assignment.")
        raise LeaseNotYours("No such assignment of yours.")
    if assignment.replay_of is not None:
        if assignment.replay_of != assignment_id:
            raise Conflict("This idempotency key was already used for another assignment.")
        return _stored_answer(annotator=annotator, idempotency_key=idempotency_key), True
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
            return stored, True
        raise Conflict("This assignment has already been answered.") from exc
    return observation, False


def _stored_answer(*, annotator, idempotency_key: str) -> Observation | None:
    return (
        Observation.objects.select_related("project")
        .filter(annotator=annotator, idempotency_key=idempotency_key)
        .first()
    )
