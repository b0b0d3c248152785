"""How drf-spectacular reads the API's views (`TallySchema`, the DEFAULT_SCHEMA_CLASS).

A client generated from the schema (openapi-python-client, issue 24) must work as it comes: one
request content type per body (JSON; multipart only where a file is sent), the API's error body
under every error status a view can answer, lists paged by `limit`/`offset` (`ApiView`'s
`pagination_class`), and plain Django views documented like DRF ones (`described`).
"""

from collections.abc import Callable

import uritemplate
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import force_instance
from drf_spectacular.utils import PolymorphicProxySerializer, extend_schema
from rest_framework.permissions import AllowAny
from rest_framework.views import APIView

from common.api.errors import ErrorSerializer

JSON = "application/json"
# Why each error status is answered, as the schema says it.
_ERRORS = {
    400: "The request is not valid: `fields` names each invalid field and says why.",
    401: "Not signed in: send `Authorization: Token <key>`.",
    403: "Not allowed: only the project's managers may do this (or a session's CSRF check failed).",
    404: "No such object, or not one of your projects.",
    413: "The request is too large: the message names the limit.",
    415: "The body must be JSON (`application/json`).",
    429: "Too many requests: wait and try again.",
}


class TallySchema(AutoSchema):
    """drf-spectacular's AutoSchema with the API's request types and error answers."""

    def map_parsers(self) -> list[str]:
        # The API's views read JSON, forms and multipart alike, but a generated client gets one
        # type per body (three made openapi-python-client write modules that fail on import):
        # JSON, unless a view reads multipart only (file uploads).
        media_types = super().map_parsers()
        return [JSON] if JSON in media_types else media_types

    def _get_request_body(self, direction="request"):
        body = super()._get_request_body(direction)
        # drf-spectacular reads `required` off the body's component, and a oneOf has none: the
        # body is required when every alternative has required fields.
        serializer = self.get_request_serializer() if body else None
        if isinstance(serializer, PolymorphicProxySerializer):
            variants = serializer.serializers
            variants = variants.values() if isinstance(variants, dict) else variants
            if all(
                any(field.required for field in force_instance(v).fields.values()) for v in variants
            ):
                body["required"] = True
        return body

    def _get_response_bodies(self, direction="response"):
        responses = super()._get_response_bodies(direction)
        for code in sorted(self._error_codes()):
            if str(code) not in responses:
                responses[str(code)] = {
                    "content": {JSON: {"schema": self._error_component()}},
                    "description": _ERRORS[code],
                }
        return responses

    def _error_component(self) -> dict:
        return self.resolve_serializer(ErrorSerializer, "response").ref

    def _error_codes(self) -> set[int]:
        """The error statuses the view can answer for this method, whatever the request."""
        codes = set()
        public = any(isinstance(p, AllowAny) for p in self.view.get_permissions())
        if not public:
            codes |= {401, 403}
        if uritemplate.variables(self.path):
            codes.add(404)
        has_body = self.method in ("POST", "PUT", "PATCH") and self.get_request_serializer()
        if has_body or self._is_list_view() or self.get_override_parameters():
            codes.add(400)
        if has_body:
            codes |= {413} | ({415} if JSON in self.map_parsers() else set())
        if getattr(self.view, "throttle_classes", None):
            codes.add(429)
        return codes


def described(view: Callable, *, method: str, public: bool = False, **schema) -> Callable:
    """Document a plain Django view (not a DRF one) in the schema: drf-spectacular reads the
    `cls` of a URL's callback, here an APIView that only describes `view` and is never called.
    `schema`: `extend_schema`'s arguments; `public`: no authentication needed."""

    def handler(self, request, *args, **kwargs):
        raise NotImplementedError("served by the plain view")

    handler.__name__ = method
    attributes = {
        "__doc__": view.__doc__,
        "__module__": view.__module__,
        method: extend_schema(**schema)(handler),
    }
    if public:
        attributes |= {"authentication_classes": [], "permission_classes": [AllowAny]}
    view.cls = type(view.__name__, (APIView,), attributes)
    view.initkwargs = {}
    return view
