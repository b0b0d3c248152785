"""The project's cost matrix (managers): as JSON, or as a CSV file to edit in a spreadsheet."""

from django.db import transaction
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from common.api.base import ManagerView
from common.api.errors import ErrorSerializer
from common.api.parsers import JsonParser, MultiPartParser
from common.exceptions import InvalidInput
from learning import costs, tasks
from learning.api.schemas import CostMatrixOut
from learning.core.cost import PRESETS

MAX_CSV_BYTES = 256 * 1024


class CostMatrixInSerializer(serializers.Serializer):
    """Either a preset, or a matrix (rows the true tag) with, optionally, the tag names of its
    rows and columns when they are not in the project's order. `costs.cost_matrix_set` checks
    the matrix cell by cell, so it passes through as it came."""

    preset = serializers.ChoiceField(choices=PRESETS, required=False)
    matrix = serializers.JSONField(required=False)
    tags = serializers.JSONField(required=False)


class CostMatrixView(ManagerView):
    parser_classes = [JsonParser]

    @extend_schema(responses={200: CostMatrixOut})
    def get(self, request, project_id):
        return Response(costs.cost_matrix_get(project_id=self.project.pk).as_dict())

    @extend_schema(
        request=CostMatrixInSerializer,
        responses={
            200: CostMatrixOut,
            400: OpenApiResponse(
                ErrorSerializer,
                description="A matrix that is not K × K, a cell that is not a number from 0 "
                "to 1,000,000 or a non-zero diagonal (the message names the cell), a matrix of "
                "zeros, an unknown tag.",
            ),
        },
    )
    def put(self, request, project_id):
        data = CostMatrixInSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        given = data.validated_data
        if "preset" in given and "matrix" in given:
            raise InvalidInput(
                "Give a matrix or a preset, not both.", fields={"preset": ["Not with a matrix."]}
            )
        if "preset" not in given and "matrix" not in given:
            raise InvalidInput(
                "Give a matrix or a preset.", fields={"matrix": ["This field is required."]}
            )
        setting = costs.cost_matrix_set(
            project_id=self.project.pk,
            preset=given.get("preset"),
            matrix=given.get("matrix"),
            matrix_tags=given.get("tags"),
        )
        _rescore_on_commit(self.project.pk)
        return Response(setting.as_dict())


def _rescore_on_commit(project_id: int) -> None:
    """Re-score every version's cost report once the change has committed (a lost message is
    queued again by the retrain sweep); nothing is retrained."""
    transaction.on_commit(lambda: tasks.cost_reports_rescore_enqueue(project_id=project_id))


class CostMatrixCsvInSerializer(serializers.Serializer):
    file = serializers.FileField()


class CostMatrixCsvView(ManagerView):
    parser_classes = [MultiPartParser]

    @extend_schema(responses={(200, "text/csv"): OpenApiTypes.STR})
    def get(self, request, project_id):
        response = HttpResponse(
            costs.cost_matrix_csv(project_id=self.project.pk),
            content_type="text/csv; charset=utf-8",
        )
        response["Content-Disposition"] = (
            f'attachment; filename="project-{self.project.pk}-cost-matrix.csv"'
        )
        return response

    @extend_schema(
        request={"multipart/form-data": CostMatrixCsvInSerializer},
        responses={
            200: CostMatrixOut,
            400: OpenApiResponse(
                ErrorSerializer,
                description="Not UTF-8 CSV, an unknown or missing tag, a bad cell (named), a "
                "cell too long to be a cost.",
            ),
        },
    )
    def put(self, request, project_id):
        data = CostMatrixCsvInSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        raw = data.validated_data["file"].read(MAX_CSV_BYTES + 1)
        if len(raw) > MAX_CSV_BYTES:
            raise InvalidInput(
                "The CSV file is too large.",
                fields={"file": [f"The file is larger than {MAX_CSV_BYTES // 1024} KB."]},
            )
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise InvalidInput(
                "The CSV file is not UTF-8 text.", fields={"file": ["The file is not UTF-8 text."]}
            ) from None
        setting = costs.cost_matrix_set(project_id=self.project.pk, csv_text=text)
        _rescore_on_commit(self.project.pk)
        return Response(setting.as_dict())
