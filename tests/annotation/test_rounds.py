"""Count rounds chosen by value (issue 25), on the platform: a version's round replaces the
never-leased count tasks and is served in its order; leasing keeps its properties while a
withdrawal races it (on SQLite here, on PostgreSQL with threads below); the task mix follows the
version's share unless the manager fixed one."""

import io
import random
import threading

import numpy as np
import pytest
from django.db import connection
from django.utils import timezone
from scipy import stats

from annotation import scheduler, services
from annotation.cycle import task_next_for_annotator
from annotation.cycle.submission import NextTaskRequest
from annotation.models import Assignment, Project, Sentence, Task, TaskOrigin
from common.api.plain import Caller
from common.exceptions import LeaseLimit
from tests.support.factories import UserFactory, annotators, make_project, member

pytestmark = pytest.mark.django_db


def corpus_project(n_sentences=12, length=6, **settings):
    """A project of `n_sentences` tokenized sentences of `length` words, 4 tags (2 a task),
    window 3, redundancy 2 unless told, and its first (uniform) round."""
    manager = UserFactory()
    fields = {"window_size": 3, "tags_per_task": 2, "redundancy": 2, **settings}
    project = make_project(owner=manager, **fields)
    words = " ".join(f"w{j}" for j in range(length))
    services.corpus_import(
        project=project,
        user=manager,
        file=io.BytesIO(("\n".join([words] * n_sentences) + "\n").encode()),
        format="tokenized",
        max_bytes=10**6,
        seed=0,
    )
    return project


def plan_for(project, n, *, seed=0):
    """A round of `n` new regions over the project's training sentences, in a given (random)
    order, as a version's plan would be."""
    rng = random.Random(seed)
    sentences = list(
        Sentence.objects.filter(project=project, split="train").values_list("id", "length")
    )
    rows = Task.objects.filter(project=project).values_list("sentence_id", "start", "tags")
    taken = {(sentence_id, start, tuple(tags)) for sentence_id, start, tags in rows}
    planned = []
    while len(planned) < n:
        sentence_id, length = rng.choice(sentences)
        start = rng.randrange(length - 3 + 1)
        tags = sorted(rng.sample(range(4), 2))
        if (sentence_id, start, tuple(tags)) not in taken:
            taken.add((sentence_id, start, tuple(tags)))
            planned.append(services.PlannedTask(sentence_id, start, 3, tags))
    return planned


def next_lease(project, user, **kwargs):
    """A new lease for `user` (naming every live lease they hold, so none is handed back), with
    the project as a request reads it."""
    project.refresh_from_db()
    live = Assignment.objects.filter(annotator=user, status="leased")
    holding = list(live.values_list("id", flat=True))
    return scheduler.task_lease_next(project=project, annotator=user, holding=holding, **kwargs)


def region(task_or_lease):
    return (task_or_lease.sentence_id, task_or_lease.start, list(task_or_lease.tags))


def test_a_project_without_a_model_leases_uniformly_as_before():
    project = corpus_project()
    user = member(project)
    first = next_lease(project, user)
    assert Task.objects.get(pk=first.task_id).origin == TaskOrigin.UNIFORM
    assert set(Task.objects.values_list("origin", flat=True)) == {TaskOrigin.UNIFORM}
    project.refresh_from_db()
    assert project.verification_version is None and project.verification_share_auto == 0.0


def test_a_versions_round_replaces_the_never_leased_tasks_and_is_served_in_its_order():
    project = corpus_project(redundancy=2)
    early = member(project)
    partly = next_lease(project, early)  # one slot of two taken: the task stays
    answered = next_lease(project, early)
    Assignment.objects.filter(pk=answered.assignment_id).update(status="submitted")
    never = set(Task.objects.values_list("id", flat=True)) - {partly.task_id, answered.task_id}
    plan = plan_for(project, 10)

    withdrawn, created = services.value_round_create(
        project_id=project.pk, tasks=plan, verification_share_auto=0.25
    )

    assert (withdrawn, created) == (len(never), 10)
    assert not Task.objects.filter(pk__in=never).exists()
    kept = Task.objects.filter(pk__in=[partly.task_id, answered.task_id])
    assert kept.count() == 2 and set(kept.values_list("origin", flat=True)) == {"uniform"}
    new = Task.objects.filter(project=project).exclude(pk__in=[partly.task_id, answered.task_id])
    assert [region(task) for task in new.order_by("id")] == [region(task) for task in plan]
    rounds_before = project.task_rounds
    project.refresh_from_db()
    assert project.task_rounds == rounds_before + 1
    assert set(new.values_list("round", flat=True)) == {project.task_rounds}
    assert project.verification_share_auto == 0.25

    # A newcomer gets the tasks still being answered first (lower ids), then the plan in order,
    # each region `redundancy` times across annotators.
    newcomer = member(project)
    served = []
    for _ in range(6):
        got = next_lease(project, newcomer)
        Assignment.objects.filter(pk=got.assignment_id).update(status="submitted")
        served.append(region(got))
    assert served == [region(partly), region(answered)] + [region(t) for t in plan[:4]]


def test_a_round_skips_regions_still_being_answered():
    project = corpus_project()
    user = member(project)
    held = Task.objects.get(pk=next_lease(project, user).task_id)
    again = services.PlannedTask(held.sentence_id, held.start, held.length, held.tags)
    withdrawn, created = services.value_round_create(
        project_id=project.pk, tasks=[again, *plan_for(project, 3)], verification_share_auto=0.0
    )
    assert created == 3
    assert Task.objects.filter(project=project).count() == 4


def test_the_pool_run_dry_falls_back_to_a_uniform_round():
    project = corpus_project(n_sentences=3, redundancy=1)
    services.value_round_create(
        project_id=project.pk, tasks=plan_for(project, 2), verification_share_auto=0.0
    )
    user = member(project)
    origins = []
    for _ in range(3):
        got = next_lease(project, user)
        Assignment.objects.filter(pk=got.assignment_id).update(status="submitted")
        origins.append(Task.objects.get(pk=got.task_id).origin)
    assert origins == ["value", "value", "uniform"]


def test_the_exploration_share_holds_in_what_is_leased():
    """Many leases of a round whose plan explores with probability 0.2: the share of uniform
    tasks among the leases is binomial around it (and a plan that explored 0.3 is refused)."""
    project = corpus_project(n_sentences=60, length=8, redundancy=1)
    rng = np.random.default_rng(0)
    plan = plan_for(project, 300, seed=1)
    explore = rng.random(len(plan)) < 0.2
    plan = [
        services.PlannedTask(t.sentence_id, t.start, t.length, t.tags, "uniform" if e else "value")
        for t, e in zip(plan, explore, strict=True)
    ]
    services.value_round_create(project_id=project.pk, tasks=plan, verification_share_auto=0.0)
    users = annotators(project, 3)
    origins = []
    for i in range(300):
        got = next_lease(project, users[i % 3])
        Assignment.objects.filter(pk=got.assignment_id).update(status="submitted")
        origins.append(Task.objects.get(pk=got.task_id).origin)
    uniform = origins.count("uniform")
    observed = [uniform, len(origins) - uniform]
    assert stats.chisquare(observed, [0.2 * 300, 0.8 * 300]).pvalue > 1e-3
    assert stats.chisquare(observed, [0.3 * 300, 0.7 * 300]).pvalue < 1e-3


def test_the_managers_fixed_share_wins_over_the_versions():
    project = corpus_project()
    sentence = Sentence.objects.filter(project=project, split="train").first()
    windows = [services.VerificationWindow(sentence_id=sentence.pk, start=0, shown_tags=[0, 1, 2])]
    services.verification_round_create(project_id=project.pk, version_number=1, windows=windows)
    services.value_round_create(project_id=project.pk, tasks=[], verification_share_auto=1.0)
    fixed, automatic = annotators(project, 2)

    Project.objects.filter(pk=project.pk).update(verification_share=0.0)
    project.refresh_from_db()
    assert next_lease(project, fixed, kind_draw=0.5).kind == "count"

    Project.objects.filter(pk=project.pk).update(verification_share=None)  # automatic
    project.refresh_from_db()
    assert next_lease(project, automatic, kind_draw=0.5).kind == "verify"


def test_a_withdrawal_between_leases_keeps_redundancy_and_every_lease():
    """SQLite serializes writers: leases and withdrawals interleaved, then the invariants."""
    project = corpus_project(n_sentences=20, redundancy=2)
    users = annotators(project, 6)
    held: list = []
    rng = random.Random(3)
    for step in range(60):
        if step % 15 == 7:
            services.value_round_create(
                project_id=project.pk,
                tasks=plan_for(project, 10, seed=step),
                verification_share_auto=0.0,
            )
            continue
        user = rng.choice(users)
        try:
            got = next_lease(project, user)
        except LeaseLimit:
            Assignment.objects.filter(annotator=user, status="leased").update(status="submitted")
            continue
        if got is not None:
            held.append(got.assignment_id)
    assert_leasing_invariants(project, held)


def assert_leasing_invariants(project, held):
    """Every lease made still exists; no task has more leases than its redundancy and its open
    slots are what its leases left; nobody has a task twice."""
    assert Assignment.objects.filter(pk__in=held).count() == len(held)
    for task in Task.objects.filter(project=project, is_gold=False, kind="count"):
        n = Assignment.objects.filter(task=task).count()
        assert n <= project.redundancy
        assert task.open_slots == project.redundancy - n
    pairs = list(Assignment.objects.values_list("task_id", "annotator_id"))
    assert len(pairs) == len(set(pairs))


def _annotate(project, user, barrier, held, errors):
    """Three leases through the annotator's cycle, after the `barrier`."""
    try:
        barrier.wait()
        mine: list[int] = []
        for _ in range(3):
            offer = task_next_for_annotator(
                caller=Caller(key=None, session_user=user),
                project_id=project.pk,
                request=NextTaskRequest(holding=tuple(mine)),
            )
            if offer is not None:
                mine.append(offer.lease.assignment_id)
        held.extend(mine)
    except Exception as exc:  # noqa: BLE001 - reported by the test
        errors.append(exc)
    finally:
        connection.close()


def _withdraw(project, plan, barrier, errors):
    """A version's round (withdrawal and insertion), after the `barrier`."""
    try:
        barrier.wait()
        services.value_round_create(project_id=project.pk, tasks=plan, verification_share_auto=0.0)
    except Exception as exc:  # noqa: BLE001 - reported by the test
        errors.append(exc)
    finally:
        connection.close()


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_leases_racing_a_withdrawal_on_postgresql_keep_every_property():
    """Threads lease through the annotator's cycle (the one statement, or the scheduler when a
    reclaim is due) while another withdraws the never-leased tasks and inserts a round, several
    times: no lease is lost (a task withdrawn under it would take its assignment with it), none
    passes the redundancy, nobody gets a task twice."""
    for burst in range(6):
        project = corpus_project(n_sentences=40, redundancy=2)
        # Even bursts: the one statement; odd ones: a reclaim due, so the scheduler leases.
        reclaimed = timezone.now() if burst % 2 == 0 else None
        Project.objects.filter(pk=project.pk).update(leases_reclaimed_at=reclaimed)
        users = annotators(project, 8)
        plan = plan_for(project, 40, seed=burst)
        barrier = threading.Barrier(len(users) + 1)
        held, errors = [], []
        threads = [
            threading.Thread(target=_annotate, args=(project, user, barrier, held, errors))
            for user in users
        ]
        threads.insert(burst % len(threads), threading.Thread(
            target=_withdraw, args=(project, plan, barrier, errors)
        ))  # fmt: skip
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert not errors, errors
        assert len(held) >= len(users)  # SKIP LOCKED may turn a request away, not all of them
        assert Assignment.objects.filter(project=project).count() == len(held)
        assert_leasing_invariants(project, held)
        # A task nobody leased is the plan's: the others were withdrawn (a task locked by a
        # lease at that moment was skipped, and leased).
        unleased = Task.objects.filter(project=project, assignments__isnull=True)
        assert {str(region(t)) for t in unleased} <= {str(region(t)) for t in plan}
