"""Observations list and streamed exports (managers)."""

from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, extend_schema_view

from annotation import exports, selectors
from annotation.api.schemas import ObservationRowOut
from annotation.api.serializers import observation_row_out
from common.api.base import ManagerView, paginated


class ObservationListView(ManagerView):
    @extend_schema(responses={200: ObservationRowOut(many=True)})
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
    """One streamed download; `export` (a key of `_EXPORTS`) is set by `export_view`."""

    export = ""

    def get(self, request, project_id):
        name = self.export
        produce, content_type = _EXPORTS[name]
        response = StreamingHttpResponse(
            produce(project=self.project), content_type=f"{content_type}; charset=utf-8"
        )
        response["Content-Disposition"] = f'attachment; filename="project-{self.project.pk}-{name}"'
        response["X-Content-Type-Options"] = "nosniff"
        return response


def export_view(name: str):
    """The view of the export `name`, documented with the media type it is served as (text:
    the exports are UTF-8 text; a generated client reads them as `str`)."""
    media_type = _EXPORTS[name][1]
    view_class = type(f"{name.replace('.', '_')}_export", (ExportView,), {"export": name})
    documented = extend_schema_view(
        get=extend_schema(responses={(200, media_type): OpenApiTypes.STR})
    )(view_class)
    return documented.as_view()
