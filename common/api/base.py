"""Base classes of the API views: the error body, and project scoping."""

from rest_framework.authentication import SessionAuthentication
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.authentication import ApiTokenAuthentication
from common.api.errors import exception_handler
from common.api.pagination import Pagination
from common.permissions import ProjectScope


class ApiView(APIView):
    # Token first, so that an anonymous request is answered 401 with `WWW-Authenticate: Token`.
    # Session auth (browsers) enforces CSRF on unsafe methods.
    authentication_classes = [ApiTokenAuthentication, SessionAuthentication]
    pagination_class = Pagination  # what `paginated` pages with (the schema reads it here)

    def get_exception_handler(self):
        return exception_handler

    def initial(self, request, *args, **kwargs):
        # A method the URL does not serve is a 405 (with `Allow`) whoever asks, as Django's own
        # views answer: DRF asked for credentials (401) or hid the project (404) first.
        method = request.method.lower()
        if method not in self.http_method_names or not hasattr(self, method):
            self.http_method_not_allowed(request)
        super().initial(request, *args, **kwargs)


class ProjectView(ProjectScope, ApiView):
    """A view under /api/projects/{project_id}/: members only (others get 404)."""


class ManagerView(ProjectView):
    manager_only = True


def paginated(view: APIView, queryset, shape) -> Response:
    paginator = view.pagination_class()
    page = paginator.paginate_queryset(queryset, view.request, view=view)
    return paginator.get_paginated_response([shape(item) for item in page])
