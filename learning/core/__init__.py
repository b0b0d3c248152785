"""Tally's numerical core: learning taggers from region-count annotations.

Pure numpy/scipy (no Django). Pipeline: :class:`CountTagger` (solve ŵ → moments → node-only fit
→ annotator reliability → exact-count EM training the served model, contextual by default),
fitted on one :class:`TrainingSet`; the retrain policy every version is planned by,
:func:`.policy.plan_version`.
Models: :class:`NodeTagger` (word form alone) and :class:`ContextTagger` (the word and its
neighbours, with word classes learned from the corpus' text). Building blocks are importable from
their modules; the stable public API is re-exported here.
"""

from .conllu import ConlluError, ConlluSentence, conllu_head, iter_conllu, read_conllu
from .context_tagger import ContextTagger
from .counts import CountEvidence, expected_counts
from .crowd import Reliability, estimate_reliability
from .design import Corpus, design_matrix, encode_corpus
from .evaluate import (
    MostFrequentTagger,
    accuracy,
    confusion_matrix,
    count_consistency,
    per_tag_scores,
)
from .features import ContextConfig, FeatureConfig, featurize, featurize_tokens
from .modelfile import FORMAT_VERSION, ModelFileError, load_tagger, save_tagger
from .node_tagger import NodeTagger
from .observations import Observations
from .pipeline import CountTagger
from .posterior import window_posteriors
from .schedule import EMSchedule, choose_schedule
from .settings import CrowdSettings, FeatureSettings
from .simplex import project_rows_to_simplex
from .solver import select_ridge, solve_word_tag_probs
from .training import TrainingSet
from .wordclasses import WordClasses, learn_word_classes

__all__ = [
    "FORMAT_VERSION",
    "ConlluError",
    "ConlluSentence",
    "ContextConfig",
    "ContextTagger",
    "CountEvidence",
    "Corpus",
    "CountTagger",
    "CrowdSettings",
    "EMSchedule",
    "FeatureConfig",
    "FeatureSettings",
    "NodeTagger",
    "ModelFileError",
    "MostFrequentTagger",
    "Observations",
    "Reliability",
    "TrainingSet",
    "WordClasses",
    "accuracy",
    "choose_schedule",
    "confusion_matrix",
    "count_consistency",
    "design_matrix",
    "encode_corpus",
    "estimate_reliability",
    "expected_counts",
    "featurize",
    "featurize_tokens",
    "learn_word_classes",
    "conllu_head",
    "iter_conllu",
    "load_tagger",
    "per_tag_scores",
    "project_rows_to_simplex",
    "read_conllu",
    "save_tagger",
    "select_ridge",
    "solve_word_tag_probs",
    "window_posteriors",
]
