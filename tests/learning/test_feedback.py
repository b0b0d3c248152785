"""Reliability feeds back into the scheduler: a flagged annotator stops steering the model."""

from django.db.models import Sum

from annotation import scheduler, services
from annotation.models import Assignment, Membership, Task
from tests.support.crowd import add_annotators, answer_tasks, import_corpus, toy_sentences
from tests.support.factories import client_for
from tests.support.learning import retrain


def _membership(project, user) -> Membership:
    return Membership.objects.get(project=project, user=user)


def test_a_flagged_spammer_gets_only_checks_and_its_regions_reopen(project, manager, crowd):
    spammer = add_annotators(project, 1, prefix="spam")[0]
    answer_tasks(project, [*crowd, spammer], 200, spammers={spammer})
    answered = set(
        Assignment.objects.filter(
            annotator=spammer, status="submitted", task__is_gold=False
        ).values_list("task_id", flat=True)
    )
    slots_before = Task.objects.filter(pk__in=answered).aggregate(n=Sum("open_slots"))["n"]

    retrain(project)

    membership = _membership(project, spammer)
    assert membership.flagged and "chance" in membership.flag_reason
    assert not any(_membership(project, user).flagged for user in crowd)
    # Each region the spammer answered can be answered by one more (counting) annotator.
    slots_after = Task.objects.filter(pk__in=answered).aggregate(n=Sum("open_slots"))["n"]
    assert slots_after == slots_before + len(answered)
    # A flagged annotator is served as the others are, but takes no slot of the region.
    lease = scheduler.task_lease_next(project=project, annotator=spammer, flagged=True)
    assert lease is not None and not Assignment.objects.get(pk=lease.assignment_id).holds_slot
    Assignment.objects.filter(pk=lease.assignment_id).delete()

    # The next retrain that still flags the spammer does not reopen the regions twice.
    flags = {spammer.pk: membership.flag_reason}
    assert services.memberships_flag_update(project_id=project.pk, flags=flags) == []
    assert Task.objects.filter(pk__in=answered).aggregate(n=Sum("open_slots"))["n"] == slots_after
    # The manager sees who is flagged, and why.
    rows = client_for(manager).get(f"/api/projects/{project.pk}/members/").json()["results"]
    shown = {row["username"]: row for row in rows}[spammer.username]
    assert shown["flagged"] and shown["flag_reason"] == membership.flag_reason
    # An honest annotator still gets ordinary tasks.
    assert scheduler.task_lease_next(project=project, annotator=crowd[0]) is not None


def test_flags_are_set_and_cleared_to_match_the_latest_retrain(project, crowd):
    first, second = crowd[0], crowd[1]
    services.memberships_flag_update(
        project_id=project.pk, flags={first.pk: "no better than chance"}
    )
    assert _membership(project, first).flagged
    newly = services.memberships_flag_update(
        project_id=project.pk, flags={second.pk: "no better than chance"}
    )
    assert newly == [second.pk]
    assert not _membership(project, first).flagged
    assert _membership(project, first).flag_reason == ""
    assert _membership(project, second).flagged


def test_a_flagged_annotator_is_served_gold_check_tasks_at_the_project_rate(
    project, manager, crowd
):
    import_corpus(
        project, manager, toy_sentences(20, seed=5), evaluation_fraction=0.0, gold_check_fraction=1
    )
    assert project.sentences.filter(position__gte=80, split="gold_check").count() == 20
    project = services.project_update(project=project, gold_fraction=1.0)
    for _ in range(5):
        lease = scheduler.task_lease_next(project=project, annotator=crowd[0], flagged=True)
        assert lease is not None and lease.is_gold
        Assignment.objects.filter(pk=lease.assignment_id).update(status="submitted")
