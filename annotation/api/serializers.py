"""Input validation (DRF serializers) and output shaping (plain functions returning dicts).

Output is built by hand: it is what the contract in annotation/API.md says, it cannot leak a
field by accident (no `fields = "__all__"`), and it is cheap on the annotator's hot path.
"""

from __future__ import annotations

from django.conf import settings
from rest_framework import serializers

from annotation import selectors
from annotation.models import (
    DEFAULT_EVALUATION_FRACTION,
    MAX_ALPHA,
    MAX_REDUNDANCY,
    MAX_TAGS,
    MAX_WINDOW,
    MECHANISMS,
    MIN_ALPHA,
    CorpusImport,
    ImportJob,
    Membership,
    Observation,
    Project,
    TaskKind,
)
from annotation.scheduler import Lease
from annotation.services.projects import ALPHA_LIMIT_MESSAGE
from annotation.tagsets import PRESETS
from common.api.output import iso
from common.api.typed import TypedSerializer
from common.text import DEFAULT_LANGUAGE, LANGUAGES
from learning.core.privacy import Mechanism

# Input ------------------------------------------------------------------------------------------


class JoinSerializer(TypedSerializer):
    code = serializers.CharField(max_length=64)


class TagSerializer(TypedSerializer):
    name = serializers.RegexField(r"^[^\s|]{1,32}\Z", max_length=32)
    guideline = serializers.CharField(max_length=300, required=False, allow_blank=True, default="")
    examples = serializers.ListField(
        child=serializers.CharField(max_length=100), max_length=10, required=False, default=list
    )


_SHARE_MESSAGE = (
    "A share of verification tasks from 0 (count tasks only) to 1, or null to let each model "
    "version choose it (automatic)."
)


class ProjectWriteSerializer(TypedSerializer):
    name = serializers.CharField(max_length=200)
    description = serializers.CharField(max_length=5000, required=False, allow_blank=True)
    status = serializers.ChoiceField(choices=Project.Status.choices, required=False)
    window_size = serializers.IntegerField(min_value=1, max_value=MAX_WINDOW, required=False)
    tags_per_task = serializers.IntegerField(min_value=1, allow_null=True, required=False)
    redundancy = serializers.IntegerField(min_value=1, max_value=MAX_REDUNDANCY, required=False)
    gold_fraction = serializers.FloatField(min_value=0.0, max_value=1.0, required=False)
    verification_share = serializers.FloatField(
        min_value=0.0,
        max_value=1.0,
        required=False,
        allow_null=True,
        error_messages={
            "min_value": _SHARE_MESSAGE,
            "max_value": _SHARE_MESSAGE,
            "invalid": _SHARE_MESSAGE,
        },
        help_text="The task mix: a fixed share of verification tasks once there is a model (0: "
        "count tasks only), or null (the default) to let each model version choose it by the "
        "information an answer of each kind brings per second of annotator time.",
    )
    lease_seconds = serializers.IntegerField(min_value=30, max_value=86_400, required=False)
    annotators_may_predict = serializers.BooleanField(
        required=False,
        help_text="Annotators may tag text with the model too (default false: managers only); "
        "never text from the project's own sentences.",
    )
    tags = TagSerializer(
        many=True,
        required=False,
        min_length=1,
        max_length=MAX_TAGS,
        error_messages={
            "min_length": "A project needs at least one tag.",
            "max_length": f"At most {MAX_TAGS} tags.",
        },
    )
    tag_preset = serializers.ChoiceField(choices=sorted(PRESETS), required=False)
    language = serializers.ChoiceField(choices=list(LANGUAGES), required=False)
    private = serializers.BooleanField(
        required=False,
        help_text="Answers randomized on the phone (local differential privacy); fixed once "
        "the project has answers.",
    )
    alpha = serializers.FloatField(
        min_value=MIN_ALPHA,
        max_value=MAX_ALPHA,
        required=False,
        allow_null=True,
        error_messages={"max_value": ALPHA_LIMIT_MESSAGE},
        help_text="Privacy level per answer of a private project (default 3, at most "
        f"{MAX_ALPHA:g}: above it a release is almost always the true count).",
    )
    mechanism = serializers.ChoiceField(
        choices=list(MECHANISMS),
        required=False,
        allow_null=True,
        help_text="How a private project's counts are randomized (default: the one measured best).",
    )

    def validate(self, attrs):
        if not self.partial and ("tags" in attrs) == ("tag_preset" in attrs):
            raise serializers.ValidationError("Give either `tags` or `tag_preset`.")
        if self.partial and "tag_preset" in attrs:
            raise serializers.ValidationError({"tag_preset": ["Only at creation."]})
        return attrs


class CorpusUploadSerializer(serializers.Serializer):
    file = serializers.FileField(allow_empty_file=False)
    format = serializers.ChoiceField(choices=CorpusImport.Format.choices)
    tag_column = serializers.ChoiceField(choices=CorpusImport.TagColumn.choices, default="upos")
    # Unset: the form's default, or what the gold checks leave of the gold sentences.
    evaluation_fraction = serializers.FloatField(min_value=0.0, max_value=1.0, required=False)
    gold_check_fraction = serializers.FloatField(min_value=0.0, max_value=1.0, default=0.0)
    seed = serializers.IntegerField(required=False, allow_null=True, default=None)
    allow_duplicate = serializers.BooleanField(required=False, default=False)
    # A client that may retry (after a time-out) sends the same key again: it gets the first
    # upload's import or job back, never a second import.
    idempotency_key = serializers.CharField(
        max_length=64, required=False, allow_blank=True, default=""
    )

    def validate(self, attrs):
        if "evaluation_fraction" not in attrs:
            attrs["evaluation_fraction"] = min(
                DEFAULT_EVALUATION_FRACTION, round(1.0 - attrs["gold_check_fraction"], 6)
            )
        return attrs

    def validate_file(self, value):
        if value.size > settings.TALLY_MAX_UPLOAD_BYTES:
            raise serializers.ValidationError("The file is too large.")
        return value


class ProjectWithCorpusSerializer(CorpusUploadSerializer):
    """The multipart body that creates a project with its corpus, for the schema: the project's
    settings as one JSON part, and the upload's fields (the view reads them as two)."""

    project = ProjectWriteSerializer(help_text="The project's settings, as JSON.")
    allow_duplicate = None  # a new project has no corpus to be a duplicate of


class CorpusPreviewSerializer(serializers.Serializer):
    file = serializers.FileField(allow_empty_file=False)
    format = serializers.ChoiceField(choices=CorpusImport.Format.choices)
    tag_column = serializers.ChoiceField(choices=CorpusImport.TagColumn.choices, default="upos")
    language = serializers.ChoiceField(choices=list(LANGUAGES), default=DEFAULT_LANGUAGE)
    # The file is the head of a larger one: its last sentence may be cut, and is not shown.
    partial = serializers.BooleanField(required=False, default=False)


# Output -----------------------------------------------------------------------------------------


def project_out(project: Project, role: str) -> dict:
    data = {
        "id": project.pk,
        "name": project.name,
        "description": project.description,
        "status": project.status,
        "language": project.language,
        "window_size": project.window_size,
        "tags_per_task": project.tags_per_task,
        "private": project.private,
        "alpha": project.alpha,
        "mechanism": project.mechanism or None,
        "role": role,
        "tags": selectors.project_tags(project=project),
        "created_at": iso(project.created_at),
        "updated_at": iso(project.updated_at),
    }
    if role == Membership.Role.MANAGER:
        data |= {
            "redundancy": project.redundancy,
            "gold_fraction": project.gold_fraction,
            "task_mix": "fixed" if project.verification_share is not None else "auto",
            "verification_share": project.verification_share,
            "verification_share_auto": project.verification_share_auto,
            "verification_version": project.verification_version,
            "lease_seconds": project.lease_seconds,
            "annotators_may_predict": project.annotators_may_predict,
            "invite_code": project.invite_code,
            # What can no longer change: tag names and order, and the language, once the
            # project has sentences (forms show them read-only).
            "frozen": selectors.project_frozen_fields(project=project),
        }
    return data


def task_out(lease: Lease, tags: list[dict], mechanism: Mechanism | None = None) -> dict:
    """A leased task as the annotator gets it. A count task asks about `tags`; in a private
    project (`mechanism`) it also says how the phone must release its counts (`privacy_out`). A
    verification task shows `shown` (a tag name under each word of the window) and lists in
    `tags` the shown tags with their guidelines, once each."""
    data = {
        "assignment": lease.assignment_id,
        "kind": lease.kind,
        "expires_at": iso(lease.expires_at),
        "tokens": lease.tokens,
        "window": {"start": lease.start, "length": lease.length},
    }
    if lease.multiword:
        # Words written as one ("au" = "à" + "le"): the page shows the form, the counts are over
        # the words.
        data["multiword"] = lease.multiword
    if lease.kind == TaskKind.VERIFY:
        shown = lease.shown_tags or []
        return data | {
            "shown": [tags[i]["name"] for i in shown],
            "tags": [tags[i] for i in sorted(set(shown))],
            "model_version": lease.model_version,
        }
    data |= {"tags": [tags[i] for i in lease.tags], "max_count": lease.length}
    if mechanism is not None:
        data["privacy"] = privacy_out(mechanism, window=lease.length, n_asked=len(lease.tags))
    return data


def privacy_out(mechanism: Mechanism, *, window: int, n_asked: int) -> dict:
    """What a phone needs to release one task's counts: the mechanism's name and level, and
    `release[N][o]` = P(release o | true count N) for this window and number of asked tags
    (the columns of the core's `Mechanism.channel`, the one definition of the channel)."""
    channel = mechanism.channel(window, n_asked)
    return {
        "mechanism": mechanism.name,
        "alpha": mechanism.alpha,
        "release": channel.T.tolist(),
    }


def observation_out(observation, names: list[str], *, replayed: bool) -> dict:
    """A stored answer as its submitter sees it: `counts` by tag name, in the task's order (in a
    private project `released` and `privacy` instead); for a verification task the `answer`,
    the `wrong` word and the tags it was `shown`. `observation`: an `Observation`, or the row
    the statement of its kind stored (`annotation.kinds.count.Row`, `kinds.verify.Row`)."""
    kind = getattr(observation, "kind", TaskKind.COUNT.value)
    data = {"id": observation.id, "assignment": observation.assignment_id, "kind": kind}
    if kind == TaskKind.VERIFY:
        data |= {
            "shown": [names[i] for i in observation.shown_tags],
            "model_version": observation.model_version,
            "answer": observation.answer,
            "wrong": observation.wrong,
        }
    elif observation.mechanism:
        values = zip(observation.tags, observation.counts, strict=True)
        data["released"] = {names[i]: c for i, c in values}
        data["privacy"] = {"mechanism": observation.mechanism, "alpha": observation.alpha}
    else:
        values = zip(observation.tags, observation.counts, strict=True)
        data["counts"] = {names[i]: c for i, c in values}
    return data | {
        "seconds_on_device": observation.seconds_on_device,
        "idempotency_key": observation.idempotency_key,
        "submitted_at": iso(observation.submitted_at),
        "replayed": replayed,
    }


def observation_row_out(observation: Observation, names: list[str]) -> dict:
    return {
        "id": observation.pk,
        "annotator": observation.annotator_id,
        "sentence": observation.sentence_id,
        "start": observation.start,
        "length": observation.length,
        "kind": observation.kind,
        "tags": [names[i] for i in observation.tags],
        "counts": observation.counts,
        "shown": None
        if observation.shown_tags is None
        else [names[i] for i in observation.shown_tags],
        "model_version": observation.model_version,
        "answer": observation.answer,
        "wrong": observation.wrong,
        "is_gold": observation.is_gold,
        "seconds_on_device": observation.seconds_on_device,
        "submitted_at": iso(observation.submitted_at),
        "mechanism": observation.mechanism or None,
        "alpha": observation.alpha,
    }


def import_out(record: CorpusImport) -> dict:
    """`record` as read by `selectors.imports_of_project` (with its sentences by split)."""
    return {
        "id": record.pk,
        "filename": record.filename,
        "format": record.format,
        "tag_column": record.tag_column,
        "sentences": record.sentences,
        "gold_sentences": record.gold_sentences,
        "splits": selectors.import_split_counts(record),
        "created_at": iso(record.created_at),
    }


def import_job_out(job: ImportJob) -> dict:
    """An import job: where it is (`sentences_read` of about `sentences_expected`), and how it
    ended (`import`, the corpus import it made, or `error`)."""
    expected = job.sentences_expected
    return {
        "id": job.pk,
        "status": job.status,
        "url": f"/api/projects/{job.project_id}/corpus/jobs/{job.pk}/",
        "filename": job.filename,
        "format": job.format,
        "sentences_read": job.sentences_read,
        "sentences_expected": expected,
        "progress": min(job.sentences_read / expected, 1.0) if expected else None,
        "cancel_requested": job.cancel_requested,
        "import": job.corpus_import_id,
        "error": None
        if not job.error_code
        else {"code": job.error_code, "message": job.error, "line": job.error_line},
        "created_at": iso(job.created_at),
        "started_at": iso(job.started_at),
        "finished_at": iso(job.finished_at),
    }
