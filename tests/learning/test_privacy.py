"""Private projects in the retrain (issue 13): the adapter builds the project's mechanism, the
fit learns from released values through it, and the annotator table takes its known noise out,
so that the noise alone flags no honest annotator while spammers are still found."""

import pytest

from annotation.models import Observation
from learning import adapter
from learning.core.pipeline import CountTagger
from learning.core.privacy import Mechanism
from tests.support.crowd import add_annotators, answer_tasks, import_corpus, toy_sentences
from tests.support.factories import make_project
from tests.support.learning import retrain

pytestmark = pytest.mark.django_db


def private_project(manager, *, alpha, tags_per_task=1, mechanism="geometric"):
    project = make_project(
        owner=manager,
        name="Private toy",
        window_size=3,
        redundancy=3,
        tags_per_task=tags_per_task,
        private=True,
        alpha=alpha,
        mechanism=mechanism,
    )
    import_corpus(project, manager, toy_sentences(80))
    return project


def test_the_adapter_builds_the_projects_mechanism(manager):
    project = private_project(manager, alpha=2.5, mechanism="krr", tags_per_task=2)
    crowd = add_annotators(project, 3)
    answer_tasks(project, crowd, 40)
    data = adapter.training_data_load(project_id=project.pk, excluded_annotators=set())
    assert data.mechanism == Mechanism("krr", 2.5, 4)
    # Released values are stored as they came: some windows' releases sum beyond the window.
    rows = Observation.objects.filter(project=project).values_list("counts", "length")
    assert all(0 <= c <= length for counts, length in rows for c in counts)


def test_a_project_that_is_not_private_has_no_mechanism(manager):
    project = make_project(owner=manager, window_size=3)
    import_corpus(project, manager, toy_sentences(20))
    assert adapter.project_mechanism(project_id=project.pk, n_tags=4) is None


def test_the_retrain_fits_through_the_mechanism(manager, monkeypatch):
    project = private_project(manager, alpha=3.0)
    crowd = add_annotators(project, 3)
    answer_tasks(project, crowd, 150)
    seen = []
    fit = CountTagger.fit

    def recording_fit(self, data, **kwargs):
        seen.append(data.mechanism)
        return fit(self, data, **kwargs)

    monkeypatch.setattr(CountTagger, "fit", recording_fit)
    outcome = retrain(project)
    assert outcome.status == "succeeded"
    assert seen == [Mechanism("geometric", 3.0, 4)]
    assert outcome.version.hyperparameters["privacy"] == {"mechanism": "geometric", "alpha": 3.0}
    assert outcome.version.report.accuracy is not None


@pytest.mark.parametrize("alpha", [1.0, 3.0])
def test_the_mechanisms_noise_alone_flags_no_honest_annotator(manager, alpha):
    project = private_project(manager, alpha=alpha)
    crowd = add_annotators(project, 4)
    answer_tasks(project, crowd, 240)
    outcome = retrain(project)
    rows = outcome.version.report.annotators
    assert len(rows) == 4
    assert not any(row["flagged"] for row in rows), rows


def test_a_spammer_is_still_flagged_under_privacy(manager):
    project = private_project(manager, alpha=8.0)
    crowd = add_annotators(project, 3)
    spammer = add_annotators(project, 1, prefix="spam")[0]
    answer_tasks(project, [*crowd, spammer], 240, spammers={spammer})
    outcome = retrain(project)
    flagged = {row["annotator"] for row in outcome.version.report.annotators if row["flagged"]}
    assert flagged == {spammer.pk}
