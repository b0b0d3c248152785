"""Count rounds chosen by value (issue 25): what a new model version asks next, stored so that
leasing needs no model work.

Leasing serves the first open task by id after the annotator's mark (`annotation.scheduler`, and
the one statement of `annotation.hotpath`), so **priority is id order**. With each new version the
retrain (`learning.rounds`) scores the candidate count tasks and this module, in the transaction
that stores the version:

1. withdraws the training count tasks nobody has leased (no assignment at all): their value was
   the previous model's. A task with a lease or an answer stays until its redundancy is met.
2. inserts the version's round in serving order (highest value first, the exploration share
   interleaved), so that the ids are the priority. Exploration tasks are drawn as the paper's
   uniform S(o | y) and keep `origin` uniform; the others are `origin` value.

When the pool runs dry before the next version, `scheduler.tasks_replenish` adds a uniform round,
as it always did. A project without a model never gets here.

Concurrency. A lease takes its task row with `FOR UPDATE SKIP LOCKED` and commits its assignment
before releasing the row, so the withdrawal locks the candidates the same way (skipping rows a
lease holds: those stay) and then re-checks, in a statement of its own (a fresh snapshot), that
no assignment exists: a lease that committed before the lock is seen, and one that comes after
finds the row locked (skipped, it takes the next) or deleted (skipped). The project's row is
updated first: a uniform round claimed meanwhile (`tasks_replenish`, a conditional UPDATE of
`task_rounds`) waits, finds its claim taken and looks again at this round.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.db import transaction
from django.db.models import Exists, F, OuterRef

from annotation.models import Assignment, Project, Task, TaskKind, TaskOrigin
from annotation.task_rows import tasks_insert

__all__ = ["PlannedTask", "stale_tasks_withdraw", "value_round_create"]

_BATCH = 2000


@dataclass(frozen=True, slots=True)
class PlannedTask:
    """A count task of a round chosen by value: its region and how it was chosen."""

    sentence_id: int
    start: int
    length: int
    tags: list[int]
    origin: str = TaskOrigin.VALUE


def _never_leased():
    return ~Exists(Assignment.objects.filter(task=OuterRef("pk")))


def stale_tasks_withdraw(*, project_id: int) -> int:
    """Delete the project's training count tasks that no one has leased (call it in a
    transaction); a task a lease holds at this moment is skipped and stays. Returns how many."""
    candidates = list(
        Task.objects.filter(
            _never_leased(),
            project_id=project_id,
            kind=TaskKind.COUNT,
            is_gold=False,
            open_slots__gt=0,
        )
        .order_by("id")
        .select_for_update(skip_locked=True)
        .values_list("id", flat=True)
    )
    withdrawn = 0
    using = transaction.get_connection().alias
    for at in range(0, len(candidates), _BATCH):
        # Locked now: a lease committed before the lock is seen by this fresh statement. A task
        # no one leased has nothing to cascade to (assignments only), so one DELETE does what
        # `delete()`'s collector does in three statements a batch, 6 times faster.
        ids = candidates[at : at + _BATCH]
        withdrawn += Task.objects.filter(_never_leased(), id__in=ids)._raw_delete(using)
    return withdrawn


def value_round_create(
    *, project_id: int, tasks: Iterable[PlannedTask], verification_share_auto: float
) -> tuple[int, int]:
    """Replace the project's never-leased count tasks by `tasks`, in their order, and store the
    task mix the version's values chose (`Project.verification_share_auto`). Call it in the
    transaction that writes the version. Returns (tasks withdrawn, tasks created); a region that
    exists already (a task still being answered) is skipped."""
    with transaction.atomic():
        Project.objects.filter(pk=project_id).update(
            task_rounds=F("task_rounds") + 1,
            verification_share_auto=min(max(float(verification_share_auto), 0.0), 1.0),
        )
        number, redundancy = (
            Project.objects.filter(pk=project_id).values_list("task_rounds", "redundancy").get()
        )
        withdrawn = stale_tasks_withdraw(project_id=project_id)
        created = tasks_insert(
            {
                "project_id": project_id,
                "sentence_id": task.sentence_id,
                "start": task.start,
                "length": task.length,
                "tags": sorted(int(tag) for tag in task.tags),
                "open_slots": redundancy,
                "round": number,
                "origin": task.origin,
            }
            for task in tasks
        )
    return withdrawn, created
