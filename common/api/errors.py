"""One error body for every API failure: `{"error": {"code", "message", "fields"?}}`."""

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404, HttpResponse, JsonResponse
from rest_framework import exceptions, serializers, status
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from common import exceptions as domain

_STATUS_BY_ERROR = (  # the first class an error is an instance of gives its status
    (domain.InvalidInput, status.HTTP_400_BAD_REQUEST),
    (domain.InvalidCorpus, status.HTTP_400_BAD_REQUEST),
    (domain.NotAllowed, status.HTTP_403_FORBIDDEN),
    (domain.NotFound, status.HTTP_404_NOT_FOUND),
    (domain.Conflict, status.HTTP_409_CONFLICT),
    (domain.PayloadTooLarge, status.HTTP_413_REQUEST_ENTITY_TOO_LARGE),
    (domain.Throttled, status.HTTP_429_TOO_MANY_REQUESTS),
)


class ErrorDetailSerializer(serializers.Serializer):
    """The error itself, for the schema (`error_body` writes it)."""

    code = serializers.CharField(help_text="What went wrong, for programs: `invalid`, `not_found`…")
    message = serializers.CharField(help_text="What went wrong, in words for the user.")
    fields = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()),
        required=False,
        help_text="The invalid fields of the request, each with what is wrong with it.",
    )
    line = serializers.IntegerField(
        required=False, allow_null=True, help_text="A corpus error: the line of the file."
    )


class ErrorSerializer(serializers.Serializer):
    """Every error the API answers: `{"error": {"code", "message", "fields"?}}`."""

    error = ErrorDetailSerializer()


def error_body(code: str, message: str, fields: dict | None = None, **extra) -> dict:
    error = {"code": code, "message": message, **extra}
    if fields:
        error["fields"] = fields
    return {"error": error}


def domain_error(exc: domain.DomainError) -> tuple[int, dict]:
    """(HTTP status, error body) of a domain error: the one mapping every view uses."""
    http_status = next(
        (code for cls, code in _STATUS_BY_ERROR if isinstance(exc, cls)),
        status.HTTP_400_BAD_REQUEST,
    )
    extra = {"line": exc.line_number} if isinstance(exc, domain.InvalidCorpus) else {}
    return http_status, error_body(exc.code, exc.message, exc.fields, **extra)


def _flatten(detail) -> dict[str, list[str]]:
    """A validation error's detail as `fields`: each field's messages in plain words, a nested
    one (an item of a list, a field of an object) prefixed with where it is ("Item 2, name:
    This field is required."), never a `repr` of DRF's `ErrorDetail`s."""
    if isinstance(detail, dict):
        return {str(key): _messages(value) for key, value in detail.items()}
    return {"non_field_errors": _messages(detail)}


def _messages(detail, where: str = "") -> list[str]:
    if isinstance(detail, dict):
        return [
            message
            for key, value in detail.items()
            for message in _messages(value, f"{where}, {key}" if where else str(key))
        ]
    if isinstance(detail, list) and any(isinstance(item, dict | list) for item in detail):
        return [
            message
            for n, value in enumerate(detail, start=1)
            for message in _messages(value, f"{where}, item {n}" if where else f"item {n}")
        ]
    items = detail if isinstance(detail, list) else [detail]
    return [f"{where[:1].upper()}{where[1:]}: {item}" if where else str(item) for item in items]


def exception_handler(exc, context):
    if isinstance(exc, domain.DomainError):
        http_status, body = domain_error(exc)
        return Response(body, status=http_status)
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, exceptions.ValidationError):
        body = error_body("invalid", "The request is not valid.", _flatten(exc.detail))
    else:
        codes = exc.get_codes()
        code = codes if isinstance(codes, str) else exc.default_code
        body = error_body(code, str(exc.detail))
    response.data = body
    return response


class JsonErrors:
    """A view mixin: errors are the API's JSON body whatever the view renders when it succeeds
    (an event stream, a YAML schema, an HTML page)."""

    def get_exception_handler(self):
        return exception_handler

    def handle_exception(self, exc):
        response = super().handle_exception(exc)
        self.request.accepted_renderer = JSONRenderer()
        self.request.accepted_media_type = JSONRenderer.media_type
        return response


def is_api(request) -> bool:
    return request.path.startswith("/api/")


def request_error(request, status: int, code: str, message: str) -> HttpResponse:
    """An error outside any view: the API's error body under /api/, plain text elsewhere."""
    if is_api(request):
        return JsonResponse(error_body(code, message), status=status)
    return HttpResponse(message, content_type="text/plain; charset=utf-8", status=status)
