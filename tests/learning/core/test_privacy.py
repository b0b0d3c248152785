import itertools

import numpy as np
import pytest
from scipy.stats import chisquare

from learning.core.observations import Observations
from learning.core.privacy import MECHANISMS, Mechanism, PrivateCountEvidence
from learning.core.schedule import choose_schedule
from learning.core.settings import CrowdSettings
from learning.core.training import TrainingSet


@pytest.mark.parametrize("name", MECHANISMS)
@pytest.mark.parametrize("alpha", [0.5, 1.0, 3.0, 8.0])
def test_every_release_respects_the_privacy_bound(name, alpha):
    """Ratio of release probabilities for any two true answers ≤ e^α, by enumeration, for one
    asked tag and for the budget split across two (the releases of both tags together)."""
    mechanism = Mechanism(name, alpha, n_tags=17)
    for w in (1, 3, 5, 10):
        c = mechanism.channel(w, 1)
        np.testing.assert_allclose(c.sum(axis=0), 1.0)
        assert (c > 0).all()
        assert (c.max(axis=1) / c.min(axis=1)).max() <= np.exp(alpha) * (1 + 1e-9)
        half = mechanism.channel(w, 2)
        joint = np.einsum("ab,cd->acbd", half, half).reshape((w + 1) ** 2, (w + 1) ** 2)
        assert (joint.max(axis=1) / joint.min(axis=1)).max() <= np.exp(alpha) * (1 + 1e-9)
    if name == "classic":
        # Classic randomized response: the truth is almost never told (the paper's point).
        assert mechanism.channel(5, 1)[3, 3] < 0.3 or alpha == 8.0


@pytest.mark.parametrize("name", MECHANISMS)
def test_releases_follow_the_channel(name):
    mechanism = Mechanism(name, 3.0, n_tags=17)
    rng = np.random.default_rng(0)
    n = 6000
    counts = np.zeros((n, 4), dtype=np.int64)
    counts[:, 1] = 2
    mask = np.zeros((n, 4), dtype=bool)
    mask[:, 1] = True
    released = mechanism.release(counts, mask, np.full(n, 5), rng)
    observed = np.bincount(released[:, 1], minlength=6)
    expected = mechanism.channel(5, 1)[:, 2] * n
    keep = expected >= 5  # chi-square needs expected counts of at least 5
    other = observed[~keep].sum(), expected[~keep].sum()
    f_obs = np.append(observed[keep], other[0]) if (~keep).any() else observed[keep]
    f_exp = np.append(expected[keep], other[1]) if (~keep).any() else expected[keep]
    assert chisquare(f_obs, f_exp).pvalue > 0.001
    assert not released[:, [0, 2, 3]].any()


@pytest.mark.parametrize("name", MECHANISMS)
def test_debiased_release_is_unbiased(name):
    mechanism = Mechanism(name, 2.0, n_tags=17)
    for w, m in ((1, 1), (5, 1), (5, 2), (10, 3)):
        c, beta = mechanism.channel(w, m), mechanism.debias(w, m)
        # Classic randomized response at w = 10 tells the truth with ε ≈ 1e-12: its channel is
        # numerically singular and β enormous, so only its relative error is small.
        scale = np.abs(beta).max() if name == "classic" else 1.0
        np.testing.assert_allclose(c.T @ beta, np.arange(w + 1), atol=1e-8 * scale)
        variance = mechanism.noise_variance(w, m)
        assert (variance >= -1e-9).all()
    # More privacy, more noise.
    assert (
        Mechanism(name, 1.0, 17).noise_variance(5, 1)
        > Mechanism(name, 3.0, 17).noise_variance(5, 1)
    ).all()


def _brute_force(probs, mask, released, channel):
    w, k = probs.shape
    marginals, z = np.zeros((w, k)), 0.0
    asked = np.flatnonzero(mask)
    for tagging in itertools.product(range(k), repeat=w):
        counts = np.bincount(tagging, minlength=k)
        weight = float(np.prod(probs[np.arange(w), tagging]))
        weight *= float(np.prod(channel[released[asked], counts[asked]]))
        z += weight
        marginals[np.arange(w), tagging] += weight
    return marginals / z, z


@pytest.mark.parametrize("name", MECHANISMS)
@pytest.mark.parametrize("asked", [[1], [0, 2]])
def test_exact_e_step_equals_brute_force(name, asked):
    rng = np.random.default_rng(3)
    mechanism = Mechanism(name, 2.0, n_tags=3)
    w, k = 4, 3
    mask = np.zeros(k, dtype=bool)
    mask[asked] = True
    for _ in range(3):
        probs = rng.dirichlet(np.ones(k), size=w)
        released = np.where(mask, rng.integers(0, w + 1, size=k), 0)
        obs = Observations.create(
            sentence=[0], start=[0], length=[w], tag_mask=mask[None], counts=released[None],
            sentence_lengths=[w], released=True,
        )  # fmt: skip
        evidence = PrivateCountEvidence(obs, np.arange(w)[None, :], mechanism)
        with np.errstate(invalid="raise", divide="ignore"):
            result = evidence.posteriors(probs[None], np.array([0]), floor=0.0)
        expected, z = _brute_force(probs, mask, released, mechanism.channel(w, len(asked)))
        np.testing.assert_allclose(result.marginals[0], expected, atol=1e-10)
        assert result.log_z[0] == pytest.approx(np.log(z))


def test_bad_mechanisms_are_refused():
    with pytest.raises(ValueError, match="unknown mechanism"):
        Mechanism("laplace", 1.0, 17)
    with pytest.raises(ValueError, match="positive"):
        Mechanism("krr", 0.0, 17)
    with pytest.raises(ValueError, match="positive"):
        Mechanism("krr", float("nan"), 17)


def test_debiased_moments_are_consistent():
    """ŵ from debiased releases approaches the true w* as answers grow (error falls)."""
    from learning.core.design import design_matrix, encode_corpus
    from learning.core.solver import solve_word_tag_probs
    from learning.experiments.simulate import simulate_crowd
    from tests.support.synthetic import make_corpus

    rng = np.random.default_rng(17)
    sentences, gold, w_star, _ = make_corpus(rng, n_sentences=3000, n_words=20)
    corpus = encode_corpus(sentences)
    words = [int(form[1:]) for form in corpus.vocabulary]
    mechanism = Mechanism("krr", 3.0, n_tags=4)
    errors = []
    for per_sentence in (1, 4, 16):
        crowd = simulate_crowd(gold, 4, window=4, obs_per_sentence=per_sentence,
                               tags_per_task=1, random_state=per_sentence)  # fmt: skip
        private = mechanism.released(crowd.observations, rng)
        solution = solve_word_tag_probs(
            design_matrix(corpus, private), mechanism.debiased_counts(private),
            private.tag_mask * 1.0, private.length, 1e-3,
        )  # fmt: skip
        errors.append(float(np.abs(solution.probs - w_star[words]).mean()))
    assert errors[0] > errors[1] > errors[2]
    assert errors[2] < 0.5 * errors[0]


def test_count_tagger_learns_from_private_answers_and_flags_spammers():
    from learning.core import CountTagger, FeatureConfig, accuracy
    from learning.experiments.simulate import simulate_crowd
    from tests.support.synthetic import make_corpus

    rng = np.random.default_rng(23)
    sentences, gold, w_star, tagset = make_corpus(rng, n_sentences=1500, n_words=30)
    crowd = simulate_crowd(gold, 4, window=4, obs_per_sentence=6, tags_per_task=1,
                           n_annotators=10, spam_fraction=0.2, random_state=0)  # fmt: skip
    obs = crowd.observations
    mechanism = Mechanism("geometric", 3.0, n_tags=4)
    private = mechanism.released(obs, rng)
    model = CountTagger(model="node", features=FeatureConfig(2**12),
                        crowd=CrowdSettings(min_observations=50), random_state=0)  # fmt: skip
    with np.errstate(invalid="raise"):
        model.fit(TrainingSet(sentences, private, tagset, mechanism=mechanism))
    gold_names = [[tagset[t] for t in g] for g in gold]
    bayes = [[tagset[int(np.argmax(w_star[int(w[1:])]))] for w in s] for s in sentences]
    assert accuracy(gold_names, model.predict(sentences)) > accuracy(gold_names, bayes) - 0.03
    assert set(crowd.annotators_of_kind("spammer")) == set(model.flagged_annotators_)
    with pytest.raises(ValueError, match="ask at most 3 tags"):
        wide = Observations.create(
            sentence=[0], start=[0], length=[2], tag_mask=np.ones((1, 4), bool),
            counts=[[0, 1, 0, 1]], sentence_lengths=[len(s) for s in sentences], released=True,
        )  # fmt: skip
        CountTagger(model="node").fit(TrainingSet(sentences, wide, tagset, mechanism=mechanism))


def _private_crowd(seed: int, *, n_sentences: int, alpha: float):
    """A synthetic corpus of 4 tags answered by 3 one-tag tasks of 4 words per sentence, and
    the same answers released through krr at ``alpha``: (sentences, tagset, exact answers,
    mechanism, released answers)."""
    from learning.experiments.simulate import simulate_crowd
    from tests.support.synthetic import make_corpus

    rng = np.random.default_rng(seed)
    sentences, gold, _, tagset = make_corpus(rng, n_sentences=n_sentences, n_words=30)
    exact = simulate_crowd(gold, 4, window=4, obs_per_sentence=3, tags_per_task=1,
                           random_state=0).observations  # fmt: skip
    mechanism = Mechanism("krr", alpha, n_tags=4)
    return sentences, tagset, exact, mechanism, mechanism.released(exact, rng)


def test_private_em_runs_every_iteration_unless_given_a_tolerance():
    """A release's likelihood is mostly the mechanism's own noise: a tolerance relative to its
    size stopped EM early (at α = 1 after 5 of 30 iterations), so private fits run them all."""
    from learning.core import CountTagger, FeatureConfig

    sentences, tagset, _, mechanism, private = _private_crowd(29, n_sentences=400, alpha=1.0)
    settings = dict(model="node", features=FeatureConfig(2**10),
                    crowd=CrowdSettings(reliability=False), random_state=0)  # fmt: skip
    six = choose_schedule(private, private=True).replace(n_em_iter=6)
    data = TrainingSet(sentences, private, tagset, mechanism=mechanism)
    every = CountTagger(**settings, schedule=six).fit(data)
    assert len(every.history_) == 6
    early = CountTagger(**settings, schedule=six.replace(em_tol=1.0))
    early.fit(TrainingSet(sentences, private, tagset, mechanism=mechanism))
    assert len(early.history_) == 2


def test_a_private_fit_reports_the_schedule_that_ran():
    """The "auto" schedule of released counts is the private preset, and the fitted attributes
    say so: ``schedule_`` holds as many node-only iterations as ``history_`` ran."""
    from learning.core import CountTagger, FeatureConfig

    sentences, tagset, exact, mechanism, private = _private_crowd(37, n_sentences=300, alpha=3.0)
    model = CountTagger(model="node", features=FeatureConfig(2**10), random_state=0)
    model.fit(TrainingSet(sentences, private, tagset, mechanism=mechanism))
    assert model.schedule_.name == "private"
    assert len(model.history_) == model.schedule_.n_em_iter == 30
    assert model.min_flag_observations_ == mechanism.min_judged_answers(10, private) > 10
    plain = CountTagger(model="node", features=FeatureConfig(2**10), random_state=0)
    plain.fit(TrainingSet(sentences, exact, tagset))
    assert plain.schedule_.name == "weak" and plain.min_flag_observations_ == 10


def test_released_counts_fit_the_contextual_model_with_their_own_l2_strength():
    """The contextual model fits a release's noisy beliefs too closely at the exact answers'
    α (Alpino at α = 3: 71.1 % with 0.3, 74.0 % with 10): private fits use
    context_alpha_private in every contextual M-step, exact counts keep context_alpha, and an
    annealing start descends to the α of the kind of answer."""
    from learning.core import CountTagger, FeatureConfig

    sentences, tagset, obs, mechanism, private = _private_crowd(31, n_sentences=300, alpha=3.0)
    settings = dict(features=FeatureConfig(2**10), word_classes=False,
                    crowd=CrowdSettings(reliability=False), random_state=0)  # fmt: skip
    schedule = choose_schedule(private, private=True).replace(n_em_iter=1, n_context_iter=3)
    exact_schedule = choose_schedule(obs).replace(n_em_iter=1, n_context_iter=3, cross_fit=0)
    assert schedule.context_alpha == 10.0 and exact_schedule.context_alpha == 0.3

    def context_alphas(model):
        return [h["alpha"] for h in model.history_ if h["model"] == "context"]

    released = CountTagger(**settings, schedule=schedule)
    released.fit(TrainingSet(sentences, private, tagset, mechanism=mechanism))
    assert context_alphas(released) == [10.0, 10.0, 10.0] and released.tagger_.alpha == 10.0
    exact = CountTagger(**settings, schedule=exact_schedule).fit(
        TrainingSet(sentences, obs, tagset)
    )
    assert context_alphas(exact) == [0.3, 0.3, 0.3]
    annealed = CountTagger(**settings, schedule=schedule.replace(context_alpha_start=40.0))
    annealed.fit(TrainingSet(sentences, private, tagset, mechanism=mechanism))
    np.testing.assert_allclose(context_alphas(annealed), [40.0, 20.0, 10.0])
    below = CountTagger(**settings, schedule=schedule.replace(context_alpha_start=3.0))
    below.fit(
        TrainingSet(sentences, private, tagset, mechanism=mechanism)
    )  # no ascent to the served α
    assert context_alphas(below) == [10.0, 10.0, 10.0]
    longer = CountTagger(**settings, schedule=schedule.replace(n_context_iter=5))
    longer.fit(TrainingSet(sentences, private, tagset, mechanism=mechanism))
    assert context_alphas(longer) == [10.0] * 5


def test_annotators_are_judged_after_more_released_answers_the_more_private():
    """k-ary randomized response, window 5, one tag of 17 per task: 10 answers' worth of evidence
    takes 11 released answers at α = 8, 30 at α = 3 and about 4,000 at α = 1."""
    n = 170
    mask = np.zeros((n, 17), dtype=bool)
    mask[np.arange(n), np.arange(n) % 17] = True
    obs = Observations.create(
        sentence=np.arange(n), start=np.zeros(n, int), length=np.full(n, 5), tag_mask=mask,
        counts=np.zeros((n, 17), int), sentence_lengths=[5] * n, released=True,
    )  # fmt: skip
    needed = [Mechanism("krr", alpha, 17).min_judged_answers(10, obs) for alpha in (8, 3, 1)]
    assert needed[0] == 11 and needed[1] == 30
    assert 3000 < needed[2] < 5000
    assert Mechanism("krr", 3.0, 17).min_judged_answers(10, obs.subset(np.zeros(n, bool))) == 10


def test_information_share_is_mutual_information_over_entropy():
    """I(N; o) / H(N) computed as H(o) − H(o | N) over H(N), from the channel's columns; it
    grows with α from nothing to everything, and the budget split across tags costs each one."""
    counts = np.array([0.74, 0.22, 0.035, 0.004, 0.0009, 0.0001])
    for name in MECHANISMS:
        mechanism = Mechanism(name, 3.0, n_tags=17)
        c = mechanism.channel(5, 1)
        released = c @ counts
        h_release = -(released * np.log2(released)).sum()
        h_given = -(counts * (c * np.log2(c)).sum(axis=0)).sum()
        h_count = -(counts * np.log2(counts)).sum()
        expected = (h_release - h_given) / h_count
        assert mechanism.information_share(counts) == pytest.approx(expected, rel=1e-9)
    shares = [Mechanism("krr", a, n_tags=17).information_share(counts) for a in (0.1, 1, 3, 8, 40)]
    assert shares[0] < 0.01 and shares[-1] > 0.999
    assert np.all(np.diff(shares) > 0)
    krr = Mechanism("krr", 3.0, n_tags=17)
    assert krr.information_share(counts, n_asked=2) < krr.information_share(counts) / 2


def test_information_share_refuses_what_is_not_a_count_distribution():
    krr = Mechanism("krr", 3.0, n_tags=17)
    for bad in ([0.5, 0.6], [1.0], [-0.1, 1.1], [1.0, 0.0, 0.0]):
        with pytest.raises(ValueError):
            krr.information_share(np.array(bad))


def test_released_observations_keep_everything_but_the_counts():
    from learning.experiments.simulate import simulate_crowd

    obs = simulate_crowd([[0, 1, 2, 3, 0, 1]] * 50, 4, window=4, obs_per_sentence=3,
                         tags_per_task=2, n_annotators=5, random_state=0).observations  # fmt: skip
    mechanism = Mechanism("krr", 3.0, n_tags=4)
    released = mechanism.released(obs, 7)
    expected = mechanism.release(obs.counts, obs.tag_mask, obs.length, 7)
    np.testing.assert_array_equal(released.counts, expected)
    assert not np.array_equal(released.counts, obs.counts)
    for field in ("sentence", "start", "length", "tag_mask", "annotator"):
        np.testing.assert_array_equal(getattr(released, field), getattr(obs, field))
    assert ((released.counts >= 0) & (released.counts <= released.length[:, None])).all()


@pytest.mark.parametrize("name", MECHANISMS)
def test_the_channel_inverse_gives_unbiased_indicators_of_the_true_count(name):
    mechanism = Mechanism(name, 3.0, n_tags=17)
    channel, inverse = mechanism.channel(5, 2), mechanism.channel_inverse(5, 2)
    # E[G[n, o] | N] = Σ_o G[n, o] C[o, N] = [N = n]
    np.testing.assert_allclose(inverse @ channel, np.eye(6), atol=1e-9)
