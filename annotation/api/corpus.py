"""Corpus upload and browsing (managers)."""

from django.conf import settings
from django.core.files.uploadhandler import FileUploadHandler, StopUpload
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.response import Response

from annotation import importers, selectors, services
from annotation.api.schemas import ImportJobOut, ImportOut, PreviewOut, SentenceOut
from annotation.api.serializers import (
    CorpusPreviewSerializer,
    CorpusUploadSerializer,
    import_job_out,
    import_out,
)
from annotation.models import ImportJob
from common.api.base import ApiView, ManagerView, paginated
from common.api.errors import ErrorSerializer
from common.api.parsers import MultiPartParser
from common.exceptions import InvalidCorpus, PayloadTooLarge
from common.text import as_sentence


class _LimitUploadHandler(FileUploadHandler):
    """Stop reading an upload as soon as it passes the limit, before it is written to disk."""

    def __init__(self, request=None, max_bytes: int = 0):
        super().__init__(request)
        self.max_bytes = max_bytes
        self.seen = 0
        self.exceeded = False

    def receive_data_chunk(self, raw_data, start):
        self.seen += len(raw_data)
        if self.seen > self.max_bytes:
            self.exceeded = True
            raise StopUpload(connection_reset=False)
        return raw_data

    def file_complete(self, file_size):
        return None


def _sentence_out(sentence, names):
    return {
        "id": sentence.pk,
        "position": sentence.position,
        "tokens": sentence.tokens,
        "gold_tags": None if sentence.gold_tags is None else [names[i] for i in sentence.gold_tags],
        "split": sentence.split,
    }


class UploadGuard:
    """A view mixin: a POST's upload is refused (413) as soon as it passes the limit."""

    def initial(self, request, *args, **kwargs):
        # Before anything reads the body (the CSRF check of session auth parses it).
        self.upload_guard = None
        if request.method == "POST":
            limit = settings.TALLY_MAX_UPLOAD_BYTES
            declared = request.META.get("CONTENT_LENGTH") or "0"
            if declared.isdigit() and int(declared) > limit + 64 * 1024:
                raise PayloadTooLarge(f"The upload is larger than {limit} bytes.")
            self.upload_guard = _LimitUploadHandler(request, max_bytes=limit)
            request.upload_handlers.insert(0, self.upload_guard)
        super().initial(request, *args, **kwargs)

    def upload_checked(self, serializer_class, data):
        """`data` validated by `serializer_class`, after the upload's size is checked."""
        limit = settings.TALLY_MAX_UPLOAD_BYTES
        checked = serializer_class(data=data)
        if self.upload_guard is not None and self.upload_guard.exceeded:
            raise PayloadTooLarge(f"The upload is larger than {limit} bytes.")
        checked.is_valid(raise_exception=True)
        return dict(checked.validated_data)


class CorpusView(UploadGuard, ManagerView):
    parser_classes = [MultiPartParser]

    @extend_schema(responses={200: ImportOut(many=True)})
    def get(self, request, project_id):
        return paginated(self, selectors.imports_of_project(project=self.project), import_out)

    @extend_schema(
        request=CorpusUploadSerializer,
        responses={
            201: OpenApiResponse(ImportOut, description="Imported."),
            202: OpenApiResponse(
                ImportJobOut,
                description="Accepted: a large import runs as a job (its `url` is also in "
                "`Location`).",
            ),
            409: OpenApiResponse(
                ErrorSerializer,
                description="`duplicate_corpus`: the project has this file's content already; "
                "send `allow_duplicate` to import it again; `import_queue_full`: the project has "
                "`TALLY_IMPORT_JOBS_PER_PROJECT` import jobs waiting or running.",
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
    def post(self, request, project_id):
        """201 and the import when the file was imported at once; 202 and the import job (its
        `url` to follow, also in `Location`) when a worker imports it."""
        limit = settings.TALLY_MAX_UPLOAD_BYTES
        fields = self.upload_checked(CorpusUploadSerializer, request.data)
        upload = fields.pop("file")
        result = services.corpus_upload(
            project=self.project,
            user=request.user,
            file=upload,
            filename=upload.name or "",
            max_bytes=limit,
            **fields,
        )
        return upload_response(self.project, result)


def upload_response(project, result, body: dict | None = None) -> Response:
    """An upload's answer: 201 and the import, or 202 and the job (with `Location`)."""
    if isinstance(result, ImportJob):
        job = import_job_out(result)
        response = Response(
            {**(body or {}), "import_job": job} if body is not None else job,
            status=status.HTTP_202_ACCEPTED,
        )
        response["Location"] = job["url"]
        return response
    shown = import_out(selectors.imports_of_project(project=project).get(pk=result.pk))
    return Response(
        {**body, "import": shown} if body is not None else shown,
        status=status.HTTP_201_CREATED,
    )


class ImportJobListView(ManagerView):
    @extend_schema(responses={200: ImportJobOut(many=True)})
    def get(self, request, project_id):
        """The project's import jobs, newest first (the dashboard shows the running ones)."""
        return paginated(
            self, selectors.import_jobs_of_project(project=self.project), import_job_out
        )


class ImportJobDetailView(ManagerView):
    @extend_schema(responses={200: ImportJobOut})
    def get(self, request, project_id, job_id):
        job = selectors.import_job_of_project(project=self.project, job_id=job_id)
        return Response(import_job_out(job))


class ImportJobCancelView(ManagerView):
    @extend_schema(
        request=None,
        responses={
            200: ImportJobOut,
            409: OpenApiResponse(ErrorSerializer, description="The job has ended."),
        },
    )
    def post(self, request, project_id, job_id):
        """Stop a queued or running job: nothing of it is imported. 409 once it has ended."""
        job = selectors.import_job_of_project(project=self.project, job_id=job_id)
        return Response(import_job_out(services.import_job_cancel(job=job)))


class CorpusPreviewView(UploadGuard, ApiView):
    """The first sentences of a file as the import would read them (any signed-in user: the
    new-project form has no project yet). Nothing is stored."""

    parser_classes = [MultiPartParser]

    @extend_schema(request=CorpusPreviewSerializer, responses={200: PreviewOut})
    def post(self, request):
        fields = self.upload_checked(CorpusPreviewSerializer, request.data)
        limit = settings.TALLY_MAX_UPLOAD_BYTES
        try:
            sentences = importers.preview(
                fields["file"],
                format=fields["format"],
                tag_column=fields["tag_column"],
                language=fields["language"],
                partial=fields["partial"],
                max_bytes=limit,
            )
        except importers.CorpusError as exc:
            raise InvalidCorpus(as_sentence(str(exc)), line_number=exc.line_number) from exc
        except importers.CorpusTooLarge as exc:
            raise PayloadTooLarge(f"The corpus is larger than {limit} bytes.") from exc
        return Response({"sentences": sentences})


class SentenceListView(ManagerView):
    @extend_schema(responses={200: SentenceOut(many=True)})
    def get(self, request, project_id):
        names = selectors.project_tag_names(project=self.project)
        return paginated(
            self,
            selectors.sentences_of_project(project=self.project),
            lambda s: _sentence_out(s, names),
        )
