"""The pages: home (your projects), the annotator page, the dashboard, a new project.

Views only decide who may see a page and hand it the few facts it needs at render time; the
pages' scripts do the rest through the REST APIs.
"""

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.views.decorators.gzip import gzip_page
from django.views.decorators.http import require_GET

from accounts import device
from annotation import selectors
from annotation.models import DEFAULT_EVALUATION_FRACTION, Membership
from annotation.scheduler import MAX_LEASES
from common.exceptions import NotFound
from common.permissions import is_manager
from common.text import LANGUAGES
from frontend.page_text import ANNOTATE_TEXT, page_language
from frontend.storage import blank_comment_lines
from frontend.tagsets import PRESET_CHOICES, presets_for_form
from learning import predictions
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
    lang = page_language(membership.project.language)
    return render(
        request,
        "frontend/annotate.html",
        {
            "project": membership.project,
            "membership": membership,
            "max_leases": MAX_LEASES,
            "device_session": device.session_tag(request.session.session_key),
            "lang": lang,
            "text": ANNOTATE_TEXT[lang],
        },
    )


@require_GET
def annotate_worker(request: HttpRequest) -> HttpResponse:
    """The annotator pages' service worker. Served from /annotate/ (not /static/) because a
    worker serves only the pages under its own folder; revalidated on every visit, so a new
    version takes over at the next load."""
    source = render_to_string("frontend/annotate-worker.js", request=request)
    response = HttpResponse(blank_comment_lines(source), content_type="text/javascript")
    response["Cache-Control"] = "no-cache"
    return response


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
            "default_evaluation_fraction": DEFAULT_EVALUATION_FRACTION,
        },
    )


@require_GET
@login_required
def project_detail(request: HttpRequest, project_id: int) -> HttpResponse:
    membership = _membership(request, project_id)
    if not is_manager(membership):
        raise PermissionDenied("Only the project's managers see its dashboard.")
    project = membership.project
    predictions.warm_up(language=project.language)
    return render(
        request,
        "frontend/project.html",
        {
            "project": project,
            "languages": LANGUAGES,
            "default_evaluation_fraction": DEFAULT_EVALUATION_FRACTION,
        },
    )
