"""Verification tasks on the learning side (issue 15): the windows a new model version asks
about, and the verification columns of the annotator table. The retrain service calls both.

**Which windows.** One per served sentence (training and gold-check sentences, at most
`ROUND_MAX_SENTENCES` training ones a version, drawn at random): the window whose answer (Yes, or
the first wrong word) carries the most bits under the new model
(`learning.core.task_value.best_verification_windows`; the least sure window, asked before
issue 25, drew mostly No), served most informative first. The choice depends on the text and
the model only, never on the true tags, so conditioning on the shown tags keeps the E-step exact
(`learning.core.verification`); a version's tasks all show that version's most likely tags.

**The table.** The fit judges verification answerers against its own beliefs
(`CountTagger.verification_reliability_`), over the answers it fitted; flagged annotators'
answers are not fitted, so their skill is measured here too, against the served model, over all
their answers (as the count columns are): a flag is lifted once their answers follow the windows.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from annotation.services import VerificationWindow
from learning.core.report import TokenProbabilities
from learning.core.task_value import best_verification_windows
from learning.core.verification import (
    VerificationAnswers,
    probability_all_right,
    verification_reliability,
)

ROUND_MAX_SENTENCES = 2000
ROUND_MAX_GOLD_SENTENCES = 500


def round_windows(
    served_probs: TokenProbabilities,
    served: Sequence[tuple[int, list[str], bool]],
    *,
    window: int,
    random_state: int,
) -> list[VerificationWindow]:
    """The verification windows of a new version: one per sentence of `served` ((id, tokens,
    is a gold check), `served_probs` the version's probabilities of them; at most
    `ROUND_MAX_SENTENCES` training and `ROUND_MAX_GOLD_SENTENCES` gold-check ones, drawn at
    random), where its answer teaches most, the most informative first (module docstring)."""
    rng = np.random.default_rng(random_state)
    picked: list[int] = []
    for gold, cap in ((False, ROUND_MAX_SENTENCES), (True, ROUND_MAX_GOLD_SENTENCES)):
        rows = [i for i, row in enumerate(served) if row[2] is gold]
        if len(rows) > cap:
            rows = [rows[i] for i in sorted(rng.choice(len(rows), size=cap, replace=False))]
        picked.extend(rows)
    if not picked:
        return []
    chosen = [served[i] for i in picked]
    probs = served_probs.take(picked)
    offsets = np.append(probs.offsets, probs.probs.shape[0])
    starts, values = best_verification_windows(probs.probs, offsets, window)
    guess = probs.probs.argmax(axis=1)
    windows = []
    # Served in this order (ids are the priority): the most informative first.
    for i in np.argsort(-values, kind="stable"):
        sentence_id, tokens, gold = chosen[i]
        width = min(window, len(tokens))
        first = offsets[i] + starts[i]
        windows.append(
            VerificationWindow(
                sentence_id=int(sentence_id),
                start=int(starts[i]),
                shown_tags=[int(k) for k in guess[first : first + width]],
                is_gold=gold,
            )
        )
    return windows


def probability_yes(probs: TokenProbabilities, answers: VerificationAnswers) -> np.ndarray:
    """The model's `P(Yes)` of each answer's window: every shown tag right."""
    width = answers.shown.shape[1]
    position = np.arange(width)[None, :]
    inside = position < answers.length[:, None]
    first = probs.offsets[answers.sentence] + answers.start
    tokens = np.where(inside, first[:, None] + position, -1)
    return probability_all_right(probs.probs, tokens, answers.shown)


def table_add_verification(
    table: list[dict],
    *,
    probs: TokenProbabilities,
    judged: VerificationAnswers | None,
    fitted: dict[int, dict],
    flag_threshold: float,
    min_observations: int,
) -> None:
    """Add to each row of the annotator `table` its verification answers, skill and rate of Yes,
    and flag the annotators whose Yes / No answers are no better than chance: by the fit's own
    estimate (`fitted`, `CountTagger.verification_reliability_`) or, over all their answers,
    against the served model (`probs`)."""
    measured = {}
    if judged is not None and len(judged):
        measured = verification_reliability(
            judged.annotator,
            judged.answer,
            probability_yes(probs, judged),
            flag_threshold=flag_threshold,
            min_observations=min_observations,
        )
    for row in table:
        annotator = row["annotator"]
        estimate = measured.get(annotator)
        own = fitted.get(annotator)
        row["verification_answers"] = estimate["n_observations"] if estimate else 0
        skill = estimate["skill"] if estimate else None
        row["verification_skill"] = None if skill is None else round(skill, 4)
        row["verification_yes_rate"] = round(estimate["yes_rate"], 4) if estimate else None
        if estimate and (estimate["flagged"] or (own is not None and own["flagged"])):
            fit_skill = own["skill"] if own is not None and own["skill"] is not None else skill
            reason = (
                f"Yes / No answers no better than chance (skill {fit_skill:.2f} < "
                f"{flag_threshold:.2f} over {estimate['n_observations']} answers, "
                f"{estimate['yes_rate']:.0%} Yes); their answers no longer count."
            )
            row["flagged"] = True
            # Both reasons when counts and Yes / No both fail; the quality table holds 300 chars.
            row["flag_reason"] = f"{row['flag_reason']} {reason}".strip()[:300]
