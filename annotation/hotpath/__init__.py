"""The annotator's cycle on PostgreSQL: the next task and a submission in one statement each.

Every annotator repeats this cycle all day, so each request is one round trip: the caller's token,
membership and lease in one statement (`statements.NEXT_TASK`), and the submission with its check
in another (`statements.SUBMIT`). Each is prepared once per connection (the server parses and
plans it once), and answers one named row (`rows`). They cover the plain case only; every other
case, and every other database, goes through the scheduler and the submission service on the
ORM (see `annotation.api.cycle`).
"""

from __future__ import annotations

from datetime import datetime
from weakref import WeakKeyDictionary

import psycopg
from django.db import DEFAULT_DB_ALIAS, connections
from psycopg.rows import class_row
from psycopg.types.json import JsonbLoader

from annotation.hotpath import statements
from annotation.hotpath.rows import NextTaskRow, SubmitRow, VerificationSubmitRow

__all__ = [
    "NextTaskRow",
    "SubmitRow",
    "VerificationSubmitRow",
    "next_task",
    "observation_submit",
    "verification_submit",
]

_PREPARE_THRESHOLD = 5  # psycopg's default; these statements pass prepare=True anyway
# One server-side-binding cursor per connection for its whole life: making one per statement cost
# as much Python as the rest of the call. Keyed weakly by psycopg's connection, so a closed one
# takes its cursor along.
_cursors: WeakKeyDictionary[psycopg.Connection, psycopg.Cursor] = WeakKeyDictionary()
_NEXT_TASK_ROW = class_row(NextTaskRow)
_SUBMIT_ROW = class_row(SubmitRow)
_VERIFICATION_ROW = class_row(VerificationSubmitRow)


def _fetchone(statement: str, params: dict, row_factory):
    """The statement's one row, prepared on the server. Django's cursors bind values on the
    client side, so these run on a psycopg cursor of Django's connection (same transaction)."""
    db = connections[DEFAULT_DB_ALIAS]
    db.ensure_connection()
    db.validate_no_broken_transaction()
    raw = db.connection
    cursor = _cursors.get(raw)
    if cursor is None or cursor.closed:
        cursor = _cursors[raw] = psycopg.Cursor(raw)
        # Django loads jsonb as text (its JSONField parses it); these rows want the values.
        cursor.adapters.register_loader("jsonb", JsonbLoader)
    cursor.row_factory = row_factory
    # Django opens psycopg connections with preparation off (threshold None), which makes psycopg
    # ignore `prepare=True`. On only for these statements: with it on, psycopg also keeps the
    # text of the last 100 other queries to count their uses, and the ORM's client-side-bound
    # queries carry their values (a corpus import's inserts, megabytes).
    raw.prepare_threshold = _PREPARE_THRESHOLD
    try:
        with db.wrap_database_errors:
            cursor.execute(statement, params, prepare=True)
            return cursor.fetchone()
    finally:
        raw.prepare_threshold = None


def next_task(
    *,
    key: str | None,
    user_id: int | None,
    project_id: int,
    holding: list[int],
    max_leases: int,
    now: datetime,
    gold_draw: float,
    kind_draw: float,
    reclaim_due_before: datetime,
) -> NextTaskRow | None:
    """The caller's next task in the plain case (see `statements.NEXT_TASK`); None when the
    token names nobody. The caller is the session's `user_id`, or else the token `key`."""
    params = {
        "user_id": user_id,
        "key": key,
        "project": project_id,
        "holding": list(holding),
        "max_leases": max_leases,
        "now": now,
        "gold_draw": gold_draw,
        "kind_draw": kind_draw,
        "reclaim_due_before": reclaim_due_before,
    }
    return _fetchone(statements.NEXT_TASK, params, _NEXT_TASK_ROW)


def observation_submit(
    *,
    key: str | None,
    user_id: int | None,
    assignment_id: int,
    idempotency_key: str,
    names: list[str],
    counts: list[int],
    seconds_on_device: float | None,
    now: datetime,
    released: bool = False,
    mechanism: str | None = None,
    alpha: float | None = None,
) -> SubmitRow | None:
    """Store the answer if it is in order (see `statements.SUBMIT`); None when the token names
    nobody. `names` and `counts`: the submitted counts, whole numbers that fit PostgreSQL's
    integer (see `services.counts_well_formed`); `released` when they are a private project's
    released values, sent with the mechanism's parameters `mechanism` and `alpha`."""
    params = {
        "user_id": user_id,
        "key": key,
        "assignment": assignment_id,
        "idempotency_key": idempotency_key,
        "names": names,
        "counts": counts,
        "released": released,
        "mechanism": mechanism,
        "alpha": None if alpha is None else float(alpha),
        "seconds": seconds_on_device,
        "now": now,
    }
    return _fetchone(statements.SUBMIT, params, _SUBMIT_ROW)


def verification_submit(
    *,
    key: str | None,
    user_id: int | None,
    assignment_id: int,
    idempotency_key: str,
    answer: bool,
    wrong: int | None,
    seconds_on_device: float | None,
    now: datetime,
) -> VerificationSubmitRow | None:
    """Store a verification answer if it is in order (see `statements.SUBMIT_VERIFICATION`);
    None when the token names nobody. `wrong`: None or a whole number that fits a smallint."""
    params = {
        "user_id": user_id,
        "key": key,
        "assignment": assignment_id,
        "idempotency_key": idempotency_key,
        "answer": answer,
        "wrong": wrong,
        "seconds": seconds_on_device,
        "now": now,
    }
    return _fetchone(statements.SUBMIT_VERIFICATION, params, _VERIFICATION_ROW)
