"""Which region-count task an annotator gets next, and the leases that hold them.

Sampling follows the paper's uniform supervision distribution S(o | y): for a sentence of length L
and window size w, the window start is uniform over the L - w + 1 positions (the whole sentence
when L <= w) and the tag subset is uniform over the subsets of the project's `tags_per_task` size.
Tasks are generated a *round* at a time (one region per training sentence) and each is leased to
at most `redundancy` distinct annotators. Task rows are unique per (sentence, window, tags) and an
annotator leases a task at most once, so nobody is asked the same window and tags twice.

An annotator may hold up to `MAX_LEASES` live leases in a project: the one on screen and the ones
fetched ahead, so that the next task shows at once and a phone that loses its connection can
still answer those it holds. The client names the leases it holds (`holding`); a live lease it does
not name is handed back first (a reloaded page gets its tasks again), and only then a new one.

Which open task a lease takes: the first (by id) after the last training task the annotator
leased in the project, and only when there is none ahead, the first before it (a region reopened
by an expired lease or a flagged annotator). Starting at the annotator's own mark keeps a lease to
a handful of rows however far the project has got: walking from the project's first task instead
passed every task the annotator had answered that others had not (a lone annotator paid for all
their answers on every lease). On PostgreSQL the plain case of this is one statement
(`annotation.hotpath`); this module is the whole rule, on the ORM.

Verification tasks (`TaskKind.VERIFY`): once the project has a model, a share
(`Project.verification_share_served`: the manager's fixed share, or the one the version's values
chose) of new leases are verification tasks of the served version
(`Project.verification_version`), made by the retrain with the version (see
`services.verification_round_create`). They are leased by the same rules: a slot per annotator up
to the redundancy, a task at most once per annotator, the first open one after the annotator's own
mark of that kind; a gold check is a verification task on a gold-check sentence when the draw chose
verification. Before the first model, or when no verification task is left for the caller, the
lease is a count task.

Concurrency: `Task.open_slots` is decremented while the task row is locked with
`SELECT ... FOR UPDATE SKIP LOCKED` (PostgreSQL; SQLite serializes write transactions), so two
annotators asking at once never get more leases on a region than its redundancy. One annotator's
own requests at once (a phone resending) queue on their membership row (`lease_serial`), so they
never pass the lease cap nor lease one task twice. Rounds and the lease reclaim are claimed by a
conditional UPDATE on the project row, checked by its row count.
"""

from __future__ import annotations

import os
import random
import threading
from collections import Counter
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import IntegrityError, transaction
from django.db.models import F, OuterRef, Q, QuerySet, Subquery
from django.utils import timezone

from annotation.models import Assignment, Membership, Project, Sentence, Task, TaskKind
from annotation.task_rows import tasks_insert
from common.exceptions import LeaseLimit, ProjectNotActive

RECLAIM_INTERVAL = timedelta(seconds=30)
MAX_LEASES = 3
GOLD_ATTEMPTS = 5
REPLENISH_DRAWS = 3
_BATCH = 2000


class _UnpredictableRandom(random.SystemRandom):
    """The operating system's random numbers, as `SystemRandom`'s, but read 4 KiB at a time per
    thread: each read is a system call, after which a thread of a busy web worker waits for the
    interpreter lock, and the annotator's "next" draws twice."""

    _local = threading.local()

    def _take(self, size: int) -> bytes:
        local = self._local
        buffer, at = getattr(local, "buffer", b""), getattr(local, "at", 0)
        if at + size > len(buffer):
            buffer, at = os.urandom(max(4096, size)), 0
            local.buffer = buffer
        local.at = at + size
        return buffer[at : at + size]

    def random(self) -> float:
        return (int.from_bytes(self._take(7)) >> 3) * 2.0**-53  # 53 bits, as SystemRandom

    def getrandbits(self, k: int) -> int:
        if k < 0:
            raise ValueError("number of bits must be non-negative")
        size = (k + 7) // 8
        return int.from_bytes(self._take(size)) >> (size * 8 - k)

    def randbytes(self, n: int) -> bytes:
        return self._take(n)


_system_random = _UnpredictableRandom()
# A forked process (gunicorn's workers, preloaded) must not reuse its parent's unread bytes.
os.register_at_fork(after_in_child=_UnpredictableRandom._local.__dict__.clear)


def draw_region(
    *,
    length: int,
    window_size: int,
    n_tags: int,
    tags_per_task: int | None,
    rng: random.Random,
) -> tuple[int, int, list[int]]:
    """Draw (start, window length, sorted tag indices) uniformly, as S(o | y)."""
    width = min(window_size, length)
    start = rng.randrange(length - width + 1)
    k = n_tags if tags_per_task is None else min(tags_per_task, n_tags)
    return start, width, sorted(rng.sample(range(n_tags), k))


def tasks_generate(
    *,
    project: Project,
    sentences: Iterable[tuple[int, int]],
    n_tags: int,
    rng: random.Random,
    round: int,
) -> int:
    """Create one training task per (sentence id, length); regions that exist already are skipped.

    Returns the number of tasks created.
    """
    created = 0
    batch: list[dict] = []

    def flush() -> int:
        inserted = tasks_insert(batch)
        batch.clear()
        return inserted

    for sentence_id, length in sentences:
        start, width, tags = draw_region(
            length=length,
            window_size=project.window_size,
            n_tags=n_tags,
            tags_per_task=project.tags_per_task,
            rng=rng,
        )
        batch.append(
            {
                "project_id": project.pk,
                "sentence_id": sentence_id,
                "start": start,
                "length": width,
                "tags": tags,
                "open_slots": project.redundancy,
                "round": round,
            }
        )
        if len(batch) >= _BATCH:
            created += flush()
    created += flush()
    return created


@dataclass(frozen=True, slots=True)
class Lease:
    """A task leased to an annotator: what the annotator is shown, and until when."""

    assignment_id: int
    expires_at: datetime
    task_id: int
    sentence_id: int
    start: int
    length: int
    tags: list[int]
    is_gold: bool
    tokens: list[str]
    multiword: list | None = None  # the sentence's contractions as written (Sentence.multiword)
    kind: str = TaskKind.COUNT.value
    shown_tags: list[int] | None = None
    model_version: int | None = None

    @classmethod
    def of(cls, assignment: Assignment) -> Lease:
        """The lease of `assignment`, whose task and sentence are loaded with it."""
        task = assignment.task
        return cls(
            assignment_id=assignment.pk,
            expires_at=assignment.expires_at,
            task_id=task.pk,
            sentence_id=task.sentence_id,
            start=task.start,
            length=task.length,
            tags=task.tags,
            is_gold=task.is_gold,
            tokens=task.sentence.tokens,
            multiword=task.sentence.multiword,
            kind=task.kind,
            shown_tags=task.shown_tags,
            model_version=task.model_version,
        )


def gold_draw() -> float:
    """The number that decides whether the next task is a gold check (see `task_lease_next`);
    also the one that decides whether it is a verification task (`kind_draw`)."""
    return _system_random.random()


def verification_drawn(*, project: Project, kind_draw: float) -> bool:
    """Whether a lease made with the uniform [0, 1) `kind_draw` is a verification task: only
    once the project serves a model version's verification tasks, with the project's share
    (`Project.verification_share_served`; never in a private project: a yes/no answer is not
    released through its mechanism)."""
    return (
        project.verification_version is not None
        and not project.private
        and kind_draw < project.verification_share_served
    )


def task_lease_next(
    *,
    project: Project,
    annotator,
    holding: Collection[int] = (),
    now: datetime | None = None,
    rng: random.Random | None = None,
    flagged: bool = False,
    gold_draw: float | None = None,
    kind_draw: float | None = None,
) -> Lease | None:
    """Lease the caller's next task in `project`; None if there is none for them.

    `holding`: the assignment ids of the leases the caller already has (on screen or fetched
    ahead). A live lease of theirs not among them is returned again; else a new lease is made,
    unless they hold `MAX_LEASES` live leases already (`LeaseLimit`).

    `gold_draw`: the uniform [0, 1) number that decides a gold check task, when the caller drew
    it already (`annotation.cycle.task_next_for_annotator` draws it for the one-statement lease
    first, see `annotation.hotpath`), and
    `kind_draw` likewise the one that decides a verification task (`verification_drawn`).

    A `flagged` annotator (see `Membership.flagged`) is served as everyone is: the same kinds
    and share of gold checks, the same regions, leases of the same shape from the same id
    sequences and lasting as long, so that nothing they are shown tells them they are flagged or
    which of their tasks are gold checks (serving them gold checks only, as this once did, let a
    flagged account learn the gold sentences). But their leases take no slot of a region
    (`Assignment.holds_slot`): their answers do not use up the redundancy a manager asked for,
    and the retrain leaves them out while the flag holds.
    """
    if project.status != Project.Status.ACTIVE:
        raise ProjectNotActive("This project is not active; it serves no new tasks.")
    now = now or timezone.now()
    rng = rng or _system_random
    if project.leases_reclaimed_at is None or project.leases_reclaimed_at < now - RECLAIM_INTERVAL:
        assignments_expire(project=project, now=now)
    with transaction.atomic():
        # The caller's other lease requests in this project wait here until this one commits,
        # so what follows sees every lease they made (on SQLite: the write lock, taken first).
        Membership.objects.filter(project=project, user=annotator).update(
            lease_serial=F("lease_serial") + 1
        )
        # Read after that row's lock: a change of the privacy settings committed meanwhile
        # (which bumps every member's row first) is seen, and the task offered follows it.
        project.refresh_from_db(fields=["private", "mechanism", "alpha"])
        return _lease_next(
            project=project,
            annotator=annotator,
            holding=holding,
            now=now,
            rng=rng,
            flagged=flagged,
            gold_draw=gold_draw,
            kind_draw=kind_draw,
        )


def _lease_next(
    *,
    project: Project,
    annotator,
    holding: Collection[int],
    now: datetime,
    rng: random.Random,
    flagged: bool,
    gold_draw: float | None,
    kind_draw: float | None,
) -> Lease | None:
    live = list(
        Assignment.objects.filter(
            annotator=annotator,
            project=project,
            status=Assignment.Status.LEASED,
            expires_at__gt=now,
        )
        .select_related("task__sentence")
        .order_by("id")
    )
    held = set(holding)
    for assignment in live:
        if assignment.pk not in held:
            return Lease.of(assignment)
    if len(live) >= MAX_LEASES:
        raise LeaseLimit(
            f"You already hold {len(live)} tasks in this project; answer one of them first."
        )
    # Drawn only when it can matter, so that a project without verification tasks sees the
    # random stream it always did.
    verify = verification_drawn(project=project, kind_draw=0.0) and verification_drawn(
        project=project, kind_draw=rng.random() if kind_draw is None else kind_draw
    )
    if (
        project.gold_fraction > 0
        and (rng.random() if gold_draw is None else gold_draw) < project.gold_fraction
    ):
        lease = None
        if verify:
            lease = _lease_gold_verify(project=project, annotator=annotator, now=now, rng=rng)
        if lease is None:
            lease = _lease_gold(project=project, annotator=annotator, now=now, rng=rng)
        if lease is not None:
            return lease
    take_slot = not flagged
    if verify:
        lease = _lease_open(
            project=project, annotator=annotator, now=now, kind=TaskKind.VERIFY, take_slot=take_slot
        )
        if lease is not None:
            return lease
    lease = _lease_open(project=project, annotator=annotator, now=now, take_slot=take_slot)
    if lease is None and tasks_replenish(project=project, rng=rng):
        lease = _lease_open(project=project, annotator=annotator, now=now, take_slot=take_slot)
    return lease


def _lease(
    *, project: Project, task: Task, annotator, now: datetime, holds_slot: bool = True
) -> Lease:
    """Lease `task` (loaded with its sentence) to the annotator."""
    assignment = Assignment.objects.create(
        project=project,
        task=task,
        annotator=annotator,
        leased_at=now,
        expires_at=now + timedelta(seconds=project.lease_seconds),
        holds_slot=holds_slot,
    )
    return Lease.of(assignment)


def _of_kind(project: Project, kind: str) -> Q:
    """Training tasks of `kind` that may be served now: a verification task only of the served
    version."""
    if kind == TaskKind.VERIFY:
        return Q(kind=kind, model_version=project.verification_version)
    return Q(kind=kind)


def open_tasks(
    *, project: Project, annotator, ahead_of: int | None = None, kind: str = TaskKind.COUNT
) -> QuerySet[Task]:
    """The project's training tasks of `kind` with a slot open that the annotator has not had,
    by id; only those after `ahead_of` (a task id) when given."""
    had = Assignment.objects.filter(task=OuterRef("pk"), annotator=annotator).values("pk")[:1]
    tasks = (
        Task.objects.filter(_of_kind(project, kind), project=project, open_slots__gt=0)
        .filter(is_gold=False)
        # A probe of `assignment_unique` per candidate: LIMIT 1 keeps PostgreSQL from planning
        # NOT EXISTS as an anti-join over all the annotator's assignments.
        .alias(had=Subquery(had))
        .filter(had__isnull=True)
        .order_by("id")
    )
    return tasks if ahead_of is None else tasks.filter(id__gt=ahead_of)


def _mark(*, project: Project, annotator, kind: str = TaskKind.COUNT) -> int:
    """The last training task of `kind` the annotator leased in the project (0 for none)."""
    last = (
        Assignment.objects.filter(
            project=project, annotator=annotator, task__is_gold=False, task__kind=kind
        )
        .order_by("-task_id")
        .values_list("task_id", flat=True)
        .first()
    )
    return last or 0


def _lease_open(
    *,
    project: Project,
    annotator,
    now: datetime,
    kind: str = TaskKind.COUNT,
    take_slot: bool = True,
) -> Lease | None:
    """A slot of the next open task of `kind` the caller has not had: the first after their
    mark, else the first behind it; the task row locked while its slot is taken. Without
    `take_slot` (a flagged annotator) the same task, its slot left open."""
    mark = _mark(project=project, annotator=annotator, kind=kind)
    candidates = open_tasks(project=project, annotator=annotator, kind=kind)
    try:
        with transaction.atomic():
            for tasks in (candidates.filter(id__gt=mark), candidates.filter(id__lte=mark)):
                task = (
                    tasks.select_related("sentence")
                    .select_for_update(skip_locked=True, of=("self",))
                    .first()
                )
                if task is not None:
                    if take_slot:
                        Task.objects.filter(pk=task.pk).update(open_slots=F("open_slots") - 1)
                    return _lease(
                        project=project,
                        task=task,
                        annotator=annotator,
                        now=now,
                        holds_slot=take_slot,
                    )
    except IntegrityError:
        return None  # the same annotator's concurrent request leased that task just now
    return None


def _lease_gold(*, project: Project, annotator, now: datetime, rng: random.Random) -> Lease | None:
    gold = Sentence.objects.filter(project=project, split=Sentence.Split.GOLD_CHECK)
    n_gold = gold.count()
    if not n_gold:
        return None
    n_tags = project.tags.count()
    for _ in range(GOLD_ATTEMPTS):
        sentence = gold.order_by("position")[rng.randrange(n_gold)]
        start, width, tags = draw_region(
            length=sentence.length,
            window_size=project.window_size,
            n_tags=n_tags,
            tags_per_task=project.tags_per_task,
            rng=rng,
        )
        task, _ = Task.objects.get_or_create(
            sentence=sentence,
            start=start,
            length=width,
            tags=tags,
            kind=TaskKind.COUNT,
            defaults={"project": project, "is_gold": True, "open_slots": 0},
        )
        task.sentence = sentence
        try:
            with transaction.atomic():
                return _lease(
                    project=project, task=task, annotator=annotator, now=now, holds_slot=False
                )
        except IntegrityError:
            continue  # this annotator has had this region already; draw another
    return None


def _lease_gold_verify(
    *, project: Project, annotator, now: datetime, rng: random.Random
) -> Lease | None:
    """A verification task of the served version on a gold-check sentence, drawn at random
    among those the annotator has not had (the retrain makes one per gold-check sentence)."""
    gold = Task.objects.filter(
        _of_kind(project, TaskKind.VERIFY), project=project, is_gold=True
    ).exclude(assignments__annotator=annotator)
    n_gold = gold.count()
    for _ in range(min(GOLD_ATTEMPTS, n_gold)):
        task = gold.select_related("sentence").order_by("id")[rng.randrange(n_gold)]
        try:
            with transaction.atomic():
                return _lease(
                    project=project, task=task, annotator=annotator, now=now, holds_slot=False
                )
        except IntegrityError:
            continue  # leased by this annotator's concurrent request just now
    return None


def tasks_replenish(*, project: Project, rng: random.Random) -> bool:
    """Generate the next round of training tasks. False if it produced nothing new.

    Only one caller generates a given round (conditional UPDATE on `task_rounds`); a caller that
    loses the race returns True so that it looks again at the round the winner made.
    """
    with transaction.atomic():
        claimed = Project.objects.filter(pk=project.pk, task_rounds=project.task_rounds).update(
            task_rounds=F("task_rounds") + 1
        )
        if not claimed:
            project.refresh_from_db(fields=["task_rounds"])
            return True
        project.task_rounds += 1
        sentences = (
            Sentence.objects.filter(project=project, split=Sentence.Split.TRAIN)
            .order_by("position")
            .values_list("id", "length")
        )
        n_tags = project.tags.count()
        for _ in range(REPLENISH_DRAWS):  # small region spaces: redraw before giving up
            created = tasks_generate(
                project=project,
                sentences=sentences.iterator(chunk_size=_BATCH),
                n_tags=n_tags,
                rng=rng,
                round=project.task_rounds,
            )
            if created:
                return True
    return False


def assignments_expire(*, project: Project, now: datetime | None = None) -> int:
    """Mark the project's overdue leases expired and give their slots back. Returns how many.

    A late answer to an expired lease is still accepted (see `observation_submit`).
    """
    now = now or timezone.now()
    last = project.leases_reclaimed_at
    claim = Q(leases_reclaimed_at__isnull=True) if last is None else Q(leases_reclaimed_at=last)
    if not Project.objects.filter(claim, pk=project.pk).update(leases_reclaimed_at=now):
        return 0  # another request is doing it
    project.leases_reclaimed_at = now
    with transaction.atomic():
        overdue = list(
            Assignment.objects.filter(
                project=project, status=Assignment.Status.LEASED, expires_at__lte=now
            )
            .select_for_update(skip_locked=True)
            .values_list("id", "task_id", "holds_slot")
        )
        if not overdue:
            return 0
        Assignment.objects.filter(
            id__in=[assignment_id for assignment_id, _, _ in overdue],
            status=Assignment.Status.LEASED,
        ).update(status=Assignment.Status.EXPIRED)
        per_task = Counter(task_id for _, task_id, holds_slot in overdue if holds_slot)
        for task_id, n in per_task.items():
            Task.objects.filter(pk=task_id, is_gold=False).update(open_slots=F("open_slots") + n)
    return len(overdue)


def assignments_release(*, project: Project, annotator_id: int) -> int:
    """Withdraw an annotator's unanswered assignments in a project (a member removed): their
    live leases' slots go back to the tasks, and the assignments are deleted, so none can be
    answered later, by a late submission or after the annotator rejoins (they start clean).
    Answers already given stay. Returns how many live leases were released."""
    with transaction.atomic():
        unanswered = list(
            Assignment.objects.filter(
                project=project,
                annotator_id=annotator_id,
                status__in=[Assignment.Status.LEASED, Assignment.Status.EXPIRED],
            )
            .select_for_update()  # a submission racing this one either wins or finds nothing
            .values_list("id", "task_id", "status", "holds_slot")
        )
        Assignment.objects.filter(id__in=[row[0] for row in unanswered]).delete()
        # Expired leases gave their slots back when they expired.
        live = Counter(
            task_id for _, task_id, status, holds in unanswered if status == "leased" and holds
        )
        for task_id, n in live.items():
            Task.objects.filter(pk=task_id, is_gold=False).update(open_slots=F("open_slots") + n)
    return sum(live.values())
