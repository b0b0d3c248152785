"""Writes of the learning app: the retrain job, schedules, and the sweep's bookkeeping.

`retrain_run` is the job: claim the project's lock; `version_learn` reads through the adapter,
fits the core's `CountTagger` warm-started from the current version and builds the report
(writing nothing); `version_store` writes the model file, then the version, its report, the
annotator quality rows, the run record and the webhook deliveries in one transaction (after
re-confirming the lock inside it). A worker killed anywhere before that commit
leaves the previous version current and nothing half-written visible (at worst an orphan model
file, which is deleted when the job fails in-process). Pushing the result is the caller's job,
after this returns (the transaction has committed by then): see `learning.tasks`.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import transaction
from django.utils import timezone

from annotation.models import Project
from annotation.services import (
    memberships_flag_update,
    value_round_create,
    verification_round_create,
)
from common.exceptions import Conflict, InvalidInput
from config.version import code_version
from delivery.webhooks.outbox import deliveries_create
from learning import adapter, costs, locks, rounds, selectors, verification
from learning.core import report
from learning.core.pipeline import CountTagger
from learning.core.schedule import asked_share, warm_start_suits
from learning.core.wordclasses import WordClasses
from learning.live import live_model_reset
from learning.models import (
    MAX_INTERVAL_MINUTES,
    AccuracyReport,
    AnnotatorQuality,
    ModelVersion,
    RetrainRun,
    RetrainSchedule,
)

logger = logging.getLogger(__name__)

# The retrain passes CountTagger nothing but the project's facts (its answers, a privacy
# mechanism, the previous version to warm-start from): the schedule is the one CountTagger's
# "auto" picks, the same as simulate_crowd measures (learning.core.schedule).
RANDOM_STATE = 0


class RetrainError(Exception):
    """The job cannot produce a version (recorded on the run; not retried)."""


class NoObservations(Conflict):
    """ "Retrain now" on a project without a single observation (API code `no_observations`)."""

    code = "no_observations"


class NotEnoughAnswers(RetrainError):
    """The answers so far carry nothing to learn from: the run is skipped with this message,
    and the next sweep tries again with the answers given meanwhile."""


class LockLost(RetrainError):
    """Another worker took the project's lock over (ours expired): write nothing."""


@dataclass
class RetrainOutcome:
    status: str  # a RetrainRun.Status value
    run_id: int | None = None
    version: ModelVersion | None = None
    summary: dict | None = None
    delivery_ids: list[int] = field(default_factory=list)
    message: str = ""


# The job --------------------------------------------------------------------------------------


def _usernames(user_ids) -> dict[int, str]:
    return dict(
        get_user_model().objects.filter(pk__in=list(user_ids)).values_list("pk", "username")
    )


def _full_fit_answers(current: ModelVersion | None) -> tuple[int, int | None]:
    """The answers of the last full fit `current` descends from, of every kind and of those
    chosen by value: a chain of warm versions absorbs no more than one warm fit does
    (docs/learning-notes.md, "Warm retrains"). Versions stored before the fields: their own
    answers, and None for the chosen ones (unknown: any now is taken as new)."""
    if current is None:
        return 0, 0
    hyper = current.hyperparameters
    answers = hyper.get("full_fit_answers", hyper.get("answers", current.observations_count))
    return int(answers), hyper.get("full_fit_chosen")


def _chosen_answers(data: adapter.TrainingData) -> int:
    """The fitted answers whose tasks a version chose by value: count tasks not drawn as
    S(o | y), and verifications."""
    verifications = len(data.verifications) if data.verifications is not None else 0
    return int((~data.fit_uniform).sum()) + verifications


def _warm_start(current: ModelVersion | None):
    if current is None:
        return None
    try:
        return adapter.model_load(current.file.name)
    except (OSError, ValueError) as exc:  # a missing or unreadable file: learn from scratch
        logger.warning(
            "cannot warm-start from the current version; fitting from scratch",
            extra={"project_id": current.project_id, "version": current.number, "error": str(exc)},
        )
        return None


def _reusable_word_classes(current: ModelVersion | None, warm, data: adapter.TrainingData):
    """The current version's word classes when they were learned from the same text (they
    depend on the corpus alone, and learning them takes seconds), whether or not the fit goes
    on warm from that version; else learn them anew."""
    if current is None or current.hyperparameters.get("text_tokens") != data.text_tokens:
        return True
    model = warm if warm is not None else _warm_start(current)
    classes = getattr(model, "word_classes", None)
    return True if classes is None else classes


def effort_with_gain(effort: dict | None, accuracy: float | None, previous) -> dict | None:
    """The version's annotator minutes by task kind, the minutes added since ``previous`` and,
    when both versions were scored on the gold evaluation sentences and the answers added report
    their time, the accuracy gained per annotator-minute of them (issue 15: what an answer kind
    is worth for the time it costs)."""
    if effort is None:
        return None
    out = {**effort, "minutes_added": dict(effort["minutes"]), "accuracy_gain_per_minute": None}
    before = getattr(previous, "report", None) if previous is not None else None
    if before is None or not before.effort:
        return out
    out["minutes_added"] = {
        kind: round(minutes - before.effort["minutes"].get(kind, 0.0), 2)
        for kind, minutes in effort["minutes"].items()
    }
    added = sum(out["minutes_added"].values())
    if accuracy is not None and before.accuracy is not None and added > 0:
        out["accuracy_gain_per_minute"] = round((accuracy - before.accuracy) / added, 6)
    return out


@dataclass
class Learned:
    """What a retrain learned and what its report says, before anything is stored."""

    data: adapter.TrainingData
    estimator: CountTagger
    number: int  # the version it will be
    warm_started: bool
    full_fit_answers: int  # the answers of the last full fit it descends from (itself if full)
    full_fit_chosen: int  # of them, those chosen by value (`_chosen_answers`)
    evaluation: dict
    consistency: float | None
    table: list[dict]
    windows: list | None  # the new version's verification windows (None: the project asks none)
    count_round: rounds.CountRound  # the count tasks it asks next, and the task mix
    timings: dict[str, float]
    cost_setting: costs.CostSetting  # the project's cost matrix when it was fitted
    cost: dict  # the version's cost report in that matrix's currency
    calibration: dict  # the temperatures served and where they come from


def version_learn(*, project_id: int, current: ModelVersion | None) -> Learned:
    """Read the project's answers, fit the next version from them and build its report; writes
    nothing."""
    timings: dict[str, float] = {}
    tic = time.perf_counter()
    excluded = selectors.flagged_annotator_ids(project_id)
    data = adapter.training_data_load(project_id=project_id, excluded_annotators=excluded)
    full_fit_answers, full_fit_chosen = _full_fit_answers(current)
    chosen = _chosen_answers(data)
    suits = current is not None and warm_start_suits(
        full_fit_answers,
        data.answers_total,
        asked=asked_share(data.fit, data.training_tokens),
        chosen_since=chosen - (full_fit_chosen or 0),
    )
    warm = _warm_start(current) if suits else None
    timings["read"] = time.perf_counter() - tic
    if len(data.fit) == 0:
        raise RetrainError("No observations to fit: every answer is held out or flagged.")
    if data.mechanism is None and data.verifications is None and not data.fit.counts.any():
        raise NotEnoughAnswers(
            "Not enough answers to learn from yet: every answer so far counts 0 of each tag it "
            "asks. The model is trained as soon as answers count some tags."
        )
    estimator = CountTagger(
        word_classes=_reusable_word_classes(current, warm, data),
        # Gold sentences, when there are enough, calibrate better than held-out answers.
        calibrate=not report.gold_calibrates(data.evaluation_sentences),
        random_state=RANDOM_STATE,
    )
    estimator.fit(
        data.sentences,
        data.fit,
        data.tagset,
        warm_start=warm,
        text=data.text,
        mechanism=data.mechanism,
        verifications=data.verifications,
        uniform=data.fit_uniform,
    )
    timings.update(estimator.timings_)
    tagger = estimator.tagger_
    tic = time.perf_counter()
    # The gold sentences are read once: calibration, report and cost figures share the read.
    gold_sentences, gold_tags = data.evaluation_sentences, data.evaluation_tags
    gold_forms = [form for sentence in gold_sentences for form in sentence]
    gold_raw = tagger.token_proba(gold_sentences, calibrated=False) if gold_forms else None
    calibration = report.gold_calibration(tagger, gold_sentences, gold_tags, raw=gold_raw) or {
        "source": estimator.calibration_source_,
        "temperature": estimator.temperature_,
        "unseen_temperature": estimator.unseen_temperature_,
    }
    tagger.temperature_ = calibration["temperature"]
    tagger.unseen_temperature_ = calibration["unseen_temperature"]

    gold_probs = None if gold_raw is None else tagger.calibrated(gold_raw, gold_forms)
    evaluation = report.evaluation_report(tagger, gold_sentences, gold_tags, probs=gold_probs)
    served_probs, place = _served_probabilities(tagger, data)
    probs = served_probs.take([place[sentence_id] for sentence_id in data.sentence_ids.tolist()])
    consistency = report.held_out_consistency(probs, data.held_out)
    table = report.annotator_table(
        probs,
        data.judged,
        annotators=data.answers.annotators,
        answers=data.answers.answers,
        median_seconds=data.answers.median_seconds,
        flag_threshold=estimator.flag_threshold,
        min_observations=estimator.min_flag_observations_,
        mechanism=data.mechanism,
    )
    verification.table_add_verification(
        table,
        probs=probs,
        judged=data.verifications_judged,
        fitted=estimator.verification_reliability_,
        flag_threshold=estimator.flag_threshold,
        min_observations=estimator.min_flag_observations_,
    )
    names = _usernames(row["annotator"] for row in table)
    for row in table:
        row["username"] = names.get(row["annotator"], "")
    table.sort(key=lambda row: (-row["answers"], row["annotator"]))

    setting = costs.cost_matrix_get(project_id=project_id)
    cost = costs.cost_figures(
        tagger=tagger, setting=setting, sentences=gold_sentences, tags=gold_tags, probs=gold_probs
    )
    if calibration["source"] == "gold":  # not scored on the sentences it was fitted to
        cost["calibration_error"] = calibration["ece_after"]
    timings["evaluate"] = time.perf_counter() - tic

    tic = time.perf_counter()
    number = (current.number if current else 0) + 1
    windows = _verification_round(
        project_id=project_id, served_probs=served_probs, data=data, number=number
    )
    timings["verification_round"] = time.perf_counter() - tic
    tic = time.perf_counter()
    count_round = _count_round(
        project_id=project_id, served_probs=served_probs, data=data, windows=windows, number=number
    )
    timings["count_round"] = time.perf_counter() - tic
    return Learned(
        data=data,
        estimator=estimator,
        number=number,
        warm_started=warm is not None,
        full_fit_answers=full_fit_answers if warm is not None else data.answers_total,
        full_fit_chosen=(full_fit_chosen or 0) if warm is not None else chosen,
        evaluation=evaluation,
        consistency=consistency,
        table=table,
        windows=windows,
        count_round=count_round,
        timings=timings,
        cost_setting=setting,
        cost=cost,
        calibration=calibration,
    )


def version_store(
    *,
    project_id: int,
    run: RetrainRun,
    owner: str,
    current: ModelVersion | None,
    learned: Learned,
    started: float,
) -> RetrainOutcome:
    """Write the model file, then the version, its report, the annotator rows, the run and the
    webhook deliveries in one transaction, after re-confirming the lock inside it."""
    data, estimator, number, table = learned.data, learned.estimator, learned.number, learned.table
    tagger, evaluation, timings = estimator.tagger_, learned.evaluation, learned.timings
    tic = time.perf_counter()
    name = default_storage.save(
        f"models/project-{project_id}/v{number}-{owner[:8]}.npz",
        ContentFile(
            adapter.model_dump(
                tagger,
                metadata={
                    "project": project_id,
                    "version": number,
                    "code": code_version(),
                },
            )
        ),
    )
    try:
        with transaction.atomic():
            if not locks.lock_confirm(project_id=project_id, owner=owner):
                raise LockLost("The retrain lock expired and was taken over; nothing written.")
            timings["write"] = time.perf_counter() - tic
            timings["total"] = time.perf_counter() - started
            version = ModelVersion.objects.create(
                project_id=project_id,
                number=number,
                file=name,
                observations_count=data.observations_total,
                newest_observation=data.newest_observation,
                hyperparameters={
                    "model": estimator.model,
                    "schedule": estimator.schedule_.as_dict(),
                    "ridge": estimator.ridge_,
                    "alpha": estimator.alpha_,
                    "min_flag_observations": estimator.min_flag_observations_,
                    "random_state": RANDOM_STATE,
                    "fitted_observations": len(data.fit),
                    "answers": data.answers_total,  # of both kinds
                    "full_fit_answers": learned.full_fit_answers,  # what a warm start weighs
                    "full_fit_chosen": learned.full_fit_chosen,
                    "excluded_observations": data.excluded_observations,
                    "em_iterations": len(estimator.history_),
                    "model_kind": tagger.kind,
                    "calibration": learned.calibration,
                    "text_tokens": data.text_tokens,
                    "word_classes_reused": isinstance(estimator.word_classes, WordClasses),
                    "privacy": (
                        None
                        if data.mechanism is None
                        else {"mechanism": data.mechanism.name, "alpha": data.mechanism.alpha}
                    ),
                },
                timings={key: round(value, 3) for key, value in timings.items()},
                code_version=code_version(),
                warm_started_from=current.number if learned.warm_started else None,
            )
            AccuracyReport.objects.create(
                version=version,
                count_consistency=learned.consistency,
                held_out_observations=len(data.held_out),
                skipped_observations=len(estimator.skipped_observations_),
                annotators=table,
                effort=effort_with_gain(data.effort, evaluation.get("accuracy"), current),
                **evaluation,
            )
            costs.cost_report_store(
                version=version, setting=learned.cost_setting, figures=learned.cost
            )
            _annotator_quality_store(project_id=project_id, number=number, table=table)
            # The members' rows before the project's and then the tasks': the order a lease
            # takes them in.
            memberships_flag_update(
                project_id=project_id,
                flags={row["annotator"]: row["flag_reason"] for row in table if row["flagged"]},
            )
            if learned.windows is not None:
                verification_round_create(
                    project_id=project_id, version_number=number, windows=learned.windows
                )
            value_round_create(
                project_id=project_id,
                tasks=learned.count_round.tasks,
                verification_share_auto=learned.count_round.verification_share_auto,
            )
            live_model_reset(project_id=project_id, version=version)
            run.status = RetrainRun.Status.SUCCEEDED
            run.version_number = number
            run.finished_at = timezone.now()
            run.seconds = time.perf_counter() - started
            run.save(update_fields=["status", "version_number", "finished_at", "seconds"])
            summary = selectors.report_summary(version=version)
            delivery_ids = deliveries_create(
                project_id=project_id,
                event=summary["event"],
                version_number=number,
                summary=summary,
            )
    except BaseException:
        default_storage.delete(name)
        raise
    logger.info(
        "retrain succeeded",
        extra={
            "project_id": project_id,
            "version": number,
            "observations": data.observations_total,
            "accuracy": evaluation["accuracy"],
            "count_consistency": learned.consistency,
            "seconds": round(run.seconds, 3),
        },
    )
    return RetrainOutcome(
        status=run.status,
        run_id=run.pk,
        version=version,
        summary=summary,
        delivery_ids=delivery_ids,
    )


def _served_probabilities(tagger, data: adapter.TrainingData):
    """The new version's probabilities of every sentence its reports and next rounds read
    (the served sentences, then any other answered one), computed once; and the place of each
    sentence id in them."""
    served = data.served or []
    sentences = [tokens for _, tokens, _ in served]
    place = {sentence_id: i for i, (sentence_id, _, _) in enumerate(served)}
    for sentence_id, tokens in zip(data.sentence_ids.tolist(), data.sentences, strict=True):
        if sentence_id not in place:
            place[sentence_id] = len(sentences)
            sentences.append(tokens)
    return report.TokenProbabilities.of(tagger, sentences), place


def _verification_round(
    *, project_id: int, served_probs: report.TokenProbabilities, data: adapter.TrainingData,
    number: int,
):  # fmt: skip
    """The verification windows of the new version (`learning.verification.round_windows`), or
    None when the project asks no verification tasks (a share of 0, or a private project: a
    yes/no answer is not released through its mechanism)."""
    share, private, window = Project.objects.values_list(
        "verification_share", "private", "window_size"
    ).get(pk=project_id)
    if private or (share is not None and share <= 0):  # null: the values choose the mix
        return None
    return verification.round_windows(
        served_probs, data.served or [], window=window, random_state=number
    )


def _count_round(
    *, project_id: int, served_probs: report.TokenProbabilities, data: adapter.TrainingData,
    windows: list | None, number: int,
) -> rounds.CountRound:  # fmt: skip
    """The count tasks the new version asks next and the task mix its values choose
    (`learning.rounds`)."""
    window, tags_per_task = Project.objects.values_list("window_size", "tags_per_task").get(
        pk=project_id
    )
    served = data.served or []
    training_rows = [i for i, (_, _, gold) in enumerate(served) if not gold]
    training = [served[i][:2] for i in training_rows]
    asked = adapter.asked_regions(
        project_id=project_id,
        sentence_index={sentence_id: i for i, (sentence_id, _) in enumerate(training)},
        n_tags=len(data.tagset),
    )
    return rounds.count_round(
        served_probs.take(training_rows),
        training,
        window=window,
        tags_per_task=tags_per_task,
        asked=asked,
        verification=windows,
        seconds=data.seconds_per_answer,
        random_state=number,
        answered=(
            None
            if data.mechanism is not None  # releases of a privacy mechanism, not counts
            else rounds.answered_rows([data.fit, data.held_out], data.sentence_ids, training)
        ),
        verified=rounds.verified_answers(data.verifications, data.sentence_ids, training),
    )


def _annotator_quality_store(*, project_id: int, number: int, table: list[dict]) -> None:
    fields = ["answers", "median_seconds", "reliability", "noise_variance", "weight", "flagged",
              "flag_reason", "verification_answers", "verification_skill",
              "verification_yes_rate"]  # fmt: skip
    AnnotatorQuality.objects.bulk_create(
        [
            AnnotatorQuality(
                project_id=project_id,
                annotator_id=row["annotator"],
                version_number=number,
                **{key: row[key] for key in fields},
            )
            for row in table
        ],
        update_conflicts=True,
        unique_fields=["project", "annotator"],
        update_fields=[*fields, "version_number", "updated_at"],
    )


def _run_record(*, project_id: int, trigger: str, task_id: str, status: str, message: str):
    now = timezone.now()
    return RetrainRun.objects.create(
        project_id=project_id,
        trigger=trigger,
        task_id=task_id,
        status=status,
        started_at=now,
        finished_at=now if status != RetrainRun.Status.RUNNING else None,
        seconds=0.0 if status != RetrainRun.Status.RUNNING else None,
        error=message,
    )


def retrain_run(*, project_id: int, trigger: str, task_id: str = "") -> RetrainOutcome:
    """Retrain the project if it has observations newer than its current model (see the module
    docstring). Returns what happened; raises after recording a failed run."""
    if not Project.objects.filter(pk=project_id).exists():
        return RetrainOutcome(status=RetrainRun.Status.SKIPPED, message="No such project.")
    owner = locks.new_owner()
    if not locks.lock_claim(project_id=project_id, owner=owner):
        message = "Another retrain of this project is running."
        run = _run_record(
            project_id=project_id,
            trigger=trigger,
            task_id=task_id,
            status=RetrainRun.Status.SKIPPED,
            message=message,
        )
        logger.info("retrain skipped: locked", extra={"project_id": project_id})
        return RetrainOutcome(status=run.status, run_id=run.pk, message=message)
    try:
        RetrainRun.objects.filter(project_id=project_id, status=RetrainRun.Status.RUNNING).update(
            status=RetrainRun.Status.FAILED,
            error=RetrainRun.WORKER_STOPPED,
        )
        current = selectors.current_version(project_id=project_id)
        if adapter.newest_observation_id(project_id=project_id) <= (
            current.newest_observation if current else 0
        ):
            message = "The current model already includes every observation."
            run = _run_record(
                project_id=project_id,
                trigger=trigger,
                task_id=task_id,
                status=RetrainRun.Status.SKIPPED,
                message=message,
            )
            return RetrainOutcome(status=run.status, run_id=run.pk, message=message)
        run = _run_record(
            project_id=project_id,
            trigger=trigger,
            task_id=task_id,
            status=RetrainRun.Status.RUNNING,
            message="",
        )
        logger.info("retrain started", extra={"project_id": project_id, "run_id": run.pk})
        try:
            started = time.perf_counter()
            learned = version_learn(project_id=project_id, current=current)
            return version_store(
                project_id=project_id, run=run, owner=owner, current=current, learned=learned,
                started=started,
            )  # fmt: skip
        except NotEnoughAnswers as exc:
            RetrainRun.objects.filter(pk=run.pk).update(
                status=RetrainRun.Status.SKIPPED, finished_at=timezone.now(), seconds=0.0,
                error=str(exc),
            )  # fmt: skip
            logger.info("retrain skipped: not enough answers", extra={"project_id": project_id})
            return RetrainOutcome(status=RetrainRun.Status.SKIPPED, run_id=run.pk, message=str(exc))
        except BaseException as exc:
            if isinstance(exc, Exception) and not Project.objects.filter(pk=project_id).exists():
                # Deleted meanwhile (the delete does not wait for a retrain): whatever failed
                # for want of its rows, nothing was written (its lock row went with it).
                logger.info("retrain discarded: project deleted", extra={"project_id": project_id})
                return RetrainOutcome(
                    status=RetrainRun.Status.SKIPPED,
                    message="The project was deleted during the retrain; its result was discarded.",
                )
            RetrainRun.objects.filter(pk=run.pk).update(
                status=RetrainRun.Status.FAILED,
                finished_at=timezone.now(),
                seconds=(timezone.now() - run.started_at).total_seconds(),
                error=f"{type(exc).__name__}: {exc}"[:2000],
            )
            logger.exception(
                "retrain failed",
                extra={"project_id": project_id, "run_id": run.pk, "error": str(exc)[:200]},
            )
            raise
    finally:
        locks.lock_release(project_id=project_id, owner=owner)


# Requests, schedules, the sweep ---------------------------------------------------------------


def retrain_request_check(*, project: Project) -> bool:
    """For "retrain now": is there anything new to learn from? Raises `Conflict` when the
    project has no observations at all."""
    if not adapter.newest_observation_id(project_id=project.pk):
        raise NoObservations("This project has no observations yet.")
    due, _ = selectors.retrain_due(project_id=project.pk)
    return due


def retrain_schedule_set(*, project: Project, interval_minutes, enabled=True) -> RetrainSchedule:
    """Set how often the periodic sweep may retrain the project."""
    if (
        isinstance(interval_minutes, bool)
        or not isinstance(interval_minutes, int)
        or not 1 <= interval_minutes <= MAX_INTERVAL_MINUTES
    ):
        raise InvalidInput(
            "Invalid schedule.",
            fields={"interval_minutes": [f"A whole number from 1 to {MAX_INTERVAL_MINUTES}."]},
        )
    if not isinstance(enabled, bool):
        raise InvalidInput("Invalid schedule.", fields={"enabled": ["true or false."]})
    schedule, _ = RetrainSchedule.objects.update_or_create(
        project=project, defaults={"interval_minutes": interval_minutes, "enabled": enabled}
    )
    return schedule


def sweep_claim(*, project_id: int, now=None) -> bool:
    """Record that the sweep enqueues the project now; False if another sweep just did (a
    conditional UPDATE checked by its row count)."""
    now = now or timezone.now()
    RetrainSchedule.objects.bulk_create(
        [
            RetrainSchedule(
                project_id=project_id, interval_minutes=settings.TALLY_RETRAIN_INTERVAL_MINUTES
            )
        ],
        ignore_conflicts=True,
    )
    schedule = RetrainSchedule.objects.get(project_id=project_id)
    previous = schedule.last_enqueued_at
    return (
        RetrainSchedule.objects.filter(project_id=project_id, last_enqueued_at=previous).update(
            last_enqueued_at=now
        )
        == 1
    )


def model_files_of_project(*, project_id: int) -> list[str]:
    """The storage names of a project's model files (to delete once the project's rows are)."""
    return [
        name
        for name in ModelVersion.objects.filter(project_id=project_id).values_list(
            "file", flat=True
        )
        if name
    ]


def model_files_delete(names: list[str]) -> None:
    """Delete model files from storage; a file already gone is no error."""
    for name in names:
        default_storage.delete(name)
