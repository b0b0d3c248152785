import numpy as np
import pytest

from learning.core.features import FeatureConfig, featurize, word_shape
from learning.core.node_tagger import NodeTagger
from learning.core.softmax import soft_label_objective


def test_fit_learns_suffixes_and_generalises_to_unseen_words():
    forms = ["walking", "talking", "running", "dog", "cat", "house", "the", "a"]
    tags = ["VERB", "VERB", "VERB", "NOUN", "NOUN", "NOUN", "DET", "DET"]
    tagset = ["DET", "NOUN", "VERB"]
    soft = np.zeros((len(forms), 3))
    soft[np.arange(len(forms)), [tagset.index(t) for t in tags]] = 5.0
    config = FeatureConfig(n_features=2**12)
    with np.errstate(invalid="raise"):
        tagger = NodeTagger(alpha=0.5, features=config).fit_types(forms, soft, tagset)
    assert tagger.predict([["jumping", "the"]]) == [["VERB", "DET"]]
    proba = tagger.token_proba([["jumping", "jumping"], ["zzz"]])
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_array_equal(proba[0], proba[1])
    # Warm start from itself converges at once to the same optimum.
    again = NodeTagger(alpha=0.5, features=config).fit_types(forms, soft, tagset, warm_start=tagger)
    assert again.n_iter_ <= 2
    np.testing.assert_allclose(again.coef_, tagger.coef_, atol=1e-4)


def test_warm_start_with_other_features_is_refused():
    forms, soft = ["a", "b"], np.array([[1.0, 0.0], [0.0, 1.0]])
    first = NodeTagger(features=FeatureConfig(n_features=64)).fit_types(forms, soft, ["X", "Y"])
    with pytest.raises(ValueError, match="different word features"):
        NodeTagger(features=FeatureConfig(n_features=128)).fit_types(
            forms, soft, ["X", "Y"], warm_start=first
        )


def test_a_warm_start_matches_tags_by_name_and_starts_new_tags_at_zero():
    from learning.core.tagger_base import warm_start_params

    forms = ["a", "b", "c"]
    soft = np.eye(3)
    config = FeatureConfig(n_features=64)
    first = NodeTagger(features=config).fit_types(forms, soft, ["X", "Y", "Z"])
    active = np.array([5, 0, 63, 17])
    w0, c0 = warm_start_params(first, config, 64, ("Z", "NEW", "X"), active)
    np.testing.assert_array_equal(w0[:, 0], first.coef_[active, 2])
    np.testing.assert_array_equal(w0[:, 2], first.coef_[active, 0])
    assert not w0[:, 1].any() and c0[1] == 0
    np.testing.assert_array_equal(c0[[0, 2]], first.intercept_[[2, 0]])


def test_features_are_stable_hashes():
    config = FeatureConfig(n_features=2**10)
    a = featurize(["Running", "running"], config)
    b = featurize(["Running", "running"], config)
    assert (a != b).nnz == 0
    assert word_shape("McDonald's-2") == "XxXx'x-d"


def test_fit_reaches_the_optimum_of_a_reference_solver():
    """Same minimum as scipy's L-BFGS-B run to a tight tolerance on the same objective, and the
    in-place objective agrees with a dense evaluation."""
    from scipy.optimize import minimize

    rng = np.random.default_rng(5)
    forms = [f"w{i}{'ing' if i % 3 == 0 else 'ed' if i % 3 == 1 else ''}" for i in range(60)]
    soft = rng.random((60, 4)) * (rng.random((60, 4)) < 0.5) * 3.0
    soft[soft.sum(axis=1) == 0, 0] = 1.0
    config = FeatureConfig(n_features=2**9)
    tagset = ["A", "B", "C", "D"]
    ours = NodeTagger(alpha=0.3, features=config, tol=1e-10, ftol=0.0, max_iter=5000)
    ours.fit_types(forms, soft, tagset)
    x = featurize(forms, config)
    active = np.flatnonzero(np.diff(x.tocsc().indptr))
    xa = x[:, active].tocsr()
    # Dense reference of the objective at our solution.
    scores = xa.toarray() @ ours.coef_[active] + ours.intercept_
    log_p = scores - np.log(np.exp(scores).sum(axis=1, keepdims=True))
    dense = -(soft * log_p).sum() + 0.15 * (ours.coef_**2).sum()
    assert ours.objective_ == pytest.approx(dense, rel=1e-10)
    reference = minimize(
        lambda p: soft_label_objective(p, xa, None, soft, 0.3),
        np.zeros(active.shape[0] * 4 + 4),
        jac=True,
        method="L-BFGS-B",
        options={"gtol": 1e-10, "ftol": 0.0, "maxiter": 10000, "maxcor": 20},
    )
    assert ours.objective_ <= reference.fun + 1e-8 * abs(reference.fun)
    np.testing.assert_allclose(ours.coef_[active], reference.x[:-4].reshape(-1, 4), atol=1e-5)
    # The intercept is unpenalized, so it is determined up to a common shift of all tags.
    shift = ours.intercept_ - reference.x[-4:]
    np.testing.assert_allclose(shift, shift.mean(), atol=1e-5)


def test_token_level_fit_equals_the_per_type_fit():
    """Fitting token soft labels aggregates them per word type: the same optimum."""
    sentences = [["the", "dog", "runs"], ["a", "dog"], ["the", "cat", "runs"]]
    tagset = ["DET", "NOUN", "VERB"]
    labels = np.zeros((8, 3))
    labels[[0, 3, 5], 0] = 1.0
    labels[[1, 4, 6], 1] = 1.0
    labels[[2, 7], 2] = [1.0, 0.5]
    config = FeatureConfig(n_features=2**10)
    by_token = NodeTagger(features=config, tol=1e-10, ftol=0.0).fit(sentences, labels, tagset)
    forms = ["the", "dog", "runs", "a", "cat"]
    per_type = np.array([[2, 0, 0], [0, 2, 0], [0, 0, 1.5], [1, 0, 0], [0, 1, 0]], dtype=float)
    by_type = NodeTagger(features=config, tol=1e-10, ftol=0.0).fit_types(forms, per_type, tagset)
    np.testing.assert_allclose(by_token.coef_, by_type.coef_, atol=1e-6)
    assert by_token.predict([["the", "dog"]]) == [["DET", "NOUN"]]
