"""URLs of the learning API, included under /api/ (see learning/API.md)."""

from django.urls import path

from learning.api import costs, predictions, retraining, versions

P = "projects/<id:project_id>/"

urlpatterns = [
    path(P + "models/", versions.ModelListView.as_view(), name="model-list"),
    path(
        P + "models/<id:number>/download",
        versions.ModelDownloadView.as_view(),
        name="model-download",
    ),
    path(P + "reports/latest/", versions.ReportView.as_view(), name="report-latest"),
    path(P + "reports/<id:number>/", versions.ReportView.as_view(), name="report-detail"),
    path(P + "retrain/", retraining.RetrainView.as_view(), name="retrain"),
    path(
        P + "retrain-schedule/", retraining.RetrainScheduleView.as_view(), name="retrain-schedule"
    ),
    path(P + "retrain-status/", retraining.RetrainStatusView.as_view(), name="retrain-status"),
    path(P + "cost-matrix/", costs.CostMatrixView.as_view(), name="cost-matrix"),
    path(P + "cost-matrix/csv", costs.CostMatrixCsvView.as_view(), name="cost-matrix-csv"),
    path(P + "predict/", predictions.PredictView.as_view(), name="predict"),
    path(
        P + "exports/predictions.conllu",
        predictions.PredictionsExportView.as_view(),
        name="export-predictions-conllu",
    ),
]
