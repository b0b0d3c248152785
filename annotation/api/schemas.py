"""The annotation API's response bodies, as the OpenAPI schema documents them.

The bodies themselves are built by the output functions in `serializers.py` (`project_out`,
`task_out`, …); these serializers only describe them, field for field, so that a client generated
from the schema can read every answer. A field is required when the function always writes it,
and nullable when it can be null. Nothing serializes with them.
"""

from rest_framework import serializers

from annotation.models import CorpusImport, ImportJob, Membership, Project, Sentence, TaskKind
from common.api.errors import ErrorDetailSerializer

# Shared pieces ---------------------------------------------------------------------------------


class TagOut(serializers.Serializer):
    index = serializers.IntegerField()
    name = serializers.CharField()
    guideline = serializers.CharField(allow_blank=True)
    examples = serializers.ListField(child=serializers.CharField())


class PrivacyOut(serializers.Serializer):
    mechanism = serializers.CharField()
    alpha = serializers.FloatField()


class TaskPrivacyOut(PrivacyOut):
    release = serializers.ListField(
        child=serializers.ListField(child=serializers.FloatField()),
        help_text="`release[N][o]`: the probability of releasing `o` when the true count is `N`.",
    )


# Projects --------------------------------------------------------------------------------------


class ProjectOut(serializers.Serializer):
    """A project as its member sees it; the fields after `updated_at` are its managers' only."""

    id = serializers.IntegerField()
    name = serializers.CharField()
    description = serializers.CharField(allow_blank=True)
    status = serializers.ChoiceField(choices=Project.Status.choices)
    language = serializers.CharField()
    window_size = serializers.IntegerField()
    tags_per_task = serializers.IntegerField(allow_null=True)
    private = serializers.BooleanField()
    alpha = serializers.FloatField(allow_null=True)
    mechanism = serializers.CharField(allow_null=True)
    role = serializers.ChoiceField(choices=Membership.Role.choices)
    tags = TagOut(many=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    redundancy = serializers.IntegerField(required=False)
    gold_fraction = serializers.FloatField(required=False)
    task_mix = serializers.ChoiceField(
        choices=["auto", "fixed"],
        required=False,
        help_text="auto: each model version chooses the share of verification tasks by value "
        "per second (`verification_share_auto`); fixed: the manager's `verification_share`.",
    )
    verification_share = serializers.FloatField(
        required=False, allow_null=True, help_text="The manager's fixed share (null: automatic)."
    )
    verification_share_auto = serializers.FloatField(
        required=False, help_text="The share of verification tasks the latest version chose."
    )
    verification_version = serializers.IntegerField(required=False, allow_null=True)
    lease_seconds = serializers.IntegerField(required=False)
    annotators_may_predict = serializers.BooleanField(
        required=False, help_text="Annotators may tag text with the model too."
    )
    invite_code = serializers.CharField(required=False)
    frozen = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        help_text="The settings that can no longer change.",
    )


class JoinOut(serializers.Serializer):
    project = ProjectOut()
    role = serializers.ChoiceField(choices=Membership.Role.choices)


class InviteOut(serializers.Serializer):
    invite_code = serializers.CharField()


class MemberOut(serializers.Serializer):
    user = serializers.IntegerField()
    username = serializers.CharField()
    role = serializers.ChoiceField(choices=Membership.Role.choices)
    joined_at = serializers.DateTimeField()
    observations = serializers.IntegerField()
    flagged = serializers.BooleanField()
    flag_reason = serializers.CharField(allow_blank=True)


class KindStatsOut(serializers.Serializer):
    observations = serializers.IntegerField()
    seconds_per_answer = serializers.FloatField(allow_null=True)


class ProjectStatsOut(serializers.Serializer):
    sentences = serializers.DictField(
        child=serializers.IntegerField(), help_text="Sentences by split."
    )
    tokens = serializers.IntegerField()
    tasks = serializers.IntegerField()
    regions_complete = serializers.IntegerField()
    leases_live = serializers.IntegerField()
    observations = serializers.IntegerField()
    gold_observations = serializers.IntegerField()
    annotators = serializers.IntegerField()
    by_kind = serializers.DictField(child=KindStatsOut(), help_text="By task kind.")


class MyStatsOut(serializers.Serializer):
    observations = serializers.IntegerField()
    observations_today = serializers.IntegerField()
    seconds_on_device = serializers.FloatField()
    live_lease = serializers.IntegerField(allow_null=True)
    check_score = serializers.FloatField(allow_null=True)
    check_score_estimated = serializers.BooleanField()


# Corpora ---------------------------------------------------------------------------------------


class ImportOut(serializers.Serializer):
    id = serializers.IntegerField()
    filename = serializers.CharField(allow_blank=True)
    format = serializers.ChoiceField(choices=CorpusImport.Format.choices)
    tag_column = serializers.CharField(allow_blank=True)
    sentences = serializers.IntegerField()
    gold_sentences = serializers.IntegerField()
    splits = serializers.DictField(child=serializers.IntegerField(), help_text="By split.")
    created_at = serializers.DateTimeField()


class ImportJobErrorOut(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()
    line = serializers.IntegerField(allow_null=True)


class ImportJobOut(serializers.Serializer):
    """A corpus import run by a worker: where it is (`sentences_read` of about
    `sentences_expected`), and how it ended (`import`, the import it made, or `error`)."""

    id = serializers.IntegerField()
    status = serializers.ChoiceField(choices=ImportJob.Status.choices)
    url = serializers.CharField(help_text="Where to follow the job (also the 202's `Location`).")
    filename = serializers.CharField(allow_blank=True)
    format = serializers.ChoiceField(choices=CorpusImport.Format.choices)
    sentences_read = serializers.IntegerField()
    sentences_expected = serializers.IntegerField(allow_null=True, help_text="An estimate.")
    progress = serializers.FloatField(allow_null=True)
    cancel_requested = serializers.BooleanField()
    # `import` is a Python keyword: the field is declared by name in the class's namespace.
    locals()["import"] = serializers.IntegerField(
        allow_null=True, help_text="The corpus import the job made."
    )
    error = ImportJobErrorOut(allow_null=True)
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)


class ProjectWithImportOut(ProjectOut):
    """A project created with its corpus, and the corpus's import."""

    locals()["import"] = ImportOut()


class ProjectWithImportJobOut(ProjectOut):
    """A project created with a corpus large enough for a job: the project exists and fills
    when `import_job` is done."""

    import_job = ImportJobOut()


class PreviewSentenceOut(serializers.Serializer):
    tokens = serializers.ListField(child=serializers.CharField())
    tags = serializers.ListField(child=serializers.CharField(), allow_null=True)
    line = serializers.IntegerField()


class PreviewOut(serializers.Serializer):
    sentences = PreviewSentenceOut(many=True)


class SentenceOut(serializers.Serializer):
    id = serializers.IntegerField()
    position = serializers.IntegerField()
    tokens = serializers.ListField(child=serializers.CharField())
    gold_tags = serializers.ListField(child=serializers.CharField(), allow_null=True)
    split = serializers.ChoiceField(choices=Sentence.Split.choices)


# The annotator's cycle -------------------------------------------------------------------------


class WindowOut(serializers.Serializer):
    start = serializers.IntegerField()
    length = serializers.IntegerField()


class TaskOut(serializers.Serializer):
    """A leased task. A count task has `max_count` (and `privacy` in a private project); a
    verification task `shown` and `model_version`."""

    assignment = serializers.IntegerField()
    kind = serializers.ChoiceField(choices=TaskKind.choices)
    expires_at = serializers.DateTimeField()
    tokens = serializers.ListField(child=serializers.CharField())
    window = WindowOut()
    tags = TagOut(many=True)
    max_count = serializers.IntegerField(required=False)
    privacy = TaskPrivacyOut(required=False)
    shown = serializers.ListField(child=serializers.CharField(), required=False)
    model_version = serializers.IntegerField(required=False, allow_null=True)


class ObservationOut(serializers.Serializer):
    """A stored answer as its submitter sees it: `counts`, or `released` and `privacy` (a
    private project), or `answer`, `wrong` and `shown` (a verification task)."""

    id = serializers.IntegerField()
    assignment = serializers.IntegerField()
    kind = serializers.ChoiceField(choices=TaskKind.choices)
    counts = serializers.DictField(child=serializers.IntegerField(), required=False)
    released = serializers.DictField(child=serializers.IntegerField(), required=False)
    privacy = PrivacyOut(required=False)
    shown = serializers.ListField(child=serializers.CharField(), required=False)
    model_version = serializers.IntegerField(required=False, allow_null=True)
    answer = serializers.BooleanField(required=False, allow_null=True)
    wrong = serializers.IntegerField(required=False, allow_null=True)
    seconds_on_device = serializers.FloatField(allow_null=True)
    idempotency_key = serializers.CharField()
    submitted_at = serializers.DateTimeField()
    replayed = serializers.BooleanField()


class ObservationSubmittedOut(ObservationOut):
    """The answer to a submission: the stored answer, and with `next` in the request the
    caller's next task (one round trip instead of two)."""

    next = TaskOut(
        required=False,
        allow_null=True,
        help_text="Only when the request had `next`: your next task, null when there is none.",
    )
    next_error = ErrorDetailSerializer(
        required=False,
        help_text="Only when the request had `next` and the next task could not be leased "
        "(the answer is stored all the same): why, as an error body's `error`.",
    )


class ObservationRowOut(serializers.Serializer):
    """An observation in the manager's list (and export)."""

    id = serializers.IntegerField()
    annotator = serializers.IntegerField(allow_null=True)
    sentence = serializers.IntegerField()
    start = serializers.IntegerField()
    length = serializers.IntegerField()
    kind = serializers.ChoiceField(choices=TaskKind.choices)
    tags = serializers.ListField(child=serializers.CharField())
    counts = serializers.ListField(child=serializers.IntegerField())
    shown = serializers.ListField(child=serializers.CharField(), allow_null=True)
    model_version = serializers.IntegerField(allow_null=True)
    answer = serializers.BooleanField(allow_null=True)
    wrong = serializers.IntegerField(allow_null=True)
    is_gold = serializers.BooleanField()
    seconds_on_device = serializers.FloatField(allow_null=True)
    submitted_at = serializers.DateTimeField()
    mechanism = serializers.CharField(allow_null=True)
    alpha = serializers.FloatField(allow_null=True)
