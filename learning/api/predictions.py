"""Tag posted text with the current model (managers; annotators where the managers let them:
learning/predict_access.py); export the corpus tagged (managers)."""

from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.throttling import UserRateThrottle

from common.api.base import ManagerView, ProjectView
from common.api.typed import TypedSerializer
from common.permissions import is_manager
from learning import predict_access, predictions
from learning.api.schemas import PredictionOut


@extend_schema_field({"type": "string", "pattern": r"\S"})
class _TextField(serializers.CharField):
    """Text with something to tag in it (the schema says so; `text_tag` checks it and its
    size, in words a user understands)."""


class PredictSerializer(TypedSerializer):
    text = _TextField(trim_whitespace=False, error_messages={"blank": "Give some words to tag."})


class PredictThrottle(UserRateThrottle):
    """Tagging text is work a member can ask for at will: `TALLY_PREDICT_RATE` per user
    (default 30/min), over all their projects."""

    scope = "predict"


class PredictView(ProjectView):
    throttle_classes = [PredictThrottle]

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        # Whatever the method: an annotator of a project that did not opt in may not use it.
        predict_access.predict_allowed(project=self.project, is_manager=is_manager(self.membership))

    @extend_schema(request=PredictSerializer, responses={200: PredictionOut})
    def post(self, request, project_id):
        """Tag text with the current model. Managers may tag any text; annotators only where
        the project allows it (`annotators_may_predict`), and never text from the project's own
        sentences while they are tasks (403 `permission_denied`)."""
        data = PredictSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        text = data.validated_data["text"]
        predict_access.predict_check(
            project=self.project,
            is_manager=is_manager(self.membership),
            text=text,
            max_chars=predictions.MAX_TEXT_CHARS,
        )
        return Response(
            predictions.text_tag(
                project_id=self.project.pk, text=text, language=self.project.language
            )
        )


class PredictionsExportView(ManagerView):
    @extend_schema(
        parameters=[
            OpenApiParameter(
                "misc",
                description="1: a CoNLL-U source's MISC also gets each tag's probability "
                "(any other value: it is kept as it was).",
            )
        ],
        responses={(200, "text/plain"): OpenApiTypes.STR},
    )
    def get(self, request, project_id):
        version = predictions.current_version(project_id=self.project.pk)
        response = StreamingHttpResponse(
            predictions.corpus_conllu(
                project_id=self.project.pk,
                version=version,
                source_misc=request.query_params.get("misc") == "1",
            ),
            content_type="text/plain; charset=utf-8",
        )
        response["Content-Disposition"] = (
            f'attachment; filename="project-{self.project.pk}-predictions.conllu"'
        )
        response["X-Content-Type-Options"] = "nosniff"
        return response
