"""Model versions, their files, and accuracy reports (managers)."""

import io

from django.core.files.storage import default_storage
from django.http import FileResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response

from annotation import selectors as annotation_selectors
from common.api.base import ManagerView, paginated
from common.exceptions import NotFound
from learning import costs, forecasts, selectors
from learning.api.schemas import ModelVersionOut, ReportOut
from learning.api.shapes import report_out, version_out
from learning.exceptions import NoModel


class ModelListView(ManagerView):
    @extend_schema(responses={200: ModelVersionOut(many=True)})
    def get(self, request, project_id):
        current = selectors.current_version(project_id=self.project.pk)
        number = current.number if current else None
        return paginated(
            self,
            selectors.versions_of_project(project_id=self.project.pk),
            lambda version: version_out(version, current_number=number),
        )


class ModelDownloadView(ManagerView):
    @extend_schema(responses={(200, "application/octet-stream"): OpenApiTypes.BINARY})
    def get(self, request, project_id, number):
        version = selectors.version_get(project_id=self.project.pk, number=number)
        if version is None:
            raise NotFound("No such model version.")
        try:
            with default_storage.open(version.file.name, "rb") as handle:
                data = handle.read()
        except FileNotFoundError as exc:
            raise NoModel("The model file of this version is missing.") from exc
        # For the command-line tagger: the file carries the project's cost matrix of now.
        return FileResponse(
            io.BytesIO(costs.model_file_export(version=version, data=data)),
            as_attachment=True,
            filename=f"project-{self.project.pk}-model-v{version.number}.npz",
            content_type="application/octet-stream",
        )


class ReportView(ManagerView):
    """`reports/latest/` (number None) or `reports/{number}/`, with the learning curve and its
    forecast (`?target=`: also the answers needed to reach that accuracy or count error)."""

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "target",
                float,
                description="An accuracy as a fraction (0.95), or without evaluation sentences a "
                "count error: the forecast then also gives the answers needed to reach it.",
            )
        ],
        responses={200: ReportOut},
    )
    def get(self, request, project_id, number=None):
        target = forecasts.forecast_target_parse(request.query_params.get("target"))
        if number is None:
            current = selectors.current_version(project_id=self.project.pk)
            if current is None:
                raise NoModel("This project has no model yet.")
            number = current.number
        version = selectors.version_get(project_id=self.project.pk, number=number)
        if version is None:
            raise NotFound("No such model version.")
        curve = selectors.learning_curve(project_id=self.project.pk)
        forecast = forecasts.learning_forecast(
            project_id=self.project.pk, curve=curve, target=target
        )
        tags = annotation_selectors.project_tag_names(project=self.project)
        return Response(report_out(version, tags=tags, learning_curve=curve, forecast=forecast))
