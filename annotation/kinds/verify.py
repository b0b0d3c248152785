"""Verification tasks ("Are all of these tags right?"): the rules of a Yes / No answer and the
statement that stores the plain case on PostgreSQL, side by side (tests/annotation/
test_hotpath.py feeds both the same answers). The rounds of verification tasks a retrain makes
are `services.verification_round_create`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from annotation import hotpath
from annotation.hotpath.statements import (
    ANSWERED,
    SUBMISSION_HEAD,
    statement,
    submission_and_lease,
)
from annotation.models import Project, TaskKind
from common.exceptions import InvalidInput

KIND = TaskKind.VERIFY.value
_SMALLINT = 2**15


def verification_check(
    answer, wrong, *, length: int
) -> tuple[tuple[bool, int | None], dict[str, list[str]]]:
    """((answer, wrong), errors by field): `answer` true (Yes) or false (No); `wrong`, only
    after a No, null or the position (0-based) of a word of the window of `length` words."""
    errors: dict[str, list[str]] = {}
    if not isinstance(answer, bool):
        errors["answer"] = ["true (all of these tags are right) or false (one is not)."]
    if wrong is not None:
        if answer is True:
            errors["wrong"] = ["Only after a No (answer false)."]
        elif isinstance(wrong, bool) or not isinstance(wrong, int) or not 0 <= wrong < length:
            errors["wrong"] = [f"The position of a word of the window: 0 to {length - 1}, or null."]
    return (answer, wrong), errors


def answer_check(project: Project, task, given) -> tuple[list[int], bool, int | None]:
    """([], answer, wrong) of the answer `given` (`services.observations.Answer`) to the
    verification `task`, against the project as it stands; `InvalidInput` says what is wrong."""
    if project.private:  # a Yes / No is not released through the project's mechanism
        raise InvalidInput(
            "This project became private after this task was given: a verification "
            "answer would not be randomized, so it is not taken. Take a new task.",
            fields={"answer": ["Not in a private project."]},
        )
    if given.values is not None or given.privacy is not None:
        raise InvalidInput(
            "This is a verification task: answer it with `answer` (and optionally `wrong`).",
            fields={"counts": ["Not for a verification task."]},
        )
    (answer, wrong), errors = verification_check(given.answer, given.wrong, length=task.length)
    if errors:
        raise InvalidInput("The answer is not valid for this task.", fields=errors)
    return [], answer, wrong


# The statement --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Row:
    """What `SUBMIT` answers, as count's `Row`: the observation as stored has the attributes
    `observation_out` reads of a verification answer."""

    user_id: int
    is_active: bool
    project_id: int | None
    project_updated_at: datetime | None
    id: int | None
    assignment_id: int | None
    kind: str | None
    shown_tags: list[int] | None
    model_version: int | None
    answer: bool | None
    wrong: int | None
    seconds_on_device: float | None
    idempotency_key: str | None
    submitted_at: datetime | None


# A verification answer (`kind` verify): caller, lease, task, project, membership and replay
# check as in count's `SUBMIT`, the answer checked against the task (`verification_check`: a
# Yes names no word; after a No, a wrong word is a position in the window or null; none in a
# project that became private after the lease, as a Yes / No is not randomized), and, when
# all is in order, the lease marked answered and the answer stored with the tags the task showed
# and the version that chose them. Parameters: user_id, key, assignment, idempotency_key,
# answer, wrong, seconds, now. As there, whatever it does not store goes to the service.
_STORE = (
    """    valid AS (
        SELECT ctx.*
        FROM ctx
        WHERE ctx.is_active AND ctx.mine AND ctx.is_member AND NOT ctx.key_used
          AND ctx.kind = '{verify}' AND NOT ctx.private
          AND ctx.project_status <> '{archived}' AND ctx.status IN ('{leased}', '{expired}')
          AND %(answer)s::boolean IS NOT NULL
          AND (%(wrong)s::smallint IS NULL
               OR (NOT %(answer)s::boolean
                   AND %(wrong)s::smallint BETWEEN 0 AND ctx.length - 1))
    ),
"""  # noqa: S608 (constant text: the models' choices, written in by `statement`)
    + ANSWERED
    + """    stored AS (
        INSERT INTO annotation_observation
            (project_id, annotator_id, assignment_id, sentence_id, start, length, kind, tags,
             counts, shown_tags, model_version, answer, wrong, is_gold, seconds_on_device,
             idempotency_key, submitted_at, mechanism, alpha)
        SELECT v.project_id, v.user_id, answered.id, v.sentence_id, v.start, v.length,
               '{verify}', '[]'::jsonb, '[]'::jsonb, v.shown_tags, v.model_version,
               %(answer)s::boolean, %(wrong)s::smallint, v.is_gold,
               %(seconds)s::double precision, %(idempotency_key)s::varchar,
               %(now)s::timestamptz, '', NULL
        FROM answered CROSS JOIN valid v
        RETURNING id, assignment_id, kind, shown_tags, model_version, answer, wrong,
                  seconds_on_device, idempotency_key, submitted_at
    )
"""
)
_ANSWER_ROW = """
SELECT ctx.user_id, ctx.is_active, ctx.project_id, ctx.project_updated_at,
       s.id, s.assignment_id, s.kind, s.shown_tags, s.model_version, s.answer, s.wrong,
       s.seconds_on_device, s.idempotency_key, s.submitted_at
FROM ctx LEFT JOIN stored s ON true
"""
SUBMIT = statement(SUBMISSION_HEAD + _STORE + _ANSWER_ROW)  # noqa: S608 (constant text)
# The same, and the next task leased with it when the phone asks for one
# (`statements.submission_and_lease`).
SUBMIT_AND_LEASE = submission_and_lease(_STORE, _ANSWER_ROW)


def fits_statement(submission) -> bool:
    """Whether `SUBMIT` can check this answer (an `annotation.cycle.Submission` to a
    verification task): Yes or No, a wrong word that fits a smallint or none, and nothing of a
    count answer."""
    wrong = submission.wrong
    return (
        isinstance(submission.answer, bool)
        and submission.values is None
        and submission.privacy is None
        and (wrong is None or (isinstance(wrong, int) and 0 <= wrong < _SMALLINT))
    )


def submit(
    *,
    common: dict,
    answer: bool,
    wrong: int | None,
    lease: dict | None = None,
) -> Row | tuple[Row, hotpath.NextTaskRow] | None:
    """Store a verification answer if it is in order (`SUBMIT`); None when the token names
    nobody. `common`: `hotpath.submission_common`; `wrong`: None or a whole number that fits a
    smallint. With `lease`, the next task too (`hotpath.submission_store`)."""
    return hotpath.submission_store(
        (SUBMIT, SUBMIT_AND_LEASE),
        Row,
        common=common,
        answer={"answer": answer, "wrong": wrong},
        lease=lease,
    )


def answer_of(submission) -> dict:
    """`submit`'s answer arguments from a `Submission` that `fits_statement`."""
    return {"answer": submission.answer, "wrong": submission.wrong}
