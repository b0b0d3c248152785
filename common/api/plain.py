"""JSON endpoints as plain Django views, for requests that every annotator repeats all day.

They skip DRF's per-request machinery (request wrapping, content negotiation, renderers) and keep
its contract with DRF's own parts: the caller is `Authorization: Token <key>` (looked up by the
statement that serves the request, or by `Caller.user`) or the session, with DRF's CSRF check;
errors are the domain errors every view maps (`common.api.errors.domain_error`); the OpenAPI
schema documents them like the DRF views (`plain_view` attaches a description class that
drf-spectacular reads; it is never called).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse
from drf_spectacular.utils import extend_schema
from rest_framework.authentication import SessionAuthentication
from rest_framework.exceptions import AuthenticationFailed as DrfAuthenticationFailed
from rest_framework.exceptions import PermissionDenied
from rest_framework.views import APIView

from accounts.authentication import ApiTokenAuthentication, token_user
from common import inputs
from common.api.errors import domain_error, error_body
from common.api.parsers import JsonParser
from common.exceptions import (
    AuthenticationFailed,
    DomainError,
    NotAuthenticated,
    PayloadTooLarge,
)


class _Refused(Exception):
    """Answer with `response` (a 403 for CSRF, a 415 or 400 for the body)."""

    def __init__(self, response: HttpResponse) -> None:
        self.response = response


@dataclass(frozen=True, slots=True)
class Caller:
    """Who sent the request: a token key not looked up yet, or the session's user."""

    key: str | None
    session_user: Any = None

    @property
    def user_id(self) -> int | None:
        return None if self.session_user is None else self.session_user.pk

    def user(self):
        """The caller as a user: the session user, or the active owner of the token."""
        if self.key is None:
            return self.session_user
        try:
            return token_user(self.key)[0]
        except DrfAuthenticationFailed as exc:
            raise AuthenticationFailed(str(exc.detail)) from exc


class _TokenNotLookedUp(ApiTokenAuthentication):
    """DRF's token authentication, reading the header by its rules and with its messages, but
    leaving the key's lookup to the statement that serves the request (`Caller.user` else)."""

    def authenticate_credentials(self, key):
        return None, key


_TOKEN, _SESSION = _TokenNotLookedUp(), SessionAuthentication()


def _caller(request: HttpRequest) -> Caller:
    try:
        credentials = _TOKEN.authenticate(request)
    except DrfAuthenticationFailed as exc:
        raise AuthenticationFailed(str(exc.detail)) from exc
    if credentials is not None:
        return Caller(key=credentials[1])
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        raise NotAuthenticated("Authentication credentials were not provided.")
    try:
        _SESSION.enforce_csrf(request)  # DRF's own check, as its session authentication makes it
    except PermissionDenied as exc:
        raise _Refused(error_response(403, "permission_denied", str(exc.detail))) from exc
    return Caller(key=None, session_user=user)


def json_response(data: dict, *, status: int = 200) -> HttpResponse:
    """A JSON response. These answers hold only JSON's own types, so the standard encoder does
    (JsonResponse makes a DjangoJSONEncoder for every response)."""
    return HttpResponse(json.dumps(data), content_type="application/json", status=status)


def error_response(
    status: int, code: str, message: str, fields: dict | None = None
) -> HttpResponse:
    return json_response(error_body(code, message, fields), status=status)


def json_body(request: HttpRequest, *, optional: bool = False):
    """The request's JSON body (None when `optional` and there is none), read under the rules
    of `common.inputs`, as the DRF views' parser reads it."""
    try:
        body = request.body
    except RequestDataTooBig as exc:
        message = f"A JSON body is at most {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes."
        raise PayloadTooLarge(message) from exc
    if optional and not body:
        return None
    if request.content_type != "application/json":
        raise _Refused(error_response(415, "unsupported_media_type", "Send application/json."))
    try:
        return inputs.load_json(body)
    except inputs.UnreadableInput as exc:
        raise _Refused(error_response(400, "parse_error", str(exc))) from exc


def _description_class(view: Callable, method: str, schema: dict) -> type[APIView]:
    """An APIView that only describes `view` to drf-spectacular (the URL serves `view`)."""

    def handler(self, request, *args, **kwargs):
        raise NotImplementedError("served by the plain view")

    handler.__name__ = method
    return type(
        view.__name__,
        (APIView,),
        {
            "__doc__": view.__doc__,
            "__module__": view.__module__,
            "authentication_classes": [ApiTokenAuthentication, SessionAuthentication],
            "parser_classes": [JsonParser],
            method: extend_schema(**schema)(handler),
        },
    )


def plain_view(*, method: str = "post", **schema):
    """Serve `view(request, caller, **url_kwargs)` for `method` only, with authentication and
    the API's errors; `schema` are `extend_schema`'s arguments for the OpenAPI schema."""

    def decorate(view: Callable[..., HttpResponse]):
        def wrapped(request: HttpRequest, **kwargs) -> HttpResponse:
            if request.method != method.upper():
                response = error_response(
                    405, "method_not_allowed", f'Method "{request.method}" not allowed.'
                )
                response["Allow"] = method.upper()
                return response
            try:
                return view(request, _caller(request), **kwargs)
            except NotAuthenticated as exc:
                response = error_response(401, exc.code, exc.message)
                response["WWW-Authenticate"] = "Token"
                return response
            except _Refused as exc:
                return exc.response
            except DomainError as exc:
                status, body = domain_error(exc)
                return json_response(body, status=status)

        wrapped.csrf_exempt = True  # checked in `_caller` for session users, as DRF does
        wrapped.cls = _description_class(view, method, schema)
        wrapped.initkwargs = {}
        wrapped.__name__ = view.__name__
        wrapped.__doc__ = view.__doc__
        wrapped.__module__ = view.__module__
        return wrapped

    return decorate
