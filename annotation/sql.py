"""Hand-written SQL for the annotator's hot path: token lookup, membership, lease, submit.

The ORM spends a few hundred microseconds of Python building each query; on the cycle that every
annotator repeats all day (lease a task, submit counts) that was most of the request. These
statements are plain strings, portable between PostgreSQL and SQLite (row locks are added where the
database has them), and return plain tuples that the callers turn into model instances.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import nullcontext
from datetime import UTC, datetime
from typing import Any

from django.contrib.auth import get_user_model
from django.db import DEFAULT_DB_ALIAS, connection, connections, transaction
from django.db.backends.postgresql.base import ServerBindingCursor
from django.utils.dateparse import parse_datetime

from annotation.models import Project


def _columns(model, alias: str) -> tuple[list[str], str]:
    names = [field.attname for field in model._meta.concrete_fields]
    columns = ", ".join(f"{alias}.{field.column}" for field in model._meta.concrete_fields)
    return names, columns


_USER_FIELDS, _USER_COLUMNS = _columns(get_user_model(), "u")
# Column names come from the models' metadata; every value is a query parameter.
TOKEN_USER = (
    f"SELECT {_USER_COLUMNS} FROM authtoken_token k "  # noqa: S608
    f"JOIN {get_user_model()._meta.db_table} u ON u.id = k.user_id WHERE k.key = %s"
)
_PROJECT_FIELDS, _PROJECT_COLUMNS = _columns(Project, "p")
MEMBER_PROJECT = (
    f"SELECT m.id, m.role, {_PROJECT_COLUMNS} FROM annotation_membership m "  # noqa: S608
    "JOIN annotation_project p ON p.id = m.project_id WHERE m.project_id = %s AND m.user_id = %s"
)
LIVE_LEASES = (
    "SELECT a.id, a.expires_at, t.id, t.sentence_id, t.start, t.length, t.tags, t.is_gold, "
    "s.tokens FROM annotation_assignment a JOIN annotation_task t ON t.id = a.task_id "
    "JOIN annotation_sentence s ON s.id = t.sentence_id "
    "WHERE a.annotator_id = %s AND a.project_id = %s AND a.status = 'leased' "
    "AND a.expires_at > %s ORDER BY a.id"
)
# Which open task an annotator leases next: the first (by id) after the last training task they
# leased in the project (`_LAST_TASK`, one backward step in `assignment_annotator_idx`), and only
# when there is none ahead, the first before it: a region reopened by an expired lease or a
# flagged annotator. Starting at the annotator's own mark keeps a lease to a handful of rows
# however far the project has got: walking from the project's first task instead passed every
# task the annotator had answered that others had not (a lone annotator paid for all their
# answers on every lease) and, on PostgreSQL, every dead index entry left by the tasks filled
# since the last vacuum.
#
# "Never the same region twice to one annotator": one probe of `assignment_unique` (task,
# annotator) per candidate. The LIMIT keeps PostgreSQL from turning the test into an anti-join,
# which it plans as a merge join over *all* the annotator's assignments.
#
# Placeholders: {user} and {project} are SQL expressions (a named parameter, or a CTE's column).
_LAST_TASK = (
    "SELECT a.task_id FROM annotation_assignment a JOIN annotation_task g ON g.id = a.task_id "
    "WHERE a.annotator_id = {user} AND a.project_id = {project} AND NOT g.is_gold "
    "ORDER BY a.task_id DESC LIMIT 1"
)
_OPEN_FOR = (
    "FROM annotation_task t WHERE t.project_id = {project} AND t.open_slots > 0 "
    "AND NOT t.is_gold AND (SELECT 1 FROM annotation_assignment a "
    "WHERE a.task_id = t.id AND a.annotator_id = {user} LIMIT 1) IS NULL "
)
_AHEAD = "AND t.id > {mark} "
_BEHIND = "AND t.id <= {mark} "
_FIRST = "ORDER BY t.id LIMIT 1"
_NOTHING_AHEAD = "AND NOT EXISTS (SELECT 1 FROM ahead) "
_TASK_COLUMNS = (
    "t.id, t.sentence_id, t.start, t.length, t.tags, t.is_gold, "
    "(SELECT s.tokens FROM annotation_sentence s WHERE s.id = t.sentence_id) "
)


def _fill(template: str, **names: str) -> str:
    return template.format(**names)


_ME = {"user": "%(annotator)s", "project": "%(project)s"}
LAST_TASK = _fill(_LAST_TASK, **_ME)
PICK_AHEAD = "SELECT " + _TASK_COLUMNS + _fill(_OPEN_FOR + _AHEAD, mark="%(mark)s", **_ME) + _FIRST
PICK_BEHIND = (
    "SELECT " + _TASK_COLUMNS + _fill(_OPEN_FOR + _BEHIND, mark="%(mark)s", **_ME) + _FIRST
)
TAKE_SLOT = "UPDATE annotation_task SET open_slots = open_slots - 1 WHERE id = %s"
# The first statement of the scheduler's lease transaction: it queues the annotator's other lease
# requests in the project behind this one (see `_pg_next_task`), and on SQLite takes the write lock.
BUMP_LEASE_SERIAL = (
    "UPDATE annotation_membership SET lease_serial = lease_serial + 1 "
    "WHERE project_id = %s AND user_id = %s"
)
INSERT_ASSIGNMENT = (
    "INSERT INTO annotation_assignment "
    "(project_id, task_id, annotator_id, status, leased_at, expires_at, submitted_at) "
    "VALUES (%s, %s, %s, 'leased', %s, %s, NULL) RETURNING id"
)


def _pg_pick(*, user: str, project: str, when: str = "", behind: bool = True) -> str:
    """PostgreSQL CTEs `mark`, `ahead`, `behind` and `picked` (the chosen task's id, locked), for
    the annotator `user` in `project`; `when` adds a condition to the scans. Without `behind`,
    only the tasks ahead of the mark."""
    names = {"user": user, "project": project}
    mark = "COALESCE((SELECT task_id FROM mark), 0)"
    lock = " FOR UPDATE OF t SKIP LOCKED"
    ahead = _fill(_OPEN_FOR + _AHEAD, mark=mark, **names) + when + _FIRST + lock
    behind_scan = _fill(_OPEN_FOR + _BEHIND, mark=mark, **names) + when + _NOTHING_AHEAD
    behind_scan += _FIRST + lock
    # Fixed SQL; every value is a parameter.
    ctes = [f"mark AS ({_fill(_LAST_TASK, **names)})", f"ahead AS (SELECT t.id {ahead})"]  # noqa: S608
    if behind:
        ctes.append(f"behind AS (SELECT t.id {behind_scan})")  # noqa: S608
        ctes.append("picked AS (SELECT id FROM ahead UNION ALL SELECT id FROM behind)")
    else:
        ctes.append("picked AS (SELECT id FROM ahead)")
    return ", ".join(ctes)


SUBMISSION_CONTEXT = (
    "SELECT a.status, p.id, p.status, p.updated_at, t.sentence_id, t.start, t.length, t.tags, "
    "t.is_gold, "
    "EXISTS (SELECT 1 FROM annotation_membership m "
    "WHERE m.project_id = a.project_id AND m.user_id = a.annotator_id), "
    "(SELECT o.assignment_id FROM annotation_observation o "
    "WHERE o.annotator_id = a.annotator_id AND o.idempotency_key = %s) "
    "FROM annotation_assignment a JOIN annotation_task t ON t.id = a.task_id "
    "JOIN annotation_project p ON p.id = a.project_id WHERE a.id = %s AND a.annotator_id = %s"
)
MARK_SUBMITTED = (
    "UPDATE annotation_assignment SET status = 'submitted', submitted_at = %s "
    "WHERE id = %s AND status IN ('leased', 'expired')"
)
INSERT_OBSERVATION = (
    "INSERT INTO annotation_observation (project_id, annotator_id, assignment_id, sentence_id, "
    "start, length, tags, counts, is_gold, seconds_on_device, idempotency_key, submitted_at) "
    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id"
)


# PostgreSQL: the whole lease (pick a task under a row lock, take a slot, insert the assignment)
# and the whole submission (mark the lease answered, insert the observation) are one statement
# each, so one round trip and an implicit transaction. Other databases run the steps in order.
PG_LEASE = (
    "WITH "  # noqa: S608 (fixed SQL; every value is a parameter)
    + _pg_pick(user="%(annotator)s", project="%(project)s")
    + ", taken AS (UPDATE annotation_task t SET open_slots = t.open_slots - 1 FROM picked "
    "WHERE t.id = picked.id RETURNING t.id), "
    "leased AS (INSERT INTO annotation_assignment "
    "(project_id, task_id, annotator_id, status, leased_at, expires_at, submitted_at) "
    "SELECT %(project)s, taken.id, %(annotator)s, 'leased', %(now)s::timestamptz, "
    "%(until)s::timestamptz, NULL FROM taken RETURNING id, task_id, expires_at) "
    "SELECT x.id, x.expires_at, t.id, t.sentence_id, t.start, t.length, t.tags, t.is_gold, "
    "s.tokens FROM leased x JOIN annotation_task t ON t.id = x.task_id "
    "JOIN annotation_sentence s ON s.id = t.sentence_id"
)
PG_SUBMIT = (
    "WITH answered AS (UPDATE annotation_assignment SET status = 'submitted', "
    "submitted_at = %s::timestamptz WHERE id = %s AND status IN ('leased', 'expired') "
    "RETURNING id) "
    "INSERT INTO annotation_observation (project_id, annotator_id, assignment_id, sentence_id, "
    "start, length, tags, counts, is_gold, seconds_on_device, idempotency_key, submitted_at) "
    "SELECT %s::bigint, %s::integer, answered.id, %s::bigint, %s::integer, %s::smallint, "
    "%s::jsonb, %s::jsonb, %s::boolean, %s::double precision, %s::varchar, %s::timestamptz "
    "FROM answered RETURNING id"
)

# The annotator's two requests, each with the caller's token lookup folded in (PostgreSQL).
_USER_TABLE = get_user_model()._meta.db_table
CALLER_BY_TOKEN = (
    f"SELECT u.id, u.is_active FROM authtoken_token k JOIN {_USER_TABLE} u "  # noqa: S608
    "ON u.id = k.user_id WHERE k.key = %(caller)s"
)
CALLER_BY_ID = f"SELECT u.id, u.is_active FROM {_USER_TABLE} u WHERE u.id = %(caller)s"  # noqa: S608


def _pg_next_task(caller: str) -> str:
    """Caller, membership and, when the plain case applies, a live lease the caller does not
    hold already or a new one, in one statement. The plain case: active user and project,
    member not flagged, lease reclaim not due, no gold check drawn; otherwise nothing is leased
    and `scheduler.task_lease_next` takes over (as it does when the caller is at the lease cap).
    Parameters: caller, reclaim_due_before, gold_draw, project, holding (assignment ids),
    max_leases, now. A new lease is committed without waiting for the WAL flush:
    losing one in a crash is harmless (the annotator asks again), unlike an observation.

    One annotator's requests at once (a phone resending "next"): the statement reads its
    snapshot before it can wait for another, so it may not see a lease committed meanwhile and
    would lease past the cap, or the same task twice. So `room` bumps the member's
    `lease_serial` (concurrent bumps queue on the row and each sees the last committed value)
    and leases only when the bump found the value of its own snapshot (`fresh`); otherwise it
    leases nothing and the scheduler, which takes the same row first, decides afresh."""
    return (
        f"WITH caller AS ({caller}), "  # noqa: S608 (fixed SQL; every value is a parameter)
        "member AS (SELECT c.id AS user_id, c.is_active, m.id AS membership_id, m.flagged, "
        "m.lease_serial, p.id AS project_id, p.updated_at, p.lease_seconds, "
        "(c.is_active AND NOT m.flagged AND p.status = 'active' "
        "AND p.leases_reclaimed_at >= %(reclaim_due_before)s::timestamptz "
        "AND %(gold_draw)s::double precision >= p.gold_fraction) AS plain "
        "FROM caller c LEFT JOIN annotation_membership m ON m.user_id = c.id "
        "AND m.project_id = %(project)s LEFT JOIN annotation_project p ON p.id = m.project_id), "
        "go AS (SELECT user_id, project_id, lease_seconds, membership_id, lease_serial "
        "FROM member WHERE plain), "
        "held AS (SELECT a.id, a.task_id, a.expires_at, a.id = ANY(%(holding)s::bigint[]) AS named "
        "FROM annotation_assignment a WHERE a.annotator_id = (SELECT user_id FROM go) "
        "AND a.project_id = (SELECT project_id FROM go) AND a.status = 'leased' "
        "AND a.expires_at > %(now)s::timestamptz), "
        "live AS (SELECT id, task_id, expires_at FROM held WHERE NOT named ORDER BY id LIMIT 1), "
        "room AS (UPDATE annotation_membership m SET lease_serial = m.lease_serial + 1 "
        "FROM go WHERE m.id = go.membership_id AND NOT EXISTS (SELECT 1 FROM live) "
        "AND (SELECT count(*) FROM held) < %(max_leases)s "
        "RETURNING m.lease_serial = go.lease_serial + 1 AS fresh), "
        + _pg_pick(
            user="(SELECT user_id FROM go)",
            project="%(project)s",
            when="AND (SELECT fresh FROM room) ",
            behind=False,  # rare (a round's end, a reopened region): the scheduler looks there
        )
        + ", "
        "taken AS (UPDATE annotation_task t SET open_slots = t.open_slots - 1 FROM picked "
        "WHERE t.id = picked.id RETURNING t.id), "
        "leased AS (INSERT INTO annotation_assignment "
        "(project_id, task_id, annotator_id, status, leased_at, expires_at, submitted_at) "
        "SELECT go.project_id, taken.id, go.user_id, 'leased', %(now)s::timestamptz, "
        "%(now)s::timestamptz + make_interval(secs => go.lease_seconds), NULL "
        "FROM taken CROSS JOIN go "
        "CROSS JOIN (SELECT set_config('synchronous_commit', 'off', true)) AS quiet "
        "RETURNING id, task_id, expires_at) "
        "SELECT mb.user_id, mb.is_active, mb.membership_id, mb.flagged, mb.plain, mb.updated_at, "
        "x.id, x.expires_at, t.id, t.sentence_id, t.start, t.length, t.tags, t.is_gold, "
        "s.tokens FROM member mb LEFT JOIN ((SELECT * FROM leased UNION ALL SELECT * FROM live) x "
        "JOIN annotation_task t ON t.id = x.task_id "
        "JOIN annotation_sentence s ON s.id = t.sentence_id) ON true"
    )


PG_NEXT_TASK_BY_TOKEN = _pg_next_task(CALLER_BY_TOKEN)
PG_NEXT_TASK_BY_ID = _pg_next_task(CALLER_BY_ID)


def _pg_submit(caller: str) -> str:
    """The whole submission in one statement: caller, lease, task, project, membership and
    replay check (`ctx`, the columns of `SUBMISSION_CONTEXT`), the counts checked against the
    task, and, when all is in order, the lease marked answered and the observation stored.

    The check is a gate, not the judge: it admits exactly what `services._validate_counts`
    accepts (the counts name the task's tags and no other, each is a whole number from 0 to the
    window, together at most the window), and anything it does not store goes to
    `services.observation_submit_in_context` with `ctx`, which gives the reason (or the stored
    answer of a replay, or loses a race properly). Parameters: caller, assignment, key (the
    idempotency key), names and counts (the submitted counts as two arrays), seconds, now."""
    return (
        f"WITH caller AS ({caller}), "  # noqa: S608 (fixed SQL; every value is a parameter)
        "ctx AS (SELECT c.id AS user_id, c.is_active, a.annotator_id = c.id AS mine, "
        "a.status, p.id AS project_id, p.status AS project_status, p.updated_at, "
        "t.sentence_id, t.start, t.length, t.tags, t.is_gold, "
        "EXISTS (SELECT 1 FROM annotation_membership m "
        "WHERE m.project_id = a.project_id AND m.user_id = c.id) AS is_member, "
        "(SELECT o.assignment_id FROM annotation_observation o "
        "WHERE o.annotator_id = c.id AND o.idempotency_key = %(key)s) AS replay_of "
        "FROM caller c LEFT JOIN (annotation_assignment a "
        "JOIN annotation_task t ON t.id = a.task_id "
        "JOIN annotation_project p ON p.id = a.project_id) ON a.id = %(assignment)s), "
        "given AS (SELECT jsonb_agg(g.position ORDER BY g.position) AS tags, "
        "jsonb_agg(x.n ORDER BY g.position) AS counts, "
        "bool_and(x.n BETWEEN 0 AND ctx.length) AS in_range, sum(x.n) AS total "
        "FROM ctx CROSS JOIN unnest(%(names)s::text[], %(counts)s::integer[]) AS x (name, n) "
        "LEFT JOIN annotation_tag g ON g.project_id = ctx.project_id AND g.name = x.name), "
        "valid AS (SELECT ctx.*, given.counts AS count_values FROM ctx CROSS JOIN given "
        "WHERE ctx.is_active AND ctx.mine AND ctx.is_member AND ctx.replay_of IS NULL "
        "AND ctx.project_status <> 'archived' AND ctx.status IN ('leased', 'expired') "
        "AND given.tags = ctx.tags AND given.in_range AND given.total <= ctx.length), "
        "answered AS (UPDATE annotation_assignment a SET status = 'submitted', "
        "submitted_at = %(now)s::timestamptz FROM valid "
        "WHERE a.id = %(assignment)s AND a.status IN ('leased', 'expired') RETURNING a.id), "
        "stored AS (INSERT INTO annotation_observation (project_id, annotator_id, "
        "assignment_id, sentence_id, start, length, tags, counts, is_gold, seconds_on_device, "
        "idempotency_key, submitted_at) "
        "SELECT v.project_id, v.user_id, answered.id, v.sentence_id, v.start, v.length, v.tags, "
        "v.count_values, v.is_gold, %(seconds)s::double precision, %(key)s, "
        "%(now)s::timestamptz FROM answered CROSS JOIN valid v RETURNING id) "
        "SELECT ctx.user_id, ctx.is_active, ctx.mine, (SELECT id FROM stored), ctx.status, "
        "ctx.project_id, ctx.project_status, ctx.updated_at, ctx.sentence_id, ctx.start, "
        "ctx.length, ctx.tags, ctx.is_gold, ctx.is_member, ctx.replay_of FROM ctx"
    )


PG_SUBMIT_BY_TOKEN = _pg_submit(CALLER_BY_TOKEN)
PG_SUBMIT_BY_ID = _pg_submit(CALLER_BY_ID)


def next_task(
    *,
    key: str | None,
    user_id: int | None,
    project_id: int,
    holding: list[int],
    max_leases: int,
    now,
    gold_draw: float,
    reclaim_due_before,
) -> tuple | None:
    """PostgreSQL only: one round trip for the annotator's next task (see `_pg_next_task`).
    None if the token is unknown; else (user id, is_active, membership id or None, flagged,
    plain case, project updated_at, assignment id, expires at, task id, sentence id, start,
    length, tags, is_gold, tokens), the lease columns NULL when nothing was leased."""
    statement, caller = (
        (PG_NEXT_TASK_BY_TOKEN, key) if key is not None else (PG_NEXT_TASK_BY_ID, user_id)
    )
    params = {
        "caller": caller,
        "reclaim_due_before": to_db_datetime(reclaim_due_before),
        "gold_draw": gold_draw,
        "project": project_id,
        "holding": list(holding),
        "max_leases": max_leases,
        "now": to_db_datetime(now),
    }
    return fetchone(statement, params)


def observation_submit(
    *,
    key: str | None,
    user_id: int | None,
    assignment_id: int,
    idempotency_key: str,
    names: list[str],
    counts: list[int],
    seconds_on_device: float | None,
    now,
) -> tuple | None:
    """PostgreSQL only: one round trip for a submission (see `_pg_submit`). None if the token
    is unknown; else (user id, is_active, the observation's id if it was stored, else None,
    then the SUBMISSION_CONTEXT row, or None when the assignment is not the caller's)."""
    statement, caller = (PG_SUBMIT_BY_TOKEN, key) if key is not None else (PG_SUBMIT_BY_ID, user_id)
    params = {
        "caller": caller,
        "assignment": assignment_id,
        "key": idempotency_key,
        "names": names,
        "counts": counts,
        "seconds": seconds_on_device,
        "now": to_db_datetime(now),
    }
    row = fetchone(statement, params)
    if row is None:
        return None
    return row[0], row[1], row[3], (row[4:] if row[2] else None)


def single_statement_atomic():
    """The transaction a single-statement write needs: none of its own on PostgreSQL in
    autocommit mode (the statement is atomic), else a (savepoint) `atomic()` block."""
    if connection.vendor == "postgresql" and not connection.in_atomic_block:
        return nullcontext()
    return transaction.atomic()


def live_leases(*, annotator_id: int, project_id: int, now) -> list[tuple]:
    """The annotator's live leases in the project, oldest first, as `lease_open` rows."""
    return fetchall(LIVE_LEASES, [annotator_id, project_id, to_db_datetime(now)])


def lease_open(*, project_id: int, annotator_id: int, now, expires_at) -> tuple | None:
    """A new lease of the next open task the annotator has not had (see `_LAST_TASK`):
    (assignment id, expires at, task id, sentence id, start, length, tags, is_gold, tokens), or
    None. Atomic; on PostgreSQL one statement."""
    when, until = to_db_datetime(now), to_db_datetime(expires_at)
    me = {"project": project_id, "annotator": annotator_id}
    if connection.vendor == "postgresql":
        with single_statement_atomic():
            return fetchone(PG_LEASE, {**me, "now": when, "until": until})
    with transaction.atomic():
        mark = fetchone(LAST_TASK, me)
        mark = {**me, "mark": mark[0] if mark else 0}
        row = fetchone(PICK_AHEAD + row_lock(), mark) or fetchone(PICK_BEHIND + row_lock(), mark)
        if row is None:
            return None
        execute(TAKE_SLOT, [row[0]])
        (assignment_id,) = fetchone(
            INSERT_ASSIGNMENT, [project_id, row[0], annotator_id, when, until]
        )
    return (assignment_id, expires_at, *row)


def observation_insert(*, assignment_id: int, submitted_at, values: list) -> int | None:
    """Mark the lease answered and store the observation; its id, or None if the lease was
    answered already. `values`: project, annotator, sentence, start, length, tags (JSON),
    counts (JSON), is_gold, seconds_on_device, idempotency key."""
    when = to_db_datetime(submitted_at)
    if connection.vendor == "postgresql":
        row = fetchone(PG_SUBMIT, [when, assignment_id, *values, when])
        return row[0] if row else None
    if not execute(MARK_SUBMITTED, [when, assignment_id]):
        return None
    project, annotator, *rest = values
    (observation_id,) = fetchone(
        INSERT_OBSERVATION, [project, annotator, assignment_id, *rest, when]
    )
    return observation_id


def row_lock() -> str:
    """` FOR UPDATE SKIP LOCKED` where the database has it (SQLite serializes writers)."""
    return (
        " FOR UPDATE SKIP LOCKED" if connection.features.has_select_for_update_skip_locked else ""
    )


_PREPARE_THRESHOLD = 5  # psycopg's default; our statements pass prepare=True anyway
# One server-side-binding cursor per connection, kept on Django's connection wrapper for the
# connection's life: making one per statement cost as much Python as the rest of the call.
_CURSOR_ATTRIBUTE = "_tally_prepared_cursor"


def _prepared_cursor(db) -> ServerBindingCursor:
    """On PostgreSQL, a server-side-binding cursor on Django's connection: these statements
    are fixed strings, so the server parses and plans each once per connection (prepared
    statements) instead of on every request. Django's own cursors bind on the client side."""
    db.ensure_connection()
    db.validate_no_broken_transaction()
    raw = db.connection
    cursor = getattr(db, _CURSOR_ATTRIBUTE, None)
    if cursor is None or cursor.connection is not raw or cursor.closed:
        cursor = ServerBindingCursor(raw)
        setattr(db, _CURSOR_ATTRIBUTE, cursor)
    return cursor


def _run(sql: str, params: list[Any] | dict[str, Any], read: Callable):
    """`read(cursor)` once the cursor has run `sql`: prepared on PostgreSQL, Django's own
    cursor elsewhere."""
    db = connections[DEFAULT_DB_ALIAS]
    if db.vendor == "postgresql":
        cursor = _prepared_cursor(db)
        raw = cursor.connection
        # Django opens psycopg connections with preparation off (threshold None), which makes
        # psycopg ignore `prepare=True`. On only for these statements: with it on, psycopg also
        # keeps the text of the last 100 other queries to count their uses, and the ORM's
        # client-side-bound queries carry their values (a corpus import's inserts, megabytes).
        raw.prepare_threshold = _PREPARE_THRESHOLD
        try:
            with db.wrap_database_errors:
                cursor.execute(sql, params, prepare=True)
                return read(cursor)
        finally:
            raw.prepare_threshold = None
    with db.cursor() as cursor:
        cursor.execute(sql, params)
        return read(cursor)


def fetchone(sql: str, params: list[Any] | dict[str, Any]) -> tuple | None:
    return _run(sql, params, _fetchone)


def fetchall(sql: str, params: list[Any] | dict[str, Any]) -> list[tuple]:
    return _run(sql, params, _fetchall)


def execute(sql: str, params: list[Any] | dict[str, Any]) -> int:
    return _run(sql, params, _rowcount)


def _fetchone(cursor) -> tuple | None:
    return cursor.fetchone()


def _fetchall(cursor) -> list[tuple]:
    return cursor.fetchall()


def _rowcount(cursor) -> int:
    return cursor.rowcount


def from_json(value):
    return json.loads(value) if isinstance(value, str | bytes) else value


def to_json(value) -> str:
    return json.dumps(value)


def to_db_datetime(value: datetime):
    return connection.ops.adapt_datetimefield_value(value)


def from_db_datetime(value) -> datetime:
    if isinstance(value, str):
        value = parse_datetime(value)
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value


def from_db_bool(value) -> bool:
    return bool(value)


def user_for_token(key: str):
    row = fetchone(TOKEN_USER, [key])
    if row is None:
        return None
    return get_user_model().from_db(connection.alias, _USER_FIELDS, _convert(_USER_FIELDS, row))


def membership_and_project(*, project_id: int, user_id: int) -> tuple[int, str, Project] | None:
    row = fetchone(MEMBER_PROJECT, [project_id, user_id])
    if row is None:
        return None
    membership_id, role, values = row[0], row[1], row[2:]
    project = Project.from_db(connection.alias, _PROJECT_FIELDS, _convert(_PROJECT_FIELDS, values))
    return membership_id, role, project


_DATETIME_FIELDS = {"last_login", "date_joined", "created_at", "updated_at", "leases_reclaimed_at"}
_BOOL_FIELDS = {"is_superuser", "is_staff", "is_active"}


def _convert(names: list[str], values) -> list:
    out = []
    for name, value in zip(names, values, strict=True):
        if value is not None and name in _DATETIME_FIELDS:
            value = from_db_datetime(value)
        elif name in _BOOL_FIELDS:
            value = bool(value)
        out.append(value)
    return out
