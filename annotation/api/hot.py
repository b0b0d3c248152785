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

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.middleware.csrf import CsrfViewMiddleware
from rest_framework.authentication import get_authorization_header

from annotation import exceptions, scheduler, selectors, services, sql
from annotation.api.errors import STATUS_BY_ERROR, error_body
from annotation.api.serializers import observation_out, task_out
from annotation.api.tasks import submission_fields


class _Unauthenticated(Exception):
    def __init__(self, code: str, message: str) -> None:
        self.code, self.message = code, message


class _CsrfFailed(Exception):
    pass


class _CsrfCheck(CsrfViewMiddleware):
    def _reject(self, request, reason):
        return reason  # returned, not rendered: the view answers with the API's error body


def _caller(request: HttpRequest):
    """Token from the Authorization header, else the session user (CSRF-checked, like DRF)."""
    header = get_authorization_header(request).split()
    if header and header[0].lower() == b"token":
        if len(header) != 2:
            raise _Unauthenticated("authentication_failed", "Invalid token header.")
        user = sql.user_for_token(header[1].decode("latin-1"))
        if user is None or not user.is_active:
            raise _Unauthenticated("authentication_failed", "Invalid token.")
        return user
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        raise _Unauthenticated("not_authenticated", "Authentication credentials were not provided.")
    check = _CsrfCheck(lambda r: None)
    check.process_request(request)
    reason = check.process_view(request, None, (), {})
    if reason:
        raise _CsrfFailed(f"CSRF Failed: {reason}")
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
            user = _caller(request)
            return view(request, user, **kwargs)
        except _Unauthenticated as exc:
            response = _error(401, exc.code, exc.message)
            response["WWW-Authenticate"] = "Token"
            return response
        except _CsrfFailed as exc:
            return _error(403, "permission_denied", str(exc))
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


def next_task(request: HttpRequest, user, project_id: int) -> HttpResponse:
    membership = selectors.membership_for(user=user, project_id=project_id)
    lease = scheduler.task_lease_next(project=membership.project, annotator=user)
    if lease is None:
        return HttpResponse(status=204)
    return JsonResponse(task_out(lease, selectors.project_tags(project=membership.project)))


def submit_observation(request: HttpRequest, user) -> HttpResponse:
    if request.content_type != "application/json":
        return _error(415, "unsupported_media_type", "Send application/json.")
    try:
        data = json.loads(request.body)
    except (ValueError, UnicodeDecodeError) as exc:
        return _error(400, "parse_error", f"JSON parse error - {exc}")
    observation, replayed = services.observation_submit(annotator=user, **submission_fields(data))
    names = selectors.project_tag_names(project=observation.project)
    return JsonResponse(
        observation_out(observation, names, replayed=replayed), status=200 if replayed else 201
    )
