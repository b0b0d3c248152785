"""Middleware shared by the whole site: what every request goes through before any view.

- `RefuseUnreadable`: a NUL character in the path, the query string or a header is refused with
  one 400 `parse_error` (the rule of `common.inputs`; bodies are checked by the parsers).
- `ApiTrailingSlash`: an API URL works with or without its trailing slash (`POST
  /api/observations` is `POST /api/observations/`), instead of Django's redirect, which a POST
  cannot follow (and which is a 500 in development); an API URL that does not exist is a 404 in
  the error shape, in development too (Django's debug 404 is an HTML page).
- `ContentSecurityPolicy`: every page (HTML, SVG) says which sources it may load and run
  (`CONTENT_SECURITY_POLICY`): scripts and styles only from files of this site, no inline script
  or style, no plugin, no framing, forms posting here only. A script that got into a page some
  other way would not run. A view that needs another policy sets the header itself.
- `DatabaseUnavailable`: while the database cannot be reached (down, restarting, recovering), a
  request that needs it is answered 503 with `Retry-After`, in the API's error shape, not 500:
  nothing is wrong with the request, and a client that retries will get through. Errors raised
  outside views (in other middleware, such as a session saved on the way out) reach the site's
  500 handler, which answers the same 503 (`config.errors.server_error`).
"""

from __future__ import annotations

import json

from django.conf import settings
from django.db import InterfaceError, OperationalError
from django.urls import is_valid_path

from common.api.errors import error_body, is_api, request_error

RETRY_AFTER_SECONDS = 2
UNAVAILABLE_MESSAGE = "The database is not answering right now; try again in a moment."


class RefuseUnreadable:
    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request):
        where = _nul_in_request(request)
        if where:
            message = f"{where} contains a NUL character, which is not text."
            return request_error(request, 400, "parse_error", message)
        return self.get_response(request)


def _nul_in_request(request) -> str | None:
    if "\x00" in request.path_info:
        return "The path"
    query = request.META.get("QUERY_STRING", "")
    if "%00" in query or "\x00" in query:
        return "The query string"
    for name, value in request.META.items():
        if name.startswith("HTTP_") and isinstance(value, str) and "\x00" in value:
            return f"The header {name[5:].replace('_', '-').title()}"
    return None


class ContentSecurityPolicy:
    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        # Only documents run what they load: pages (HTML) and SVG, which can hold scripts. The
        # other responses (JSON, scripts, styles) would only carry its bytes.
        # Django's debug pages for 404 and 500 (development only) are styled and scripted inline.
        debug_page = settings.DEBUG and response.status_code in (404, 500)
        if response.get("Content-Type", "").startswith(_DOCUMENT_TYPES) and not debug_page:
            response.headers.setdefault("Content-Security-Policy", settings.CONTENT_SECURITY_POLICY)
        return response


_DOCUMENT_TYPES = ("text/html", "image/svg+xml", "application/xhtml+xml")


class ApiTrailingSlash:
    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request):
        path = request.path_info
        if is_api(request) and not is_valid_path(path):
            if path.endswith("/") or not is_valid_path(path + "/"):
                # Here, not by handler404: with DEBUG (./tally up) Django answers its HTML page.
                return request_error(request, 404, "not_found", "There is no such API address.")
            request.path_info = path + "/"
            request.path = request.path + "/"
        return self.get_response(request)


class DatabaseUnavailable:
    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if not database_unavailable(exception):
            return None
        return database_unavailable_response(request)


def database_unavailable(exception: BaseException | None) -> bool:
    """Whether the database's absence caused `exception`: a connection error, or any error
    raised while one was being handled (cleaning up after a lost connection fails too, with
    another error whose context is the connection's)."""
    seen = set()
    while exception is not None and id(exception) not in seen:
        if isinstance(exception, OperationalError | InterfaceError):
            return True
        seen.add(id(exception))
        exception = exception.__cause__ or exception.__context__
    return False


def database_unavailable_response(request):
    response = request_error(request, 503, "service_unavailable", UNAVAILABLE_MESSAGE)
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response


def unavailable_wsgi_response(environ, start_response) -> list[bytes]:
    """The same 503 for an exception Django did not turn into a response (`config.wsgi`)."""
    if environ.get("PATH_INFO", "").startswith("/api/"):
        body = json.dumps(error_body("service_unavailable", UNAVAILABLE_MESSAGE)).encode()
        content_type = "application/json"
    else:
        body, content_type = UNAVAILABLE_MESSAGE.encode(), "text/plain; charset=utf-8"
    headers = [
        ("Content-Type", content_type),
        ("Content-Length", str(len(body))),
        ("Retry-After", str(RETRY_AFTER_SECONDS)),
    ]
    start_response("503 Service Unavailable", headers)
    return [body]
