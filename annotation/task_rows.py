"""Insert many tasks at once: rounds of 10⁴ rows, written inside a retrain's transaction.

`bulk_create(ignore_conflicts=True)` spent most of its time building a model instance and
preparing every field of every row (about 0.6 s of a 12,544-task round on EWT); the rows here
go straight to the driver's `executemany` (psycopg pipelines it), the same statement on
PostgreSQL and SQLite.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db import connection
from django.utils import timezone

from annotation.models import Task, TaskKind, TaskOrigin

__all__ = ["tasks_insert"]

_COLUMNS = (
    "project_id", "sentence_id", "start", "length", "kind", "tags", "shown_tags",
    "model_version", "is_gold", "open_slots", "round", "origin", "created_at",
)  # fmt: skip
_DEFAULTS = {
    "kind": TaskKind.COUNT.value,
    "shown_tags": None,
    "model_version": None,
    "is_gold": False,
    "open_slots": 0,
    "round": 0,
    "origin": TaskOrigin.UNIFORM.value,
}
_JSON = ("tags", "shown_tags")


def tasks_insert(rows: Iterable[dict]) -> int:
    """Insert a task per row (a dict of `Task` columns: ``project_id``, ``sentence_id``,
    ``start``, ``length``, ``tags`` and any others that differ from their default); a row whose
    region exists already is skipped, as by the region constraints. Returns how many were
    inserted."""
    ops = connection.ops
    now = ops.adapt_datetimefield_value(timezone.now())
    values = []
    for row in rows:
        row = {**_DEFAULTS, **row, "created_at": now}
        for column in _JSON:
            if row[column] is not None:
                row[column] = ops.adapt_json_value(row[column], None)
        row["kind"], row["origin"] = str(row["kind"]), str(row["origin"])
        values.append([row[column] for column in _COLUMNS])
    if not values:
        return 0
    with connection.cursor() as cursor:
        cursor.executemany(_insert_statement(), values)
        return cursor.rowcount


def _insert_statement() -> str:
    ops = connection.ops
    table = ops.quote_name(Task._meta.db_table)
    columns = ", ".join(ops.quote_name(column) for column in _COLUMNS)
    placeholders = ", ".join(["%s"] * len(_COLUMNS))
    return (
        f"INSERT INTO {table} ({columns}) VALUES ({placeholders})"  # noqa: S608 (constant text)
        " ON CONFLICT DO NOTHING"
    )
