"""The demo project `./tally up` makes, through the real services."""

import json

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ImproperlyConfigured

from annotation.models import Observation, Project
from devtools import demo
from devtools.demo import CROWD_KINDS, DEMO_PROJECT_NAME, demo_seed
from learning.models import ModelVersion


@pytest.fixture
def data_dir(settings, tmp_path):
    settings.DATA_DIR = tmp_path
    return tmp_path


@pytest.mark.django_db(transaction=True)
def test_demo_has_accounts_answers_and_a_first_model_and_a_second_run_reuses_it(data_dir):
    demo = demo_seed(n_sentences=150, n_answers=120, log=lambda line: None)

    logins = json.loads((data_dir / "demo-logins.json").read_text())
    assert (data_dir / "demo-logins.json").stat().st_mode & 0o077 == 0
    users = get_user_model().objects
    assert users.get(username="manager").check_password(logins["manager_password"])
    assert users.get(username="annotator").check_password(logins["annotator_password"])
    project = Project.objects.get(pk=demo.project_id, name=DEMO_PROJECT_NAME)
    assert project.memberships.filter(user__username="annotator", role="annotator").exists()
    assert demo.observations == Observation.objects.filter(project=project).count() == 120
    # Every kind of simulated annotator answered.
    answered_by = set(
        Observation.objects.filter(project=project).values_list("annotator__username", flat=True)
    )
    assert {name.rsplit("-", 1)[1] for name in answered_by} == set(CROWD_KINDS)
    assert demo.model_version == 1

    again = demo_seed(n_sentences=150, n_answers=120, log=lambda line: None)
    assert again == demo
    assert Project.objects.filter(name=DEMO_PROJECT_NAME).count() == 1
    assert ModelVersion.objects.filter(project=project).count() == 1
    assert Observation.objects.count() == 120


@pytest.mark.django_db
def test_demo_refuses_production(settings, data_dir):
    settings.PRODUCTION = True
    with pytest.raises(ImproperlyConfigured, match="not production"):
        demo_seed(n_sentences=10, n_answers=0, log=lambda line: None)
    assert not Project.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_first_run_stopped_while_the_crowd_answers_is_finished_by_the_next(data_dir, monkeypatch):
    """Ctrl-C during the first `./tally up` (the crowd takes minutes) left a demo of the few
    answers given so far, trained on them, with nothing said (issue 17 walk)."""
    answer = demo._crowd_answers

    def stopped(project, n_answers, seed):
        answer(project, 25, seed)
        raise KeyboardInterrupt

    monkeypatch.setattr(demo, "_crowd_answers", stopped)
    with pytest.raises(KeyboardInterrupt):
        demo_seed(n_sentences=150, n_answers=120, log=lambda line: None)
    assert Observation.objects.count() == 25 and not ModelVersion.objects.exists()
    monkeypatch.setattr(demo, "_crowd_answers", answer)
    lines = []
    again = demo_seed(n_sentences=150, n_answers=120, log=lines.append)
    assert again.observations == Observation.objects.count() == 120
    assert again.model_version == 1
    assert "a simulated crowd of 8 answers 95 tasks more (of 120)…" in lines


@pytest.mark.django_db
def test_a_first_run_stopped_before_the_corpus_was_in_starts_again(data_dir):
    demo_seed(n_sentences=150, n_answers=0, log=lambda line: None)
    Project.objects.get().sentences.all().delete()  # as if stopped before the import
    again = demo_seed(n_sentences=150, n_answers=0, log=lambda line: None)
    assert Project.objects.get(pk=again.project_id).sentences.count() == 150
