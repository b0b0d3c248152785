"""Concurrent leases on PostgreSQL: threads with their own connections asking at once."""

import io
import threading
from unittest import mock

import pytest
from django.db import connection

from annotation import scheduler, services
from annotation.models import Assignment, Membership, Task
from tests.factories import UserFactory, make_project

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def run_concurrently(functions):
    barrier = threading.Barrier(len(functions))
    errors = []

    def runner(fn):
        try:
            barrier.wait()
            fn()
        except Exception as exc:  # noqa: BLE001 - collected and re-raised in the test
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=runner, args=(fn,)) for fn in functions]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors, errors


def test_simultaneous_requests_never_exceed_redundancy():
    manager = UserFactory()
    project = make_project(owner=manager, redundancy=2, tags_per_task=1)
    services.corpus_import(
        project=project,
        user=manager,
        file=io.BytesIO(b"a b c d e\nf g h i j\n"),
        format="text",
        max_bytes=1000,
        seed=0,
    )
    users = UserFactory.create_batch(12)
    for user in users:
        Membership.objects.create(project=project, user=user, role="annotator")
    Task.objects.filter(project=project).update(open_slots=2)
    # Forbid new rounds, so that everybody competes for the same 2 tasks x 2 slots.
    results = []
    with mock.patch.object(scheduler, "tasks_replenish", return_value=False):
        run_concurrently(
            [
                lambda user=user: results.append(
                    scheduler.task_lease_next(project=project, annotator=user)
                )
                for user in users
            ]
        )
    leased = [a for a in results if a is not None]
    assert 1 <= len(leased) <= 4  # 2 tasks x redundancy 2; SKIP LOCKED may turn some away
    per_task = {}
    for assignment in Assignment.objects.all():
        per_task[assignment.task_id] = per_task.get(assignment.task_id, 0) + 1
    assert max(per_task.values()) <= 2
    assert len(leased) == Assignment.objects.count()
    open_slots = sum(Task.objects.values_list("open_slots", flat=True))
    assert open_slots + len(leased) == 4


def test_one_annotator_submitting_the_same_answer_twice_at_once():
    manager = UserFactory()
    project = make_project(owner=manager)
    services.corpus_import(
        project=project, user=manager, file=io.BytesIO(b"a b c\n"), format="text", max_bytes=99
    )
    user = UserFactory()
    Membership.objects.create(project=project, user=user, role="annotator")
    lease = scheduler.task_lease_next(project=project, annotator=user)
    counts = {["NOUN", "VERB", "DET", "ADJ"][i]: 0 for i in lease.tags}
    outcomes = []
    run_concurrently(
        [
            lambda: outcomes.append(
                services.observation_submit(
                    annotator=user,
                    assignment_id=lease.assignment_id,
                    counts=counts,
                    idempotency_key="same",
                )
            )
            for _ in range(6)
        ]
    )
    assert len(outcomes) == 6
    assert len({observation.pk for observation, _ in outcomes}) == 1
    assert sum(not replayed for _, replayed in outcomes) == 1
