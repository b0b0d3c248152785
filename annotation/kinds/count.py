"""Count tasks ("How many NOUNs are in the highlighted part?"): the rules of an answer and the
statement that stores the plain case on PostgreSQL, side by side.

The rules have two parts: what holds whatever the task (`counts_well_formed`, which decides
whether the statement may check the answer at all), and the task's own (`counts_check`,
`privacy_check`). The statement (`SUBMIT`) checks the second part in SQL;
tests/annotation/test_hotpath.py proves that it stores exactly what they accept.

Private projects (issue 13): the phone sends `released` values, randomized by the project's
mechanism, with the mechanism's parameters (`privacy`: name and alpha), never the true counts.
A released value is a whole number from 0 to the window (the releases of several tags are
independent, so their sum may exceed the window).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from annotation import hotpath, selectors
from annotation.hotpath.statements import (
    ANSWERED,
    SUBMISSION_HEAD,
    statement,
    submission_and_lease,
)
from annotation.models import MAX_TAGS, Project, TaskKind
from common.exceptions import InvalidInput

KIND = TaskKind.COUNT.value
_INT32 = 2**31


def _is_whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def counts_well_formed(counts: Mapping[str, Any]) -> bool:
    """The counts are at most `MAX_TAGS` whole numbers that fit a 32-bit integer, by tag name:
    what any task's answer is, before its own rules."""
    return len(counts) <= MAX_TAGS and all(
        isinstance(name, str) and _is_whole(value) and -_INT32 < value < _INT32
        for name, value in counts.items()
    )


def counts_check(
    counts: Mapping[str, Any], *, names: list[str], length: int, released: bool = False
) -> tuple[list[int], dict[str, list[str]]]:
    """(the counts in the order of `names`, errors by field): one count for each of the task's
    tag `names` and no other, each a whole number from 0 to the window's `length`, together at
    most `length` (unless they are `released` values of a private project, each drawn on its
    own)."""
    field = "released" if released else "counts"
    if not isinstance(counts, Mapping) or set(counts) != set(names):
        return [], {field: [f"Give exactly one count for each of: {', '.join(names)}."]}
    errors: dict[str, list[str]] = {}
    values = []
    for name in names:
        value = counts[name]
        if not _is_whole(value) or not 0 <= value <= length:
            errors.setdefault(field, []).append(
                f"Count for {name} must be a whole number between 0 and {length}."
            )
        else:
            values.append(value)
    if not errors and not released and sum(values) > length:
        errors["counts"] = [f"The counts add up to more than the {length} highlighted words."]
    return values, errors


def privacy_check(
    project: Project, *, counts_given: bool, privacy: Mapping[str, Any] | None
) -> dict[str, list[str]]:
    """Errors by field of an answer's form against the project's privacy: a private project
    takes only `released` values with the project's own mechanism parameters (`privacy`); any
    other project only `counts`."""
    if not project.private:
        if counts_given and privacy is None:
            return {}
        return {"released": ["This project is not private: send the true `counts`."]}
    if counts_given:
        return {
            "counts": [
                "This project is private: send the values released on the phone (`released`) "
                "and the mechanism's parameters (`privacy`), never the true counts."
            ]
        }
    expected = f'{{"mechanism": "{project.mechanism}", "alpha": {project.alpha}}}'
    if privacy is None:
        return {"privacy": [f"Required in this private project: {expected}."]}
    if privacy.get("mechanism") != project.mechanism or privacy.get("alpha") != project.alpha:
        return {
            "privacy": [
                f"The values were released with other parameters than the project's ({expected})."
            ]
        }
    return {}


def answer_check(project: Project, task, given) -> tuple[list[int], None, None]:
    """(count values, None, None) of the answer `given` (`services.observations.Answer`) to the
    count `task`, against the project as it stands; `InvalidInput` says what is wrong."""
    if given.answer is not None or given.wrong is not None:
        raise InvalidInput(
            "This is a count task: answer it with `counts`.",
            fields={"answer": ["Only for a verification task."]},
        )
    errors = privacy_check(project, counts_given=given.counts is not None, privacy=given.privacy)
    if errors:
        raise InvalidInput("The answer does not fit this project's privacy.", fields=errors)
    all_names = selectors.project_tag_names(project=project)
    values, errors = counts_check(
        given.values,
        names=[all_names[i] for i in task.tags],
        length=task.length,
        released=project.private,
    )
    if errors:
        raise InvalidInput("The counts are not valid for this task.", fields=errors)
    return values, None, None


# The statement --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Row:
    """What `SUBMIT` answers: the caller (absent when the token is unknown), the project of the
    assignment (None when there is no such assignment) and, when the statement stored the
    answer, the observation as stored (`id` and the rest None otherwise). Its attributes are
    those `observation_out` reads of an `Observation`."""

    user_id: int
    is_active: bool
    project_id: int | None
    project_updated_at: datetime | None
    id: int | None
    assignment_id: int | None
    tags: list[int] | None
    counts: list[int] | None
    seconds_on_device: float | None
    idempotency_key: str | None
    submitted_at: datetime | None
    mechanism: str | None
    alpha: float | None


# The whole submission: caller, lease, task, project, membership and replay check (`ctx`), the
# counts checked against the task (`given`, `valid`), and, when all is in order, the lease marked
# answered and the observation stored. Parameters: user_id, key, assignment, idempotency_key,
# names and counts (the submitted counts as two arrays), released, mechanism, alpha, seconds, now.
#
# A private project's answer is `released` values with the mechanism's parameters, which must be
# the project's; the released values of several tags are drawn independently, so their sum is
# not bounded by the window. Any other project takes true counts, without parameters.
#
# The check is a gate, not the judge: it stores exactly what `counts_check` accepts (the
# counts name the task's tags and no other, each a whole number from 0 to the window, together at
# most the window) and `privacy_check` allows, and whatever it does not store goes to
# `services.observation_submit`, which says why (or returns the answer a replay stored, or loses
# a race properly).
_STORE = (
    """    given AS (
        SELECT jsonb_agg(g.position ORDER BY g.position) AS tags,
               jsonb_agg(x.n ORDER BY g.position) AS counts,
               bool_and(x.n BETWEEN 0 AND ctx.length) AS in_range,
               sum(x.n) AS total
        FROM ctx
        CROSS JOIN unnest(%(names)s::text[], %(counts)s::integer[]) AS x (name, n)
        LEFT JOIN annotation_tag g ON g.project_id = ctx.project_id AND g.name = x.name
    ),
    valid AS (
        SELECT ctx.*, given.counts AS count_values
        FROM ctx CROSS JOIN given
        WHERE ctx.is_active AND ctx.mine AND ctx.is_member AND NOT ctx.key_used
          AND ctx.kind = '{count}'
          AND ctx.project_status <> '{archived}' AND ctx.status IN ('{leased}', '{expired}')
          AND given.tags = ctx.tags AND given.in_range
          AND CASE WHEN ctx.private
                   THEN %(released)s::boolean
                        AND ctx.project_mechanism = %(mechanism)s::varchar
                        AND ctx.project_alpha = %(alpha)s::double precision
                   ELSE NOT %(released)s::boolean AND %(mechanism)s::varchar IS NULL
                        AND %(alpha)s::double precision IS NULL
                        AND given.total <= ctx.length
              END
    ),
"""  # noqa: S608 (constant text: the models' choices, written in by `statement`)
    + ANSWERED
    + """    stored AS (
        INSERT INTO annotation_observation
            (project_id, annotator_id, assignment_id, sentence_id, start, length, tags, counts,
             is_gold, seconds_on_device, idempotency_key, submitted_at, mechanism, alpha)
        SELECT v.project_id, v.user_id, answered.id, v.sentence_id, v.start, v.length, v.tags,
               v.count_values, v.is_gold, %(seconds)s::double precision,
               %(idempotency_key)s::varchar, %(now)s::timestamptz,
               v.project_mechanism, v.project_alpha
        FROM answered CROSS JOIN valid v
        RETURNING id, assignment_id, tags, counts, seconds_on_device, idempotency_key,
                  submitted_at, mechanism, alpha
    )
"""
)
_ANSWER_ROW = """
SELECT ctx.user_id, ctx.is_active, ctx.project_id, ctx.project_updated_at,
       s.id, s.assignment_id, s.tags, s.counts, s.seconds_on_device, s.idempotency_key,
       s.submitted_at, s.mechanism, s.alpha
FROM ctx LEFT JOIN stored s ON true
"""
SUBMIT = statement(SUBMISSION_HEAD + _STORE + _ANSWER_ROW)  # noqa: S608 (constant text)
# The same, and the next task leased with it when the phone asks for one
# (`statements.submission_and_lease`).
SUBMIT_AND_LEASE = submission_and_lease(_STORE, _ANSWER_ROW)


def fits_statement(submission) -> bool:
    """Whether `SUBMIT` can check this answer (an `annotation.cycle.Submission` to a count
    task): well formed whatever the task; the task's own rules are what it mirrors."""
    values = submission.values
    return isinstance(values, dict) and counts_well_formed(values)


def submit(
    *,
    common: dict,
    names: list[str],
    counts: list[int],
    released: bool = False,
    mechanism: str | None = None,
    alpha: float | None = None,
    lease: dict | None = None,
) -> Row | tuple[Row, hotpath.NextTaskRow] | None:
    """Store the answer if it is in order (`SUBMIT`); None when the token names nobody.
    `common`: `hotpath.submission_common`. `names` and `counts`: the submitted counts, well
    formed (`counts_well_formed`); `released` when they are a private project's released
    values, sent with the mechanism's parameters `mechanism` and `alpha`. With `lease`, the next
    task too (`hotpath.submission_store`)."""
    answer = {
        "names": names,
        "counts": counts,
        "released": released,
        "mechanism": mechanism,
        "alpha": None if alpha is None else float(alpha),
    }
    return hotpath.submission_store(
        (SUBMIT, SUBMIT_AND_LEASE), Row, common=common, answer=answer, lease=lease
    )


def answer_of(submission) -> dict:
    """`submit`'s answer arguments from a `Submission` that `fits_statement`."""
    values, privacy = submission.values, submission.privacy or {}
    return {
        "names": list(values),
        "counts": list(values.values()),
        "released": submission.released is not None,
        "mechanism": privacy.get("mechanism"),
        "alpha": privacy.get("alpha"),
    }
