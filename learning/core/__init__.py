"""Tally's numerical core: learning taggers from region-count annotations.

Pure numpy/scipy (no Django). Pipeline: :class:`CountTagger` (solve ŵ → moments → log-linear fit
→ exact-count EM → annotator reliability). Building blocks are importable from their modules;
the stable public API is re-exported here.
"""

from .conllu import ConlluError, ConlluSentence, conllu_head, iter_conllu, read_conllu
from .crowd import Reliability, estimate_reliability
from .design import Corpus, design_matrix, encode_corpus
from .evaluate import (
    MostFrequentTagger,
    accuracy,
    confusion_matrix,
    count_consistency,
    per_tag_scores,
)
from .features import FeatureConfig, featurize
from .modelfile import FORMAT_VERSION, ModelFileError, load_tagger, save_tagger
from .observations import Observations
from .pipeline import CountTagger, expected_counts
from .posterior import window_posteriors
from .simplex import project_rows_to_simplex
from .simulate import SimulatedCrowd, simulate_crowd
from .solver import select_ridge, solve_word_tag_probs
from .tagger import LogLinearTagger

__all__ = [
    "FORMAT_VERSION",
    "ConlluError",
    "ConlluSentence",
    "Corpus",
    "CountTagger",
    "FeatureConfig",
    "LogLinearTagger",
    "ModelFileError",
    "MostFrequentTagger",
    "Observations",
    "Reliability",
    "SimulatedCrowd",
    "accuracy",
    "confusion_matrix",
    "count_consistency",
    "design_matrix",
    "encode_corpus",
    "estimate_reliability",
    "expected_counts",
    "featurize",
    "conllu_head",
    "iter_conllu",
    "load_tagger",
    "per_tag_scores",
    "project_rows_to_simplex",
    "read_conllu",
    "save_tagger",
    "select_ridge",
    "simulate_crowd",
    "solve_word_tag_probs",
    "window_posteriors",
]
