"""``TrainingSet``: everything a fit learns from, in one frozen object.

:meth:`.pipeline.CountTagger.fit`, :meth:`.online.OnlineCountTagger.partial_fit` and the retrain
policy (:func:`.policy.plan_version`) take one; the platform's adapter and the simulators build
it. It is validated once, when made: the tag set, the tag columns of every kind of answer, the
privacy mechanism's tag set, one ``uniform`` flag per count answer.

**Extension point (a new kind of answer).** A new observation kind — entity counts in mentions
or in words, say — is one more optional field here beside ``verifications`` (validated against
``tagset`` in ``__post_init__``), one evidence class beside ``CountEvidence`` and
``VerificationEvidence`` that the problem stage (:mod:`.pipeline.problem`) builds on the covered
tokens and the E-step reads (``windows``, ``posteriors``), and its answerers' reliability in
:mod:`.pipeline.reliability` under the same :class:`.settings.CrowdSettings`; the policy's
annotator table reads that estimate like the others. Nothing else needs to know the kind.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from .observations import Observations
from .privacy import Mechanism
from .verification import VerificationAnswers

__all__ = ["TrainingSet"]


@dataclass(frozen=True)
class TrainingSet:
    """What a fit learns from.

    sentences : the sentences (lists of word forms) the answers' sentence indices refer to.
    observations : the count answers (:class:`.observations.Observations`), tag columns in
        ``tagset`` order; for a private project, the releases of ``mechanism``.
    tagset : the tag names, distinct.
    verifications : yes/no answers on windows of the same sentences (:mod:`.verification`), or
        None; they enter the EM, not the moments.
    mechanism : the local privacy mechanism that released the counts (:mod:`.privacy`), or None.
    text : the corpus' whole text, which word classes are learned from (default ``sentences``).
    uniform : per count answer, whether its task was drawn as the paper's ``S(o | y)``
        (default: all); tasks chosen by a model's doubt enter the EM, not the moments, whose
        least squares assume windows drawn independently of the tags.
    excluded : ids of annotators whose answers are judged but not fitted (those the previous
        version flagged): their answers weigh 0 throughout the fit, and the fit's reliability
        estimate covers them, so a flag is lifted once their answers agree with the model.
    gold_sentences, gold_tags : gold-tagged sentences (tag names) to calibrate the served
        model's probabilities on when they hold enough tokens
        (:func:`.calibration.gold_calibrates`), instead of held-out answers.
    served_answers : per count answer, whether it was given while the previous version was
        served (None: unknown); those are tested for giving back its answers (:mod:`.copying`).
    served_proba : (tokens of ``sentences``, K) that version's tag probabilities, every token
        read in its sentence (None: the retrain policy reads them off the previous version).
    """

    sentences: Sequence[Sequence[str]]
    observations: Observations
    tagset: tuple[str, ...]
    verifications: VerificationAnswers | None = None
    mechanism: Mechanism | None = None
    text: Sequence[Sequence[str]] | None = None
    uniform: np.ndarray | None = None
    excluded: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    gold_sentences: Sequence[Sequence[str]] = ()
    gold_tags: Sequence[Sequence[str]] = ()
    served_answers: np.ndarray | None = None
    served_proba: np.ndarray | None = None

    def __post_init__(self) -> None:
        tagset = tuple(self.tagset)
        if not tagset or len(set(tagset)) != len(tagset):
            raise ValueError("tagset must be a non-empty list of distinct tag names")
        object.__setattr__(self, "tagset", tagset)
        if not isinstance(self.observations, Observations):
            raise ValueError("observations must be Observations")
        if self.observations.n_tags != len(tagset):
            raise ValueError(
                f"observations have {self.observations.n_tags} tag columns, "
                f"tagset has {len(tagset)}"
            )
        n = len(self.observations)
        if self.uniform is not None:
            uniform = np.asarray(self.uniform, dtype=bool)
            if uniform.shape != (n,):
                raise ValueError("uniform must hold one flag per observation")
            object.__setattr__(self, "uniform", uniform)
        if self.mechanism is not None and self.mechanism.n_tags != len(tagset):
            raise ValueError("the mechanism was made for another tag set")
        if self.verifications is not None and len(self.verifications) == 0:
            object.__setattr__(self, "verifications", None)
        excluded = np.unique(np.asarray(self.excluded, dtype=np.int64).reshape(-1))
        object.__setattr__(self, "excluded", excluded)
        if len(self.gold_sentences) != len(self.gold_tags):
            raise ValueError("gold_sentences and gold_tags must have the same length")
        if self.served_answers is not None:
            served = np.asarray(self.served_answers, dtype=bool)
            if served.shape != (n,):
                raise ValueError("served_answers must hold one flag per observation")
            object.__setattr__(self, "served_answers", served)
        if self.served_proba is not None:
            tokens = sum(len(s) for s in self.sentences)
            proba = np.asarray(self.served_proba, dtype=np.float64)
            if proba.shape != (tokens, len(tagset)):
                raise ValueError(
                    f"served_proba must be ({tokens} tokens, {len(tagset)} tags), not {proba.shape}"
                )
            object.__setattr__(self, "served_proba", proba)

    @property
    def answers(self) -> int:
        """Count and verification answers."""
        return len(self.observations) + (
            0 if self.verifications is None else len(self.verifications)
        )

    @property
    def drawn(self) -> np.ndarray:
        """Per count answer, 1.0 where its task was drawn uniformly (all when none was)."""
        n = len(self.observations)
        if self.uniform is None or not self.uniform.any():
            return np.ones(n)
        return self.uniform.astype(np.float64)

    def trusted(self, annotator: np.ndarray) -> np.ndarray:
        """1.0 for answers of ``annotator`` ids that are fitted, 0.0 for the ``excluded``."""
        return np.where(np.isin(annotator, self.excluded), 0.0, 1.0)

    def subset(self, keep: np.ndarray) -> TrainingSet:
        """The same set with the count answers ``keep`` only (a mask or indices)."""
        keep = np.asarray(keep)
        uniform = None if self.uniform is None else self.uniform[keep]
        served = None if self.served_answers is None else self.served_answers[keep]
        return replace(
            self, observations=self.observations.subset(keep), uniform=uniform,
            served_answers=served,
        )  # fmt: skip
