"""Writes of the learning app: the retrain job, schedules, and the sweep's bookkeeping.

`retrain_run` is the job: claim the project's lock; `version_learn` reads through the adapter,
lets the core's retrain policy (`learning.core.policy.plan_version`: exclusion, warm start, word
classes, the fit and its calibration, the annotator table and flags, the next round and the
task mix) plan the next version and builds the report (writing nothing); `version_store`
writes the model file, then the version, its report, the annotator quality rows, the run
record and the webhook deliveries in one transaction (after re-confirming the lock inside it).
Nothing here decides what the version is. A worker killed anywhere before that commit
leaves the previous version current and nothing half-written visible (at worst an orphan model
file, which is deleted when the job fails in-process). Pushing the result is the caller's job,
after this returns (the transaction has committed by then): see `learning.tasks`.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field, replace

import numpy as np
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
from learning.core.policy import (
    NothingToFit,
    NothingToLearn,
    PolicySettings,
    PreviousVersion,
    RoundSettings,
    VersionPlan,
    plan_version,
)
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

# The retrain passes the policy nothing but the project's facts (its answers, a privacy
# mechanism, the previous version): the schedule is the one CountTagger's "auto" picks, the same
# as simulate_crowd measures (learning.core.schedule); the rounds' seed is this plus the number.
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


def _previous(current: ModelVersion | None, flagged: set[int]) -> PreviousVersion | None:
    """The current version as the retrain policy reads it: the answers of the last full fit it
    descends from, of every kind and of those chosen by value (a chain of warm versions absorbs
    no more than one warm fit does, docs/decisions/008-warm-retrains.md; versions stored
    before the fields: their own answers, and None for the chosen ones), the text its word
    classes were learned from, the annotators it flagged, and its model file, read when
    needed."""
    if current is None:
        return None
    hyper = current.hyperparameters
    answers = hyper.get("full_fit_answers", hyper.get("answers", current.observations_count))
    return PreviousVersion(
        number=current.number,
        full_fit_answers=int(answers),
        full_fit_chosen=hyper.get("full_fit_chosen"),
        text_tokens=hyper.get("text_tokens"),
        flagged=np.array(sorted(flagged), dtype=np.int64),
        load=lambda: _warm_start(current),
    )


def _warm_start(current: ModelVersion):
    try:
        return adapter.model_load(current.file.name)
    except (OSError, ValueError) as exc:  # a missing or unreadable file: learn from scratch
        logger.warning(
            "cannot warm-start from the current version; fitting from scratch",
            extra={"project_id": current.project_id, "version": current.number, "error": str(exc)},
        )
        return None


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
    plan: VersionPlan  # the retrain policy's decisions (learning.core.policy)
    number: int  # the version it will be
    evaluation: dict
    windows: list | None  # the new version's verification windows (None: the project asks none)
    count_round: rounds.CountRound  # the count tasks it asks next, and the task mix
    timings: dict[str, float]
    cost_setting: costs.CostSetting  # the project's cost matrix when it was fitted
    cost: dict  # the version's cost report in that matrix's currency

    @property
    def estimator(self) -> CountTagger:
        return self.plan.estimator


def version_learn(*, project_id: int, current: ModelVersion | None) -> Learned:
    """Read the project's answers through the adapter, plan the next version with the core's
    retrain policy and build its report; writes nothing."""
    tic = time.perf_counter()
    flagged = selectors.flagged_annotator_ids(project_id)
    data = adapter.training_data_load(
        project_id=project_id,
        excluded_annotators=flagged,
        served_since=current.created_at if current is not None else None,
    )
    number = (current.number if current else 0) + 1
    facts = adapter.retrain_facts(data, project_id=project_id, number=number)
    share, window, tags_per_task = Project.objects.values_list(
        "verification_share", "window_size", "tags_per_task"
    ).get(pk=project_id)
    settings = PolicySettings(
        rounds=RoundSettings(
            window=window, tags_per_task=tags_per_task, verification_share=share
        ),  # null: the values choose the mix
        seed=RANDOM_STATE,
    )
    read = time.perf_counter() - tic
    try:
        plan = plan_version(facts, _previous(current, flagged), settings)
    except NothingToFit as exc:
        raise RetrainError(str(exc)) from None
    except NothingToLearn as exc:
        raise NotEnoughAnswers(str(exc)) from None
    timings = {"read": read, **plan.timings}
    tagger = plan.estimator.tagger_
    tic = time.perf_counter()
    # The gold sentences are read once: report and cost figures share the read.
    gold_sentences, gold_tags = data.evaluation_sentences, data.evaluation_tags
    gold_probs = tagger.token_proba(gold_sentences) if gold_sentences else None
    evaluation = report.evaluation_report(tagger, gold_sentences, gold_tags, probs=gold_probs)
    table = [dict(row) for row in plan.table]
    names = _usernames(row["annotator"] for row in table)
    for row in table:
        row["username"] = names.get(row["annotator"], "")
    table.sort(key=lambda row: (-row["answers"], row["annotator"]))

    setting = costs.cost_matrix_get(project_id=project_id)
    cost = costs.cost_figures(
        tagger=tagger, setting=setting, sentences=gold_sentences, tags=gold_tags, probs=gold_probs
    )
    if plan.calibration.source == "gold":  # not scored on the sentences it was fitted to
        cost["calibration_error"] = plan.calibration.gold["ece_after"]
    timings["evaluate"] = time.perf_counter() - tic
    served = data.served or []
    training = [(sentence_id, tokens) for sentence_id, tokens, gold in served if not gold]
    return Learned(
        data=data,
        plan=replace(plan, table=table),
        number=number,
        evaluation=evaluation,
        windows=None if plan.windows is None else verification.as_windows(plan.windows),
        count_round=rounds.as_count_round(plan.counts, training),
        timings=timings,
        cost_setting=setting,
        cost=cost,
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
    data, plan, number = learned.data, learned.plan, learned.number
    estimator, table = plan.estimator, plan.table
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
                    "full_fit_answers": plan.full_fit_answers,  # what a warm start weighs
                    "full_fit_chosen": plan.full_fit_chosen,
                    "excluded_observations": data.excluded_observations,
                    "em_iterations": len(estimator.history_),
                    "model_kind": tagger.kind,
                    "calibration": plan.calibration.as_dict(),
                    "text_tokens": data.text_tokens,
                    "word_classes_reused": plan.word_classes_reused,
                    "privacy": (
                        None
                        if data.mechanism is None
                        else {"mechanism": data.mechanism.name, "alpha": data.mechanism.alpha}
                    ),
                },
                timings={key: round(value, 3) for key, value in timings.items()},
                code_version=code_version(),
                warm_started_from=current.number if plan.warm_started else None,
            )
            AccuracyReport.objects.create(
                version=version,
                count_consistency=plan.consistency,
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
            "count_consistency": plan.consistency,
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
