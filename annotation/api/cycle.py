"""The annotator's cycle over HTTP: lease the next task, submit an answer (and lease the next
with it), annotation/API.md "Annotating".

Every annotator repeats these requests all day, so they are plain Django views
(`common.api.plain`); they only translate HTTP. What a request says is parsed once
(`annotation.cycle.Submission`, `NextTaskRequest`), and the services of `annotation.cycle`
lease and store, choosing the database path.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from drf_spectacular.utils import OpenApiResponse

from annotation import cycle
from annotation.api.schemas import ObservationSubmittedOut, TaskOut
from annotation.api.serializers import observation_out, task_out
from common.api.errors import ErrorSerializer, domain_error
from common.api.plain import Caller, json_body, json_response, plain_view


def _task(offer: cycle.Offer) -> dict:
    return task_out(offer.lease, offer.tags, offer.mechanism)


@plain_view(
    request=cycle.NextTaskSerializer,
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
    offer = cycle.task_next_for_annotator(
        caller=caller,
        project_id=project_id,
        request=cycle.NextTaskRequest.parse({} if data is None and not request.body else data),
    )
    if offer is None:
        return HttpResponse(status=204)
    return json_response(_task(offer))


@plain_view(
    request=cycle.ObservationSubmitSerializer,
    responses={
        200: OpenApiResponse(ObservationSubmittedOut, description="Stored before (`replayed`)."),
        201: OpenApiResponse(ObservationSubmittedOut, description="Stored."),
        404: OpenApiResponse(ErrorSerializer, description="No such lease of yours."),
        409: OpenApiResponse(
            ErrorSerializer,
            description="Answered already, the lease expired, the key was used for another, or "
            "the answer was given on the device as another account.",
        ),
    },
)
def observation_submit(request: HttpRequest, caller: Caller) -> HttpResponse:
    """Store the answer to a lease (201): the counts of a count task, or Yes / No (and optionally
    the wrong word) to a verification task; or the answer stored under this idempotency key
    already (200, `replayed`). With `next` in the body, the response also carries the caller's
    next task (`next`, null when there is none; `next_error` when it could not be leased)."""
    submission = cycle.Submission.parse(json_body(request))
    stored = cycle.answer_submit(caller=caller, submission=submission)
    body = observation_out(stored.observation, stored.names, replayed=stored.replayed)
    if submission.next is not None:
        body["next"] = None if stored.next is None else _task(stored.next)
        if stored.next_error is not None:
            body["next_error"] = domain_error(stored.next_error)[1]["error"]
    return json_response(body, status=200 if stored.replayed else 201)
