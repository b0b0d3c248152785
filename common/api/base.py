"""Base classes of the API views: the error body, and project scoping."""

from rest_framework.authentication import SessionAuthentication, TokenAuthentication
from rest_framework.response import Response
from rest_framework.views import APIView

from common.api.errors import exception_handler
from common.api.pagination import Pagination
from common.permissions import ProjectScope


class ApiView(APIView):
    # Token first, so that an anonymous request is answered 401 with `WWW-Authenticate: Token`.
    # Session auth (browsers) enforces CSRF on unsafe methods.
    authentication_classes = [TokenAuthentication, SessionAuthentication]
    pagination_class = Pagination  # what `paginated` pages with (the schema reads it here)

    def get_exception_handler(self):
        return exception_handler


class ProjectView(ProjectScope, ApiView):
    """A view under /api/projects/{project_id}/: members only (others get 404)."""


class ManagerView(ProjectView):
    manager_only = True


def paginated(view: APIView, queryset, shape) -> Response:
    paginator = view.pagination_class()
    page = paginator.paginate_queryset(queryset, view.request, view=view)
    return paginator.get_paginated_response([shape(item) for item in page])
