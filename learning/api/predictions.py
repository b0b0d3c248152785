"""Tag posted text with the current model (any member); export the corpus tagged (managers)."""

from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.throttling import UserRateThrottle

from common.api.base import ManagerView, ProjectView
from learning import predictions


class PredictSerializer(serializers.Serializer):
    text = serializers.CharField(trim_whitespace=False, allow_blank=True)


class PredictThrottle(UserRateThrottle):
    """Tagging text is the one piece of work every member, annotators too, can ask for at will:
    `TALLY_PREDICT_RATE` per user (default 30/min), over all their projects."""

    scope = "predict"


class PredictView(ProjectView):
    throttle_classes = [PredictThrottle]

    @extend_schema(request=PredictSerializer, responses={200: OpenApiTypes.OBJECT})
    def post(self, request, project_id):
        data = PredictSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        return Response(
            predictions.text_tag(
                project_id=self.project.pk,
                text=data.validated_data["text"],
                language=self.project.language,
            )
        )


class PredictionsExportView(ManagerView):
    @extend_schema(responses={(200, "text/plain"): OpenApiTypes.BINARY})
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
