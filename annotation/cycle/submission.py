"""What an annotator sends in the cycle, parsed once: a next-task request (`NextTaskRequest`) and
an answer (`Submission`), each checked for its shape here and nowhere else, with the schema
serializer that documents it built beside it from the same limits.

The shape only: whether the answer fits its task (the task's tags, the window, the project's
privacy) is the rule set of the task's kind, beside the statement that mirrors it
(`annotation.kinds`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from drf_spectacular.utils import PolymorphicProxySerializer, extend_schema_field
from rest_framework import serializers

from annotation.models import TaskKind
from annotation.scheduler import MAX_LEASES
from common.exceptions import InvalidInput
from config.converters import MAX_ID

MAX_KEY = 64
MAX_SECONDS = 1e7


def _is_id(value: Any) -> bool:
    """A database id: a whole number from 1 to 2**63 - 1 (a larger one names nothing)."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 < value <= MAX_ID


def _is_whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


_HOLDING_HELP = "Assignment ids of the leases you hold already (on screen or fetched ahead)."
_HOLDING_ERROR = f"A list of at most {MAX_LEASES} assignment ids (integers) that you hold already."


@dataclass(frozen=True, slots=True)
class NextTaskRequest:
    """A request for the caller's next task: the leases they hold already (`holding`)."""

    holding: tuple[int, ...] = ()

    @classmethod
    def parse(cls, data: Any, *, field: str = "holding") -> NextTaskRequest:
        """From a JSON body: `{}` (the view's reading of no body), or `{"holding": [assignment
        ids]}`; anything else, a JSON `null` too, is not an object, as the schema says. `field`
        names the list in an error (`next.holding` inside a submission)."""
        if not isinstance(data, dict):
            raise InvalidInput("Expected a JSON object.")
        holding = data.get("holding", [])
        if (
            not isinstance(holding, list)
            or len(holding) > MAX_LEASES
            or not all(_is_id(item) for item in holding)
        ):
            raise InvalidInput("The request is not valid.", fields={field: [_HOLDING_ERROR]})
        return cls(holding=tuple(holding))


class NextTaskSerializer(serializers.Serializer):
    """The next-task body (optional), for the schema (`NextTaskRequest.parse` reads it)."""

    holding = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=MAX_ID),
        required=False,
        max_length=MAX_LEASES,
        help_text=_HOLDING_HELP,
    )


@dataclass(frozen=True, slots=True)
class Submission:
    """An answer to a lease, as sent: the `counts` of a count task, or a private project's
    `released` values with their `privacy` ({"mechanism", "alpha"}); or a verification task's
    `answer` (`is_verification`) and optional `wrong` word. `next`: the phone asks for its next
    task with this answer (one round trip instead of two). `device_user`: the account the
    answer was given under on the device (the page's outbox says), which must be the caller."""

    assignment_id: int
    idempotency_key: str
    counts: dict[str, Any] | None = None
    released: dict[str, Any] | None = None
    privacy: dict[str, Any] | None = None
    is_verification: bool = False
    answer: bool | None = None
    wrong: int | None = None
    seconds_on_device: float | None = None
    device_user: int | None = None
    next: NextTaskRequest | None = None

    @classmethod
    def parse(cls, data: Any) -> Submission:
        """The submission in a JSON body, or `InvalidInput` naming every field that is wrong."""
        if not isinstance(data, dict):
            raise InvalidInput("Expected a JSON object.")
        errors: dict[str, list[str]] = {}
        assignment = data.get("assignment")
        if not _is_id(assignment):
            errors["assignment"] = ["An assignment id (integer) is required."]
        key = data.get("idempotency_key")
        if not isinstance(key, str) or not 1 <= len(key) <= MAX_KEY:
            errors["idempotency_key"] = [f"A string of 1 to {MAX_KEY} characters is required."]
        counts, released, privacy = data.get("counts"), data.get("released"), data.get("privacy")
        answer, wrong = data.get("answer"), data.get("wrong")
        is_verification = "answer" in data
        if is_verification:
            if counts is not None or released is not None:
                errors["counts"] = [
                    "Give `counts` (a count task) or `answer` (to verify), not both."
                ]
            if not isinstance(answer, bool):
                errors["answer"] = ["true (all of these tags are right) or false (one is not)."]
            if wrong is not None and not _is_whole(wrong):
                errors["wrong"] = ["The position of a word of the window (0-based), or null."]
        elif counts is not None and released is not None:
            errors["released"] = [
                "Send either `counts` or `released` (private projects), not both."
            ]
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
            errors["privacy"] = [
                'An object {"mechanism": name, "alpha": number}, as the task gave.'
            ]
        seconds = data.get("seconds_on_device")
        if seconds is not None and (
            isinstance(seconds, bool)
            or not isinstance(seconds, int | float)
            or not 0 <= seconds < MAX_SECONDS
        ):
            errors["seconds_on_device"] = ["A non-negative number of seconds, or null."]
        device_user = data.get("device_user")
        if device_user is not None and not _is_id(device_user):
            errors["device_user"] = ["The id (integer) of the account the answer was given as."]
        following = None
        if data.get("next") is not None:
            try:
                following = NextTaskRequest.parse(data["next"], field="next")
            except InvalidInput as exc:
                errors["next"] = (exc.fields or {}).get("next") or [
                    'An object {"holding": [assignment ids]}, or null.'
                ]
        if errors:
            raise InvalidInput("The submission is not valid.", fields=errors)
        return cls(
            assignment_id=assignment,
            idempotency_key=key,
            counts=None if is_verification else counts,
            released=None if is_verification else released,
            privacy=privacy,
            is_verification=is_verification,
            answer=answer if is_verification else None,
            wrong=wrong if is_verification else None,
            seconds_on_device=None if seconds is None else float(seconds),
            device_user=device_user,
            next=following,
        )

    @property
    def values(self) -> dict[str, Any] | None:
        """The counts or released values, whichever was sent."""
        return self.counts if self.released is None else self.released

    @property
    def kind(self) -> str:
        """The task kind this answers (`annotation.kinds.KINDS`), by what it says."""
        return TaskKind.VERIFY.value if self.is_verification else TaskKind.COUNT.value

    def service_fields(self) -> dict[str, Any]:
        """The keyword arguments of `services.observation_submit` for this answer."""
        fields = {
            "assignment_id": self.assignment_id,
            "idempotency_key": self.idempotency_key,
            "counts": self.counts,
            "released": self.released,
            "privacy": self.privacy,
            "seconds_on_device": self.seconds_on_device,
        }
        if self.is_verification:
            fields |= {"answer": self.answer, "wrong": self.wrong}
        return fields


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
    `Submission.parse` checks."""


@extend_schema_field(
    {"type": "number", "minimum": 0, "maximum": MAX_SECONDS, "exclusiveMaximum": True,
     "nullable": True}
)  # fmt: skip
class _SecondsField(serializers.FloatField):
    """Seconds on the device, for the schema: from 0 to less than `MAX_SECONDS`."""


class _AnswerSerializer(serializers.Serializer):
    """What every submission holds, for the schema (`Submission.parse` reads it; the rules of
    the task's kind, `annotation.kinds`, check it against the task)."""

    assignment = serializers.IntegerField(min_value=1, max_value=MAX_ID)
    seconds_on_device = _SecondsField(required=False, allow_null=True)
    device_user = serializers.IntegerField(
        min_value=1,
        max_value=MAX_ID,
        required=False,
        allow_null=True,
        help_text="The account the answer was given as on the device (the annotator page sends "
        "it from its outbox). Refused (409 `answered_as_another`) when it is not the caller.",
    )
    idempotency_key = serializers.CharField(min_length=1, max_length=MAX_KEY)
    next = NextTaskSerializer(
        required=False,
        allow_null=True,
        help_text="Lease your next task with this answer (one round trip instead of two): "
        "the answer's response then carries it in `next` (null when there is none for you). "
        "`holding`: the leases you hold besides this one, as for tasks/next/.",
    )


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


# The submission body, for the schema: exactly one of `counts`, `released` (with `privacy`) and
# `answer`, as `Submission.parse` checks.
ObservationSubmitSerializer = PolymorphicProxySerializer(
    component_name="ObservationSubmit",
    serializers=[CountAnswerSerializer, PrivateCountAnswerSerializer, VerificationAnswerSerializer],
    resource_type_field_name=None,
)
