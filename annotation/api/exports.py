"""Observations list and streamed exports (managers)."""

from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema

from annotation import exports, selectors
from annotation.api.serializers import observation_row_out
from common.api.base import ManagerView, paginated


class ObservationListView(ManagerView):
    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    def get(self, request, project_id):
        names = selectors.project_tag_names(project=self.project)
        return paginated(
            self,
            selectors.observations_of_project(project=self.project),
            lambda o: observation_row_out(o, names),
        )


EXPORT_NAMES = ("observations.jsonl", "observations.csv", "corpus.conllu")
_EXPORTS = {
    "observations.jsonl": (exports.observations_jsonl, "application/x-ndjson"),
    "observations.csv": (exports.observations_csv, "text/csv"),
    "corpus.conllu": (exports.corpus_conllu, "text/plain"),
}


class ExportView(ManagerView):
    """One streamed download; `export` (a key of `_EXPORTS`) is set in the URL conf."""

    export = ""

    @extend_schema(responses={(200, "application/octet-stream"): OpenApiTypes.BINARY})
    def get(self, request, project_id):
        name = self.export
        produce, content_type = _EXPORTS[name]
        response = StreamingHttpResponse(
            produce(project=self.project), content_type=f"{content_type}; charset=utf-8"
        )
        response["Content-Disposition"] = f'attachment; filename="project-{self.project.pk}-{name}"'
        response["X-Content-Type-Options"] = "nosniff"
        return response
