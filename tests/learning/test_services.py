"""The retrain job, the lock, the sweep and the schedule, called directly (no HTTP, no broker)."""

import io
import random
import time
import uuid
from datetime import timedelta

import numpy as np
import pytest
from django.core.files.storage import default_storage
from django.utils import timezone

from annotation import scheduler
from annotation import selectors as selectors_annotation
from annotation import services as annotation_services
from annotation.models import Observation, Project, Sentence, Task, TaskOrigin
from common.exceptions import InvalidInput
from learning import adapter, locks, selectors, services
from learning.models import (
    AnnotatorQuality,
    ModelVersion,
    RetrainLock,
    RetrainRun,
    RetrainSchedule,
)
from tests.support.crowd import add_annotators, answer_tasks, import_corpus, toy_sentences
from tests.support.learning import retrain

pytestmark = pytest.mark.django_db


def test_first_retrain_writes_a_complete_version_and_report(project, crowd):
    answer_tasks(project, crowd, 120)
    outcome = retrain(project)
    assert outcome.status == RetrainRun.Status.SUCCEEDED
    version = selectors.current_version(project_id=project.pk)
    assert version.number == 1 and version == outcome.version
    assert version.observations_count == 120
    assert version.newest_observation == Observation.objects.latest("id").pk
    assert version.warm_started_from is None
    assert version.code_version
    assert {"read", "fit", "evaluate", "write", "total"} <= set(version.timings)
    assert default_storage.exists(version.file.name)
    report = version.report
    assert report.accuracy is not None and report.accuracy > 0.8
    assert report.evaluation["sentences"] > 0
    assert [row["tag"] for row in report.per_tag] == ["NOUN", "VERB", "DET", "ADJ"]
    assert report.confusion["tags"] == ["NOUN", "VERB", "DET", "ADJ"]
    assert np.array(report.confusion["matrix"]).sum() == report.evaluation["tokens"]
    assert report.held_out_observations > 0 and report.count_consistency is not None
    assert sorted(row["username"] for row in report.annotators) == sorted(u.username for u in crowd)
    assert sum(row["answers"] for row in report.annotators) == 120
    run = RetrainRun.objects.get(pk=outcome.run_id)
    assert run.status == "succeeded" and run.version_number == 1 and run.seconds > 0


def test_retrain_only_when_there_is_something_new(project, crowd):
    answer_tasks(project, crowd, 60)
    assert retrain(project).status == "succeeded"
    again = retrain(project)
    assert again.status == "skipped" and "already includes" in again.message
    assert ModelVersion.objects.filter(project=project).count() == 1
    answer_tasks(project, crowd, 10, seed=5)
    second = retrain(project)
    assert second.status == "succeeded" and second.version.number == 2


def test_answers_chosen_by_value_are_fitted_afresh(project, crowd):
    """A warm retrain absorbs about half of what answers chosen by value teach (the version did
    not know it): however few came since the last full fit, the next version fits afresh."""
    answer_tasks(project, crowd, 100)
    first = retrain(project).version
    assert first.hyperparameters["full_fit_chosen"] == 0  # no model chose them: all uniform
    answer_tasks(project, crowd, 4, seed=5)  # 4 % more, from the first version's round
    chosen = Observation.objects.filter(
        project=project, assignment__task__origin=TaskOrigin.VALUE
    ).count()
    assert chosen > 0
    second = retrain(project).version
    assert second.warm_started_from is None and second.hyperparameters["schedule"]["name"] != "warm"
    assert 0 < second.hyperparameters["full_fit_chosen"] <= chosen  # fitted: not held out


def test_a_chain_of_warm_retrains_fits_afresh_past_a_tenth_more_than_its_full_fit(project, crowd):
    """A few more answers drawn uniformly go on warm; the growth is counted from the last full
    fit, so small periodic retrains do not go on warm for ever."""
    answer_tasks(project, crowd, 100)
    first = retrain(project).version
    assert first.hyperparameters["full_fit_answers"] == 100
    # Tasks drawn as S(o | y) from here on (as a round made when the open pool ran dry).
    Task.objects.filter(project=project).update(origin=TaskOrigin.UNIFORM)
    answer_tasks(project, crowd, 6, seed=5)
    second = retrain(project).version
    assert second.warm_started_from == 1 and second.hyperparameters["schedule"]["name"] == "warm"
    assert second.hyperparameters["full_fit_answers"] == 100
    Task.objects.filter(project=project).update(origin=TaskOrigin.UNIFORM)
    answer_tasks(project, crowd, 6, seed=6)  # 112 answers: 1.12 × the full fit's, 1.06 × v2's
    third = retrain(project).version
    assert third.warm_started_from is None and third.hyperparameters["full_fit_answers"] == 112


def test_no_observations_is_skipped_not_failed(project):
    assert retrain(project).status == "skipped"
    assert not ModelVersion.objects.exists()


def test_answers_that_are_all_zeros_are_not_enough_not_an_error(project, crowd):
    """Issue 24: a project whose answers all count 0 failed every sweep's retrain with "no
    labelled tokens: all soft labels are zero". It is skipped, saying why, until answers that
    count some tags come; then the model is trained."""
    rng = random.Random(0)
    for i in range(40):
        lease = scheduler.task_lease_next(project=project, annotator=crowd[i % 4], rng=rng)
        names = selectors_annotation.project_tag_names(project=project)
        annotation_services.observation_submit(
            annotator=crowd[i % 4], assignment_id=lease.assignment_id,
            idempotency_key=uuid.uuid4().hex, counts={names[t]: 0 for t in lease.tags},
        )  # fmt: skip
    for _ in range(2):  # every sweep says the same, none fails
        outcome = retrain(project)
        assert outcome.status == "skipped", outcome
        assert outcome.message.startswith("Not enough answers to learn from yet")
        run = RetrainRun.objects.get(pk=outcome.run_id)
        assert run.status == "skipped" and "counts 0 of each tag" in run.error and run.finished_at
    assert not ModelVersion.objects.exists()
    assert not RetrainRun.objects.filter(status="failed").exists()
    answer_tasks(project, crowd, 60, seed=3)
    assert retrain(project).status == "succeeded"


def test_held_out_slice_is_deterministic_and_not_fitted():
    ids = np.arange(1, 5001)
    held = adapter.holdout_mask(ids)
    assert 0.07 < held.mean() < 0.13
    assert np.array_equal(held, adapter.holdout_mask(ids))
    assert np.array_equal(adapter.holdout_mask(ids[::2]), held[::2])  # per id, not per position
    assert not adapter.holdout_mask(ids[:10]).any()  # small projects hold nothing out
    many = np.arange(1, 40_001)
    large = adapter.holdout_mask(many)
    assert 800 < large.sum() < 1200  # about HOLDOUT_ANSWERS, not a tenth
    assert not (large[:5000] & ~held).any()  # nested: growing only returns answers to fitting


def test_training_data_separates_fit_held_out_and_flagged(project, crowd):
    answer_tasks(project, crowd, 100)
    flagged = {crowd[0].pk}
    data = adapter.training_data_load(project_id=project.pk, excluded_annotators=flagged)
    assert len(data.fit) + len(data.held_out) + data.excluded_observations == 100
    assert crowd[0].pk not in set(data.fit.annotator.tolist())
    assert crowd[0].pk in set(data.judged.annotator.tolist())
    assert data.tagset == ("NOUN", "VERB", "DET", "ADJ")


def test_spammer_is_flagged_and_stops_counting(project, crowd):
    spammer = add_annotators(project, 1, prefix="spam")[0]
    answer_tasks(project, [*crowd, spammer], 200, spammers={spammer})
    first = retrain(project)
    row = next(r for r in first.version.report.annotators if r["annotator"] == spammer.pk)
    assert row["flagged"] and "chance" in row["flag_reason"]
    assert row["reliability"] < 0.5
    assert selectors.flagged_annotator_ids(project.pk) == {spammer.pk}
    quality = AnnotatorQuality.objects.get(project=project, annotator=spammer)
    assert quality.flagged and quality.version_number == 1
    honest = AnnotatorQuality.objects.get(project=project, annotator=crowd[0])
    assert not honest.flagged and honest.reliability > 0.9
    answer_tasks(project, crowd, 10, seed=9)
    second = retrain(project)
    assert second.version.hyperparameters["excluded_observations"] > 0
    assert selectors.flagged_annotator_ids(project.pk) == {spammer.pk}


def test_model_file_round_trips_without_pickle(project, crowd):
    answer_tasks(project, crowd, 60)
    version = retrain(project).version
    with default_storage.open(version.file.name, "rb") as handle:
        data = handle.read()
    tagger = adapter.model_load_bytes(data)
    with np.load(io.BytesIO(data), allow_pickle=False) as archive:
        assert set(archive.files) == {
            "header", "coef_rows", "coef_values", "intercept",
            "tag_coef_rows", "tag_coef_values", "tag_intercept",
            "class_forms", "class_form_ends", "class_ids",
            "seen_forms", "seen_form_ends",  # the forms the answers covered (calibration)
        }  # fmt: skip
    assert tagger.kind == "context" and version.hyperparameters["model_kind"] == "context"
    assert tagger.predict([["the", "dog", "runs"]]) == [["DET", "NOUN", "VERB"]]


def test_lock_is_exclusive_and_expires(project, settings):
    assert locks.lock_claim(project_id=project.pk, owner="a")
    assert not locks.lock_claim(project_id=project.pk, owner="b")
    assert locks.lock_confirm(project_id=project.pk, owner="a")
    assert not locks.lock_confirm(project_id=project.pk, owner="b")
    later = timezone.now() + timedelta(seconds=settings.TALLY_RETRAIN_LOCK_SECONDS + 1)
    assert locks.lock_claim(project_id=project.pk, owner="b", now=later)  # a died: expired
    locks.lock_release(project_id=project.pk, owner="a")  # a stale release changes nothing
    assert RetrainLock.objects.get(project=project).owner == "b"
    locks.lock_release(project_id=project.pk, owner="b")
    assert locks.lock_claim(project_id=project.pk, owner="c")


@pytest.mark.django_db(transaction=True)
def test_a_held_lock_is_renewed_and_a_dead_holders_expires(project, settings):
    """The claim is short (TALLY_RETRAIN_LOCK_SECONDS) and renewed by its holder while the job
    runs: a live job keeps it however long it takes, a killed worker's claim ends soon after.
    (With a claim that had to outlast any retrain, a worker killed mid-retrain stopped the
    project's retraining for 16 minutes: benchmark_faults.)"""
    settings.TALLY_RETRAIN_LOCK_SECONDS = 3  # renewed every second
    assert locks.lock_claim(project_id=project.pk, owner="a")
    time.sleep(4.5)  # longer than a claim: only the renewals keep it
    assert not locks.lock_claim(project_id=project.pk, owner="b")
    assert locks.lock_state(project_id=project.pk) > timezone.now() + timedelta(seconds=1)
    locks._stop_renewing(project.pk, "a")  # what a kill -9 does to the renewing thread
    time.sleep(3.5)
    assert locks.lock_claim(project_id=project.pk, owner="b")  # the dead holder's claim ended
    assert not locks.lock_confirm(project_id=project.pk, owner="a")  # never revived
    locks.lock_release(project_id=project.pk, owner="b")
    assert locks.lock_state(project_id=project.pk) is None


def test_locked_project_is_skipped(project, crowd):
    answer_tasks(project, crowd, 30)
    assert locks.lock_claim(project_id=project.pk, owner="someone-else")
    outcome = retrain(project)
    assert outcome.status == "skipped" and "running" in outcome.message
    assert not ModelVersion.objects.exists()


def test_lock_expired_before_commit_writes_nothing_and_removes_the_file(project, crowd, settings):
    """A worker whose lock expired (and may have been taken over) must not write a version."""
    answer_tasks(project, crowd, 40)
    settings.TALLY_RETRAIN_LOCK_SECONDS = 0  # expired as soon as claimed
    with pytest.raises(services.LockLost):
        retrain(project)
    assert not ModelVersion.objects.exists()
    run = RetrainRun.objects.get()
    assert run.status == "failed" and "LockLost" in run.error
    assert not default_storage.listdir(f"models/project-{project.pk}")[1]


def test_abandoned_run_is_marked_failed_by_the_next_run(project, crowd):
    answer_tasks(project, crowd, 40)
    RetrainRun.objects.create(
        project=project, trigger="schedule", status="running", started_at=timezone.now()
    )
    assert retrain(project).status == "succeeded"
    abandoned = RetrainRun.objects.order_by("id").first()
    assert abandoned.status == "failed" and "stopped before finishing" in abandoned.error


def test_projects_due_follow_new_observations_and_intervals(project, crowd, other_project):
    now = timezone.now()
    assert selectors.projects_due(now=now) == []
    answer_tasks(project, crowd, 20)
    assert selectors.projects_due(now=now) == [project.pk]
    assert services.sweep_claim(project_id=project.pk, now=now)
    # Enqueued just now: not again before its interval (default 10 minutes) has passed.
    assert selectors.projects_due(now=now + timedelta(minutes=5)) == []
    assert selectors.projects_due(now=now + timedelta(minutes=11)) == [project.pk]
    services.retrain_schedule_set(project=project, interval_minutes=1, enabled=True)
    assert selectors.projects_due(now=now + timedelta(minutes=2)) == [project.pk]
    services.retrain_schedule_set(project=project, interval_minutes=1, enabled=False)
    assert selectors.projects_due(now=now + timedelta(minutes=2)) == []
    services.retrain_schedule_set(project=project, interval_minutes=1, enabled=True)
    retrain(project)
    assert selectors.projects_due(now=now + timedelta(minutes=2)) == []


def test_schedule_validation(project):
    for bad in (0, -1, 10081, 2.5, "10", True, None):
        with pytest.raises(InvalidInput):
            services.retrain_schedule_set(project=project, interval_minutes=bad)
    with pytest.raises(InvalidInput):
        services.retrain_schedule_set(project=project, interval_minutes=5, enabled="yes")
    services.retrain_schedule_set(project=project, interval_minutes=5)
    assert RetrainSchedule.objects.get(project=project).interval_minutes == 5


def test_retrain_request_check(project, crowd):
    with pytest.raises(services.NoObservations):
        services.retrain_request_check(project=project)
    answer_tasks(project, crowd, 20)
    assert services.retrain_request_check(project=project) is True
    retrain(project)
    assert services.retrain_request_check(project=project) is False


def test_failure_is_recorded_on_the_run(project, crowd):
    answer_tasks(project, crowd, 40)
    for user in crowd:  # every answer comes from a flagged annotator: nothing left to fit
        AnnotatorQuality.objects.create(
            project=project, annotator=user, flagged=True, version_number=0
        )
    with pytest.raises(services.RetrainError):
        retrain(project)
    run = RetrainRun.objects.get()
    assert run.status == "failed" and "No observations to fit" in run.error and run.finished_at
    assert RetrainLock.objects.get(project=project).locked_until is None  # released
    status = selectors.retrain_status(project_id=project.pk)
    assert status["last_failed"] == run
    assert not ModelVersion.objects.exists()


def test_first_scheduled_retrain_waits_an_interval_from_the_newest_model(project, crowd):
    """Issue 17: `./tally up`'s demo, trained as it is made, was retrained by the first sweep,
    a minute after start, although the interval is 10 minutes."""
    answer_tasks(project, crowd, 20)
    assert retrain(project).status == "succeeded"
    trained_at = ModelVersion.objects.get(project=project).created_at
    answer_tasks(project, crowd, 5, seed=1)
    assert selectors.projects_due(now=trained_at + timedelta(minutes=1)) == []
    assert selectors.projects_due(now=trained_at + timedelta(minutes=9)) == []
    assert selectors.projects_due(now=trained_at + timedelta(minutes=10, seconds=1)) == [project.pk]


def _minutes_by_kind(project) -> dict[str, float]:
    minutes = {"count": 0.0, "verify": 0.0}
    for kind, seconds in Observation.objects.filter(project=project).values_list(
        "kind", "seconds_on_device"
    ):
        minutes[kind] += (seconds or 0.0) / 60.0
    return minutes


def test_the_report_gives_minutes_by_kind_and_accuracy_gained_per_minute(project, crowd):
    """Issue 15: what each kind of answer costs in annotator time, and what a version gained
    per annotator-minute of the answers added since the previous one."""
    answer_tasks(project, crowd, 120)
    first = retrain(project).version.report
    assert first.effort["minutes"]["count"] == pytest.approx(
        _minutes_by_kind(project)["count"], abs=0.01
    )
    assert first.effort["minutes"]["verify"] == 0.0  # no model yet: count tasks only
    assert first.effort["accuracy_gain_per_minute"] is None  # nothing to compare with
    Project.objects.filter(pk=project.pk).update(verification_share=0.5)
    project.refresh_from_db()
    answer_tasks(project, crowd, 80, seed=5)  # now verification tasks too
    second = retrain(project).version.report
    minutes = _minutes_by_kind(project)
    assert second.effort["minutes"] == pytest.approx(minutes, abs=0.01)
    assert second.effort["timed_answers"]["verify"] > 0
    added = {kind: minutes[kind] - first.effort["minutes"][kind] for kind in minutes}
    assert second.effort["minutes_added"] == pytest.approx(added, abs=0.02)
    gain = (second.accuracy - first.accuracy) / sum(added.values())
    assert second.effort["accuracy_gain_per_minute"] == pytest.approx(gain, rel=1e-3, abs=1e-5)


def test_the_retrain_fits_what_simulate_crowd_fits(project, crowd, monkeypatch, tmp_path):
    """The job passes CountTagger only the project's facts: on the same answers, the settings
    simulate_crowd passes give the same preset and the same coefficients as the stored version."""
    from django.core.management import call_command

    from learning.core import CountTagger
    from learning.management.commands import simulate_crowd

    answer_tasks(project, crowd, 150)
    version = retrain(project).version
    seen = {}
    monkeypatch.setattr(
        simulate_crowd,
        "simulation_report",
        lambda train, test, **kwargs: (seen.update(kwargs) or {}, None),
    )
    corpus = tmp_path / "one.conllu"
    corpus.write_text("1\tDogs\tdog\tNOUN\t_\t_\t0\troot\t_\t_\n\n", encoding="utf-8")
    call_command("simulate_crowd", "--train", corpus, "--test", corpus, stdout=io.StringIO())
    data = adapter.training_data_load(project_id=project.pk, excluded_annotators=set())
    simulated = CountTagger(random_state=seen["seed"], **seen["model_params"]).fit(
        data.training_set()
    )
    assert version.hyperparameters["schedule"] == simulated.schedule_.as_dict()
    stored = adapter.model_load(version.file.name)
    np.testing.assert_allclose(stored.coef_, simulated.tagger_.coef_, rtol=1e-6, atol=1e-9)


def test_learning_a_version_writes_nothing_and_storing_it_writes_it_whole(project, crowd):
    answer_tasks(project, crowd, 80)
    learned = services.version_learn(project_id=project.pk, current=None)
    assert learned.number == 1 and learned.evaluation["accuracy"] is not None
    assert not ModelVersion.objects.exists() and not RetrainRun.objects.exists()
    assert not default_storage.exists(f"models/project-{project.pk}")
    assert retrain(project).version.number == 1


def test_a_retrain_after_many_more_answers_fits_afresh(project, crowd):
    """The short warm preset suits a few more answers; after twice as many, a full fit."""
    answer_tasks(project, crowd, 40)
    assert retrain(project).status == "succeeded"
    answer_tasks(project, crowd, 40, seed=5)
    second = retrain(project)
    assert second.version.number == 2 and second.version.warm_started_from is None
    assert second.version.hyperparameters["schedule"]["name"] != "warm"
    # The corpus' text did not change: its word classes are the first version's, not relearned.
    assert second.version.hyperparameters["word_classes_reused"]
    assert "classes" not in second.version.timings or second.version.timings["classes"] == 0
    first_classes = adapter.model_load(
        ModelVersion.objects.get(project=project, number=1).file.name
    ).word_classes
    second_classes = adapter.model_load(second.version.file.name).word_classes
    assert second_classes.forms == first_classes.forms
    np.testing.assert_array_equal(second_classes.classes, first_classes.classes)


def test_gold_sentences_calibrate_and_spare_the_refit_for_answers(project, crowd):
    def gold_tokens():
        gold = Sentence.objects.filter(project=project, split=Sentence.Split.EVALUATION)
        return sum(len(tokens) for tokens in gold.values_list("tokens", flat=True))

    answer_tasks(project, crowd, 500)  # enough held-out answers to calibrate
    assert gold_tokens() < 200  # too few: the held-out answers calibrate
    version = retrain(project).version
    assert version.hyperparameters["calibration"]["source"] == "answers"
    assert version.timings["calibrate"] > 0
    import_corpus(project, project.owner, toy_sentences(80, seed=9), evaluation_fraction=1.0)
    assert gold_tokens() >= 200
    ModelVersion.objects.filter(project=project).delete()  # the same answers, fitted afresh
    version = retrain(project).version
    assert version.warm_started_from is None
    assert version.hyperparameters["calibration"]["source"] == "gold"
    assert version.timings["calibrate"] == 0.0  # no model refitted for the answers' temperature
