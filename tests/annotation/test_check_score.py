"""The annotator's own score on gold check tasks (`stats/me/`), delayed so it reveals no task."""

import random
import uuid
from datetime import timedelta

import numpy as np
from django.utils import timezone

from annotation import scheduler, selectors, services
from annotation.models import Sentence
from tests.support.crowd import toy_sentences
from tests.support.factories import import_jsonl, jsonl, make_project, member


def _answer_checks(project, manager, annotator, *, n_right: int, n_wrong: int, now):
    import_jsonl(
        project, manager, filename="c.jsonl", gold_check_fraction=1.0, max_bytes=10**6, seed=3
    )
    project.gold_fraction = 1.0
    project.save(update_fields=["gold_fraction"])
    names = selectors.project_tag_names(project=project)
    rng = random.Random(0)  # gold regions are drawn at random; seeded, no draw runs out of tries
    for i in range(n_right + n_wrong):
        lease = scheduler.task_lease_next(project=project, annotator=annotator, now=now, rng=rng)
        assert lease is not None and lease.is_gold
        gold = Sentence.objects.get(pk=lease.sentence_id).gold_tags
        window = gold[lease.start : lease.start + lease.length]
        counts = {names[t]: window.count(t) for t in lease.tags}
        if i >= n_right:  # a wrong answer: one count off by one, kept valid
            first = names[lease.tags[0]]
            counts[first] = counts[first] - 1 if counts[first] else counts[first] + 1
        services.observation_submit(
            annotator=annotator, assignment_id=lease.assignment_id, counts=counts,
            idempotency_key=str(uuid.uuid4()), now=now,
        )  # fmt: skip


def test_score_is_the_share_of_exactly_right_check_answers(project, manager, annotator):
    an_hour_ago = timezone.now() - timedelta(hours=2)
    _answer_checks(project, manager, annotator, n_right=6, n_wrong=2, now=an_hour_ago)
    stats = selectors.annotator_stats(project=project, user=annotator)
    assert stats["check_score"] == 0.75


def test_recent_answers_do_not_move_the_score_yet(project, manager, annotator):
    _answer_checks(project, manager, annotator, n_right=8, n_wrong=0, now=timezone.now())
    assert selectors.annotator_stats(project=project, user=annotator)["check_score"] is None
    later = timezone.now() + timedelta(hours=2)
    assert selectors.annotator_stats(project=project, user=annotator, now=later)["check_score"] == 1


def test_no_score_before_five_check_answers(project, manager, annotator):
    _answer_checks(project, manager, annotator, n_right=4, n_wrong=0, now=timezone.now())
    later = timezone.now() + timedelta(hours=2)
    assert (
        selectors.annotator_stats(project=project, user=annotator, now=later)["check_score"] is None
    )


def test_stats_me_serves_the_score_to_the_annotator_only(project, manager, annotator, client):
    _answer_checks(
        project, manager, annotator, n_right=5, n_wrong=0, now=timezone.now() - timedelta(hours=3)
    )
    client.force_login(annotator)
    body = client.get(f"/api/projects/{project.pk}/stats/me/").json()
    assert body["check_score"] == 1.0
    # The manager's own stats/me has no check answers of theirs, so no score.
    client.force_login(manager)
    assert client.get(f"/api/projects/{project.pk}/stats/me/").json()["check_score"] is None


def _answer_private_checks(project, manager, annotator, n, *, now, wrong=False):
    """`n` honest check answers of a private project, released as the phone does (or, `wrong`,
    the true count of another tag released instead)."""
    import_jsonl(
        project,
        manager,
        jsonl(toy_sentences(200)),
        filename="c.jsonl",
        gold_check_fraction=1.0,
        max_bytes=10**6,
        seed=3,
    )
    project.gold_fraction = 1.0
    project.save(update_fields=["gold_fraction"])
    names = selectors.project_tag_names(project=project)
    mechanism = selectors.project_mechanism(project=project)
    rng, draw = random.Random(0), np.random.default_rng(0)
    for _ in range(n):
        lease = scheduler.task_lease_next(project=project, annotator=annotator, now=now, rng=rng)
        gold = Sentence.objects.get(pk=lease.sentence_id).gold_tags
        window = gold[lease.start : lease.start + lease.length]
        release = mechanism.channel(lease.length, len(lease.tags)).T
        truth = {t: window.count(t) for t in lease.tags}
        if wrong:
            truth = {t: (c + 1) % (lease.length + 1) for t, c in truth.items()}
        released = {
            names[t]: int(draw.choice(lease.length + 1, p=release[c])) for t, c in truth.items()
        }
        services.observation_submit(
            annotator=annotator, assignment_id=lease.assignment_id, released=released,
            privacy={"mechanism": mechanism.name, "alpha": mechanism.alpha},
            idempotency_key=str(uuid.uuid4()), now=now,
        )  # fmt: skip


def _private(manager, alpha):
    return make_project(owner=manager, tags_per_task=1, private=True, alpha=alpha)


def test_a_private_score_is_estimated_from_released_values(manager, annotator):
    """Issue 13: an honest annotator's released answers score about 1, a wrong one's about 0,
    though most released values differ from the gold counts; the API says it is estimated."""
    an_hour_ago = timezone.now() - timedelta(hours=2)
    project = _private(manager, alpha=4.0)
    member(project, annotator)
    _answer_private_checks(project, manager, annotator, 120, now=an_hour_ago)
    stats = selectors.annotator_stats(project=project, user=annotator)
    assert stats["check_score_estimated"] is True
    assert stats["check_score"] is not None and stats["check_score"] >= 0.8
    other = _private(manager, alpha=4.0)
    member(other, annotator)
    _answer_private_checks(other, manager, annotator, 120, now=an_hour_ago, wrong=True)
    assert selectors.annotator_stats(project=other, user=annotator)["check_score"] <= 0.2


def test_a_private_score_waits_for_more_answers(manager, annotator):
    an_hour_ago = timezone.now() - timedelta(hours=2)
    project = _private(manager, alpha=0.3)
    member(project, annotator)
    _answer_private_checks(project, manager, annotator, 20, now=an_hour_ago)
    assert selectors.annotator_stats(project=project, user=annotator)["check_score"] is None


def test_a_project_that_is_not_private_says_its_score_is_exact(project, manager, annotator):
    stats = selectors.annotator_stats(project=project, user=annotator)
    assert stats["check_score_estimated"] is False
