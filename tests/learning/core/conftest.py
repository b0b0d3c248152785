"""Fixtures of the learning core's tests."""

import numpy as np
import pytest

from tests.support.synthetic import make_corpus


@pytest.fixture(scope="module")
def data():
    """A synthetic corpus: 1,500 sentences of a 60-word language (sentences, gold tags, the true
    weights, the tag set), made once a module."""
    rng = np.random.default_rng(41)
    sentences, gold, w_star, tagset = make_corpus(
        rng, n_sentences=1500, n_words=60, concentration=0.15
    )
    return sentences, gold, w_star, tagset
