"""The task kinds of the annotator's cycle, one module each: the rules of an answer
(`answer_check` and the checks it is made of), the statement that stores the plain case on
PostgreSQL beside the rules it mirrors (`SUBMIT`, its `Row`, `fits_statement`, `submit`), and
the tests that feed both the same answers (tests/annotation/test_hotpath.py).

A new kind is one module here and one line in `KINDS`, and one page module
(frontend/static/frontend/js/annotate/kinds/).
"""

from annotation.kinds import count, verify

KINDS = {count.KIND: count, verify.KIND: verify}

__all__ = ["KINDS", "count", "verify"]
