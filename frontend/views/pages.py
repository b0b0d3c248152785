"""The pages: home (your projects), the annotator page, the dashboard, a new project.

Views only decide who may see a page and hand it the few facts it needs at render time; the
pages' scripts do the rest through the REST APIs.
"""

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.gzip import gzip_page
from django.views.decorators.http import require_GET

from annotation import selectors
from annotation.models import DEFAULT_VERIFICATION_SHARE, Membership
from annotation.scheduler import MAX_LEASES
from common.exceptions import NotFound
from common.permissions import is_manager
from common.text import LANGUAGES
from frontend.tagsets import PRESET_CHOICES, presets_for_form
from learning.core.privacy import DEFAULT_MECHANISM, MAX_ALPHA, MECHANISMS


def _membership(request: HttpRequest, project_id: int) -> Membership:
    """The caller's membership of the project; 404 for anyone else, as in the API."""
    try:
        return selectors.membership_for(user=request.user, project_id=project_id)
    except NotFound as exc:
        raise Http404("No such project.") from exc


@require_GET
@login_required
def home(request: HttpRequest) -> HttpResponse:
    memberships = list(selectors.memberships_of_user(user=request.user))
    return render(
        request,
        "frontend/home.html",
        {
            "managed": [m for m in memberships if is_manager(m)],
            "annotating": [m for m in memberships if not is_manager(m)],
        },
    )


@require_GET
@login_required
@gzip_page
def annotate(request: HttpRequest, project_id: int) -> HttpResponse:
    membership = _membership(request, project_id)
    return render(
        request,
        "frontend/annotate.html",
        {"project": membership.project, "membership": membership, "max_leases": MAX_LEASES},
    )


@require_GET
@login_required
def project_new(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "frontend/project_new.html",
        {
            "preset_choices": PRESET_CHOICES,
            "presets": presets_for_form(),
            "languages": list(LANGUAGES.items()),
            "mechanisms": MECHANISMS,
            "default_mechanism": DEFAULT_MECHANISM,
            "max_alpha": f"{MAX_ALPHA:g}",
            "default_verification_share": DEFAULT_VERIFICATION_SHARE,
        },
    )


@require_GET
@login_required
def project_detail(request: HttpRequest, project_id: int) -> HttpResponse:
    membership = _membership(request, project_id)
    if not is_manager(membership):
        raise PermissionDenied("Only the project's managers see its dashboard.")
    return render(
        request,
        "frontend/project.html",
        {"project": membership.project, "languages": LANGUAGES},
    )
