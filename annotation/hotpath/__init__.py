"""The annotator's cycle on PostgreSQL: the next task and a submission in one statement each.

Every annotator repeats this cycle all day, so each request is one round trip: the caller's token,
membership and lease in one statement (`statements.NEXT_TASK`), and the submission with its check
in another (each task kind's `SUBMIT`, beside the rules it mirrors in `annotation.kinds`, run by
`fetch_row`); an answer that asks for the next task is both in one (the kind's
`SUBMIT_AND_LEASE`, `statements.submission_and_lease`). Each is prepared once per connection
(the server parses and plans it once), and answers one named row. They cover the plain case
only; every other case, and every other database, goes through the scheduler and the submission
service on the ORM (the services of `annotation.cycle` choose)."""

from __future__ import annotations

import re
from dataclasses import fields
from datetime import datetime
from weakref import WeakKeyDictionary

import psycopg
from django.db import DEFAULT_DB_ALIAS, connections
from psycopg.rows import class_row
from psycopg.types.json import JsonbLoader

from annotation.hotpath import statements
from annotation.hotpath.rows import NextTaskRow

__all__ = [
    "NextTaskRow",
    "fetch_row",
    "lease_params",
    "next_task",
    "submission_common",
    "submission_store",
]

_PREPARE_THRESHOLD = 5  # psycopg's default; these statements pass prepare=True anyway
# One cursor per connection for its whole life: making one per statement cost as much Python as
# the rest of the call. Keyed weakly by psycopg's connection, so a closed one takes its cursor
# along. A raw cursor: the statements come with PostgreSQL's own placeholders (`_native`).
_cursors: WeakKeyDictionary[psycopg.Connection, psycopg.RawCursor] = WeakKeyDictionary()
_row_factories: dict[type | tuple[type, type], object] = {}
_native_forms: dict[str, tuple[bytes, tuple[str, ...]]] = {}
_PLACEHOLDER = re.compile(r"%\((\w+)\)s")


def _native(statement: str) -> tuple[bytes, tuple[str, ...]]:
    """The statement with PostgreSQL's placeholders (`$1`, a name's every use the same number)
    and the parameter names in their order, worked out once per statement. psycopg would parse
    the named placeholders again on every call for a statement over 4,096 bytes, as a statement
    and its lease together are (a tenth of the cycle's CPU, once)."""
    native = _native_forms.get(statement)
    if native is None:
        order: dict[str, str] = {}

        def number(match: re.Match) -> str:
            return order.setdefault(match.group(1), f"${len(order) + 1}")

        text = _PLACEHOLDER.sub(number, statement)
        if "%" in text:
            raise ValueError("a statement's only % are its %(name)s placeholders")
        native = _native_forms[statement] = (text.encode(), tuple(order))
    return native


def _row_factory(row_type: type | tuple[type, type]):
    """A dataclass's row, or, for two dataclasses, a pair of them: the first's fields are the
    first columns, the second's the rest (by position; the tests check the names)."""
    factory = _row_factories.get(row_type)
    if factory is None:
        if isinstance(row_type, tuple):
            first, second = row_type
            split = len(fields(first))

            def factory(cursor):
                return lambda values: (first(*values[:split]), second(*values[split:]))

        else:
            factory = class_row(row_type)
        _row_factories[row_type] = factory
    return factory


def fetch_row(statement: str, params: dict, row_type: type | tuple[type, type]):
    """The statement's one row, as a `row_type` (a dataclass whose fields are its columns, or a
    pair of them), prepared on the server. Django's cursors bind values on the client side, so
    these run on a psycopg cursor of Django's connection (same transaction)."""
    text, names = _native(statement)
    db = connections[DEFAULT_DB_ALIAS]
    db.ensure_connection()
    db.validate_no_broken_transaction()
    raw = db.connection
    cursor = _cursors.get(raw)
    if cursor is None or cursor.closed:
        cursor = _cursors[raw] = psycopg.RawCursor(raw)
        # Django loads jsonb as text (its JSONField parses it); these rows want the values.
        cursor.adapters.register_loader("jsonb", JsonbLoader)
    cursor.row_factory = _row_factory(row_type)
    # Django opens psycopg connections with preparation off (threshold None), which makes psycopg
    # ignore `prepare=True`. On only for these statements: with it on, psycopg also keeps the
    # text of the last 100 other queries to count their uses, and the ORM's client-side-bound
    # queries carry their values (a corpus import's inserts, megabytes).
    raw.prepare_threshold = _PREPARE_THRESHOLD
    try:
        with db.wrap_database_errors:
            cursor.execute(text, [params[name] for name in names], prepare=True)
            return cursor.fetchone()
    finally:
        raw.prepare_threshold = None


def submission_store(
    statements: tuple[str, str],
    row_type: type,
    *,
    common: dict,
    answer: dict,
    lease: dict | None,
):
    """A kind's answer stored by its statement (`statements`: its `SUBMIT` and
    `SUBMIT_AND_LEASE`, answering `row_type` rows): `common`, the parameters every submission
    has (`submission_common`), and `answer`, the kind's own. With `lease` (`lease_params`) the
    caller's next task is leased in the same statement and the row is a pair: the answer's, the
    lease's."""
    submit, submit_and_lease = statements
    params = common | answer
    if lease is None:
        return fetch_row(submit, params, row_type)
    return fetch_row(submit_and_lease, params | lease, (row_type, NextTaskRow))


def submission_common(
    *,
    key: str | None,
    user_id: int | None,
    assignment_id: int,
    idempotency_key: str,
    seconds_on_device: float | None,
    now: datetime,
) -> dict:
    """The parameters of every kind's submission statement: the caller (the session's `user_id`,
    or else the token `key`), the lease answered, the idempotency key, the seconds, the time."""
    return {
        "user_id": user_id,
        "key": key,
        "assignment": assignment_id,
        "idempotency_key": idempotency_key,
        "seconds": seconds_on_device,
        "now": now,
    }


def lease_params(
    *,
    holding: list[int],
    max_leases: int,
    now: datetime,
    gold_draw: float,
    kind_draw: float,
    reclaim_due_before: datetime,
) -> dict:
    """The lease's parameters but the caller and the project (see `statements.NEXT_TASK`)."""
    return {
        "holding": list(holding),
        "max_leases": max_leases,
        "now": now,
        "gold_draw": gold_draw,
        "kind_draw": kind_draw,
        "reclaim_due_before": reclaim_due_before,
    }


def next_task(
    *, key: str | None, user_id: int | None, project_id: int, lease: dict
) -> NextTaskRow | None:
    """The caller's next task in the plain case (see `statements.NEXT_TASK`); None when the
    token names nobody. The caller is the session's `user_id`, or else the token `key`;
    `lease`: the lease's other parameters (`lease_params`)."""
    params = {"user_id": user_id, "key": key, "project": project_id} | lease
    return fetch_row(statements.NEXT_TASK, params, NextTaskRow)
