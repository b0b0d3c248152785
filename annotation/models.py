"""What the annotation data is: projects and their tag sets, members, corpora, tasks, observations.

Writes go through `annotation.services` / `annotation.scheduler`, reads through
`annotation.selectors`; nothing here has side effects beyond storing a row.

Tags are referred to by their *index* (`Tag.position`, 0-based, the project's tag order) wherever
arrays are stored (`Sentence.gold_tags`, `Task.tags`, `Observation.tags`), so the retraining job
reads a project's observations as arrays in one query:

    Observation.objects.filter(project=p).values_list(
        "sentence_id", "start", "length", "tags", "counts", "annotator_id")

A project's tag names and order are frozen once it has sentences (guidelines stay editable).
"""

import secrets

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q

from common.text import DEFAULT_LANGUAGE, LANGUAGES
from learning.core.privacy import DEFAULT_MECHANISM, MAX_ALPHA, MAX_PRIVATE_TAGS, MECHANISMS

# re-exported for the app
__all__ = ["DEFAULT_MECHANISM", "MAX_ALPHA", "MAX_PRIVATE_TAGS", "MECHANISMS"]

MAX_WINDOW = 50
MAX_TAGS = 200
MAX_REDUNDANCY = 100
# Private projects: the privacy level per answer (ε of ε-local differential privacy), at most
# MAX_ALPHA for a new level. The table's check allows the older cap, STORED_MAX_ALPHA: projects
# made before MAX_ALPHA keep the level their answers were released with.
MIN_ALPHA, DEFAULT_ALPHA, STORED_MAX_ALPHA = 0.1, 3.0, 20.0
# The share of tasks served as verification tasks once the project has a model (0: counts
# only; 1: verification only). New projects get this; the lead sets it from the measured study.
# Share of an upload's gold-tagged sentences held out to measure the model: the upload form and
# the API start from the same value.
DEFAULT_EVALUATION_FRACTION = 0.1


def new_invite_code() -> str:
    return secrets.token_urlsafe(12)


class Project(models.Model):
    class Status(models.TextChoices):
        ACTIVE = "active"
        PAUSED = "paused"
        ARCHIVED = "archived"

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="owned_projects"
    )
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True, default="")
    # How plain text is cut into sentences and tokens (imports and predictions alike); frozen
    # once the project has sentences, like its tag names.
    language = models.CharField(
        max_length=8, choices=list(LANGUAGES.items()), default=DEFAULT_LANGUAGE
    )
    window_size = models.PositiveSmallIntegerField(
        default=5, validators=[MinValueValidator(1), MaxValueValidator(MAX_WINDOW)]
    )
    # Tags per task: 1..K, or null for "all tags of the project".
    tags_per_task = models.PositiveSmallIntegerField(
        null=True, blank=True, validators=[MinValueValidator(1)]
    )
    redundancy = models.PositiveSmallIntegerField(
        default=3,
        validators=[MinValueValidator(1), MaxValueValidator(MAX_REDUNDANCY)],
        help_text="Annotators per region (window + tag subset).",
    )
    gold_fraction = models.FloatField(
        default=0.0,
        validators=[MinValueValidator(0.0), MaxValueValidator(1.0)],
        help_text="Fraction of served tasks that are gold check tasks.",
    )
    lease_seconds = models.PositiveIntegerField(
        default=600, validators=[MinValueValidator(30), MaxValueValidator(86_400)]
    )
    # The task mix (issue 25): the manager's fixed share of verification leases (0: counts only),
    # or null for automatic: the share the retrain computes with each version from the value per
    # second of each kind (`verification_share_auto`, see `learning.rounds`).
    verification_share = models.FloatField(
        null=True,
        blank=True,
        default=None,
        validators=[MinValueValidator(0.0), MaxValueValidator(1.0)],
        help_text="Share of served tasks that are verification tasks, once there is a model "
        "(null: chosen with each model version by the value per second of each kind).",
    )
    verification_share_auto = models.FloatField(
        default=0.0,
        editable=False,
        help_text="The share of verification tasks the latest model version's values chose.",
    )
    # The model version whose verification tasks are served (written by the retrain with the
    # version and its tasks); null before the first model: only count tasks are served then.
    verification_version = models.PositiveIntegerField(null=True, blank=True, editable=False)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ACTIVE)
    # Private projects (issue 13): every count is randomized on the annotator's phone by the
    # mechanism `mechanism` (one of learning.core.privacy.MECHANISMS) at privacy level `alpha`
    # per answer; the server only ever sees released values. Fixed once the first answer exists.
    # Not private: alpha null, mechanism "".
    private = models.BooleanField(default=False)
    # Whether annotators may tag text with the model (`POST predict/`); managers always may. An
    # annotator who can ask the model for the tags of their task's words can answer as the model
    # would, and reliability judged against the model would call that reliable: off unless the
    # manager opts in, and even then never on text from the project's own sentences.
    annotators_may_predict = models.BooleanField(
        default=False,
        help_text="Annotators may tag text with the model too (never the project's sentences).",
    )
    alpha = models.FloatField(null=True, blank=True)
    mechanism = models.CharField(max_length=16, blank=True, default="")
    invite_code = models.CharField(max_length=32, unique=True, default=new_invite_code)
    # Scheduler bookkeeping, each claimed by a conditional UPDATE checked by its row count.
    task_rounds = models.PositiveIntegerField(default=0)
    leases_reclaimed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(window_size__gte=1, window_size__lte=MAX_WINDOW), name="window_range"
            ),
            models.CheckConstraint(
                condition=Q(redundancy__gte=1, redundancy__lte=MAX_REDUNDANCY),
                name="redundancy_range",
            ),
            models.CheckConstraint(
                condition=Q(gold_fraction__gte=0.0, gold_fraction__lte=1.0),
                name="gold_fraction_range",
            ),
            models.CheckConstraint(
                condition=Q(tags_per_task__isnull=True) | Q(tags_per_task__gte=1),
                name="tags_per_task_positive",
            ),
            models.CheckConstraint(
                condition=Q(private=False, alpha__isnull=True, mechanism="")
                | Q(private=True, alpha__gte=MIN_ALPHA, alpha__lte=STORED_MAX_ALPHA)
                & ~Q(mechanism=""),
                name="privacy_settings",
            ),
            models.CheckConstraint(
                condition=Q(verification_share__isnull=True)
                | Q(verification_share__gte=0.0, verification_share__lte=1.0),
                name="verification_share_range",
            ),
            models.CheckConstraint(
                condition=Q(verification_share_auto__gte=0.0, verification_share_auto__lte=1.0),
                name="verification_share_auto_range",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def verification_share_served(self) -> float:
        """The share of leases that are verification tasks (once a version serves them): the
        manager's fixed share, or else the one the latest version's values chose."""
        if self.verification_share is not None:
            return self.verification_share
        return self.verification_share_auto


class Tag(models.Model):
    """One tag of a project's ordered tag set, with what annotators are shown about it."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="tags")
    position = models.PositiveSmallIntegerField(help_text="0-based index in the tag order.")
    name = models.CharField(max_length=32)
    guideline = models.CharField(max_length=300, blank=True, default="")
    examples = models.JSONField(default=list, blank=True, help_text="A few example strings.")

    class Meta:
        ordering = ["project", "position"]
        constraints = [
            models.UniqueConstraint(fields=["project", "position"], name="tag_position_unique"),
            models.UniqueConstraint(fields=["project", "name"], name="tag_name_unique"),
        ]

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    class Role(models.TextChoices):
        MANAGER = "manager"
        ANNOTATOR = "annotator"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(max_length=10, choices=Role.choices)
    joined_at = models.DateTimeField(auto_now_add=True)
    # Set by each retrain from the annotator's reliability: a flagged annotator's answers stop
    # counting, their regions are opened to others, and they are served only gold check tasks
    # (so that a later retrain can clear the flag).
    flagged = models.BooleanField(default=False)
    flag_reason = models.CharField(max_length=300, blank=True, default="")
    # Bumped by every attempt to lease a new task (see `scheduler`): one annotator's concurrent
    # lease requests queue on this row, and a request whose snapshot missed another's lease
    # sees the counter moved by more than its own step.
    lease_serial = models.BigIntegerField(default=0, editable=False)

    class Meta:
        ordering = ["project", "id"]
        constraints = [
            models.UniqueConstraint(fields=["project", "user"], name="membership_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.user} {self.role} of {self.project}"


class CorpusImport(models.Model):
    """One uploaded corpus file, imported whole or not at all."""

    class Format(models.TextChoices):
        CONLLU = "conllu"
        TEXT = "text", "Plain text"  # running text, cut by the project's language's tokenizer
        TOKENIZED = "tokenized"  # one sentence per line, tokens separated by white space
        JSONL = "jsonl"

    class TagColumn(models.TextChoices):
        UPOS = "upos"
        XPOS = "xpos"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="imports")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    filename = models.CharField(max_length=255, blank=True, default="")
    format = models.CharField(max_length=10, choices=Format.choices)
    tag_column = models.CharField(max_length=4, choices=TagColumn.choices, blank=True, default="")
    sentences = models.PositiveIntegerField(default=0)
    gold_sentences = models.PositiveIntegerField(default=0)
    # SHA-256 of the file's content (after gzip): the same file uploaded again is asked about.
    content_hash = models.CharField(max_length=64, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project", "id"]
        indexes = [models.Index(fields=["project", "content_hash"], name="import_hash_idx")]

    def __str__(self) -> str:
        return f"{self.filename or self.format} ({self.sentences} sentences)"


class ImportJob(models.Model):
    """A corpus import too large for a request, run by a worker (`annotation.tasks.import_run`).

    The worker reads the upload (kept in the default storage until the job ends) into a spool,
    reporting progress here, then writes every sentence and task in one transaction: a job
    cancelled or killed leaves nothing behind. `idempotency_key`, when the client sends one,
    makes a retried upload find its first job instead of importing twice."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"
        CANCELLED = "cancelled"

    ACTIVE = (Status.QUEUED, Status.RUNNING)

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="import_jobs")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    filename = models.CharField(max_length=255, blank=True, default="")
    format = models.CharField(max_length=10, choices=CorpusImport.Format.choices)
    tag_column = models.CharField(max_length=4, blank=True, default="")
    evaluation_fraction = models.FloatField(default=0.0)
    gold_check_fraction = models.FloatField(default=0.0)
    seed = models.BigIntegerField(null=True, blank=True)
    allow_duplicate = models.BooleanField(default=False)
    upload = models.CharField(max_length=255, blank=True, default="")  # name in default storage
    content_hash = models.CharField(max_length=64, blank=True, default="")
    idempotency_key = models.CharField(max_length=64, blank=True, default="")
    sentences_read = models.PositiveIntegerField(default=0)
    sentences_expected = models.PositiveIntegerField(null=True, blank=True)  # an estimate
    cancel_requested = models.BooleanField(default=False)
    corpus_import = models.OneToOneField(
        CorpusImport, on_delete=models.SET_NULL, null=True, blank=True, related_name="job"
    )
    error_code = models.CharField(max_length=32, blank=True, default="")
    error = models.TextField(blank=True, default="")
    error_line = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["project", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "idempotency_key"],
                condition=~Q(idempotency_key=""),
                name="import_job_key_uniq",
            ),
        ]

    def __str__(self) -> str:
        return f"import job {self.pk} ({self.status})"


class Sentence(models.Model):
    class Split(models.TextChoices):
        TRAIN = "train"
        EVALUATION = "evaluation"  # never served; used only for accuracy reports
        GOLD_CHECK = "gold_check"  # served as gold check tasks

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="sentences")
    corpus_import = models.ForeignKey(
        CorpusImport, on_delete=models.CASCADE, related_name="sentence_set"
    )
    position = models.PositiveIntegerField(help_text="Order of the sentence in its project.")
    tokens = models.JSONField(help_text="List of token strings.")
    length = models.PositiveIntegerField()
    gold_tags = models.JSONField(
        null=True, blank=True, help_text="Tag indices aligned with tokens, or null."
    )
    split = models.CharField(max_length=10, choices=Split.choices, default=Split.TRAIN)
    # The sentence as written: its text (plain text and CoNLL-U imports), and for CoNLL-U its
    # lines as read (comments, multiword tokens, every column), which exports write back with
    # only the tag column changed.
    text = models.TextField(blank=True, default="")
    source = models.TextField(blank=True, default="")
    multiword = models.JSONField(
        null=True,
        blank=True,
        help_text="CoNLL-U multiword tokens, as written: [start, length, form] each (French "
        '"au" for the words "à le"), or null. Annotators read these forms.',
    )

    class Meta:
        ordering = ["project", "position"]
        constraints = [
            models.UniqueConstraint(fields=["project", "position"], name="sentence_position_uniq"),
        ]
        indexes = [models.Index(fields=["project", "split"], name="sentence_split_idx")]

    def __str__(self) -> str:
        return " ".join(self.tokens)[:80]


class TaskKind(models.TextChoices):
    """What a task asks. COUNT: how many words of each asked tag are in the window (`Task.tags`).
    VERIFY: are the tags a model version shows under the window's words all right
    (`Task.shown_tags`, one per word, and `Task.model_version`)?"""

    COUNT = "count"
    VERIFY = "verify"


class TaskOrigin(models.TextChoices):
    """How a count task's region was chosen. UNIFORM: drawn as the paper's S(o | y) (every task
    before a project's first model, the exploration share, a round made when the open pool ran
    dry). VALUE: chosen by the information its answer carries under a model version, in serving
    order (issue 25, `annotation.services.rounds`)."""

    UNIFORM = "uniform"
    VALUE = "value"


class Task(models.Model):
    """A question about a region: a window of a sentence and, for a count task, a subset of the
    tag set; for a verification task, the tags a model version shows under its words.

    `open_slots` is how many more annotators may lease it (redundancy minus live leases and
    submissions); the scheduler decrements it under a row lock and gives it back when a lease
    expires. Gold check tasks are not slot-limited.
    """

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="tasks")
    # task_region_unique starts with the sentence: no index of its own.
    sentence = models.ForeignKey(
        Sentence, on_delete=models.CASCADE, related_name="tasks", db_index=False
    )
    start = models.PositiveIntegerField()
    length = models.PositiveSmallIntegerField()
    kind = models.CharField(
        max_length=6, choices=TaskKind.choices, default=TaskKind.COUNT, db_default=TaskKind.COUNT
    )
    tags = models.JSONField(help_text="Sorted tag indices asked in this task ([] to verify).")
    shown_tags = models.JSONField(
        null=True, blank=True, help_text="To verify: the tag index shown under each word."
    )
    model_version = models.PositiveIntegerField(
        null=True, blank=True, help_text="To verify: the number of the version that chose them."
    )
    is_gold = models.BooleanField(default=False)
    open_slots = models.PositiveSmallIntegerField(default=0)
    round = models.PositiveIntegerField(default=0)
    origin = models.CharField(
        max_length=7,
        choices=TaskOrigin.choices,
        default=TaskOrigin.UNIFORM,
        db_default=TaskOrigin.UNIFORM,
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["sentence", "start", "length", "tags"],
                condition=Q(kind="count"),
                name="task_region_unique",
            ),
            models.UniqueConstraint(
                fields=["sentence", "start", "length", "model_version"],
                condition=Q(kind="verify"),
                name="task_verify_region_unique",
            ),
            models.CheckConstraint(
                condition=Q(kind="count", shown_tags__isnull=True, model_version__isnull=True)
                | Q(kind="verify", shown_tags__isnull=False, model_version__isnull=False),
                name="task_kind_fields",
            ),
        ]
        indexes = [
            models.Index(
                fields=["project", "id"],
                condition=Q(open_slots__gt=0, is_gold=False, kind="count"),
                name="task_open_idx",
            ),
            models.Index(
                fields=["project", "model_version", "id"],
                condition=Q(open_slots__gt=0, kind="verify"),
                name="task_verify_open_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"task {self.pk}: sentence {self.sentence_id} [{self.start}:+{self.length}]"


class Assignment(models.Model):
    """A lease of a task to one annotator, until `expires_at`."""

    class Status(models.TextChoices):
        LEASED = "leased"
        SUBMITTED = "submitted"
        EXPIRED = "expired"

    # Every index is a write on each lease and each answer (the status change is not a HOT
    # update), so the foreign keys have none of their own: `assignment_unique` starts with the
    # task, `assignment_annotator_idx` with the annotator, and nothing reads assignments by
    # project alone (a project's deletion scans them once).
    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="assignments", db_index=False
    )
    task = models.ForeignKey(
        Task, on_delete=models.CASCADE, related_name="assignments", db_index=False
    )
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="assignments",
        db_index=False,
    )
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.LEASED)
    leased_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    submitted_at = models.DateTimeField(null=True, blank=True)
    # Whether the lease took one of its task's open slots (and gives it back if it expires). A
    # flagged annotator's leases do not: they are served as everyone is, but their answers do
    # not use up a region's redundancy (annotation.scheduler).
    holds_slot = models.BooleanField(default=True, db_default=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["task", "annotator"], name="assignment_unique"),
        ]
        indexes = [
            # The annotator's last task in a project: where their next lease starts looking.
            models.Index(fields=["annotator", "project", "task"], name="assignment_annotator_idx"),
            models.Index(
                fields=["annotator", "project"],
                condition=Q(status="leased"),
                name="assignment_live_idx",
            ),
            models.Index(
                fields=["project", "expires_at"],
                condition=Q(status="leased"),
                name="assignment_expiry_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"assignment {self.pk} ({self.status})"


class Observation(models.Model):
    """An answer, append-only. A count answer is o = (r, B, N): `tags` are tag indices, `counts`
    aligned with them. In a private project `counts` are the values the phone released
    (randomized by the project's mechanism; the true counts never reach the server), and
    `mechanism` and `alpha` say how they were released. Elsewhere they are "" and null.

    A verification answer (`kind` verify) has empty `tags` and `counts`, the tags it was shown
    (`shown_tags`, one per word, as the task showed them: the model changes between versions),
    the version that chose them, the `answer` (True for Yes) and, after a No, optionally
    `wrong`: the position in the window (0-based) of the word the annotator tapped.
    """

    # observation_project_idx starts with the project, observation_idempotency_unique with the
    # annotator: no index of their own (one write less on each answer).
    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="observations", db_index=False
    )
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        related_name="observations",
        db_index=False,
    )
    assignment = models.OneToOneField(
        Assignment, on_delete=models.PROTECT, related_name="observation"
    )
    sentence = models.ForeignKey(Sentence, on_delete=models.CASCADE, related_name="observations")
    start = models.PositiveIntegerField()
    length = models.PositiveSmallIntegerField()
    kind = models.CharField(
        max_length=6, choices=TaskKind.choices, default=TaskKind.COUNT, db_default=TaskKind.COUNT
    )
    tags = models.JSONField()
    counts = models.JSONField()
    shown_tags = models.JSONField(null=True, blank=True)
    model_version = models.PositiveIntegerField(null=True, blank=True)
    answer = models.BooleanField(null=True, blank=True)
    wrong = models.PositiveSmallIntegerField(null=True, blank=True)
    is_gold = models.BooleanField(default=False)
    seconds_on_device = models.FloatField(null=True, blank=True)
    idempotency_key = models.CharField(max_length=64)
    submitted_at = models.DateTimeField()
    mechanism = models.CharField(max_length=16, blank=True, default="")
    alpha = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["annotator", "idempotency_key"], name="observation_idempotency_unique"
            ),
            models.CheckConstraint(
                condition=Q(kind="count", answer__isnull=True, wrong__isnull=True)
                | Q(kind="verify", answer__isnull=False, shown_tags__isnull=False)
                & (Q(wrong__isnull=True) | Q(answer=False)),
                name="observation_kind_fields",
            ),
        ]
        indexes = [
            models.Index(fields=["project", "id"], name="observation_project_idx"),
            models.Index(fields=["project", "annotator"], name="observation_annotator_idx"),
        ]

    def __str__(self) -> str:
        return f"observation {self.pk}"
