"""An annotator who gives back the served model's answers (issue 44.2) is flagged on the
platform: their answers given while that version was served agree with it where it was unsure
far more often than the words do."""

import pytest
from django.db.models import F

from annotation.models import Project, Task
from learning import adapter
from learning.models import AnnotatorQuality
from tests.support.crowd import add_annotators, answer_tasks
from tests.support.learning import retrain

pytestmark = pytest.mark.django_db


def _served_then_copied(project, crowd, copier, *, copiers):
    answer_tasks(project, crowd, 12)  # a first version still unsure of many words
    first = retrain(project).version
    Project.objects.filter(pk=project.pk).update(verification_share=0.0, redundancy=8)
    Task.objects.filter(project=project, kind="count").update(open_slots=F("open_slots") + 5)
    tagger = adapter.model_load(first.file.name)
    answer_tasks(project, [*crowd, copier], 300, copiers=copiers, copy_from=tagger, seed=3)
    return retrain(project)


def test_an_annotator_who_copies_the_served_model_is_flagged_and_the_others_are_not(project, crowd):
    copier = add_annotators(project, 1, prefix="copy")[0]
    outcome = _served_then_copied(project, crowd, copier, copiers={copier})
    rows = {row["annotator"]: row for row in outcome.version.report.annotators}
    assert rows[copier.pk]["flagged"], rows[copier.pk]
    assert "follow the model rather than the words" in rows[copier.pk]["flag_reason"]
    assert rows[copier.pk]["weight"] == 0.0
    for honest in crowd:
        assert not rows[honest.pk]["flagged"], rows[honest.pk]
    assert AnnotatorQuality.objects.get(project=project, annotator=copier).flagged


def test_the_same_answers_by_someone_who_reads_the_words_are_not_flagged(project, crowd):
    reader = add_annotators(project, 1, prefix="copy")[0]
    outcome = _served_then_copied(project, crowd, reader, copiers=set())
    rows = {row["annotator"]: row for row in outcome.version.report.annotators}
    assert not rows[reader.pk]["flagged"], rows[reader.pk]
