"""Verification tasks on the learning side (issue 15): the retrain policy's verification
windows (`learning.core.next_round.verification_windows`, which says which windows and why) as
the annotation app stores them.
"""

from __future__ import annotations

from collections.abc import Sequence

from annotation.services import VerificationWindow
from learning.core.next_round import Window, verification_windows
from learning.core.report import TokenProbabilities


def as_windows(windows: Sequence[Window]) -> list[VerificationWindow]:
    """The policy's windows as the annotation app's, in serving order."""
    return [
        VerificationWindow(
            sentence_id=w.sentence_id,
            start=w.start,
            shown_tags=list(w.shown_tags),
            is_gold=w.is_gold,
        )  # fmt: skip
        for w in windows
    ]


def round_windows(
    served_probs: TokenProbabilities,
    served: Sequence[tuple[int, list[str], bool]],
    *,
    window: int,
    random_state: int,
) -> list[VerificationWindow]:
    """The verification windows of a version over `served` ((id, tokens, is a gold check),
    `served_probs` its probabilities of them), the most informative first."""
    return as_windows(
        verification_windows(served_probs, served, window=window, random_state=random_state)
    )
