"""The annotator's cycle: lease the next task, submit its counts (annotation/API.md, "Annotating").

Every annotator repeats these two requests all day, so they are plain Django views
(`common.api.plain`). On PostgreSQL each is one statement in the plain case
(`annotation.hotpath`); every other case, and every other database, goes through the scheduler
and the submission service, which hold the whole rule.
"""

from __future__ import annotations

from django.db import connection
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from drf_spectacular.utils import (
    OpenApiResponse,
    PolymorphicProxySerializer,
    extend_schema_field,
)
from rest_framework import serializers

from annotation import hotpath, scheduler, selectors, services
from annotation.api.schemas import ObservationOut, TaskOut
from annotation.api.serializers import observation_out, task_out
from common.api.errors import ErrorSerializer
from common.api.plain import Caller, invalid_token, json_body, json_response, plain_view
from common.exceptions import InvalidInput, NotFound
from config.converters import MAX_ID

MAX_KEY = 64
MAX_SECONDS = 1e7


def _is_id(value) -> bool:
    """A database id: a whole number from 1 to 2**63 - 1 (a larger one names nothing)."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 < value <= MAX_ID


class NextTaskSerializer(serializers.Serializer):
    """The next-task body (optional), for the schema; `next_task_fields` checks it."""

    holding = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=MAX_ID),
        required=False,
        max_length=scheduler.MAX_LEASES,
        help_text="Assignment ids of the leases you hold already (on screen or fetched ahead).",
    )


def next_task_fields(data) -> dict:
    """Validate a next-task request: an empty body (`data` {}), or `{"holding": [ids]}`."""
    if not isinstance(data, dict):
        raise InvalidInput("Expected a JSON object.")
    holding = data.get("holding", [])
    if (
        not isinstance(holding, list)
        or len(holding) > scheduler.MAX_LEASES
        or not all(_is_id(item) for item in holding)
    ):
        raise InvalidInput(
            "The request is not valid.",
            fields={
                "holding": [
                    "A list of at most "
                    f"{scheduler.MAX_LEASES} assignment ids (integers) that you hold already."
                ]
            },
        )
    return {"holding": holding}


@plain_view(
    request=NextTaskSerializer,
    responses={
        200: TaskOut,
        204: OpenApiResponse(description="No task for you now."),
        409: OpenApiResponse(
            ErrorSerializer, description="You hold the most leases allowed, or it is paused."
        ),
    },
)
def next_task(request: HttpRequest, caller: Caller, project_id: int) -> HttpResponse:
    """Lease the caller's next task in the project (204 when there is none for them)."""
    data = json_body(request, optional=True)  # None: no body, or a JSON `null`
    # No body is no lease held; a `null` is not an object, as the schema says.
    holding = next_task_fields({} if data is None and not request.body else data)["holding"]
    now = timezone.now()
    gold_draw, kind_draw = scheduler.gold_draw(), scheduler.gold_draw()
    if connection.vendor == "postgresql":
        row = hotpath.next_task(
            key=caller.key,
            user_id=caller.user_id,
            project_id=project_id,
            holding=holding,
            max_leases=scheduler.MAX_LEASES,
            now=now,
            gold_draw=gold_draw,
            kind_draw=kind_draw,
            reclaim_due_before=now - scheduler.RECLAIM_INTERVAL,
        )
        if row is None or not row.is_active:
            raise invalid_token()
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
            return json_response(task_out(lease, tags, mechanism))
    user = caller.user()
    membership = selectors.membership_for(user=user, project_id=project_id)
    lease = scheduler.task_lease_next(
        project=membership.project,
        annotator=user,
        holding=holding,
        now=now,
        flagged=membership.flagged,
        gold_draw=gold_draw,
        kind_draw=kind_draw,
    )
    if lease is None:
        return HttpResponse(status=204)
    project = membership.project
    return json_response(
        task_out(
            lease,
            selectors.project_tags(project=project),
            selectors.project_mechanism(project=project),
        )
    )


@extend_schema_field(
    {
        "type": "object",
        "properties": {"mechanism": {"type": "string"}, "alpha": {"type": "number"}},
        "required": ["mechanism", "alpha"],
        "additionalProperties": False,
        "description": "The task's `privacy.mechanism` and `privacy.alpha`, as they came.",
    }
)
class _PrivacyField(serializers.DictField):
    """How a private project's answer was released, for the schema: those two keys only, as
    `submission_fields` checks."""


@extend_schema_field(
    {"type": "number", "minimum": 0, "maximum": MAX_SECONDS, "exclusiveMaximum": True,
     "nullable": True}
)  # fmt: skip
class _SecondsField(serializers.FloatField):
    """Seconds on the device, for the schema: from 0 to less than `MAX_SECONDS`."""


class _AnswerSerializer(serializers.Serializer):
    """What every submission holds, for the schema; `submission_fields` checks its shape,
    `services.counts_check` the counts of a count task and `services.verification_check` the
    answer to a verification task."""

    assignment = serializers.IntegerField(min_value=1, max_value=MAX_ID)
    seconds_on_device = _SecondsField(required=False, allow_null=True)
    idempotency_key = serializers.CharField(min_length=1, max_length=MAX_KEY)


class CountAnswerSerializer(_AnswerSerializer):
    """The answer to a count task."""

    counts = serializers.DictField(
        child=serializers.IntegerField(min_value=0),
        help_text="A count task's answer: the count of each asked tag (projects that are not "
        "private).",
    )


class PrivateCountAnswerSerializer(_AnswerSerializer):
    """The answer to a count task of a private project: released values only."""

    released = serializers.DictField(
        child=serializers.IntegerField(min_value=0),
        help_text="Private projects: each asked tag's count as released on the phone by the "
        "task's `privacy.release` distribution; the true count is never sent.",
    )
    privacy = _PrivacyField()


class VerificationAnswerSerializer(_AnswerSerializer):
    """The answer to a verification task."""

    answer = serializers.BooleanField(
        help_text="A verification task's answer: true if all the shown tags are right.",
    )
    wrong = serializers.IntegerField(
        required=False,
        allow_null=True,
        min_value=0,
        help_text="After a No (optional): the position in the window (0-based) of a wrong word.",
    )


# Exactly one of `counts`, `released` (with `privacy`) and `answer`, as `submission_fields` checks.
ObservationSubmitSerializer = PolymorphicProxySerializer(
    component_name="ObservationSubmit",
    serializers=[CountAnswerSerializer, PrivateCountAnswerSerializer, VerificationAnswerSerializer],
    resource_type_field_name=None,
)


def submission_fields(data) -> dict:
    """Validate the shape of a submission (the service checks it against the lease)."""
    errors: dict[str, list[str]] = {}
    if not isinstance(data, dict):
        raise InvalidInput("Expected a JSON object.")
    assignment = data.get("assignment")
    if not _is_id(assignment):
        errors["assignment"] = ["An assignment id (integer) is required."]
    key = data.get("idempotency_key")
    if not isinstance(key, str) or not 1 <= len(key) <= MAX_KEY:
        errors["idempotency_key"] = [f"A string of 1 to {MAX_KEY} characters is required."]
    counts, released, privacy = data.get("counts"), data.get("released"), data.get("privacy")
    answer, wrong = data.get("answer"), data.get("wrong")
    if "answer" in data:  # a verification task's answer
        if counts is not None or released is not None:
            errors["counts"] = ["Give `counts` (a count task) or `answer` (to verify), not both."]
        if not isinstance(answer, bool):
            errors["answer"] = ["true (all of these tags are right) or false (one is not)."]
        if wrong is not None and (isinstance(wrong, bool) or not isinstance(wrong, int)):
            errors["wrong"] = ["The position of a word of the window (0-based), or null."]
    elif counts is not None and released is not None:
        errors["released"] = ["Send either `counts` or `released` (private projects), not both."]
    elif released is not None:
        if not isinstance(released, dict):
            errors["released"] = ["An object mapping tag names to released values is required."]
    elif not isinstance(counts, dict):
        errors["counts"] = ["An object mapping tag names to counts is required."]
    if privacy is not None and not (
        isinstance(privacy, dict)
        and set(privacy) == {"mechanism", "alpha"}
        and isinstance(privacy["mechanism"], str)
        and isinstance(privacy["alpha"], int | float)
        and not isinstance(privacy["alpha"], bool)
    ):
        errors["privacy"] = ['An object {"mechanism": name, "alpha": number}, as the task gave.']
    seconds = data.get("seconds_on_device")
    if seconds is not None and (
        isinstance(seconds, bool)
        or not isinstance(seconds, int | float)
        or not 0 <= seconds < MAX_SECONDS
    ):
        errors["seconds_on_device"] = ["A non-negative number of seconds, or null."]
    if errors:
        raise InvalidInput("The submission is not valid.", fields=errors)
    return {
        "assignment_id": assignment,
        "idempotency_key": key,
        "counts": counts,
        "released": released,
        "privacy": privacy,
        **({"answer": answer, "wrong": wrong} if "answer" in data else {}),
        "seconds_on_device": None if seconds is None else float(seconds),
    }


def _verification_plain(fields: dict) -> bool:
    """A verification answer the one statement can check: Yes or No, a wrong word that fits a
    smallint or none, and nothing of a count answer."""
    wrong = fields.get("wrong")
    return (
        isinstance(fields.get("answer"), bool)
        and fields["counts"] is None
        and fields["released"] is None
        and fields["privacy"] is None
        and (wrong is None or 0 <= wrong < 2**15)
    )


@plain_view(
    request=ObservationSubmitSerializer,
    responses={
        200: OpenApiResponse(ObservationOut, description="Stored before (`replayed`)."),
        201: OpenApiResponse(ObservationOut, description="Stored."),
        404: OpenApiResponse(ErrorSerializer, description="No such lease of yours."),
        409: OpenApiResponse(
            ErrorSerializer,
            description="Answered already, the lease expired, or the key was used for another.",
        ),
    },
)
def observation_submit(request: HttpRequest, caller: Caller) -> HttpResponse:
    """Store the answer to a lease (201): the counts of a count task, or Yes / No (and optionally
    the wrong word) to a verification task; or the answer stored under this idempotency key
    already (200, `replayed`)."""
    fields = submission_fields(json_body(request))
    if connection.vendor == "postgresql" and _verification_plain(fields):
        row = hotpath.verification_submit(
            key=caller.key,
            user_id=caller.user_id,
            assignment_id=fields["assignment_id"],
            idempotency_key=fields["idempotency_key"],
            answer=fields["answer"],
            wrong=fields["wrong"],
            seconds_on_device=fields["seconds_on_device"],
            now=timezone.now(),
        )
        stored = _stored_by_statement(row)
        if stored is not None:
            return stored
    counts = fields["counts"] if fields["released"] is None else fields["released"]
    privacy = fields["privacy"] or {}
    if (
        connection.vendor == "postgresql"
        and counts is not None
        and services.counts_well_formed(counts)
    ):
        row = hotpath.observation_submit(
            key=caller.key,
            user_id=caller.user_id,
            assignment_id=fields["assignment_id"],
            idempotency_key=fields["idempotency_key"],
            names=list(counts),
            counts=list(counts.values()),
            released=fields["released"] is not None,
            mechanism=privacy.get("mechanism"),
            alpha=privacy.get("alpha"),
            seconds_on_device=fields["seconds_on_device"],
            now=timezone.now(),
        )
        stored = _stored_by_statement(row)
        if stored is not None:
            return stored
    # Not stored by the statement: the service says why, or returns the answer a replay stored.
    observation, replayed = services.observation_submit(annotator=caller.user(), **fields)
    names = selectors.project_tag_names(project=observation.project)
    return json_response(
        observation_out(observation, names, replayed=replayed), status=200 if replayed else 201
    )


def _stored_by_statement(row):
    """The 201 for an answer the one-statement path stored; None when it left the answer to the
    service (which says why, or returns what a replay stored)."""
    if row is None or not row.is_active:
        raise invalid_token()
    if row.id is None:
        return None
    names = selectors.project_tag_names_at(
        project_id=row.project_id, updated_at=row.project_updated_at
    )
    return json_response(observation_out(row, names, replayed=False), status=201)
