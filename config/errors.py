"""Site-wide 400, 404 and 500 pages: under /api/ they speak the API's JSON error body."""

import sys

from django.http import HttpRequest, JsonResponse
from django.views import defaults

from common.api.errors import error_body
from common.middleware import database_unavailable, database_unavailable_response


def _is_api(request: HttpRequest) -> bool:
    return request.path.startswith("/api/")


def bad_request(request: HttpRequest, exception: Exception):
    if _is_api(request):
        return JsonResponse(error_body("bad_request", "The request is malformed."), status=400)
    return defaults.bad_request(request, exception)


def not_found(request: HttpRequest, exception: Exception):
    if _is_api(request):
        return JsonResponse(error_body("not_found", "There is no such API address."), status=404)
    return defaults.page_not_found(request, exception)


def server_error(request: HttpRequest):
    # Django calls this while it handles the uncaught exception, so the exception is at hand.
    if database_unavailable(sys.exc_info()[1]):
        return database_unavailable_response(request)
    if _is_api(request):
        body = error_body("server_error", "Something went wrong on our side; it has been logged.")
        return JsonResponse(body, status=500)
    return defaults.server_error(request)
