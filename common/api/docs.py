"""The OpenAPI schema and the interactive docs, with the API's error body like every API URL.

drf-spectacular's views render an error with their own renderer (YAML for the schema, an HTML
template for the docs, which has no template for an OPTIONS answer: a 500); here an error is
always the API's JSON error body. How views are read: `common.api.schema`.
"""

from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework.renderers import JSONRenderer

from common.api.errors import exception_handler


class _JsonErrors:
    http_method_names = ["get", "head"]

    def get_exception_handler(self):
        return exception_handler

    def handle_exception(self, exc):
        response = super().handle_exception(exc)
        self.request.accepted_renderer = JSONRenderer()
        self.request.accepted_media_type = JSONRenderer.media_type
        return response


class SchemaView(_JsonErrors, SpectacularAPIView):
    pass


class DocsView(_JsonErrors, SpectacularSwaggerView):
    pass
