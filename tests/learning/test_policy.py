"""The retrain policy on the platform (issue 43): the platform's retrain and `simulate_campaign`
plan the same version from the same answers and seed, and a model that cannot be judged yet
asks no verification round (issue 46)."""

from dataclasses import replace

import numpy as np
import pytest

from annotation.models import Observation, Project, Sentence, Task
from learning import adapter
from learning.core.observations import Observations
from learning.core.policy import PolicySettings, RoundSettings, plan_version
from learning.experiments.campaign import campaign_facts
from tests.support.crowd import add_annotators, answer_tasks, import_corpus, toy_sentences
from tests.support.factories import make_project
from tests.support.learning import retrain

pytestmark = pytest.mark.django_db


def _stored_plan(project, version):
    """What the retrain stored of its plan: flags, the round's count tasks in serving order,
    the verification windows in serving order, the task mix and the temperatures."""
    project.refresh_from_db()
    rows = version.report.annotators
    count_tasks = Task.objects.filter(project=project, kind="count", round=project.task_rounds)
    windows = Task.objects.filter(project=project, kind="verify", model_version=version.number)
    return {
        "flags": {row["annotator"] for row in rows if row["flagged"]},
        "counts": [
            (t.sentence_id, t.start, t.length, list(t.tags), t.origin)
            for t in count_tasks.order_by("id")
        ],  # fmt: skip
        "windows": [(t.sentence_id, t.start, list(t.shown_tags)) for t in windows.order_by("id")],
        "share": project.verification_share_auto,
        "calibration": version.hyperparameters["calibration"],
    }


def _campaign_plan(project):
    """The same version planned as `simulate_campaign` plans one: its facts of every answer
    so far (`campaign_facts`), the policy, a round of one count task a training sentence."""
    training = list(
        Sentence.objects.filter(project=project, split="train").order_by("position")
        .values_list("id", "tokens")
    )  # fmt: skip
    index = {sentence_id: i for i, (sentence_id, _) in enumerate(training)}
    tagset = adapter.project_tagset(project_id=project.pk)
    rows = Observation.objects.filter(project=project, kind="count").order_by("id")
    mask = np.zeros((rows.count(), len(tagset)), dtype=bool)
    counts = np.zeros(mask.shape, dtype=np.int64)
    for i, row in enumerate(rows):
        mask[i, row.tags], counts[i, row.tags] = True, row.counts
    observations = Observations.create(
        sentence=[index[r.sentence_id] for r in rows], start=[r.start for r in rows],
        length=[r.length for r in rows], tag_mask=mask, counts=counts,
        annotator=[r.annotator_id for r in rows],
        sentence_lengths=[len(tokens) for _, tokens in training],
    )  # fmt: skip
    seconds = [r.seconds_on_device for r in rows]  # the campaign's simulated seconds
    facts = campaign_facts(
        [tokens for _, tokens in training], tagset, observations, None,
        np.ones(len(observations), dtype=bool), number=1,
        seconds={"count": (float(np.median(seconds)), len(seconds)), "verify": (None, 0)},
    )  # fmt: skip
    # What a campaign has no part of: the project's gold sentences, which the platform scores
    # (and would calibrate) on, and the corpus' whole text, which word classes learn from.
    gold_sentences, gold_tags = adapter.evaluation_gold(project_id=project.pk)
    text = list(Sentence.objects.filter(project=project).order_by("position")
                .values_list("tokens", flat=True))  # fmt: skip
    data = replace(facts.data, gold_sentences=gold_sentences, gold_tags=gold_tags, text=text)
    facts = replace(facts, data=data)
    settings = PolicySettings(
        rounds=RoundSettings(window=project.window_size, tags_per_task=project.tags_per_task),
        seed=0,
    )
    plan = plan_version(facts, None, settings)
    keys = [sentence_id for sentence_id, _ in training]
    chosen = plan.counts.plan
    return {
        "flags": set(plan.flags),
        "counts": [
            (
                keys[s],
                int(start),
                int(length),
                [int(k) for k in np.flatnonzero(m)],
                "uniform" if explore else "value",
            )
            for s, start, length, m, explore in zip(
                chosen.sentence,
                chosen.start,
                chosen.length,
                chosen.tag_mask,
                chosen.explore,
                strict=True,
            )
        ],  # fmt: skip
        "windows": [(keys[w.sentence_id], w.start, list(w.shown_tags)) for w in plan.windows],
        "share": plan.counts.verification_share,
        "calibration": plan.calibration.as_dict(),
    }


def test_the_platforms_retrain_and_the_campaign_plan_the_same_version(manager):
    """One task a training sentence, each answered once (a spammer among the crowd), no
    held-out answers yet: the stored flags, the round in serving order, the verification
    windows, the task mix and the temperatures are those `simulate_campaign`'s plan has."""
    project = make_project(owner=manager, name="Parity", window_size=3, redundancy=1,
                           tags_per_task=2)  # fmt: skip
    import_corpus(project, manager, toy_sentences(56, seed=5), evaluation_fraction=0.25)
    crowd = add_annotators(project, 4)
    n_training = Sentence.objects.filter(project=project, split="train").count()
    answer_tasks(project, crowd, n_training, spammers={crowd[3]})
    answered = set(Observation.objects.filter(project=project).values_list("sentence", flat=True))
    assert len(answered) == n_training < adapter.HOLDOUT_MIN_OBSERVATIONS  # all, none held out

    campaign = _campaign_plan(project)  # before the retrain replaces the round's tasks
    platform = _stored_plan(project, retrain(project).version)

    assert platform["flags"] == campaign["flags"]
    assert platform["calibration"] == pytest.approx(campaign["calibration"])
    assert platform["share"] == pytest.approx(campaign["share"])
    assert platform["windows"] == campaign["windows"] and platform["windows"]
    assert platform["counts"] == campaign["counts"] and len(platform["counts"]) == n_training


def test_a_small_projects_first_model_asks_no_verification_round(manager):
    """Issue 46: a 300-sentence plain project whose first model learned from 7 answers turned
    98 % of the next tasks into yes/no checks. A model that neither held-out answers nor gold
    can judge yet gets no verification round; once answers judge it, the values choose the
    share."""
    project = make_project(owner=manager, name="Small", window_size=3, redundancy=1,
                           tags_per_task=2)  # fmt: skip
    import_corpus(project, manager, toy_sentences(300, seed=2), evaluation_fraction=0.0)
    crowd = add_annotators(project, 2)
    answer_tasks(project, crowd, 7)
    outcome = retrain(project)
    assert outcome.status == "succeeded"
    project.refresh_from_db()
    assert project.verification_version is None and project.verification_share_auto == 0.0
    assert not Task.objects.filter(project=project, kind="verify").exists()
    assert Project.objects.get(pk=project.pk).verification_share is None  # the values decide

    answer_tasks(project, crowd, 250, seed=1)  # about 25 answers held out to judge it by
    retrain(project)
    project.refresh_from_db()
    assert project.verification_version == 2
    assert Task.objects.filter(project=project, kind="verify", model_version=2).exists()
    assert project.verification_share_auto > 0.0
