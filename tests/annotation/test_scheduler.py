"""The scheduler: S(o|y) sampling, redundancy, no repeats, which task a lease takes, leases held
ahead, gold tasks, rounds. Runs on SQLite and PostgreSQL."""

import json
import random
import threading
from collections import Counter
from datetime import timedelta

import pytest
from django.utils import timezone
from scipy.stats import chisquare

from annotation import scheduler, services
from annotation.models import Assignment, Membership, Project, Sentence, Task
from common.exceptions import ProjectNotActive
from tests.support.factories import (
    SENTENCES,
    annotators,
    answer,
    client_for,
    import_jsonl,
    jsonl,
    member,
    next_task,
)


def test_draw_region_is_uniform_over_starts_and_subsets():
    rng = random.Random(0)
    starts, subsets = Counter(), Counter()
    for _ in range(6000):
        start, width, tags = scheduler.draw_region(
            length=7, window_size=3, n_tags=4, tags_per_task=2, rng=rng
        )
        assert width == 3 and 0 <= start <= 4 and len(tags) == 2 and tags == sorted(tags)
        starts[start] += 1
        subsets[tuple(tags)] += 1
    assert set(starts) == {0, 1, 2, 3, 4} and len(subsets) == 6  # C(4, 2)
    assert max(starts.values()) / min(starts.values()) < 1.25
    assert max(subsets.values()) / min(subsets.values()) < 1.25


def test_short_sentence_window_is_the_whole_sentence_and_all_tags_when_none():
    start, width, tags = scheduler.draw_region(
        length=2, window_size=5, n_tags=4, tags_per_task=None, rng=random.Random(1)
    )
    assert (start, width, tags) == (0, 2, [0, 1, 2, 3])


def test_import_generates_one_task_per_training_sentence(project, corpus):
    tasks = Task.objects.filter(project=project)
    assert tasks.count() == Sentence.objects.filter(project=project, split="train").count()
    assert all(t.open_slots == project.redundancy for t in tasks)


def test_redundancy_is_honoured_and_nobody_gets_a_task_twice(project, corpus):
    project = services.project_update(project=project, tags_per_task=1)
    users = annotators(project, 5)
    leased = Counter()
    seen = {user.pk: set() for user in users}
    for _ in range(8):
        for user in users:
            assignment = scheduler.task_lease_next(project=project, annotator=user)
            assert assignment is not None
            region = (
                assignment.sentence_id,
                assignment.start,
                tuple(assignment.tags),
            )
            assert region not in seen[user.pk]
            seen[user.pk].add(region)
            leased[assignment.task_id] += 1
            Assignment.objects.filter(pk=assignment.assignment_id).update(status="submitted")
    assert max(leased.values()) <= project.redundancy
    assert Task.objects.filter(open_slots__lt=0).count() == 0


def test_live_lease_is_returned_again(project, corpus, annotator):
    first = scheduler.task_lease_next(project=project, annotator=annotator)
    again = scheduler.task_lease_next(project=project, annotator=annotator)
    assert first.assignment_id == again.assignment_id


def test_expired_lease_gives_its_slot_back(project, corpus):
    project.redundancy = 1
    project.save()
    Task.objects.filter(project=project).update(open_slots=1)
    first, second = annotators(project, 2)
    now = timezone.now()
    lease = scheduler.task_lease_next(project=project, annotator=first, now=now)
    later = now + timedelta(seconds=project.lease_seconds + 1)
    project.refresh_from_db()
    assert scheduler.assignments_expire(project=project, now=later) == 1
    assert Assignment.objects.get(pk=lease.assignment_id).status == Assignment.Status.EXPIRED
    assert Task.objects.get(pk=lease.task_id).open_slots == 1
    # The freed region can now go to someone else.
    task_ids = set()
    for _ in range(Task.objects.filter(project=project).count()):
        got = scheduler.task_lease_next(project=project, annotator=second, now=later)
        task_ids.add(got.task_id)
        Assignment.objects.filter(pk=got.assignment_id).update(status="submitted")
    assert lease.task_id in task_ids


def test_reclaim_is_claimed_by_one_caller(project, corpus):
    now = timezone.now()
    project.leases_reclaimed_at = None
    assert scheduler.assignments_expire(project=project, now=now) == 0
    stale = Project.objects.get(pk=project.pk)
    stale.leases_reclaimed_at = None  # a caller that read the row before the first claim
    assert scheduler.assignments_expire(project=stale, now=now) == 0


def test_new_round_when_the_annotator_has_done_everything(project, corpus, annotator):
    n_tasks = Task.objects.filter(project=project).count()
    for _ in range(n_tasks + 3):
        assignment = scheduler.task_lease_next(project=project, annotator=annotator)
        assert assignment is not None
        Assignment.objects.filter(pk=assignment.assignment_id).update(status="submitted")
    project.refresh_from_db()
    assert project.task_rounds >= 1
    assert Task.objects.filter(project=project).count() > n_tasks


def test_paused_project_serves_nothing(project, corpus, annotator):
    project.status = Project.Status.PAUSED
    with pytest.raises(ProjectNotActive):
        scheduler.task_lease_next(project=project, annotator=annotator)


def test_no_sentences_no_task(project, annotator):
    assert scheduler.task_lease_next(project=project, annotator=annotator) is None


def test_gold_tasks_at_the_project_rate(project, manager):
    import_jsonl(project, manager, jsonl() * 4, gold_check_fraction=0.5, max_bytes=10**6, seed=3)
    project = services.project_update(project=project, gold_fraction=0.3, tags_per_task=1)
    project.refresh_from_db()
    (user,) = annotators(project, 1)
    rng = random.Random(5)
    gold = 0
    for _ in range(100):
        assignment = scheduler.task_lease_next(project=project, annotator=user, rng=rng)
        assert assignment is not None
        gold += assignment.is_gold
        split = Sentence.objects.get(pk=assignment.sentence_id).split
        assert split == ("gold_check" if assignment.is_gold else "train")
        Assignment.objects.filter(pk=assignment.assignment_id).update(status="submitted")
    assert 15 <= gold <= 45


def test_evaluation_sentences_are_never_served(project, manager, annotator):
    import_jsonl(project, manager, evaluation_fraction=0.5, max_bytes=10**6, seed=2)
    evaluation = set(
        Sentence.objects.filter(project=project, split="evaluation").values_list("id", flat=True)
    )
    assert evaluation
    for _ in range(40):
        assignment = scheduler.task_lease_next(project=project, annotator=annotator)
        if assignment is None:
            break
        assert assignment.sentence_id not in evaluation
        Assignment.objects.filter(pk=assignment.assignment_id).update(status="submitted")


# Which open task a lease takes: the first after the annotator's last training task, then the
# ones behind it; the same through the API (one statement on PostgreSQL in the plain case) and
# the scheduler.


def training_task_ids(project) -> list[int]:
    return list(Task.objects.filter(project=project).order_by("id").values_list("id", flat=True))


def lease_and_answer(route, project, user) -> int | None:
    """Lease the user's next task and answer it; the task's id (None when nothing is left)."""
    if route == "api":
        client = client_for(user)
        response = next_task(client, project)
        if response.status_code == 204:
            return None
        task = response.json()
        assert answer(client, task, key=f"k{task['assignment']}").status_code == 201
        return Assignment.objects.get(pk=task["assignment"]).task_id
    project.refresh_from_db()
    lease = scheduler.task_lease_next(project=project, annotator=user)
    if lease is None:
        return None
    Assignment.objects.filter(pk=lease.assignment_id).update(status="submitted")
    return lease.task_id


@pytest.mark.parametrize("route", ["api", "scheduler"])
def test_each_annotator_goes_forward_from_their_own_last_task(route, project, corpus):
    first, second = member(project, username="first"), member(project, username="second")
    task_ids = training_task_ids(project)
    assert [lease_and_answer(route, project, first) for _ in range(3)] == task_ids[:3]
    # A newcomer starts at the project's first open task, not where others are.
    assert lease_and_answer(route, project, second) == task_ids[0]
    assert lease_and_answer(route, project, first) == task_ids[3]


@pytest.mark.parametrize("route", ["api", "scheduler"])
def test_a_region_reopened_behind_is_served_once_nothing_is_ahead(route, project, corpus):
    Project.objects.filter(pk=project.pk).update(redundancy=1)
    Task.objects.filter(project=project).update(open_slots=1)
    first, second = member(project, username="first"), member(project, username="second")
    task_ids = training_task_ids(project)
    assert [lease_and_answer(route, project, first) for _ in range(3)] == task_ids[:3]
    # The second annotator works through the rest; meanwhile one of the first one's regions is
    # opened again (as a retrain does for a flagged annotator).
    got = [lease_and_answer(route, project, second) for _ in range(2)]
    Task.objects.filter(pk=task_ids[1]).update(open_slots=1)
    got += [lease_and_answer(route, project, second) for _ in range(len(task_ids) - 5)]
    assert got == task_ids[3:]
    assert lease_and_answer(route, project, second) == task_ids[1]  # behind, now nothing ahead
    assert Task.objects.filter(project=project, open_slots__lt=0).count() == 0


@pytest.mark.parametrize("route", ["api", "scheduler"])
def test_a_gold_check_does_not_move_the_annotators_mark(route, project, manager):
    import_jsonl(project, manager, jsonl() * 2, gold_check_fraction=0.5, max_bytes=10**6, seed=3)
    user = member(project, username="first")
    task_ids = training_task_ids(project)
    assert lease_and_answer(route, project, user) == task_ids[0]
    project = services.project_update(project=project, gold_fraction=1.0)
    gold = lease_and_answer(route, project, user)
    assert Task.objects.get(pk=gold).is_gold and gold > task_ids[-1]
    project = services.project_update(project=project, gold_fraction=0.0)
    assert lease_and_answer(route, project, user) == task_ids[1]


@pytest.mark.postgres
def test_a_lone_annotators_lease_looks_at_a_few_tasks_however_many_they_answered(project, manager):
    """Regression: the scan used to start at the project's first open task, and pass every task
    the annotator had answered that nobody else had yet (a lone annotator's leases grew with
    their answers)."""
    import_jsonl(project, manager, jsonl(SENTENCES * 13), max_bytes=10**6, seed=1)
    user = member(project, username="lone")
    for _ in range(150):
        assert lease_and_answer("api", project, user) is not None
    mark = Assignment.objects.filter(annotator=user).order_by("-task_id")[0].task_id

    def rows_passed_over(mark: int) -> int:
        tasks = scheduler.open_tasks(project=project, annotator=user, ahead_of=mark)[:1]
        plan = json.loads(tasks.explain(format="json", analyze=True))[0]["Plan"]
        while "Rows Removed by Filter" not in plan:
            (plan,) = [child for child in plan["Plans"] if "Subplan Name" not in child]
        return plan["Rows Removed by Filter"]

    assert rows_passed_over(mark) == 0
    assert rows_passed_over(0) >= 150  # what a scan from the first task would pass over


# Leases held ahead (the scheduler's side; the API's is in tests/annotation/api/test_cycle.py).


def test_scheduler_lease_cap_and_holding(project, corpus, annotator):
    now = timezone.now()
    first = scheduler.task_lease_next(project=project, annotator=annotator, now=now)
    second = scheduler.task_lease_next(
        project=project, annotator=annotator, now=now, holding=[first.assignment_id]
    )
    assert second.assignment_id != first.assignment_id
    again = scheduler.task_lease_next(project=project, annotator=annotator, now=now)
    assert again.assignment_id == first.assignment_id


def test_the_draws_are_uniform_and_each_thread_reads_its_own_bytes():
    """The scheduler's random numbers are the operating system's, read a few KiB at a time."""
    rng = scheduler._system_random
    draws = [rng.random() for _ in range(20_000)]
    assert all(0.0 <= x < 1.0 for x in draws)
    # The operating system's bytes cannot be seeded: bounds at p = 1e-6 keep a false alarm rare.
    assert chisquare(list(Counter(int(x * 10) for x in draws).values())).pvalue > 1e-6
    assert chisquare(list(Counter(rng.randrange(7) for _ in range(14_000)).values())).pvalue > 1e-6
    assert rng.getrandbits(0) == 0 and rng.getrandbits(100) < 2**100
    seen = {}

    def draw(name):
        seen[name] = [rng.random() for _ in range(1000)]  # past one buffer

    threads = [threading.Thread(target=draw, args=(n,)) for n in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(seen["a"]) | set(seen["b"])) == 2000


def test_a_flagged_annotator_is_served_as_everyone_and_takes_no_slot(project, manager):
    """Regression (issue 44, item 2): a flagged annotator was served gold checks only, so a
    flagged account learnt which sentences are gold. Now the same draws give the same kinds of
    lease, gold checks at the project's rate among ordinary tasks, in the same shape through the
    API; only the slot is not taken, and an expired lease gives none back."""
    import_jsonl(project, manager, jsonl() * 4, gold_check_fraction=0.5, max_bytes=10**6, seed=3)
    project = services.project_update(project=project, gold_fraction=0.3, tags_per_task=1)
    project.refresh_from_db()
    honest, flagged = annotators(project, 2)
    slots = dict(Task.objects.filter(is_gold=False).values_list("pk", "open_slots"))
    served = {}
    for user, is_flagged in ((honest, False), (flagged, True)):
        rng, kinds = random.Random(5), []
        for _ in range(40):
            lease = scheduler.task_lease_next(
                project=project, annotator=user, rng=rng, flagged=is_flagged
            )
            kinds.append(lease.is_gold)
            Assignment.objects.filter(pk=lease.assignment_id).update(status="submitted")
        served[is_flagged] = kinds
    assert served[True] == served[False]  # the same draws: gold where the honest one had gold
    assert 6 <= sum(served[True]) <= 20
    mine = Assignment.objects.filter(annotator=flagged)
    assert not mine.filter(holds_slot=True).exists()
    ordinary = set(mine.filter(task__is_gold=False).values_list("task_id", flat=True))
    taken = set(Assignment.objects.filter(annotator=honest).values_list("task_id", flat=True))
    # The flagged annotator's leases left their tasks' slots as the honest one's leases left them.
    for task_id, open_slots in Task.objects.filter(pk__in=ordinary).values_list("pk", "open_slots"):
        assert open_slots == slots.get(task_id, project.redundancy) - (task_id in taken)
    # Through the API the tasks look the same; an expired lease gives back no slot it took not.
    project = services.project_update(project=project, gold_fraction=0.0)
    Membership.objects.filter(project=project, user=flagged).update(flagged=True)
    shapes = []
    for user in (honest, flagged):
        task = next_task(client_for(user), project).json()
        shapes.append(sorted(task))
    assert shapes[0] == shapes[1]
    lease = Assignment.objects.filter(annotator=flagged, status="leased").get()
    before = Task.objects.get(pk=lease.task_id).open_slots
    Assignment.objects.filter(pk=lease.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    project.refresh_from_db()
    assert scheduler.assignments_expire(project=project, now=timezone.now()) == 1
    assert Task.objects.get(pk=lease.task_id).open_slots == before
