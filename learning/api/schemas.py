"""The learning API's response bodies, as the OpenAPI schema documents them.

The bodies are built by `learning.api.shapes` (and `learning.predictions.text_tag`); these
serializers only describe them, so that a client generated from the schema can read every answer
(see annotation/api/schemas.py). Parts whose keys vary with the model (hyperparameters, timings,
the report's evaluation) are documented as free-form.
"""

from rest_framework import serializers

from delivery.models import WebhookDelivery
from learning.models import RetrainRun


class ModelVersionOut(serializers.Serializer):
    version = serializers.IntegerField()
    current = serializers.BooleanField()
    created_at = serializers.DateTimeField()
    observations = serializers.IntegerField()
    newest_observation = serializers.IntegerField(allow_null=True)
    accuracy = serializers.FloatField(allow_null=True)
    count_consistency = serializers.FloatField(allow_null=True)
    model_kind = serializers.CharField()
    hyperparameters = serializers.JSONField()
    timings = serializers.JSONField()
    code_version = serializers.CharField(allow_blank=True)
    warm_started_from = serializers.IntegerField(allow_null=True)


class LearningCurvePointOut(serializers.Serializer):
    version = serializers.IntegerField()
    observations = serializers.IntegerField()
    accuracy = serializers.FloatField(allow_null=True)
    count_consistency = serializers.FloatField(allow_null=True)
    created_at = serializers.DateTimeField()
    cost_per_token = serializers.FloatField(allow_null=True)


class ForecastIntervalOut(serializers.Serializer):
    value = serializers.FloatField(allow_null=True)
    low = serializers.FloatField(allow_null=True)
    high = serializers.FloatField(allow_null=True, help_text="null: no upper bound.")


class ForecastAheadOut(ForecastIntervalOut):
    more = serializers.FloatField(help_text="More answers, as a share of the newest version's.")
    observations = serializers.IntegerField(help_text="Answers the forecast is for.")


class ForecastTargetOut(ForecastIntervalOut):
    target = serializers.FloatField()
    reached = serializers.BooleanField(help_text="false: the fitted curve never reaches it.")


class ForecastOut(serializers.Serializer):
    """The learning curve's forecast (learning/API.md, "Forecast")."""

    metric = serializers.ChoiceField(choices=["accuracy", "count_consistency"])
    level = serializers.FloatField(help_text="Coverage of the intervals.")
    versions = serializers.IntegerField()
    available = serializers.BooleanField()
    reason = serializers.CharField(allow_blank=True)
    ahead = ForecastAheadOut(many=True)
    target = ForecastTargetOut(allow_null=True)


class ReportAnnotatorOut(serializers.Serializer):
    annotator = serializers.IntegerField()
    username = serializers.CharField(allow_null=True)
    answers = serializers.IntegerField(allow_null=True)
    median_seconds = serializers.FloatField(allow_null=True)
    reliability = serializers.FloatField(allow_null=True)
    flagged = serializers.BooleanField(allow_null=True)
    flag_reason = serializers.CharField(allow_null=True, allow_blank=True)
    verification_answers = serializers.IntegerField(allow_null=True)
    verification_skill = serializers.FloatField(allow_null=True)
    verification_yes_rate = serializers.FloatField(allow_null=True)


class CostReportOut(serializers.Serializer):
    """A version's report in the currency of the project's cost matrix (re-scored when the
    matrix changes; `revision` is the matrix's)."""

    revision = serializers.IntegerField()
    cost_per_token = serializers.FloatField(allow_null=True)
    expected_cost_per_token = serializers.FloatField(allow_null=True)
    accuracy = serializers.FloatField(allow_null=True)
    calibration_error = serializers.FloatField(allow_null=True)
    cost_confusion = serializers.ListField(
        child=serializers.ListField(child=serializers.FloatField()), allow_null=True
    )
    cost_share = serializers.DictField(child=serializers.FloatField(), allow_null=True)


class CostMatrixOut(serializers.Serializer):
    tags = serializers.ListField(child=serializers.CharField())
    matrix = serializers.ListField(child=serializers.ListField(child=serializers.FloatField()))
    preset = serializers.CharField(allow_blank=True)
    presets = serializers.ListField(child=serializers.CharField())
    revision = serializers.IntegerField()


class ReportOut(serializers.Serializer):
    """A model version's accuracy report (learning/API.md, "Accuracy reports")."""

    version = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    observations = serializers.IntegerField()
    newest_observation = serializers.IntegerField(allow_null=True)
    model_kind = serializers.CharField()
    tags = serializers.ListField(child=serializers.CharField())
    evaluation = serializers.JSONField(allow_null=True)
    accuracy = serializers.FloatField(allow_null=True)
    per_tag = serializers.JSONField(allow_null=True)
    confusion = serializers.JSONField(allow_null=True)
    count_consistency = serializers.FloatField(allow_null=True)
    held_out_observations = serializers.IntegerField(allow_null=True)
    learning_curve = LearningCurvePointOut(many=True)
    forecast = ForecastOut()
    annotators = ReportAnnotatorOut(many=True)
    skipped_observations = serializers.IntegerField(allow_null=True)
    effort = serializers.JSONField(allow_null=True)
    timings = serializers.JSONField()
    cost = CostReportOut(allow_null=True)


class RetrainOut(serializers.Serializer):
    queued = serializers.BooleanField()
    due = serializers.BooleanField()
    message = serializers.CharField(required=False)


class ScheduleOut(serializers.Serializer):
    interval_minutes = serializers.IntegerField()
    enabled = serializers.BooleanField()


class RunOut(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.ChoiceField(choices=RetrainRun.Status.choices)
    trigger = serializers.ChoiceField(choices=RetrainRun.Trigger.choices)
    version = serializers.IntegerField(allow_null=True)
    started_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)
    seconds = serializers.FloatField(allow_null=True)
    error = serializers.CharField(allow_blank=True)


class LastErrorOut(serializers.Serializer):
    run = serializers.IntegerField()
    at = serializers.DateTimeField()
    message = serializers.CharField()


class ProgressivePointOut(serializers.Serializer):
    answers = serializers.IntegerField(help_text="Answers applied since the batch version.")
    log_likelihood = serializers.FloatField(
        allow_null=True, help_text="Mean log-probability of the update's answers before it."
    )
    count_error = serializers.FloatField(
        allow_null=True, help_text="Mean |expected − answered| count before the update."
    )


class LiveModelOut(serializers.Serializer):
    base_version = serializers.IntegerField()
    number = serializers.IntegerField(help_text="Updates published since the batch version.")
    answers_applied = serializers.IntegerField()
    watermark = serializers.IntegerField(help_text="Id of the newest observation applied.")
    published_at = serializers.DateTimeField(allow_null=True)
    progressive = ProgressivePointOut(many=True)


class RetrainStatusOut(serializers.Serializer):
    running = serializers.BooleanField()
    locked_until = serializers.DateTimeField(allow_null=True)
    due = serializers.BooleanField()
    pending_observations = serializers.IntegerField()
    current_version = serializers.IntegerField(allow_null=True)
    last_run = RunOut(allow_null=True)
    last_error = LastErrorOut(allow_null=True)
    recent_runs = RunOut(many=True)
    live = LiveModelOut(allow_null=True, help_text="The model that follows the answers.")


class AlternativeOut(serializers.Serializer):
    tag = serializers.CharField()
    probability = serializers.FloatField()


class PredictionOut(serializers.Serializer):
    version = serializers.IntegerField()
    live = serializers.IntegerField(
        allow_null=True,
        help_text="The live model's update that tagged (it follows `version` between "
        "retrains), or null when the version itself tagged.",
    )
    tokens = serializers.ListField(child=serializers.CharField())
    sentences = serializers.ListField(
        child=serializers.ListField(child=serializers.IntegerField()),
        help_text="Each sentence as [first token, last token + 1].",
    )
    tags = serializers.ListField(child=serializers.CharField())
    probabilities = serializers.ListField(child=serializers.FloatField())
    alternatives = serializers.ListField(child=AlternativeOut(many=True))


class LastDeliveryOut(serializers.Serializer):
    status = serializers.ChoiceField(choices=WebhookDelivery.Status.choices)
    at = serializers.DateTimeField(allow_null=True)


class WebhookOut(serializers.Serializer):
    id = serializers.IntegerField()
    url = serializers.CharField()
    active = serializers.BooleanField()
    created_at = serializers.DateTimeField()
    last_delivery = LastDeliveryOut(allow_null=True)


class WebhookCreatedOut(WebhookOut):
    secret = serializers.CharField(help_text="Shown this once: the key of the signatures.")


class DeliveryOut(serializers.Serializer):
    id = serializers.IntegerField()
    event = serializers.CharField()
    version = serializers.IntegerField(allow_null=True)
    status = serializers.ChoiceField(choices=WebhookDelivery.Status.choices)
    attempts = serializers.IntegerField()
    response_code = serializers.IntegerField(allow_null=True)
    error = serializers.CharField(allow_blank=True)
    created_at = serializers.DateTimeField()
    last_attempt_at = serializers.DateTimeField(allow_null=True)
    next_attempt_at = serializers.DateTimeField(allow_null=True)
    delivered_at = serializers.DateTimeField(allow_null=True)
