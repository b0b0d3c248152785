"""The live model: updates after the watermark, predictions, the retrain's reset, an update that
fails after its learner stepped, and a worker killed mid-update (a real Celery worker, the row
held locked from another connection); each checked by `devtools.live_check` too."""

import io
from pathlib import Path

import numpy as np
import pytest
from django.conf import settings as django_settings
from django.core.files.storage import FileSystemStorage, default_storage
from django.db import connection

from annotation.models import Observation, TaskKind
from devtools.live_check import live_model_check
from learning import live, predictions, selectors, tasks
from learning.models import LiveModel
from tests.support.crowd import answer_tasks
from tests.support.learning import retrain
from tests.support.workers import Worker, purge_queue, rows_held, wait_for


@pytest.fixture(autouse=True)
def live_model_on(settings, monkeypatch):
    """The live model is off by default (it does not yet learn as well as a retrain)."""
    settings.TALLY_LIVE_MODEL_SECONDS = 30
    monkeypatch.setenv("TALLY_LIVE_MODEL_SECONDS", "30")  # for the worker's process


def _count_answers_after(project, watermark, up_to=None):
    query = Observation.objects.filter(project=project, kind=TaskKind.COUNT, id__gt=watermark)
    if up_to is not None:
        query = query.filter(id__lte=up_to)
    return query.count()


def _state_answers(row: LiveModel) -> int:
    with default_storage.open(row.state_file, "rb") as handle:
        return int(np.load(io.BytesIO(handle.read()))["counters"][1])


def _checked_from_outside() -> list[dict]:
    """`devtools.live_check` on the test database, as `benchmark_faults` runs it."""
    db = connection.settings_dict
    url = f"postgresql://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"
    return live_model_check(url, Path(django_settings.MEDIA_ROOT))


@pytest.mark.django_db
def test_live_model_follows_the_answers_and_predictions_use_it(project, crowd):
    answer_tasks(project, crowd, 90)
    retrain(project)
    version = selectors.current_version(project_id=project.pk)
    row = LiveModel.objects.get(project=project)  # the retrain reset it to its result
    assert (row.base_version, row.number, row.watermark) == (1, 0, version.newest_observation)
    assert live.live_model_update(project_id=project.pk)["status"] == "up_to_date"
    assert selectors.served_tagger(version=version)[1] is None

    answer_tasks(project, crowd, 45, seed=1)
    new = _count_answers_after(project, row.watermark)
    outcome = live.live_model_update(project_id=project.pk)
    assert outcome["status"] == "published" and outcome["answers"] == new
    row.refresh_from_db()
    assert row.number == 1 and row.answers_applied == new == _state_answers(row)
    assert row.watermark == Observation.objects.filter(kind=TaskKind.COUNT).latest("id").pk
    assert [p["answers"] for p in row.progressive] == [new]
    assert row.progressive[0]["log_likelihood"] < 0
    tagger, number = selectors.served_tagger(version=version)
    assert number == 1 and not np.allclose(tagger.coef_, selectors.tagger_of(version=version).coef_)
    tagged = predictions.text_tag(project_id=project.pk, text="the cat sees a dog", language="en")
    assert tagged["version"] == 1 and tagged["live"] == 1

    # At most one publication per TALLY_LIVE_MODEL_SECONDS; each answer applied once.
    answer_tasks(project, crowd, 30, seed=2)
    assert live.live_model_update(project_id=project.pk)["status"] == "recent"
    del live._learners[project.pk]  # as another process would: restored from the stored state
    assert live.live_model_update(project_id=project.pk, force=True)["status"] == "published"
    row.refresh_from_db()
    assert row.number == 2 and row.answers_applied == _count_answers_after(
        project, version.newest_observation
    )
    assert len(row.progressive) == 2

    # The batch retrain consolidates and resets the live model to its result.
    retrain(project)
    row.refresh_from_db()
    assert (row.base_version, row.number, row.answers_applied, row.progressive) == (2, 0, 0, [])
    assert (
        selectors.served_tagger(version=selectors.current_version(project_id=project.pk))[1] is None
    )


@pytest.mark.django_db
def test_live_model_is_off_without_its_interval(project, crowd, settings):
    settings.TALLY_LIVE_MODEL_SECONDS = 0
    answer_tasks(project, crowd, 60)
    retrain(project)
    answer_tasks(project, crowd, 20, seed=1)
    assert live.live_model_update(project_id=project.pk) == {"status": "off"}


@pytest.mark.django_db
def test_the_sweep_finds_projects_with_answers_after_the_watermark(project, crowd):
    answer_tasks(project, crowd, 60)
    assert selectors.projects_live_due() == []  # no model yet: the retrain comes first
    retrain(project)
    assert selectors.projects_live_due() == []
    answer_tasks(project, crowd, 10, seed=1)
    assert selectors.projects_live_due() == [project.pk]
    live.live_model_update(project_id=project.pk)
    assert selectors.projects_live_due() == []


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_an_update_failing_after_its_learner_stepped_applies_nothing_and_the_retry_once(
    project, crowd, monkeypatch
):
    answer_tasks(project, crowd, 60)
    retrain(project)
    answer_tasks(project, crowd, 30, seed=1)
    assert live.live_model_update(project_id=project.pk)["status"] == "published"
    first = LiveModel.objects.get(project=project)
    assert project.pk in live._learners  # this process's learner goes on from here

    answer_tasks(project, crowd, 30, seed=2)
    save = FileSystemStorage.save

    def dies_saving_the_state(storage, name, content, **kwargs):
        if name.endswith(".state.npz"):  # the learner stepped, its model file written
            raise OSError("disk gone")
        return save(storage, name, content, **kwargs)

    monkeypatch.setattr(FileSystemStorage, "save", dies_saving_the_state)
    with pytest.raises(OSError):
        live.live_model_update(project_id=project.pk, force=True)
    row = LiveModel.objects.get(project=project)
    assert (row.number, row.watermark, row.answers_applied, row.file) == (
        first.number, first.watermark, first.answers_applied, first.file
    )  # fmt: skip
    assert project.pk not in live._learners  # its stepped learner is not reused
    assert [check["violations"] for check in _checked_from_outside()] == [[]]

    monkeypatch.setattr(FileSystemStorage, "save", save)
    assert live.live_model_update(project_id=project.pk, force=True)["status"] == "published"
    row.refresh_from_db()
    base = selectors.current_version(project_id=project.pk).newest_observation
    assert row.number == 2 and row.watermark > first.watermark
    assert row.answers_applied == _count_answers_after(project, base) == _state_answers(row)
    assert [p["answers"] for p in row.progressive] == [first.answers_applied, row.answers_applied]
    (check,) = _checked_from_outside()
    assert check["violations"] == [] and check["publications"] == 2
    assert check["answers_applied"] == row.answers_applied and check["late_commits"] == 0


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_the_outside_check_reads_again_when_a_file_goes_between_its_look_and_its_read(
    project, crowd, monkeypatch
):
    """A publication deletes its predecessor's files: one that was there when the check looked
    and gone when it read is read again from a new snapshot, and gone at the last attempt is a
    violation (benchmark_faults failed once on such a race)."""
    from devtools import live_check

    answer_tasks(project, crowd, 60)
    retrain(project)
    answer_tasks(project, crowd, 30, seed=1)
    assert live.live_model_update(project_id=project.pk)["status"] == "published"
    row = LiveModel.objects.get(project=project)
    read = live_check._files_disagree
    calls = []

    def gone_at_first(media_root, file, state_file, *args):
        calls.append(state_file)
        if len(calls) == 1:
            np.load(media_root / "gone" / state_file)  # FileNotFoundError, as after a deletion
        return read(media_root, file, state_file, *args)

    monkeypatch.setattr(live_check, "_files_disagree", gone_at_first)
    assert [check["violations"] for check in _checked_from_outside()] == [[]]
    assert calls == [row.state_file, row.state_file]

    calls.clear()
    db = connection.settings_dict
    url = f"postgresql://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"
    (check,) = live_model_check(url, Path(django_settings.MEDIA_ROOT), attempts=1)
    assert check["violations"] == [f"the file {Path('gone') / row.state_file} is gone"]


def _update_blocked_in_publish() -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
            "AND query ILIKE '%%learning_livemodel%%' AND datname = current_database()"
        )
        return cursor.fetchone()[0] > 0


@pytest.mark.postgres
@pytest.mark.redis
@pytest.mark.slow
def test_a_worker_killed_mid_update_leaves_watermark_and_model_consistent(
    project, crowd, tmp_path, transactional_db
):
    answer_tasks(project, crowd, 60)
    retrain(project)
    answer_tasks(project, crowd, 40, seed=7)
    before = LiveModel.objects.get(project=project)
    purge_queue()
    started = []
    try:
        holder = rows_held("learning_livemodel", project.pk)
        try:
            doomed = Worker(tmp_path / "doomed.log").wait_ready()
            started.append(doomed)
            tasks.live_update.apply_async(args=[project.pk])
            wait_for(_update_blocked_in_publish, 90, "the update never reached its publication")
            doomed.kill()  # files written, the row update not committed
        finally:
            holder.rollback()
            holder.close()
        row = LiveModel.objects.get(project=project)
        assert (row.number, row.watermark, row.answers_applied, row.file) == (
            0, before.watermark, 0, ""
        )  # fmt: skip

        started.append(Worker(tmp_path / "replacement.log").wait_ready())
        tasks.live_update.apply_async(args=[project.pk])
        wait_for(
            lambda: LiveModel.objects.get(project=project).number >= 1, 90, "no update published"
        )
        row = LiveModel.objects.get(project=project)
        newest = Observation.objects.filter(project=project, kind=TaskKind.COUNT).latest("id").pk
        applied = _count_answers_after(project, before.watermark, up_to=row.watermark)
        assert row.number == 1 and row.watermark == newest
        assert row.answers_applied == applied == _state_answers(row) > 0
        assert [check["violations"] for check in _checked_from_outside()] == [[]]
    finally:
        for worker in started:
            worker.stop()
        purge_queue()
