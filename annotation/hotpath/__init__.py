"""The annotator's cycle on PostgreSQL: the next task and a submission in one statement each.

Every annotator repeats this cycle all day, so each request is one round trip: the caller's token,
membership and lease in one statement (`statements.NEXT_TASK`), and the submission with its check
in another (each task kind's `SUBMIT`, beside the rules it mirrors in `annotation.kinds`, run by
`fetch_row`). Each is prepared once per connection (the server parses and plans it once), and
answers one named row. They cover the plain case only; every other case, and every other
database, goes through the scheduler and the submission service on the ORM (the services of
`annotation.cycle` choose).
"""

from __future__ import annotations

from datetime import datetime
from weakref import WeakKeyDictionary

import psycopg
from django.db import DEFAULT_DB_ALIAS, connections
from psycopg.rows import class_row
from psycopg.types.json import JsonbLoader

from annotation.hotpath import statements
from annotation.hotpath.rows import NextTaskRow

__all__ = ["NextTaskRow", "fetch_row", "next_task"]

_PREPARE_THRESHOLD = 5  # psycopg's default; these statements pass prepare=True anyway
# One server-side-binding cursor per connection for its whole life: making one per statement cost
# as much Python as the rest of the call. Keyed weakly by psycopg's connection, so a closed one
# takes its cursor along.
_cursors: WeakKeyDictionary[psycopg.Connection, psycopg.Cursor] = WeakKeyDictionary()
_row_factories: dict[type, object] = {}


def fetch_row(statement: str, params: dict, row_type: type):
    """The statement's one row, as a `row_type` (a dataclass whose fields are its columns),
    prepared on the server. Django's cursors bind values on the client side, so these run on a
    psycopg cursor of Django's connection (same transaction)."""
    row_factory = _row_factories.get(row_type)
    if row_factory is None:
        row_factory = _row_factories[row_type] = class_row(row_type)
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
    return fetch_row(statements.NEXT_TASK, params, NextTaskRow)
