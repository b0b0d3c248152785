"""Who may do what inside a project: every project endpoint is scoped through `ProjectScope`.

A caller who is not a member of the project gets 404 (the project does not exist for them); an
annotator calling a manager-only endpoint gets 403.
"""

from rest_framework.exceptions import PermissionDenied

from annotation import selectors
from annotation.models import Membership


class ProjectScope:
    """Mixin for DRF views whose URL has `project_id`: sets `self.membership` and
    `self.project` after authentication, before the handler runs."""

    manager_only = False

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        self.membership = selectors.membership_for(
            user=request.user, project_id=kwargs["project_id"]
        )
        self.project = self.membership.project
        if self.manager_only and not is_manager(self.membership):
            raise PermissionDenied("Only the project's managers may do this.")


def is_manager(membership: Membership) -> bool:
    return membership.role == Membership.Role.MANAGER
