"""URLs of the annotation API, included under /api/ (see annotation/API.md)."""

from django.http import JsonResponse
from django.urls import path
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.utils import inline_serializer
from rest_framework import serializers

from annotation.api import corpus, cycle, exports, projects
from common.api.errors import request_error
from common.api.schema import described


@csrf_exempt  # nothing to protect; and a method it does not serve is its 405, not CSRF's 403
def ping(request):
    """Trivial view: no auth, no database. The benchmark's ceiling."""
    if request.method not in ("GET", "HEAD"):
        response = request_error(request, 405, "method_not_allowed", "Only GET is allowed here.")
        response["Allow"] = "GET, HEAD"
        return response
    return JsonResponse({"ok": True})


described(
    ping,
    method="get",
    public=True,
    responses={200: inline_serializer("Ping", {"ok": serializers.BooleanField()})},
)


P = "projects/<id:project_id>/"

urlpatterns = [
    path("ping/", ping, name="ping"),
    # The annotator's cycle first: Django tries the patterns in order, on every request.
    path(P + "tasks/next/", cycle.next_task, name="task-next"),
    path("observations/", cycle.observation_submit, name="observation-submit"),
    path("join/", projects.JoinView.as_view(), name="join"),
    path("projects/", projects.ProjectListView.as_view(), name="project-list"),
    path(
        "projects/with-corpus/",
        projects.ProjectWithCorpusView.as_view(),
        name="project-create-with-corpus",
    ),
    path("corpus/preview/", corpus.CorpusPreviewView.as_view(), name="corpus-preview"),
    path(P, projects.ProjectDetailView.as_view(), name="project-detail"),
    path(P + "invite/", projects.InviteRotateView.as_view(), name="project-invite"),
    path(P + "members/", projects.MemberListView.as_view(), name="member-list"),
    path(P + "members/<id:user_id>/", projects.MemberDetailView.as_view(), name="member-detail"),
    path(P + "stats/", projects.ProjectStatsView.as_view(), name="project-stats"),
    path(P + "stats/me/", projects.MyStatsView.as_view(), name="my-stats"),
    path(P + "corpus/", corpus.CorpusView.as_view(), name="corpus"),
    path(P + "corpus/jobs/", corpus.ImportJobListView.as_view(), name="import-job-list"),
    path(
        P + "corpus/jobs/<id:job_id>/",
        corpus.ImportJobDetailView.as_view(),
        name="import-job-detail",
    ),
    path(
        P + "corpus/jobs/<id:job_id>/cancel/",
        corpus.ImportJobCancelView.as_view(),
        name="import-job-cancel",
    ),
    path(P + "sentences/", corpus.SentenceListView.as_view(), name="sentence-list"),
    path(P + "observations/", exports.ObservationListView.as_view(), name="observation-list"),
    *(
        path(
            P + f"exports/{name}",
            exports.export_view(name),
            name=f"export-{name.replace('.', '-')}",
        )
        for name in exports.EXPORT_NAMES
    ),
]
