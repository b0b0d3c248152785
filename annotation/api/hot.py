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

from annotation import exceptions, scheduler, selectors, services, sql
from annotation.api.errors import STATUS_BY_ERROR, error_body
from annotation.api.serializers import observation_out, task_out
from annotation.api.tasks import next_task_fields, submission_fields
from annotation.models import Membership, Project


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
        except exceptions.AnnotationError as exc:
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
    except (ValueError, UnicodeDecodeError) as exc:
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
        project = Project(pk=project_id, updated_at=sql.from_db_datetime(updated_at))
        return _task_response(scheduler.lease_from_row(assignment_id, expires_at, row[8:]), project)
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
    return JsonResponse(task_out(lease, selectors.project_tags(project=project)))


def submit_observation(request: HttpRequest, key: str | None, user) -> HttpResponse:
    fields = submission_fields(_json_body(request))
    if key is not None and connection.vendor == "postgresql":
        # The token lookup rides along with the submission's context read.
        found = sql.submission_context_for_token(
            key=key,
            assignment_id=fields["assignment_id"],
            idempotency_key=fields["idempotency_key"],
        )
        if found is None or not found[1]:
            raise _invalid_token()
        annotator_id, _, context = found
        observation, replayed = services.observation_submit_in_context(
            annotator_id=annotator_id, context=context, **fields
        )
    else:
        observation, replayed = services.observation_submit(annotator=_user(key, user), **fields)
    names = selectors.project_tag_names(project=observation.project)
    return JsonResponse(
        observation_out(observation, names, replayed=replayed), status=200 if replayed else 201
    )
