"""Which open task a lease picks: the first after the annotator's last training task, then the
ones behind it; the same through the API (one statement on PostgreSQL in the plain case) and the
scheduler.
Runs on SQLite and PostgreSQL."""

import io
import json

import pytest

from annotation import scheduler, services
from annotation.models import Assignment, Membership, Project, Task
from tests.factories import SENTENCES, UserFactory, answer, client_for, jsonl, next_task


def member(project, name):
    user = UserFactory(username=name)
    Membership.objects.create(project=project, user=user, role=Membership.Role.ANNOTATOR)
    return user


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
    first, second = member(project, "first"), member(project, "second")
    task_ids = training_task_ids(project)
    assert [lease_and_answer(route, project, first) for _ in range(3)] == task_ids[:3]
    # A newcomer starts at the project's first open task, not where others are.
    assert lease_and_answer(route, project, second) == task_ids[0]
    assert lease_and_answer(route, project, first) == task_ids[3]


@pytest.mark.parametrize("route", ["api", "scheduler"])
def test_a_region_reopened_behind_is_served_once_nothing_is_ahead(route, project, corpus):
    Project.objects.filter(pk=project.pk).update(redundancy=1)
    Task.objects.filter(project=project).update(open_slots=1)
    first, second = member(project, "first"), member(project, "second")
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
    services.corpus_import(
        project=project,
        user=manager,
        file=io.BytesIO(jsonl() * 2),
        format="jsonl",
        gold_check_fraction=0.5,
        max_bytes=10**6,
        seed=3,
    )
    user = member(project, "first")
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
    services.corpus_import(
        project=project,
        user=manager,
        file=io.BytesIO(jsonl(SENTENCES * 13)),
        format="jsonl",
        max_bytes=10**6,
        seed=1,
    )
    user = member(project, "lone")
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
