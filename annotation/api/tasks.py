"""The annotator's cycle: lease the next task, submit its counts (DRF classes).

These classes document the endpoints in the OpenAPI schema; the URLs serve the same logic through
`annotation.api.hot` (plain Django views, without DRF's per-request machinery).
"""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response

from annotation import scheduler, selectors, services
from annotation.api.serializers import (
    NextTaskSerializer,
    ObservationSubmitSerializer,
    observation_out,
    task_out,
)
from common.api.base import ApiView, ProjectView
from common.api.parsers import JsonParser
from common.exceptions import InvalidInput
from config.converters import MAX_ID

_MAX_KEY = 64


def _is_id(value) -> bool:
    """A database id: a whole number from 1 to 2**63 - 1 (a larger one names nothing)."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 < value <= MAX_ID


def next_task_fields(data) -> dict:
    """Validate a next-task request: an empty body, or `{"holding": [assignment ids]}`."""
    if data is None:
        return {"holding": []}
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


class NextTaskView(ProjectView):
    renderer_classes = [JSONRenderer]
    parser_classes = [JsonParser]

    @extend_schema(
        request=NextTaskSerializer, responses={200: OpenApiTypes.OBJECT, 204: None, 409: None}
    )
    def post(self, request, project_id):
        fields = next_task_fields(request.data or None)
        lease = scheduler.task_lease_next(project=self.project, annotator=request.user, **fields)
        if lease is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        return Response(task_out(lease, selectors.project_tags(project=self.project)))


def submission_fields(data) -> dict:
    """Validate the shape of a submission (the service checks it against the lease)."""
    errors: dict[str, list[str]] = {}
    if not isinstance(data, dict):
        raise InvalidInput("Expected a JSON object.")
    assignment = data.get("assignment")
    if not _is_id(assignment):
        errors["assignment"] = ["An assignment id (integer) is required."]
    key = data.get("idempotency_key")
    if not isinstance(key, str) or not 1 <= len(key) <= _MAX_KEY:
        errors["idempotency_key"] = [f"A string of 1 to {_MAX_KEY} characters is required."]
    counts = data.get("counts")
    if not isinstance(counts, dict):
        errors["counts"] = ["An object mapping tag names to counts is required."]
    seconds = data.get("seconds_on_device")
    if seconds is not None and (
        isinstance(seconds, bool) or not isinstance(seconds, int | float) or not 0 <= seconds < 1e7
    ):
        errors["seconds_on_device"] = ["A non-negative number of seconds, or null."]
    if errors:
        raise InvalidInput("The submission is not valid.", fields=errors)
    return {
        "assignment_id": assignment,
        "idempotency_key": key,
        "counts": counts,
        "seconds_on_device": None if seconds is None else float(seconds),
    }


class ObservationSubmitView(ApiView):
    renderer_classes = [JSONRenderer]
    parser_classes = [JsonParser]

    @extend_schema(
        request=ObservationSubmitSerializer,
        responses={200: OpenApiTypes.OBJECT, 201: OpenApiTypes.OBJECT},
    )
    def post(self, request):
        observation, replayed = services.observation_submit(
            annotator=request.user, **submission_fields(request.data)
        )
        names = selectors.project_tag_names(project=observation.project)
        return Response(
            observation_out(observation, names, replayed=replayed),
            status=status.HTTP_200_OK if replayed else status.HTTP_201_CREATED,
        )
