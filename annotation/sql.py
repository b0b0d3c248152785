"""Hand-written SQL for the annotator's hot path: token lookup, membership, lease, submit.

The ORM spends a few hundred microseconds of Python building each query; on the cycle that every
annotator repeats all day (lease a task, submit counts) that was most of the request. These
statements are plain strings, portable between PostgreSQL and SQLite (row locks are added where the
database has them), and return plain tuples that the callers turn into model instances.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from datetime import UTC, datetime
from typing import Any

from django.contrib.auth import get_user_model
from django.db import connection, transaction
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
# "Never the same region twice to one annotator": one probe of `assignment_unique` (task, annotator)
# per candidate task, walking `task_open_idx` in id order. The LIMIT keeps PostgreSQL from turning
# the test into an anti-join, which it plans as a merge join over *all* the annotator's
# assignments (read through the whole unique index, since annotator is its second column): a
# lease then cost time in proportion to the assignments made so far.
_OPEN_TASKS = (
    "FROM annotation_task t WHERE t.project_id = %s AND t.open_slots > 0 AND NOT t.is_gold "
    "AND (SELECT 1 FROM annotation_assignment a "
    "WHERE a.task_id = t.id AND a.annotator_id = %s LIMIT 1) IS NULL "
)
_FIRST = "ORDER BY t.id LIMIT 1"
PICK_OPEN_TASK = (
    "SELECT t.id, t.sentence_id, t.start, t.length, t.tags, t.is_gold, "  # noqa: S608
    "(SELECT s.tokens FROM annotation_sentence s WHERE s.id = t.sentence_id) "
    + _OPEN_TASKS
    + _FIRST
)
TAKE_SLOT = "UPDATE annotation_task SET open_slots = open_slots - 1 WHERE id = %s"
INSERT_ASSIGNMENT = (
    "INSERT INTO annotation_assignment "
    "(project_id, task_id, annotator_id, status, leased_at, expires_at, submitted_at) "
    "VALUES (%s, %s, %s, 'leased', %s, %s, NULL) RETURNING id"
)
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
    "WITH picked AS (SELECT t.id "  # noqa: S608
    + _OPEN_TASKS
    + _FIRST
    + " FOR UPDATE SKIP LOCKED), "
    "taken AS (UPDATE annotation_task t SET open_slots = t.open_slots - 1 FROM picked "
    "WHERE t.id = picked.id RETURNING t.id), "
    "leased AS (INSERT INTO annotation_assignment "
    "(project_id, task_id, annotator_id, status, leased_at, expires_at, submitted_at) "
    "SELECT %s, taken.id, %s, 'leased', %s::timestamptz, %s::timestamptz, NULL FROM taken "
    "RETURNING id, task_id, expires_at) "
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
    "ON u.id = k.user_id WHERE k.key = %s"
)
CALLER_BY_ID = f"SELECT u.id, u.is_active FROM {_USER_TABLE} u WHERE u.id = %s"  # noqa: S608


def _pg_next_task(caller: str) -> str:
    """Caller, membership and, when the plain case applies, a live lease the caller does not
    hold already or a new one, in one statement. The plain case: active user and project,
    member not flagged, lease reclaim not due, no gold check drawn; otherwise nothing is leased
    and `scheduler.task_lease_next` takes over (as it does when the caller is at the lease cap).
    Parameters: caller, reclaim-due-before, gold draw, project, held assignment ids, now (live),
    project, lease cap, now, now. A new lease is committed without waiting for the WAL flush:
    losing one in a crash is harmless (the annotator asks again), unlike an observation."""
    return (
        f"WITH caller AS ({caller}), "  # noqa: S608 (fixed SQL; every value is a parameter)
        "member AS (SELECT c.id AS user_id, c.is_active, m.id AS membership_id, m.flagged, "
        "p.id AS project_id, p.updated_at, p.lease_seconds, "
        "(c.is_active AND NOT m.flagged AND p.status = 'active' "
        "AND p.leases_reclaimed_at >= %s::timestamptz "
        "AND %s::double precision >= p.gold_fraction) AS plain "
        "FROM caller c LEFT JOIN annotation_membership m ON m.user_id = c.id "
        "AND m.project_id = %s LEFT JOIN annotation_project p ON p.id = m.project_id), "
        "go AS (SELECT user_id, project_id, lease_seconds FROM member WHERE plain), "
        "held AS (SELECT a.id, a.task_id, a.expires_at, a.id = ANY(%s::bigint[]) AS named "
        "FROM annotation_assignment a WHERE a.annotator_id = (SELECT user_id FROM go) "
        "AND a.project_id = (SELECT project_id FROM go) AND a.status = 'leased' "
        "AND a.expires_at > %s::timestamptz), "
        "live AS (SELECT id, task_id, expires_at FROM held WHERE NOT named ORDER BY id LIMIT 1), "
        "picked AS (SELECT t.id FROM annotation_task t WHERE t.project_id = %s "
        "AND t.open_slots > 0 AND NOT t.is_gold AND (SELECT 1 FROM annotation_assignment a "
        "WHERE a.task_id = t.id AND a.annotator_id = (SELECT user_id FROM go) LIMIT 1) IS NULL "
        "AND EXISTS (SELECT 1 FROM go) AND NOT EXISTS (SELECT 1 FROM live) "
        "AND (SELECT count(*) FROM held) < %s " + _FIRST + " FOR UPDATE OF t SKIP LOCKED), "
        "taken AS (UPDATE annotation_task t SET open_slots = t.open_slots - 1 FROM picked "
        "WHERE t.id = picked.id RETURNING t.id), "
        "leased AS (INSERT INTO annotation_assignment "
        "(project_id, task_id, annotator_id, status, leased_at, expires_at, submitted_at) "
        "SELECT go.project_id, taken.id, go.user_id, 'leased', %s::timestamptz, "
        "%s::timestamptz + make_interval(secs => go.lease_seconds), NULL "
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
# SUBMISSION_CONTEXT for a token: (user id, is_active, assignment is the caller's,
# *SUBMISSION_CONTEXT's columns). The assignment is joined on its id alone (its primary key; a
# join on the annotator too is planned as a scan of all the annotator's assignments).
SUBMISSION_CONTEXT_BY_TOKEN = (
    "SELECT u.id, u.is_active, a.annotator_id = u.id, a.status, p.id, p.status, p.updated_at, "  # noqa: S608
    "t.sentence_id, t.start, t.length, t.tags, t.is_gold, "
    "EXISTS (SELECT 1 FROM annotation_membership m "
    "WHERE m.project_id = a.project_id AND m.user_id = u.id), "
    "(SELECT o.assignment_id FROM annotation_observation o "
    "WHERE o.annotator_id = u.id AND o.idempotency_key = %s) "
    f"FROM authtoken_token k JOIN {_USER_TABLE} u ON u.id = k.user_id "
    "LEFT JOIN (annotation_assignment a JOIN annotation_task t ON t.id = a.task_id "
    "JOIN annotation_project p ON p.id = a.project_id) ON a.id = %s "
    "WHERE k.key = %s"
)


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
    when = to_db_datetime(now)
    return fetchone(
        statement,
        [caller, to_db_datetime(reclaim_due_before), gold_draw, project_id, list(holding), when,
         project_id, max_leases, when, when],
    )  # fmt: skip


def submission_context_for_token(*, key: str, assignment_id: int, idempotency_key: str):
    """PostgreSQL only: (user id, is_active, SUBMISSION_CONTEXT row or None), or None for an
    unknown token."""
    row = fetchone(SUBMISSION_CONTEXT_BY_TOKEN, [idempotency_key, assignment_id, key])
    if row is None:
        return None
    return row[0], row[1], (row[3:] if row[2] else None)


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
    """A new lease of the first open task the annotator has not had: (assignment id, expires
    at, task id, sentence id, start, length, tags, is_gold, tokens), or None. Atomic; on
    PostgreSQL one statement."""
    when, until = to_db_datetime(now), to_db_datetime(expires_at)
    if connection.vendor == "postgresql":
        with single_statement_atomic():
            params = [project_id, annotator_id, project_id, annotator_id, when, until]
            return fetchone(PG_LEASE, params)
    with transaction.atomic():
        row = fetchone(PICK_OPEN_TASK + row_lock(), [project_id, annotator_id])
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


def _prepared_cursor():
    """On PostgreSQL, a server-side-binding cursor on Django's connection: these statements
    are fixed strings, so the server parses and plans each once per connection (prepared
    statements) instead of on every request. Django's own cursors bind on the client side."""
    connection.ensure_connection()
    connection.validate_no_broken_transaction()
    raw = connection.connection
    if raw.prepare_threshold is None:
        # Django opens psycopg connections with preparation off (threshold None), which makes
        # psycopg ignore `prepare=True`. Its own (client-side binding) cursors never prepare, so
        # turning it on here affects only these statements.
        raw.prepare_threshold = _PREPARE_THRESHOLD
    return ServerBindingCursor(raw)


@contextmanager
def _executed(sql: str, params: list[Any]) -> Iterator:
    """A cursor that has run `sql`: prepared on PostgreSQL, Django's own cursor elsewhere."""
    if connection.vendor == "postgresql":
        with connection.wrap_database_errors, _prepared_cursor() as cursor:
            cursor.execute(sql, params, prepare=True)
            yield cursor
    else:
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            yield cursor


def fetchone(sql: str, params: list[Any]) -> tuple | None:
    with _executed(sql, params) as cursor:
        return cursor.fetchone()


def fetchall(sql: str, params: list[Any]) -> list[tuple]:
    with _executed(sql, params) as cursor:
        return cursor.fetchall()


def execute(sql: str, params: list[Any]) -> int:
    with _executed(sql, params) as cursor:
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
