"""Verification tasks: the rounds a model version's retrain makes (the rules of a verification
answer, and the statement that stores it, are `annotation.kinds.verify`).

A verification task shows the tags a model version gives the words of a window and asks "Are all
of these tags right?": Yes, or No and optionally which word is wrong (`Observation.wrong`, the
first wrong word in the window, 0-based). The learning side chooses the windows and the shown
tags (`learning.verification`); this module stores them as tasks and says which version's tasks
are served (`Project.verification_version`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from annotation.kinds.verify import verification_check
from annotation.models import Project, TaskKind
from annotation.task_rows import tasks_insert

__all__ = ["VerificationWindow", "verification_check", "verification_round_create"]


@dataclass(frozen=True, slots=True)
class VerificationWindow:
    """A window to verify and the tag index the model shows under each of its words."""

    sentence_id: int
    start: int
    shown_tags: list[int]
    is_gold: bool = False


def verification_round_create(
    *, project_id: int, version_number: int, windows: Iterable[VerificationWindow]
) -> int:
    """Store one verification task per window for the model version `version_number` and serve
    that version's tasks from now on (call it in the transaction that writes the version).
    Training windows get the project's redundancy in slots; gold-check windows are not
    slot-limited, as count gold checks. Returns the number of tasks created."""
    redundancy = Project.objects.filter(pk=project_id).values_list("redundancy", flat=True).get()
    tasks = [
        {
            "project_id": project_id,
            "sentence_id": window.sentence_id,
            "kind": TaskKind.VERIFY,
            "start": window.start,
            "length": len(window.shown_tags),
            "tags": [],
            "shown_tags": [int(tag) for tag in window.shown_tags],
            "model_version": version_number,
            "is_gold": window.is_gold,
            "open_slots": 0 if window.is_gold else redundancy,
        }
        for window in windows
    ]
    tasks_insert(tasks)
    # No window (no training sentence): no verification task is served until a version has one.
    served = version_number if tasks else None
    Project.objects.filter(pk=project_id).update(verification_version=served)
    return len(tasks)
