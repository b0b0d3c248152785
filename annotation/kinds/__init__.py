"""The task kinds of the annotator's cycle, one module each: the rules of an answer
(`answer_check` and the checks it is made of), the statement that stores the plain case on
PostgreSQL beside the rules it mirrors (`SUBMIT`, its `Row`, `fits_statement`, `submit`,
`answer_of`), and the tests that feed both the same answers (tests/annotation/test_hotpath.py).

A new kind is one module here and one line in `KINDS`, and one page module
(frontend/static/frontend/js/annotate/kinds/).
"""

from __future__ import annotations

from datetime import datetime
from types import ModuleType

from annotation import hotpath
from annotation.kinds import count, verify

KINDS = {count.KIND: count, verify.KIND: verify}

__all__ = ["KINDS", "count", "submit_plain", "verify"]


def submit_plain(
    kind: ModuleType,
    *,
    key: str | None,
    user_id: int | None,
    submission,
    now: datetime,
    lease: dict | None = None,
):
    """The `kind`'s `submit` with what `submission` says (it `fits_statement`): its row, or with
    `lease` the pair of the answer's row and the lease's; None when the token names nobody."""
    common = hotpath.submission_common(
        key=key,
        user_id=user_id,
        assignment_id=submission.assignment_id,
        idempotency_key=submission.idempotency_key,
        seconds_on_device=submission.seconds_on_device,
        now=now,
    )
    return kind.submit(common=common, lease=lease, **kind.answer_of(submission))
