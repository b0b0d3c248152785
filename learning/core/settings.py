"""The settings groups the batch learner (:class:`.pipeline.CountTagger`), the online learner
(:class:`.online.OnlineCountTagger`) and the retrain policy (:mod:`.policy`) share, each
validated once, when it is made.

- :class:`CrowdSettings`: how annotators are judged — whether reliability weighs their answers,
  the skill below which one is flagged, the answers before anyone is judged. One object, read
  by the fit's reliability stage (:mod:`.pipeline.reliability`), by the online learner's hashed
  table and by the policy's annotator table, so a flag means the same everywhere.
- :class:`FeatureSettings`: the word features both model kinds read and the contextual model's
  features around them (whose ``word`` part is the same, so a node-only model's weights carry
  over to a contextual one).

**Extension point (a richer annotator model).** An annotator model beyond one noise variance
per person (miss rates, a tag confusion as Dawid and Skene's) is a field of
:class:`CrowdSettings` naming it, read in :mod:`.pipeline.reliability`, which returns the one
estimate the fit weighs answers by and the policy's table and flags are made from.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .features import ContextConfig, FeatureConfig
from .observations import Observations
from .privacy import Mechanism

__all__ = ["CrowdSettings", "FeatureSettings"]


@dataclass(frozen=True)
class CrowdSettings:
    """How the crowd is judged.

    reliability : estimate each annotator's reliability and weigh their answers by it
        (default True; off, every answer weighs 1 and nobody is flagged).
    flag_threshold : flag annotators whose skill (1 for answers that match the model, about 0
        for chance: :mod:`.crowd`) is below this (default 0.5); their answers stop counting.
    min_observations : answers an annotator needs before being judged (default 10); for
        released counts, the number that carries as much evidence (:meth:`min_judged`).
    """

    reliability: bool = True
    flag_threshold: float = 0.5
    min_observations: int = 10

    def __post_init__(self) -> None:
        if not isinstance(self.reliability, bool):
            raise ValueError("reliability must be True or False")
        if not -1.0 <= float(self.flag_threshold) <= 1.0:
            raise ValueError("flag_threshold must be between -1 and 1 (a skill)")
        if isinstance(self.min_observations, bool) or int(self.min_observations) < 1:
            raise ValueError("min_observations must be at least 1")
        object.__setattr__(self, "flag_threshold", float(self.flag_threshold))
        object.__setattr__(self, "min_observations", int(self.min_observations))

    def min_judged(self, mechanism: Mechanism | None, observations: Observations) -> int:
        """Answers before an annotator is judged: ``min_observations``, or for releases of a
        privacy ``mechanism`` as many as carry that much evidence
        (:meth:`.privacy.Mechanism.min_judged_answers`)."""
        if mechanism is None:
            return self.min_observations
        return mechanism.min_judged_answers(self.min_observations, observations)


@dataclass(frozen=True)
class FeatureSettings:
    """The features of both model kinds.

    word : :class:`.features.FeatureConfig`, a token's own word features (both kinds).
    context : :class:`.features.ContextConfig` of the contextual model (default: the default
        one around ``word``); its ``word`` must be ``word``.
    """

    word: FeatureConfig = field(default_factory=FeatureConfig)
    context: ContextConfig | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.word, FeatureConfig):
            raise ValueError("word must be a FeatureConfig")
        if self.context is None:
            object.__setattr__(self, "context", ContextConfig(word=self.word))
        elif not isinstance(self.context, ContextConfig):
            raise ValueError("context must be a ContextConfig")
        elif self.context.word != self.word:
            raise ValueError("context.word must equal word (the shared word features)")

    @classmethod
    def of(cls, value) -> FeatureSettings:
        """``value`` as settings: None (the defaults), settings, or one part — a
        :class:`.features.FeatureConfig` (the word features) or a
        :class:`.features.ContextConfig` (the contextual features around its ``word``)."""
        if value is None:
            return cls()
        if isinstance(value, cls):
            return value
        if isinstance(value, FeatureConfig):
            return cls(word=value)
        if isinstance(value, ContextConfig):
            return cls(word=value.word, context=value)
        raise ValueError(f"features must be FeatureSettings, FeatureConfig or ContextConfig, "
                         f"not {value!r}")  # fmt: skip
