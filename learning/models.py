"""What retraining stores: model versions and their reports, annotator quality, runs, locks,
schedules, webhooks and their deliveries.

Writes go through `learning.services`, reads through `learning.selectors`; nothing here has side
effects beyond storing a row. A model version and its report are written in one transaction after
the model file is in storage, so every visible version is complete; the current version of a
project is its highest `number`.
"""

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

from annotation.models import Project

MAX_INTERVAL_MINUTES = 7 * 24 * 60


class ModelVersion(models.Model):
    """One learned tagger of a project: its file (the learning core's arrays, never pickle) and
    how it was made."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="model_versions")
    number = models.PositiveIntegerField()
    file = models.FileField(max_length=300, help_text="npz model file in the default storage.")
    observations_count = models.PositiveIntegerField(help_text="Observations used for fitting.")
    newest_observation = models.BigIntegerField(
        help_text="Id of the newest observation the job read (fitted or held out)."
    )
    hyperparameters = models.JSONField(default=dict)
    timings = models.JSONField(default=dict, help_text="Seconds per stage.")
    code_version = models.CharField(max_length=64, blank=True, default="")
    warm_started_from = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["project", "number"], name="model_version_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.project} v{self.number}"


class AccuracyReport(models.Model):
    """What was measured when a version was made. Immutable once written."""

    version = models.OneToOneField(
        ModelVersion, on_delete=models.CASCADE, primary_key=True, related_name="report"
    )
    accuracy = models.FloatField(null=True, blank=True)
    evaluation = models.JSONField(null=True, blank=True, help_text="{sentences, tokens} or null.")
    per_tag = models.JSONField(default=list, blank=True)
    confusion = models.JSONField(null=True, blank=True, help_text="{tags, matrix} or null.")
    count_consistency = models.FloatField(null=True, blank=True)
    held_out_observations = models.PositiveIntegerField(default=0)
    skipped_observations = models.PositiveIntegerField(default=0)
    annotators = models.JSONField(default=list, blank=True, help_text="The annotator table.")
    effort = models.JSONField(
        null=True,
        blank=True,
        help_text="Annotator minutes by task kind and accuracy gained per annotator-minute.",
    )

    def __str__(self) -> str:
        return f"report of {self.version}"


class AnnotatorQuality(models.Model):
    """The latest reliability estimate of an annotator in a project (updated every retrain).
    A flagged annotator's answers get zero weight in the next fit."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+"
    )
    answers = models.PositiveIntegerField(default=0)
    median_seconds = models.FloatField(null=True, blank=True)
    reliability = models.FloatField(null=True, blank=True, help_text="Skill: 1 good, 0 chance.")
    noise_variance = models.FloatField(null=True, blank=True)
    weight = models.FloatField(null=True, blank=True)
    # Verification answers (yes/no on a model's shown tags): how many, and the skill the fit
    # measured (Youden's index, 1 truthful, 0 for answers that ignore the window, a yes-sayer's
    # included), null when there are none or too few to judge.
    verification_answers = models.PositiveIntegerField(default=0)
    verification_skill = models.FloatField(null=True, blank=True)
    verification_yes_rate = models.FloatField(null=True, blank=True)
    flagged = models.BooleanField(default=False)
    flag_reason = models.CharField(max_length=300, blank=True, default="")
    version_number = models.PositiveIntegerField()
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["project", "annotator"]
        verbose_name_plural = "annotator quality"
        constraints = [
            models.UniqueConstraint(
                fields=["project", "annotator"], name="annotator_quality_unique"
            ),
        ]
        indexes = [
            models.Index(
                fields=["project"], condition=models.Q(flagged=True), name="annotator_flagged_idx"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.annotator} in {self.project}"


class RetrainRun(models.Model):
    """One attempt of the retrain job, whatever its outcome (visible in the admin and the API)."""

    # The error of a run whose worker died: recorded by the next run, shown until then.
    WORKER_STOPPED = "The worker stopped before finishing (killed or timed out)."

    class Status(models.TextChoices):
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"
        SKIPPED = "skipped"

    class Trigger(models.TextChoices):
        MANUAL = "manual"
        SCHEDULE = "schedule"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="retrain_runs")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.RUNNING)
    trigger = models.CharField(max_length=10, choices=Trigger.choices)
    version_number = models.PositiveIntegerField(null=True, blank=True)
    task_id = models.CharField(max_length=64, blank=True, default="")
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)
    seconds = models.FloatField(null=True, blank=True)
    error = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["project", "-id"]
        indexes = [models.Index(fields=["project", "-id"], name="retrain_run_project_idx")]

    def __str__(self) -> str:
        return f"retrain {self.pk} of {self.project} ({self.status})"


class RetrainLock(models.Model):
    """At most one retrain per project: claimed by a conditional UPDATE (row count 1 wins) while
    `locked_until` is null or past, so a dead worker's claim expires by itself."""

    project = models.OneToOneField(
        Project, on_delete=models.CASCADE, primary_key=True, related_name="+"
    )
    owner = models.CharField(max_length=64, blank=True, default="")
    locked_until = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"retrain lock of {self.project_id}"


class RetrainSchedule(models.Model):
    """How often the periodic sweep may retrain a project. A project without a row uses
    `TALLY_RETRAIN_INTERVAL_MINUTES`. `last_enqueued_at` is claimed by a conditional UPDATE."""

    project = models.OneToOneField(
        Project, on_delete=models.CASCADE, primary_key=True, related_name="retrain_schedule"
    )
    interval_minutes = models.PositiveIntegerField(
        validators=[MinValueValidator(1), MaxValueValidator(MAX_INTERVAL_MINUTES)]
    )
    enabled = models.BooleanField(default=True)
    last_enqueued_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=models.Q(
                    interval_minutes__gte=1, interval_minutes__lte=MAX_INTERVAL_MINUTES
                ),
                name="retrain_interval_range",
            ),
        ]

    def __str__(self) -> str:
        return f"every {self.interval_minutes} min: {self.project}"


class LiveModel(models.Model):
    """The model that follows the answers between retrains (`learning.live`): the current batch
    version (`base_version`) stepped by the online learner through every answer after it, up to
    `watermark`. The served tagger's file, the learner's state and the watermark change in one
    row update, so a worker killed mid-update leaves them consistent and each answer applied
    once. A new batch version makes the row stale: the next update starts again from it."""

    project = models.OneToOneField(
        Project, on_delete=models.CASCADE, primary_key=True, related_name="live_model"
    )
    base_version = models.PositiveIntegerField(help_text="The batch version it started from.")
    number = models.PositiveIntegerField(default=0, help_text="Updates published since then.")
    watermark = models.BigIntegerField(help_text="Id of the newest observation applied.")
    answers_applied = models.PositiveIntegerField(default=0)
    file = models.CharField(max_length=300, blank=True, default="", help_text="Model file.")
    state_file = models.CharField(max_length=300, blank=True, default="")
    progressive = models.JSONField(
        default=list, blank=True, help_text="Progressive validation: one point per update."
    )
    published_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"live model {self.number} of {self.project} (from v{self.base_version})"


class CostMatrix(models.Model):
    """A project's cost of each confusion (`learning.core.cost`): `matrix[i][j]` is what it costs
    to tag `j` a token whose tag is `i`, in the order of `tags` (the project's tag names when it
    was saved). A project without a row pays 1 for every error (`zero-one`). `revision` goes up
    with every change; the cost reports say which revision they were computed with."""

    project = models.OneToOneField(
        Project, on_delete=models.CASCADE, primary_key=True, related_name="cost_matrix"
    )
    tags = models.JSONField(help_text="Tag names, the order of the rows and columns.")
    matrix = models.JSONField(help_text="K × K costs, rows the true tag.")
    preset = models.CharField(max_length=20, blank=True, default="", help_text="'' if custom.")
    revision = models.PositiveIntegerField(default=1)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"cost matrix of {self.project_id} (r{self.revision})"


class CostReport(models.Model):
    """A version's evaluation in the currency of its project's cost matrix, written with the
    version and rewritten whenever the matrix changes (its `AccuracyReport` never changes). All
    figures are per token of the evaluation sentences; null without gold."""

    version = models.OneToOneField(
        ModelVersion, on_delete=models.CASCADE, primary_key=True, related_name="cost_report"
    )
    revision = models.PositiveIntegerField(help_text="Of the cost matrix; 0: zero-one default.")
    cost_per_token = models.FloatField(null=True, blank=True)
    expected_cost_per_token = models.FloatField(
        null=True, blank=True, help_text="What the model expects its decisions to cost."
    )
    accuracy = models.FloatField(null=True, blank=True, help_text="Of the loss-aware decisions.")
    calibration_error = models.FloatField(null=True, blank=True)
    cost_confusion = models.JSONField(null=True, blank=True)
    cost_share = models.JSONField(null=True, blank=True, help_text="{gold tag: share}.")

    def __str__(self) -> str:
        return f"cost report of {self.version}"
