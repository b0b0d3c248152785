"""Is each live model consistent (`learning.live`)? Checked from outside, against the stack's
database and files, while the stack runs (`benchmark_faults` checks after every Celery kill and
at the end).

Each point of a live model's curve holds its update's cumulative `answers`, its `watermark` and
the PostgreSQL snapshot its answers were read in. An update applied exactly the count answers
with ids in (previous watermark, its watermark] that its snapshot saw; the others in that range
committed after it read (left to the batch retrain: `late_commits`). So, per project:

- every publication moved the watermark forward and applied exactly what its snapshot saw
  (nothing applied twice, nothing skipped);
- the row's `answers_applied` and `watermark` are its last point's; with no publication, 0 and
  the base version's newest observation;
- hence `answers_applied` = count answers in (version's newest observation, watermark] −
  `late_commits`;
- the served file loads and says which version and update it is; the learner's state file
  counts the same answers.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import psycopg

from learning.core.modelfile import ModelFileError, load_tagger

ROWS = (
    "SELECT l.project_id, l.base_version, l.number, l.watermark, l.answers_applied, l.file, "
    "l.state_file, l.progressive, v.newest_observation FROM learning_livemodel l "
    "JOIN learning_modelversion v ON v.project_id = l.project_id AND v.number = l.base_version "
    "ORDER BY l.project_id"
)
# Count answers in (after, up_to]: those the snapshot saw, and all. xmin as xid8 holds while the
# cluster's transaction ids have not wrapped (a throwaway cluster's never do).
SEEN_AND_ALL = (
    "SELECT count(*) FILTER (WHERE pg_visible_in_snapshot(xmin::text::xid8, %s::pg_snapshot)), "
    "count(*) FROM annotation_observation "
    "WHERE project_id = %s AND kind = 'count' AND id > %s AND id <= %s"
)
ALL = (
    "SELECT count(*) FROM annotation_observation "
    "WHERE project_id = %s AND kind = 'count' AND id > %s AND id <= %s"
)


class _Moved(Exception):
    """A file the row names is gone: a later publication may have replaced it meanwhile."""


def live_model_check(database_url: str, media_root: Path, *, attempts: int = 5) -> list[dict]:
    """One record per live model: its figures and `violations` (a list of sentences, empty
    when consistent). Reads in one REPEATABLE READ transaction, again when a file a row names
    is gone (a publication since the read deletes its predecessor's files); a file still gone
    at the last attempt is a violation."""
    for attempt in range(attempts):
        try:
            with psycopg.connect(database_url, connect_timeout=5) as conn:
                conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
                rows = conn.execute(ROWS).fetchall()
                return [_check(conn, row, media_root, attempt + 1 < attempts) for row in rows]
        except _Moved:
            continue
    raise AssertionError("unreachable: the last attempt reports missing files")


def _check(conn, row, media_root: Path, may_retry: bool) -> dict:
    project, base, number, watermark, applied, file, state_file, points, newest_seen = row
    violations: list[str] = []
    late = 0
    if number == 0:
        if (applied, file, watermark) != (0, "", newest_seen):
            violations.append(f"nothing published, yet {applied} applied, file {file!r}")
    else:
        complete = len(points) == number  # else the curve was cut: check from its first point
        previous = {"watermark": newest_seen, "answers": 0} if complete else points[0]
        for point in points if complete else points[1:]:
            if not point.get("snapshot"):
                violations.append(f"a point without its snapshot: {point}")
                break
            after, up_to = previous["watermark"], point["watermark"]
            seen, stored = conn.execute(
                SEEN_AND_ALL, [point["snapshot"], project, after, up_to]
            ).fetchone()
            took = point["answers"] - previous["answers"]
            if up_to <= after or took != seen:
                violations.append(f"({after}, {up_to}]: applied {took}, its snapshot saw {seen}")
            late += stored - seen
            previous = point
        if (points[-1]["watermark"], points[-1]["answers"]) != (watermark, applied):
            violations.append(f"the row ({watermark}, {applied}) is not its last point")
        missing = [name for name in (file, state_file) if not (media_root / name).exists()]
        if missing and may_retry:
            raise _Moved
        violations += [f"the file {name} is gone" for name in missing]
        if not missing:
            try:
                violations += _files_disagree(media_root, file, state_file, base, number, applied)
            except FileNotFoundError as exc:  # deleted between the check above and the read
                if may_retry:
                    raise _Moved from exc
                gone = Path(exc.filename)
                if gone.is_relative_to(media_root):
                    gone = gone.relative_to(media_root)
                violations.append(f"the file {gone} is gone")
    stored = conn.execute(ALL, [project, newest_seen, watermark]).fetchone()[0]
    if applied != stored - late:
        violations.append(f"{applied} applied, {stored} stored up to the watermark, {late} late")
    return {
        "project": project,
        "base_version": base,
        "publications": number,
        "answers_applied": applied,
        "late_commits": late,
        "violations": violations,
    }


def _files_disagree(
    media_root: Path, file: str, state_file: str, base: int, number: int, applied: int
) -> list[str]:
    try:
        _, metadata = load_tagger(media_root / file)
    except (OSError, ModelFileError) as exc:
        if isinstance(exc.__cause__, FileNotFoundError):  # gone meanwhile: the caller decides
            raise exc.__cause__ from None
        return [f"the model file does not load: {exc}"]
    found = []
    if (metadata.get("version"), metadata.get("live")) != (base, number):
        found.append(f"the model file is {metadata}, the row v{base} update {number}")
    with np.load(media_root / state_file, allow_pickle=False) as state:
        counted = int(state["counters"][1])
    if counted != applied:
        found.append(f"the state counts {counted} answers, the row {applied}")
    return found
