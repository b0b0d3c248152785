"""Verification tasks on the learning side (issue 15): the round a retrain makes, the adapter's
verification answers given to the fit, and the annotator table's verification skill and flags."""

import numpy as np
import pytest

from annotation import scheduler
from annotation.models import Assignment, Observation, Project, Sentence, Task
from learning import adapter
from learning.models import AnnotatorQuality
from tests.support.crowd import add_annotators, answer_tasks
from tests.support.learning import retrain

pytestmark = pytest.mark.django_db


def test_a_retrain_makes_a_round_of_the_new_versions_most_likely_tags(project, crowd):
    answer_tasks(project, crowd, 120)
    outcome = retrain(project)
    project.refresh_from_db()
    assert project.verification_version == 1
    tasks = Task.objects.filter(project=project, kind="verify")
    train = Sentence.objects.filter(project=project, split="train")
    assert tasks.count() == train.count()  # one window per training sentence
    tagger = adapter.model_load(outcome.version.file.name)
    for task in tasks.select_related("sentence")[:20]:
        assert task.model_version == 1 and not task.is_gold
        assert task.open_slots == project.redundancy and task.tags == []
        assert task.length == len(task.shown_tags) == min(3, task.sentence.length)
        probs = tagger.token_proba([task.sentence.tokens])[task.start : task.start + task.length]
        shown = probs[np.arange(task.length), task.shown_tags]
        # The most likely tags, up to ties: the contextual model's products run in float32, so
        # two tags scored within rounding of each other may swap between a batch of sentences
        # (the retrain) and one sentence (here).
        np.testing.assert_allclose(shown, probs.max(axis=1), rtol=0, atol=1e-5)
    assert "verification_round" in outcome.version.timings


def test_no_round_when_the_project_asks_counts_only(project, crowd):
    Project.objects.filter(pk=project.pk).update(verification_share=0.0)
    answer_tasks(project, crowd, 80)
    retrain(project)
    project.refresh_from_db()
    assert project.verification_version is None
    assert not Task.objects.filter(kind="verify").exists()


def test_adapter_reads_verification_answers_and_the_fit_uses_them(project, crowd):
    answer_tasks(project, crowd, 120)
    retrain(project)
    Project.objects.filter(pk=project.pk).update(verification_share=1.0)
    project.refresh_from_db()
    answer_tasks(project, crowd, 40, seed=3)
    stored = Observation.objects.filter(project=project, kind="verify").order_by("id")
    assert stored.count() == 40
    data = adapter.training_data_load(project_id=project.pk, excluded_annotators={crowd[0].pk})
    judged = data.verifications_judged
    assert len(judged) == 40
    for i, row in enumerate(stored):
        sentence = data.sentences[judged.sentence[i]]
        assert sentence == row.sentence.tokens
        assert judged.start[i] == row.start and judged.length[i] == row.length
        assert judged.shown[i, : row.length].tolist() == row.shown_tags
        assert bool(judged.answer[i]) is row.answer
        assert judged.wrong[i] == (-1 if row.wrong is None else row.wrong)
    # The excluded (flagged) annotator's answers are judged but not fitted.
    assert crowd[0].pk not in set(data.verifications.annotator.tolist())
    assert len(data.verifications) == 30
    assert data.newest_observation == stored.last().pk  # a verification answer is new work
    second = retrain(project)
    assert second.status == "succeeded"
    rows = {row["annotator"]: row for row in second.version.report.annotators}
    assert sum(row["verification_answers"] for row in rows.values()) == 40
    assert all(row["verification_yes_rate"] is not None for row in rows.values())


def test_a_yes_sayer_is_flagged_and_truthful_verifiers_are_not(project, crowd):
    yes_sayer = add_annotators(project, 1, prefix="yes")[0]
    # Few enough count answers that the first model still shows wrong tags on some windows: with
    # 120 it was right on every window shown, and a yes-sayer cannot be told from the truthful.
    answer_tasks(project, crowd, 40)
    retrain(project)
    Project.objects.filter(pk=project.pk).update(verification_share=1.0, redundancy=5)
    Task.objects.filter(project=project, kind="verify").update(open_slots=5)
    project.refresh_from_db()
    answer_tasks(project, [*crowd, yes_sayer], 200, yes_sayers={yes_sayer}, seed=4)
    outcome = retrain(project)
    rows = {row["annotator"]: row for row in outcome.version.report.annotators}
    flagged = rows[yes_sayer.pk]
    assert flagged["flagged"] and "Yes / No" in flagged["flag_reason"]
    assert flagged["verification_yes_rate"] == 1.0
    assert flagged["verification_skill"] is not None and flagged["verification_skill"] < 0.5
    for honest in crowd:
        assert not rows[honest.pk]["flagged"], rows[honest.pk]
        assert rows[honest.pk]["verification_skill"] > 0.5
    quality = AnnotatorQuality.objects.get(project=project, annotator=yes_sayer)
    assert quality.flagged and quality.verification_answers == flagged["verification_answers"]
    assert quality.verification_yes_rate == 1.0
    # Flagged: served as everyone is (decision 044), so nothing tells them; the lease takes no slot.
    project.refresh_from_db()
    lease = scheduler.task_lease_next(project=project, annotator=yes_sayer, flagged=True)
    assert lease is not None
    assert not Assignment.objects.get(pk=lease.assignment_id).holds_slot
    assert np.isclose(
        AnnotatorQuality.objects.get(project=project, annotator=crowd[0]).verification_skill,
        rows[crowd[0].pk]["verification_skill"],
    )
