"""Services tested directly: observations, corpus import, projects and membership."""

import io
from datetime import timedelta

import pytest
from django.utils import timezone

from annotation import scheduler, services
from annotation.models import Assignment, CorpusImport, Membership, Observation, Sentence, Task
from common.exceptions import (
    Conflict,
    InvalidCorpus,
    InvalidInput,
    LeaseNotYours,
    NotFound,
    PayloadTooLarge,
    ProjectNotActive,
)
from tests.support.factories import UserFactory, import_jsonl, jsonl


@pytest.fixture
def lease(project, corpus, annotator):
    return scheduler.task_lease_next(project=project, annotator=annotator)


def names_of(lease):
    tags = ["NOUN", "VERB", "DET", "ADJ"]
    return [tags[i] for i in lease.tags]


def zero_counts(lease):
    return {name: 0 for name in names_of(lease)}


def submit(annotator, lease, counts=None, key="k1", **kwargs):
    return services.observation_submit(
        annotator=annotator,
        assignment_id=lease.assignment_id,
        counts=zero_counts(lease) if counts is None else counts,
        idempotency_key=key,
        **kwargs,
    )


def test_submit_stores_the_observation_aligned_with_tags(annotator, lease):
    counts = zero_counts(lease)
    counts[names_of(lease)[0]] = 1
    observation, replayed = submit(annotator, lease, counts, seconds_on_device=2.5)
    assert not replayed
    stored = Observation.objects.get(pk=observation.pk)
    for seen in (observation, stored):
        assert seen.tags == lease.tags
        assert seen.counts == [counts[n] for n in names_of(lease)]
        assert (seen.start, seen.length) == (lease.start, lease.length)
        assert seen.sentence_id == lease.sentence_id
        assert seen.seconds_on_device == 2.5
        assert seen.idempotency_key == "k1"
    assert stored.annotator_id == observation.annotator.pk
    assert abs((stored.submitted_at - observation.submitted_at).total_seconds()) < 1e-3
    assert Assignment.objects.get(pk=lease.assignment_id).status == Assignment.Status.SUBMITTED


def test_replay_returns_the_stored_observation_and_stores_nothing(annotator, lease):
    first, _ = submit(annotator, lease)
    again, replayed = submit(annotator, lease)
    assert replayed and again.pk == first.pk
    assert Observation.objects.count() == 1


def test_second_answer_with_another_key_is_a_conflict(annotator, lease):
    submit(annotator, lease)
    with pytest.raises(Conflict):
        submit(annotator, lease, key="k2")


def test_key_reused_for_another_assignment_is_a_conflict(project, annotator, lease):
    submit(annotator, lease)
    other = scheduler.task_lease_next(project=project, annotator=annotator)
    with pytest.raises(Conflict):
        submit(annotator, other, key="k1")


@pytest.mark.parametrize(
    "bad",
    [
        lambda names: {names[0]: -1, **{n: 0 for n in names[1:]}},
        lambda names: {names[0]: 99, **{n: 0 for n in names[1:]}},
        lambda names: {names[0]: 1.5, **{n: 0 for n in names[1:]}},
        lambda names: {names[0]: True, **{n: 0 for n in names[1:]}},
        lambda names: {names[0]: "1", **{n: 0 for n in names[1:]}},
        lambda names: {n: 0 for n in names[1:]},  # a tag missing
        lambda names: {"PUNCT": 0, **{n: 0 for n in names}},  # a tag too many
        lambda names: {n: 3 for n in names},  # sum larger than the window
    ],
)
def test_counts_out_of_range_or_wrong_tags_are_rejected(annotator, lease, bad):
    with pytest.raises(InvalidInput) as error:
        submit(annotator, lease, bad(names_of(lease)))
    assert "counts" in error.value.fields
    assert Observation.objects.count() == 0


def test_someone_elses_lease_is_not_found(project, lease):
    intruder = UserFactory()
    Membership.objects.create(project=project, user=intruder, role="annotator")
    with pytest.raises(LeaseNotYours):
        submit(intruder, lease)
    assert Assignment.objects.get(pk=lease.assignment_id).status == Assignment.Status.LEASED


def test_answer_after_the_lease_expired_is_still_stored(project, annotator, lease):
    later = timezone.now() + timedelta(seconds=project.lease_seconds * 3)
    scheduler.assignments_expire(project=project, now=later)
    assert Assignment.objects.get(pk=lease.assignment_id).status == Assignment.Status.EXPIRED
    observation, _ = submit(annotator, lease, now=later)
    assert observation.pk


def test_archived_project_accepts_no_answers(project, annotator, lease):
    project.status = "archived"
    project.save()
    with pytest.raises(ProjectNotActive):
        submit(annotator, lease)


def test_removed_member_cannot_submit(project, annotator, lease):
    services.membership_remove(project=project, user_id=annotator.pk)
    with pytest.raises(LeaseNotYours):
        submit(annotator, lease)


def test_import_is_all_or_nothing(project, manager):
    broken = jsonl() + b'{"tokens": ["x"], "tags": ["NOPE"]}\n'
    with pytest.raises(InvalidCorpus) as error:
        import_jsonl(project, manager, broken, max_bytes=10**6)
    assert error.value.line_number == 13
    assert "NOPE" in error.value.message
    assert not Sentence.objects.exists() and not CorpusImport.objects.exists()
    assert not Task.objects.exists()


def test_import_over_the_size_limit_imports_nothing(project, manager):
    with pytest.raises(PayloadTooLarge):
        import_jsonl(project, manager, max_bytes=100)
    assert not Sentence.objects.exists()


def test_empty_file_is_rejected(project, manager):
    with pytest.raises(InvalidCorpus):
        services.corpus_import(
            project=project, user=manager, file=io.BytesIO(b"\n\n"), format="text", max_bytes=100
        )


def test_import_splits_gold_sentences(project, manager):
    record = import_jsonl(
        project,
        manager,
        jsonl() * 10,
        evaluation_fraction=0.2,
        gold_check_fraction=0.1,
        seed=0,
        max_bytes=10**6,
    )
    splits = {s: Sentence.objects.filter(split=s).count() for s in Sentence.Split.values}
    assert record.sentences == record.gold_sentences == 120 == sum(splits.values())
    assert 10 <= splits["evaluation"] <= 40 and 3 <= splits["gold_check"] <= 25
    assert Task.objects.count() == splits["train"]


def test_second_import_continues_positions(project, manager, corpus):
    services.corpus_import(
        project=project, user=manager, file=io.BytesIO(b"a b\n"), format="text", max_bytes=100
    )
    assert Sentence.objects.order_by("-position").first().position == 12


def test_tag_names_frozen_once_there_are_sentences(project, corpus):
    tags = [{"name": "NOUN"}, {"name": "VERB"}, {"name": "DET"}, {"name": "ADJ"}]
    updated = services.project_update(
        project=project, tags=[{**t, "guideline": "new"} for t in tags]
    )
    assert all(t.guideline == "new" for t in updated.tags.all())
    with pytest.raises(Conflict):
        services.project_update(project=project, tags=list(reversed(tags)))


def test_tags_per_task_cannot_exceed_the_tag_count(manager):
    with pytest.raises(InvalidInput):
        services.project_create(owner=manager, name="x", tags=[{"name": "A"}], tags_per_task=2)


def test_join_by_code(project):
    user = UserFactory()
    membership, created = services.membership_join(user=user, code=project.invite_code)
    assert created and membership.role == "annotator"
    _, created = services.membership_join(user=user, code=project.invite_code)
    assert not created
    with pytest.raises(NotFound):
        services.membership_join(user=user, code="nope")


def test_rotated_code_stops_working(project):
    old = project.invite_code
    services.project_rotate_invite(project=project)
    with pytest.raises(NotFound):
        services.membership_join(user=UserFactory(), code=old)


def test_owner_cannot_be_removed(project, manager):
    with pytest.raises(Conflict):
        services.membership_remove(project=project, user_id=manager.pk)


@pytest.mark.slow
def test_a_20_mb_corpus_is_imported_without_holding_it_in_memory(project, manager, tmp_path):
    """Regression: sentences were stored 1,000 at a time whatever their length, so a file of long
    sentences was held whole in memory (a 21 MB file peaked at 22 MB of Python objects)."""
    import random
    import tracemalloc

    rng = random.Random(0)
    words = [f"w{i:05d}" for i in range(20_000)]
    path = tmp_path / "long-sentences.txt"
    with path.open("w") as out:
        size = 0
        while size < 20 * 1024 * 1024:
            line = " ".join(rng.choices(words, k=rng.randint(200, 400))) + "\n"
            size += out.write(line)
    tracemalloc.start()
    try:
        with path.open("rb") as upload:
            record = services.corpus_import(
                project=project, user=manager, file=upload, format="tokenized",
                max_bytes=50 * 1024 * 1024, seed=0,
            )  # fmt: skip
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert record.sentences == Sentence.objects.filter(project=project).count() > 9_000
    assert peak < 8 * 1024 * 1024
