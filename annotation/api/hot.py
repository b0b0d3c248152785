"""The annotator's two hot endpoints as plain Django views: lease the next task, submit counts.

Every annotator repeats this cycle all day, so it skips DRF's per-request machinery (request
wrapping, content negotiation, renderer) and does only what the contract needs: authenticate
(token, or session with the same CSRF check DRF applies), scope to the caller's membership, call
the scheduler or the service, answer JSON with the API's error body.

The DRF classes in `annotation.api.tasks` describe the same endpoints for the OpenAPI schema and
hold the same three lines of logic; `as_fast_view` serves these functions under their name.
"""

from __future__ import annotations

import json
from typing import Any

from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.middleware.csrf import CsrfViewMiddleware
from django.utils import timezone
from rest_framework.authentication import get_authorization_header

from annotation import scheduler, selectors, services, sql
from annotation.api.serializers import answer_out, observation_out, task_out
from annotation.api.tasks import next_task_fields, submission_fields
from annotation.models import MAX_TAGS, Membership, Observation, Project
from common import exceptions
from common.api.errors import STATUS_BY_ERROR, error_body


class _Unauthenticated(Exception):
    def __init__(self, code: str, message: str) -> None:
        self.code, self.message = code, message


class _CsrfFailed(Exception):
    pass


class _BadBody(Exception):
    def __init__(self, response: HttpResponse) -> None:
        self.response = response


class _CsrfCheck(CsrfViewMiddleware):
    def _reject(self, request, reason):
        return reason  # returned, not rendered: the view answers with the API's error body


def _credentials(request: HttpRequest) -> tuple[str | None, Any]:
    """(token key, None) for `Authorization: Token <key>`, else (None, the session user) after
    the same CSRF check DRF applies. The token is looked up by the caller (on PostgreSQL inside
    the view's own statement)."""
    header = get_authorization_header(request).split()
    if header and header[0].lower() == b"token":
        if len(header) != 2:
            raise _Unauthenticated("authentication_failed", "Invalid token header.")
        return header[1].decode("latin-1"), None
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        raise _Unauthenticated("not_authenticated", "Authentication credentials were not provided.")
    check = _CsrfCheck(lambda r: None)
    check.process_request(request)
    reason = check.process_view(request, None, (), {})
    if reason:
        raise _CsrfFailed(f"CSRF Failed: {reason}")
    return None, user


def _invalid_token() -> _Unauthenticated:
    return _Unauthenticated("authentication_failed", "Invalid token.")


def _user(key: str | None, user):
    """The caller as a user: the session user, or the active owner of the token."""
    if key is None:
        return user
    user = sql.user_for_token(key)
    if user is None or not user.is_active:
        raise _invalid_token()
    return user


def _json(data: dict, *, status: int = 200) -> HttpResponse:
    """A JSON response. The answers here hold only JSON's own types, so the standard encoder
    does (JsonResponse makes a DjangoJSONEncoder for every response)."""
    return HttpResponse(json.dumps(data), content_type="application/json", status=status)


def _error(status: int, code: str, message: str, **extra) -> JsonResponse:
    fields = extra.pop("fields", None)
    return JsonResponse(error_body(code, message, fields, **extra), status=status)


def as_fast_view(view, drf_class):
    """`view` wrapped with authentication and error handling; `.cls` names the DRF class that
    documents it (drf-spectacular reads it)."""

    def wrapped(request: HttpRequest, **kwargs) -> HttpResponse:
        if request.method != "POST":
            return _error(405, "method_not_allowed", f'Method "{request.method}" not allowed.')
        try:
            key, user = _credentials(request)
            return view(request, key, user, **kwargs)
        except _Unauthenticated as exc:
            response = _error(401, exc.code, exc.message)
            response["WWW-Authenticate"] = "Token"
            return response
        except _CsrfFailed as exc:
            return _error(403, "permission_denied", str(exc))
        except _BadBody as exc:
            return exc.response
        except exceptions.DomainError as exc:
            status = next(
                (code for cls, code in STATUS_BY_ERROR.items() if isinstance(exc, cls)), 400
            )
            return _error(status, exc.code, exc.message, fields=exc.fields)

    wrapped.csrf_exempt = True  # checked above for session users, as DRF does
    wrapped.cls = drf_class
    wrapped.initkwargs = {}
    wrapped.__name__ = drf_class.__name__
    wrapped.__doc__ = drf_class.__doc__
    return wrapped


def _json_body(request: HttpRequest, *, optional: bool = False):
    """The request's JSON body (None when `optional` and there is none), or an error response."""
    if optional and not request.body:
        return None
    if request.content_type != "application/json":
        raise _BadBody(_error(415, "unsupported_media_type", "Send application/json."))
    try:
        return json.loads(request.body)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise _BadBody(_error(400, "parse_error", f"JSON parse error - {exc}")) from exc


def next_task(request: HttpRequest, key: str | None, user, project_id: int) -> HttpResponse:
    holding = next_task_fields(_json_body(request, optional=True))["holding"]
    if connection.vendor == "postgresql":
        return _next_task_one_statement(key, user, project_id, holding)
    user = _user(key, user)
    membership = selectors.membership_for(user=user, project_id=project_id)
    flagged = Membership.objects.filter(pk=membership.pk, flagged=True).exists()
    lease = scheduler.task_lease_next(
        project=membership.project, annotator=user, holding=holding, flagged=flagged
    )
    return _task_response(lease, membership.project)


def _next_task_one_statement(
    key: str | None, user, project_id: int, holding: list[int]
) -> HttpResponse:
    """Token check, membership and the plain-case lease in one statement (`sql.next_task`); the
    other cases (gold check drawn, lease reclaim due, project not active, flagged member, no
    open task) go through `scheduler.task_lease_next` with the same gold draw."""
    now = timezone.now()
    draw = scheduler.gold_draw()
    row = sql.next_task(
        key=key,
        user_id=None if user is None else user.pk,
        project_id=project_id,
        holding=holding,
        max_leases=scheduler.MAX_LEASES,
        now=now,
        gold_draw=draw,
        reclaim_due_before=now - scheduler.RECLAIM_INTERVAL,
    )
    if row is None or not row[1]:
        raise _invalid_token()
    user_id, _, membership_id, flagged, plain, updated_at, assignment_id, expires_at = row[:8]
    if membership_id is None:
        raise exceptions.NotFound("Not found.")
    if plain and assignment_id is not None:
        lease = scheduler.lease_from_row(assignment_id, expires_at, row[8:])
        tags = selectors.project_tags_at(
            project_id=project_id, updated_at=sql.from_db_datetime(updated_at)
        )
        return _json(task_out(lease, tags))
    user = _user(key, user)
    membership = selectors.membership_for(user=user, project_id=project_id)
    lease = scheduler.task_lease_next(
        project=membership.project,
        annotator=user,
        holding=holding,
        now=now,
        flagged=bool(flagged),
        gold_draw=draw,
    )
    return _task_response(lease, membership.project)


def _task_response(lease, project: Project) -> HttpResponse:
    if lease is None:
        return HttpResponse(status=204)
    return _json(task_out(lease, selectors.project_tags(project=project)))


def submit_observation(request: HttpRequest, key: str | None, user) -> HttpResponse:
    fields = submission_fields(_json_body(request))
    arrays = _count_arrays(fields["counts"])
    if connection.vendor != "postgresql" or arrays is None:
        observation, replayed = services.observation_submit(annotator=_user(key, user), **fields)
        return _observation_response(observation, replayed)
    now = timezone.now()
    found = sql.observation_submit(
        key=key,
        user_id=None if user is None else user.pk,
        assignment_id=fields["assignment_id"],
        idempotency_key=fields["idempotency_key"],
        names=arrays[0],
        counts=arrays[1],
        seconds_on_device=fields["seconds_on_device"],
        now=now,
    )
    if found is None or not found[1]:
        raise _invalid_token()
    annotator_id, _, observation_id, context = found
    if observation_id is None:
        # Not stored: the service says why (or returns the answer a replay stored).
        observation, replayed = services.observation_submit_in_context(
            annotator_id=annotator_id, context=context, now=now, **fields
        )
        return _observation_response(observation, replayed)
    project_id, updated_at, tags = context[1], context[3], sql.from_json(context[7])
    names = selectors.project_tags_at(
        project_id=project_id, updated_at=sql.from_db_datetime(updated_at)
    )
    counts = fields["counts"]
    answer = answer_out(
        observation_id=observation_id,
        assignment_id=fields["assignment_id"],
        counts={names[i]["name"]: counts[names[i]["name"]] for i in tags},
        seconds_on_device=fields["seconds_on_device"],
        idempotency_key=fields["idempotency_key"],
        submitted_at=now,
        replayed=False,
    )
    return _json(answer, status=201)


_INT32 = 2**31


def _count_arrays(counts: dict) -> tuple[list[str], list[int]] | None:
    """The submitted counts as (tag names, counts) for the one-statement submission, or None
    when they are not even names and whole numbers (the service then says what is wrong)."""
    if len(counts) > MAX_TAGS:
        return None
    names, values = list(counts), list(counts.values())
    for value in values:
        if type(value) is not int or not -_INT32 < value < _INT32:
            return None
    if not all(type(name) is str for name in names):
        return None
    return names, values


def _observation_response(observation: Observation, replayed: bool) -> HttpResponse:
    names = selectors.project_tag_names(project=observation.project)
    return _json(
        observation_out(observation, names, replayed=replayed), status=200 if replayed else 201
    )
