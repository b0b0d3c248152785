"""Projects, invites, members and statistics."""

from django.conf import settings
from django.db import transaction
from drf_spectacular.utils import OpenApiRequest, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.response import Response

from annotation import selectors, services
from annotation.api.corpus import UploadGuard, upload_response
from annotation.api.schemas import (
    InviteOut,
    JoinOut,
    MemberOut,
    MyStatsOut,
    ProjectOut,
    ProjectStatsOut,
    ProjectWithImportJobOut,
    ProjectWithImportOut,
)
from annotation.api.serializers import (
    CorpusUploadSerializer,
    JoinSerializer,
    ProjectWithCorpusSerializer,
    ProjectWriteSerializer,
    project_out,
)
from common import inputs
from common.api.base import ApiView, ManagerView, ProjectView, paginated
from common.api.errors import ErrorSerializer
from common.api.output import iso
from common.api.parsers import JsonParser, MultiPartParser
from common.exceptions import InvalidInput
from common.permissions import is_manager
from common.text import as_sentence
from learning import services as learning_services


class ProjectListView(UploadGuard, ApiView):
    """Your projects (any role); create one."""

    parser_classes = [JsonParser, MultiPartParser]

    @extend_schema(responses={200: ProjectOut(many=True)})
    def get(self, request):
        memberships = selectors.memberships_of_user(user=request.user)
        return paginated(self, memberships, lambda m: project_out(m.project, m.role))

    @extend_schema(request=ProjectWriteSerializer, responses={201: ProjectOut})
    def post(self, request):
        """A JSON body creates an empty project. A multipart body creates the project and
        imports its corpus together, or neither: `project` (the JSON body's fields, as JSON
        text) and the corpus upload's fields (documented as `POST /api/projects/with-corpus/`,
        the same request)."""
        if request.content_type.startswith("multipart/"):
            return self._create_with_corpus(request)
        data = ProjectWriteSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        fields = dict(data.validated_data)
        fields.pop("status", None)
        project = services.project_create(owner=request.user, **fields)
        return Response(project_out(project, "manager"), status=status.HTTP_201_CREATED)

    def _create_with_corpus(self, request):
        try:
            body = inputs.load_json(request.data.get("project") or "")
        except inputs.UnreadableInput as exc:
            raise InvalidInput(
                "The `project` field must be the project's settings as JSON.",
                fields={"project": [as_sentence(str(exc))]},
            ) from exc
        data = ProjectWriteSerializer(data=body)
        data.is_valid(raise_exception=True)
        fields = dict(data.validated_data)
        fields.pop("status", None)
        corpus = self.upload_checked(CorpusUploadSerializer, request.data)
        corpus.pop("allow_duplicate", None)
        corpus.pop("idempotency_key", None)  # a new project cannot have seen the key
        upload = corpus.pop("file")
        project, result = services.project_create_with_corpus(
            owner=request.user,
            project_fields=fields,
            file=upload,
            filename=upload.name or "",
            max_bytes=settings.TALLY_MAX_UPLOAD_BYTES,
            **corpus,
        )
        # 201, or 202 with `import_job` when a worker imports the corpus (the project exists).
        return upload_response(project, result, body=project_out(project, "manager"))


class ProjectWithCorpusView(ProjectListView):
    """`POST /api/projects/` with a multipart body, as an operation of its own: a client
    generated from the schema gets one body type per operation (openapi-python-client writes
    a module that fails on import for an operation with two)."""

    http_method_names = ["post", "options"]
    parser_classes = [MultiPartParser]

    @extend_schema(
        operation_id="projects_create_with_corpus",
        # The settings travel as one JSON part, as the server reads them.
        request=OpenApiRequest(
            ProjectWithCorpusSerializer, encoding={"project": {"contentType": "application/json"}}
        ),
        responses={
            201: OpenApiResponse(ProjectWithImportOut, description="Created and imported."),
            202: OpenApiResponse(
                ProjectWithImportJobOut,
                description="Created; a large corpus is imported by a job (its `url` is also "
                "in `Location`).",
            ),
            413: OpenApiResponse(
                ErrorSerializer, description="The file, or what it holds, passes a limit."
            ),
            429: OpenApiResponse(
                ErrorSerializer,
                description="`too_many_imports`: you have `TALLY_IMPORT_JOBS_PER_USER` import "
                "jobs waiting or running; send it when one has finished.",
            ),
        },
    )
    def post(self, request):
        """Create a project and import its corpus together, or neither (a large corpus: the
        project, and a job that imports it)."""
        return self._create_with_corpus(request)


class ProjectDetailView(ProjectView):
    @extend_schema(responses={200: ProjectOut})
    def get(self, request, project_id):
        return Response(project_out(self.project, self.membership.role))

    @extend_schema(responses={204: None})
    def delete(self, request, project_id):
        """Delete the project and everything in it; its model files once that is committed.
        (The one place where annotation's API calls learning's services: a project's model
        files are learning's, and deleting a project takes both.)"""
        if not is_manager(self.membership):
            self.permission_denied(request, "Only the project's managers may do this.")
        files: list[str] = []

        def list_files() -> None:  # once the project is locked: a version written before counts
            files.extend(learning_services.model_files_of_project(project_id=self.project.pk))

        with transaction.atomic():
            services.project_delete(project=self.project, before=list_files)
            transaction.on_commit(lambda: learning_services.model_files_delete(files))
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(
        request=ProjectWriteSerializer,
        responses={
            200: ProjectOut,
            409: OpenApiResponse(
                ErrorSerializer,
                description="A setting that is fixed now: the language and tag names once the "
                "project has sentences, the privacy settings once it has answers.",
            ),
        },
    )
    def patch(self, request, project_id):
        if not is_manager(self.membership):
            self.permission_denied(request, "Only the project's managers may do this.")
        data = ProjectWriteSerializer(data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        project = services.project_update(project=self.project, **data.validated_data)
        return Response(project_out(project, self.membership.role))


class InviteRotateView(ManagerView):
    @extend_schema(request=None, responses={200: InviteOut})
    def post(self, request, project_id):
        return Response({"invite_code": services.project_rotate_invite(project=self.project)})


class JoinView(ApiView):
    @extend_schema(
        request=JoinSerializer,
        responses={
            200: OpenApiResponse(JoinOut, description="A member already."),
            201: OpenApiResponse(JoinOut, description="Joined."),
            404: OpenApiResponse(ErrorSerializer, description="No project has this code."),
            409: OpenApiResponse(ErrorSerializer, description="The project is archived."),
        },
    )
    def post(self, request):
        data = JoinSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        membership, created = services.membership_join(
            user=request.user, code=data.validated_data["code"]
        )
        return Response(
            {"project": project_out(membership.project, membership.role), "role": membership.role},
            status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
        )


def _member_out(membership) -> dict:
    return {
        "user": membership.user_id,
        "username": membership.user.get_username(),
        "role": membership.role,
        "joined_at": iso(membership.joined_at),
        "observations": membership.n_observations,
        "flagged": membership.flagged,
        "flag_reason": membership.flag_reason,
    }


class MemberListView(ManagerView):
    @extend_schema(responses={200: MemberOut(many=True)})
    def get(self, request, project_id):
        return paginated(self, selectors.members_with_counts(project=self.project), _member_out)


class MemberDetailView(ManagerView):
    @extend_schema(
        responses={
            204: None,
            409: OpenApiResponse(ErrorSerializer, description="The owner cannot be removed."),
        }
    )
    def delete(self, request, project_id, user_id):
        services.membership_remove(project=self.project, user_id=user_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class ProjectStatsView(ManagerView):
    @extend_schema(responses={200: ProjectStatsOut})
    def get(self, request, project_id):
        return Response(selectors.project_stats(project=self.project))


class MyStatsView(ProjectView):
    @extend_schema(responses={200: MyStatsOut})
    def get(self, request, project_id):
        return Response(selectors.annotator_stats(project=self.project, user=request.user))
