"""The project's cost matrix (managers): as JSON, or as a CSV file to edit in a spreadsheet."""

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from common.api.base import ManagerView
from common.api.errors import ErrorSerializer
from common.api.parsers import JsonParser, MultiPartParser
from common.exceptions import InvalidInput
from learning import costs
from learning.api.schemas import CostMatrixOut
from learning.core.cost import PRESETS, write_cost_csv

MAX_CSV_BYTES = 256 * 1024


class CostMatrixInSerializer(serializers.Serializer):
    """Either a preset, or a matrix (rows the true tag) with, optionally, the tag names of its
    rows and columns when they are not in the project's order. `costs.matrix_from_input` checks
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
                description="A matrix that is not K × K, a cell that is not a non-negative "
                "number or a non-zero diagonal (the message names the cell), an unknown tag.",
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
        if "preset" in given:
            setting = costs.cost_matrix_set(project_id=self.project.pk, preset=given["preset"])
        else:
            tags = costs.cost_matrix_get(project_id=self.project.pk).tags
            if "matrix" not in given:
                raise InvalidInput(
                    "Give a matrix or a preset.", fields={"matrix": ["This field is required."]}
                )
            matrix = costs.matrix_from_input(
                tags=tags, matrix=given["matrix"], matrix_tags=given.get("tags")
            )
            setting = costs.cost_matrix_set(project_id=self.project.pk, matrix=matrix)
        return Response(setting.as_dict())


class CostMatrixCsvInSerializer(serializers.Serializer):
    file = serializers.FileField()


class CostMatrixCsvView(ManagerView):
    parser_classes = [MultiPartParser]

    @extend_schema(responses={(200, "text/csv"): OpenApiTypes.STR})
    def get(self, request, project_id):
        setting = costs.cost_matrix_get(project_id=self.project.pk)
        response = HttpResponse(
            write_cost_csv(setting.matrix, setting.tags), content_type="text/csv; charset=utf-8"
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
                description="Not UTF-8 CSV, an unknown or missing tag, or a bad cell (named).",
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
        tags = costs.cost_matrix_get(project_id=self.project.pk).tags
        matrix = costs.matrix_from_csv(tags=tags, text=text)
        return Response(costs.cost_matrix_set(project_id=self.project.pk, matrix=matrix).as_dict())
