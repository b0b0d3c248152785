"""Every read of the annotation app, scoped to what the caller may see.

`membership_for` is the gate of every project endpoint: a project the caller is not a member of
does not exist for them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np
from django.db.models import Avg, Count, Q, QuerySet, Sum
from django.utils import timezone

from annotation.models import (
    Assignment,
    CorpusImport,
    ImportJob,
    Membership,
    Observation,
    Project,
    Sentence,
    Tag,
    Task,
    TaskKind,
)
from common.exceptions import NotFound
from learning.core.privacy import Mechanism

_TAG_CACHE_SIZE = 256
_tag_cache: dict[tuple[int, object], list[dict]] = {}


def membership_for(*, user, project_id: int) -> Membership:
    """The caller's membership of a project, with the project loaded; NotFound if none."""
    membership = (
        Membership.objects.select_related("project")
        .filter(project_id=project_id, user=user)
        .first()
        if user.is_authenticated
        else None
    )
    if membership is None:
        raise NotFound("Not found.")
    return membership


@dataclass(frozen=True)
class InvitePrivacy:
    """What a private project's privacy level means for one answer, in the terms the invite
    page uses: `alpha` and `mechanism` as set; `true_share` the probability that a released
    count is the true one (over the true counts, at the project's window and tags per task);
    `odds` = e^α, the most by which any answer is likelier under one true answer than another."""

    alpha: float
    mechanism: str
    true_share: float
    odds: float

    @property
    def true_percent(self) -> str:
        """`true_share` as a percentage a reader trusts: 99.8, not a rounded-up 100."""
        percent = 100 * self.true_share
        return f"{percent:.1f}" if percent >= 99 else f"{percent:.0f}"

    @property
    def odds_text(self) -> str:
        return f"{self.odds:,.0f}" if self.odds >= 10 else f"{self.odds:.1f}"


def invite_privacy(*, code: str) -> InvitePrivacy | None:
    """The privacy of the project this invite code names, for the invitee to read before they
    join; None when it is not private (or the code is unknown, which joining reports)."""
    project = Project.objects.filter(invite_code=code, private=True).first() if code else None
    if project is None:
        return None
    mechanism = project_mechanism(project=project)
    n_tags = mechanism.n_tags
    asked = min(project.tags_per_task or n_tags, n_tags)
    channel = mechanism.channel(project.window_size, asked)
    return InvitePrivacy(
        alpha=project.alpha,
        mechanism=project.mechanism,
        true_share=float(np.diagonal(channel).mean()),
        odds=float(np.exp(project.alpha)),
    )


def memberships_of_user(*, user) -> QuerySet[Membership]:
    return Membership.objects.filter(user=user).select_related("project").order_by("project_id")


def project_tags(*, project: Project) -> list[dict]:
    """The ordered tag set as dicts (index, name, guideline, examples).

    Cached per process, keyed by the project's `updated_at` (every tag change saves the project).
    """
    return project_tags_at(project_id=project.pk, updated_at=project.updated_at)


def project_tags_at(*, project_id: int, updated_at) -> list[dict]:
    """`project_tags` of the project `project_id` as of `updated_at`, for a caller that read the
    two columns without loading the project (`annotation.hotpath`)."""
    key = (project_id, updated_at)
    tags = _tag_cache.get(key)
    if tags is None:
        tags = [
            {"index": t.position, "name": t.name, "guideline": t.guideline, "examples": t.examples}
            for t in Tag.objects.filter(project_id=project_id).order_by("position")
        ]
        if len(_tag_cache) >= _TAG_CACHE_SIZE:
            _tag_cache.clear()
        _tag_cache[key] = tags
    return tags


def project_mechanism(*, project: Project) -> Mechanism | None:
    """The privacy mechanism of a private project (None when it is not private)."""
    return mechanism_of(
        private=project.private,
        mechanism=project.mechanism,
        alpha=project.alpha,
        n_tags=len(project_tags(project=project)),
    )


def mechanism_of(
    *, private: bool, mechanism: str, alpha: float | None, n_tags: int
) -> Mechanism | None:
    """`project_mechanism` from the project's columns, for a caller that read them without
    loading the project (`annotation.hotpath`)."""
    return Mechanism(mechanism, alpha, n_tags) if private else None


def project_frozen_fields(*, project: Project) -> list[str]:
    """The settings that can no longer change: the tag names and order, and the language, once
    the project has sentences; the privacy settings once it has answers."""
    frozen = ["language", "tags"] if project.sentences.exists() else []
    if project.observations.exists():
        frozen += ["private", "alpha", "mechanism"]
    return frozen


def project_tag_names(*, project: Project) -> list[str]:
    return project_tag_names_at(project_id=project.pk, updated_at=project.updated_at)


def project_tag_names_at(*, project_id: int, updated_at) -> list[str]:
    return [tag["name"] for tag in project_tags_at(project_id=project_id, updated_at=updated_at)]


def members_with_counts(*, project: Project) -> QuerySet[Membership]:
    return (
        Membership.objects.filter(project=project)
        .select_related("user")
        .annotate(
            n_observations=Count(
                "user__observations", filter=Q(user__observations__project=project)
            )
        )
        .order_by("id")
    )


def imports_of_project(*, project: Project) -> QuerySet[CorpusImport]:
    """The project's imports, each with `split_counts` (sentences by split), in one query."""
    return (
        CorpusImport.objects.filter(project=project)
        .annotate(
            **{
                f"n_{split}": Count("sentence_set", filter=Q(sentence_set__split=split))
                for split in Sentence.Split.values
            }
        )
        .order_by("id")
    )


def import_split_counts(record: CorpusImport) -> dict[str, int]:
    """Sentences by split of an import read by `imports_of_project`."""
    return {split: getattr(record, f"n_{split}") for split in Sentence.Split.values}


def import_jobs_of_project(*, project: Project) -> QuerySet[ImportJob]:
    """The project's import jobs, newest first."""
    return ImportJob.objects.filter(project=project).order_by("-id")


def import_jobs_due(*, now: datetime, grace: timedelta, stale: timedelta) -> list[int]:
    """Jobs to queue (again): queued for longer than `grace` (their message was lost: the broker
    was down), or running without a report for longer than `stale` (their worker died)."""
    return list(
        ImportJob.objects.filter(
            Q(status=ImportJob.Status.QUEUED, created_at__lt=now - grace)
            | Q(status=ImportJob.Status.RUNNING, heartbeat_at__lt=now - stale)
        )
        .order_by("id")
        .values_list("id", flat=True)[:100]
    )


def import_job_of_project(*, project: Project, job_id: int) -> ImportJob:
    job = ImportJob.objects.filter(project=project, pk=job_id).first()
    if job is None:
        raise NotFound("No such import job.")
    return job


def sentences_of_project(*, project: Project) -> QuerySet[Sentence]:
    return Sentence.objects.filter(project=project).order_by("position")


def observations_of_project(*, project: Project) -> QuerySet[Observation]:
    return Observation.objects.filter(project=project).order_by("id")


def project_stats(*, project: Project) -> dict:
    splits = dict(
        Sentence.objects.filter(project=project)
        .values_list("split")
        .annotate(n=Count("id"))
        .order_by()
    )
    tokens = Sentence.objects.filter(project=project).aggregate(n=Sum("length"))["n"] or 0
    # Coverage is of the count tasks: each model version brings verification tasks of its own.
    tasks = Task.objects.filter(project=project, is_gold=False, kind=TaskKind.COUNT).aggregate(
        total=Count("id"),
        complete=Count("id", filter=Q(open_slots=0)),
    )
    observations = Observation.objects.filter(project=project).aggregate(
        total=Count("id"),
        gold=Count("id", filter=Q(is_gold=True)),
        annotators=Count("annotator", distinct=True),
        **{f"n_{kind}": Count("id", filter=Q(kind=kind)) for kind in TaskKind.values},
        **{
            f"seconds_{kind}": Avg("seconds_on_device", filter=Q(kind=kind))
            for kind in TaskKind.values
        },
    )
    live = Assignment.objects.filter(
        project=project, status=Assignment.Status.LEASED, expires_at__gt=timezone.now()
    ).count()
    return {
        "sentences": {split: splits.get(split, 0) for split in Sentence.Split.values},
        "tokens": tokens,
        "tasks": tasks["total"],
        "regions_complete": tasks["complete"],
        "leases_live": live,
        "observations": observations["total"],
        "gold_observations": observations["gold"],
        "annotators": observations["annotators"],
        # Per task kind: answers, and the mean seconds an answer took on the phone (null
        # before the first answer that says).
        "by_kind": {
            kind: {
                "observations": observations[f"n_{kind}"],
                "seconds_per_answer": None
                if observations[f"seconds_{kind}"] is None
                else round(observations[f"seconds_{kind}"], 2),
            }
            for kind in TaskKind.values
        },
    }


# The check-task score counts only answers at least this old and only once there are this many,
# so that a change in the score never tells an annotator which of their recent answers was a check.
CHECK_SCORE_DELAY = timedelta(hours=1)
CHECK_SCORE_MIN_ANSWERS = 5


def check_answer_right(
    *, kind: str, window: list[int], tags, counts, shown_tags, answer, wrong
) -> bool:
    """Whether a gold check answer is right, given the gold tags of its `window`: every count
    exact; or for a verification task, Yes exactly when every shown tag is the gold one (and a
    tapped wrong word, after a No, the first one that is not)."""
    if kind == TaskKind.VERIFY:
        errors = [j for j, (g, s) in enumerate(zip(window, shown_tags, strict=True)) if g != s]
        if answer:
            return not errors
        return bool(errors) and (wrong is None or wrong == errors[0])
    return all(window.count(tag) == count for tag, count in zip(tags, counts, strict=True))


def annotator_check_score(*, project: Project, user, now: datetime) -> float | None:
    """Share of the annotator's gold check answers that were right (`check_answer_right`).

    In a private project only released values are known, so the share is estimated
    (`_private_check_score`) and needs more answers before it shows."""
    answers = Observation.objects.filter(
        project=project,
        annotator=user,
        is_gold=True,
        submitted_at__lte=now - CHECK_SCORE_DELAY,
        sentence__gold_tags__isnull=False,
    )
    if project.private:
        rows = answers.values_list("start", "length", "tags", "counts", "sentence__gold_tags")
        return _private_check_score(project=project, rows=rows)
    rows = answers.values_list(
        "kind", "start", "length", "tags", "counts", "shown_tags", "answer", "wrong",
        "sentence__gold_tags",
    )  # fmt: skip
    right = total = 0
    for kind, start, length, tags, counts, shown, answer, wrong, gold in rows.iterator(
        chunk_size=500
    ):
        total += 1
        right += check_answer_right(
            kind=kind,
            window=gold[start : start + length],
            tags=tags,
            counts=counts,
            shown_tags=shown,
            answer=answer,
            wrong=wrong,
        )
    return round(right / total, 2) if total >= CHECK_SCORE_MIN_ANSWERS else None


def _private_check_score(*, project: Project, rows) -> float | None:
    """The share of exactly right answers, estimated from released values without bias.

    With the channel `C[o, N]` of each asked tag and `G = C⁻¹`, `E[G[n, o] | N] = [N = n]`, and the
    tags are released independently, so `Π_b G[gold_b, o_b]` has expectation 1 exactly when
    every true count was right and 0 otherwise. The mean of that over answers estimates the share
    right (clipped to 0..1). One answer's estimate spreads widely (its variance is
    `Σ_o C[o, N] G[N, o]² − 1` per tag for an honest answer), so the score waits for
    `CHECK_SCORE_MIN_ANSWERS` answers' worth of evidence: that many times 1 plus the variance.
    """
    mechanism = project_mechanism(project=project)
    estimates, needed = [], 0.0
    for start, length, tags, counts, gold in rows.iterator(chunk_size=500):
        window = gold[start : start + length]
        inverse = mechanism.channel_inverse(length, len(tags))
        channel = mechanism.channel(length, len(tags))
        value, spread = 1.0, 1.0
        for tag, released in zip(tags, counts, strict=True):
            truth = window.count(tag)
            value *= inverse[truth, released]
            spread *= float(channel[:, truth] @ inverse[truth] ** 2)
        estimates.append(value)
        needed += CHECK_SCORE_MIN_ANSWERS * spread
    if not estimates or len(estimates) < needed / len(estimates):
        return None
    return round(min(max(sum(estimates) / len(estimates), 0.0), 1.0), 2)


def annotator_stats(*, project: Project, user, now: datetime | None = None) -> dict:
    now = now or timezone.now()
    since = now.replace(hour=0, minute=0, second=0, microsecond=0)  # start of the UTC day
    mine = Observation.objects.filter(project=project, annotator=user).aggregate(
        total=Count("id"),
        today=Count("id", filter=Q(submitted_at__gte=since)),
        seconds=Sum("seconds_on_device"),
    )
    live = (
        Assignment.objects.filter(
            project=project, annotator=user, status=Assignment.Status.LEASED, expires_at__gt=now
        )
        .values_list("id", flat=True)
        .first()
    )
    return {
        "observations": mine["total"],
        "observations_today": mine["today"],
        "seconds_on_device": round(mine["seconds"] or 0.0, 1),
        "live_lease": live,
        "check_score": annotator_check_score(project=project, user=user, now=now),
        # Private projects: the score is estimated from released values (see
        # `_private_check_score`): it needs more answers and is rougher.
        "check_score_estimated": project.private,
    }
