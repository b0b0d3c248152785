import numpy as np
import pytest

from learning.core import ContextConfig, ContextTagger, FeatureConfig
from learning.core.crossfit import cross_fitted_priors, sentence_folds
from tests.support.synthetic import make_corpus

CONTEXT = ContextConfig(word=FeatureConfig(n_features=2**12))


def test_sentence_folds_follow_the_sentence_and_refuse_an_empty_fold():
    sentence = np.array([0, 0, 1, 2, 2, 3, 5])
    np.testing.assert_array_equal(sentence_folds(sentence, 2), [0, 0, 1, 0, 0, 1, 1])
    np.testing.assert_array_equal(sentence_folds(sentence, 3), [0, 0, 1, 2, 2, 0, 2])
    assert sentence_folds(sentence, 1) is None and sentence_folds(sentence, 0) is None
    assert sentence_folds(np.array([0, 2, 4]), 2) is None  # fold 1 would be empty


@pytest.fixture(scope="module")
def tokens():
    rng = np.random.default_rng(41)
    sentences, gold, _, tagset = make_corpus(rng, n_sentences=300, n_words=60, concentration=0.15)
    lengths = np.array([len(s) for s in sentences])
    x = ContextTagger(features=CONTEXT).featurize(sentences)
    sentence = np.repeat(np.arange(len(sentences)), lengths)
    return x, lengths, sentence, tagset


def test_cross_fitted_priors_do_not_see_their_own_tokens(tokens):
    """The prior of a token in fold f comes from a model fitted without fold f's labels: changing
    those labels leaves fold f's priors unchanged and moves the other fold's."""
    x, lengths, sentence, tagset = tokens
    folds = sentence_folds(sentence, 2)

    def fit(fold, labels, start):
        return ContextTagger(alpha=0.9, features=CONTEXT, max_iter=30).fit(
            None, labels, tagset, warm_start=start, features=x, lengths=lengths
        )

    def predict(model, fold=None):
        priors = model.token_proba(None, features=x, lengths=lengths)
        return priors if fold is None else priors[folds == fold]

    rng = np.random.default_rng(7)
    labels = rng.dirichlet(np.ones(len(tagset)), size=x.shape[0])
    models, priors = cross_fitted_priors(fit, predict, labels, folds, [None, None])
    assert len(models) == 2 and priors.shape == labels.shape
    np.testing.assert_allclose(priors.sum(axis=1), 1.0)
    np.testing.assert_allclose(priors[folds == 1], predict(models[1])[folds == 1])
    changed = labels.copy()
    changed[folds == 0] = np.eye(len(tagset))[0]  # fold 0's labels all say T0
    _, priors_changed = cross_fitted_priors(fit, predict, changed, folds, [None, None])
    np.testing.assert_allclose(priors_changed[folds == 0], priors[folds == 0])
    assert np.abs(priors_changed[folds == 1] - priors[folds == 1]).max() > 0.05
    assert (priors_changed[folds == 1].argmax(axis=1) == 0).mean() > (
        priors[folds == 1].argmax(axis=1) == 0
    ).mean()
