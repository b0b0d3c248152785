"""The OpenAPI schema and the interactive docs, with the API's error body like every API URL.

drf-spectacular's views render an error with their own renderer (YAML for the schema, an HTML
template for the docs, which has no template for an OPTIONS answer: a 500); here an error is
always the API's JSON error body. How views are read: `common.api.schema`.
"""

from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from common.api.errors import JsonErrors


class _JsonErrors(JsonErrors):
    http_method_names = ["get", "head"]


class SchemaView(_JsonErrors, SpectacularAPIView):
    pass


class DocsView(_JsonErrors, SpectacularSwaggerView):
    pass
