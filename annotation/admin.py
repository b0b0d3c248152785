"""Django admin for every annotation model. Observations are append-only: read-only here."""

from django.contrib import admin

from annotation import models


class TagInline(admin.TabularInline):
    model = models.Tag
    extra = 0


class MembershipInline(admin.TabularInline):
    model = models.Membership
    extra = 0
    raw_id_fields = ["user"]


@admin.register(models.Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ["id", "name", "owner", "status", "window_size", "redundancy", "created_at"]
    list_filter = ["status"]
    search_fields = ["name"]
    raw_id_fields = ["owner"]
    # Privacy is changed only through the API, whose rules fix it once tasks are out.
    readonly_fields = [
        "task_rounds",
        "leases_reclaimed_at",
        "created_at",
        "updated_at",
        "private",
        "alpha",
        "mechanism",
    ]
    inlines = [TagInline, MembershipInline]


@admin.register(models.Tag)
class TagAdmin(admin.ModelAdmin):
    list_display = ["id", "project", "position", "name", "guideline"]
    list_select_related = ["project"]
    raw_id_fields = ["project"]


@admin.register(models.Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["id", "project", "user", "role", "joined_at"]
    list_filter = ["role"]
    list_select_related = ["project", "user"]
    raw_id_fields = ["project", "user"]


@admin.register(models.CorpusImport)
class CorpusImportAdmin(admin.ModelAdmin):
    list_display = ["id", "project", "filename", "format", "sentences", "gold_sentences"]
    list_select_related = ["project"]
    raw_id_fields = ["project", "created_by"]


@admin.register(models.ImportJob)
class ImportJobAdmin(admin.ModelAdmin):
    list_display = ["id", "project", "filename", "status", "sentences_read", "created_at"]
    list_filter = ["status"]
    list_select_related = ["project"]
    raw_id_fields = ["project", "created_by", "corpus_import"]


@admin.register(models.Sentence)
class SentenceAdmin(admin.ModelAdmin):
    list_display = ["id", "project", "position", "length", "split", "__str__"]
    list_filter = ["split"]
    list_select_related = ["project"]
    raw_id_fields = ["project", "corpus_import"]


@admin.register(models.Task)
class TaskAdmin(admin.ModelAdmin):
    list_display = [
        "id", "project", "sentence", "kind", "start", "length", "tags", "shown_tags",
        "model_version", "is_gold", "open_slots",
    ]  # fmt: skip
    list_filter = ["kind", "is_gold"]
    list_select_related = ["project"]
    raw_id_fields = ["project", "sentence"]


@admin.register(models.Assignment)
class AssignmentAdmin(admin.ModelAdmin):
    list_display = ["id", "project", "task", "annotator", "status", "leased_at", "expires_at"]
    list_filter = ["status"]
    list_select_related = ["project", "annotator"]
    raw_id_fields = ["project", "task", "annotator"]


@admin.register(models.Observation)
class ObservationAdmin(admin.ModelAdmin):
    list_display = [
        "id", "project", "annotator", "sentence", "kind", "start", "tags", "counts", "answer",
        "wrong",
    ]  # fmt: skip
    list_filter = ["kind", "is_gold"]
    list_select_related = ["project", "annotator"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
