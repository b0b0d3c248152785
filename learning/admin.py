"""Django admin of the learning app. Versions, reports and runs are records of what happened:
read-only here. Schedules are editable."""

from django.contrib import admin

from common.admin import ReadOnlyAdmin
from learning import models


class AccuracyReportInline(admin.StackedInline):
    model = models.AccuracyReport
    can_delete = False
    readonly_fields = [
        "accuracy", "count_consistency", "held_out_observations", "skipped_observations",
        "evaluation", "per_tag", "confusion", "annotators",
    ]  # fmt: skip

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(models.ModelVersion)
class ModelVersionAdmin(ReadOnlyAdmin):
    list_display = ["id", "project", "number", "observations_count", "code_version", "created_at"]
    list_select_related = ["project"]
    list_filter = ["project"]
    inlines = [AccuracyReportInline]


@admin.register(models.AnnotatorQuality)
class AnnotatorQualityAdmin(ReadOnlyAdmin):
    list_display = [
        "project", "annotator", "answers", "reliability", "verification_skill", "flagged",
        "version_number",
    ]  # fmt: skip
    list_filter = ["flagged", "project"]
    list_select_related = ["project", "annotator"]
    search_fields = ["annotator__username"]


@admin.register(models.RetrainRun)
class RetrainRunAdmin(ReadOnlyAdmin):
    list_display = ["id", "project", "status", "trigger", "version_number", "started_at", "seconds"]
    list_filter = ["status", "trigger", "project"]
    list_select_related = ["project"]


@admin.register(models.RetrainLock)
class RetrainLockAdmin(admin.ModelAdmin):
    """Clearing `locked_until` frees a lock by hand (it also expires by itself)."""

    list_display = ["project", "owner", "locked_until"]
    raw_id_fields = ["project"]


@admin.register(models.RetrainSchedule)
class RetrainScheduleAdmin(admin.ModelAdmin):
    list_display = ["project", "interval_minutes", "enabled", "last_enqueued_at"]
    list_editable = ["interval_minutes", "enabled"]
    raw_id_fields = ["project"]
