"""The batch learner, by stage: :mod:`.problem` (the covered tokens and their features),
:mod:`.moments` (steps 1–3: ŵ, the moments, the node-only fit), :mod:`.reliability` (step 4:
the crowd's one estimate), :mod:`.refine` (step 5: EM with exact count posteriors and
cross-fitting), :mod:`.calibrate` (the served temperatures), orchestrated by
:class:`.estimator.CountTagger`.
"""

from ..settings import CrowdSettings, FeatureSettings
from ..training import TrainingSet
from .estimator import MODEL_KINDS, CountTagger
from .problem import STAGES

__all__ = [
    "MODEL_KINDS", "STAGES", "CountTagger", "CrowdSettings", "FeatureSettings", "TrainingSet",
]  # fmt: skip
