"""The annotator's cycle, one service package: what the phone sends, parsed once
(`submission`), and the two services that lease the next task and store an answer
(`service`), which choose the database path. The views (`annotation.api.cycle`) only translate
HTTP.

A new task kind is one module of `annotation.kinds` (its answer's rules and the statement that
mirrors them, tested as a pair) and one page module (frontend/static/frontend/js/annotate/
kinds/).
"""

from annotation.cycle.service import Offer, Stored, answer_submit, task_next_for_annotator
from annotation.cycle.submission import (
    MAX_KEY,
    NextTaskRequest,
    NextTaskSerializer,
    ObservationSubmitSerializer,
    Submission,
)

__all__ = [
    "MAX_KEY",
    "NextTaskRequest",
    "NextTaskSerializer",
    "Offer",
    "Stored",
    "Submission",
    "ObservationSubmitSerializer",
    "answer_submit",
    "task_next_for_annotator",
]
