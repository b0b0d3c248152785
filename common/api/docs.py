"""The OpenAPI schema and the interactive docs, with the API's error body like every API URL.

drf-spectacular's views render an error with their own renderer (YAML for the schema, an HTML
template for the docs, which has no template for an OPTIONS answer: a 500); here an error is
always the API's JSON error body. How views are read: `common.api.schema`.
"""

from django.conf import settings
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from common.api.errors import JsonErrors


class _JsonErrors(JsonErrors):
    http_method_names = ["get", "head"]


class SchemaView(_JsonErrors, SpectacularAPIView):
    pass


class DocsView(_JsonErrors, SpectacularSwaggerSplitView):
    """Swagger UI with its start-up script served as a file of its own (`?script`), so the
    site's Content-Security-Policy lets it run; only its page's small inline stylesheet needs a
    wider `style-src`."""

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        response["Content-Security-Policy"] = settings.CONTENT_SECURITY_POLICY.replace(
            "style-src 'self'", "style-src 'self' 'unsafe-inline'"
        )
        return response
