import subprocess
import sys

import numpy as np
import pytest

from learning.core import CountTagger, FeatureConfig, Observations, accuracy
from learning.core.context_tagger import ContextTagger
from learning.core.pipeline.moments import moment_weights
from learning.core.pipeline.problem import Models, Stopwatch, build_problem, fit_sample
from learning.core.schedule import EMSchedule, choose_schedule
from learning.core.settings import CrowdSettings, FeatureSettings
from learning.core.training import TrainingSet
from learning.experiments.simulate import simulate_crowd

CONFIG = FeatureConfig(n_features=2**12)


def _best_tags(sentences, w_star, tagset):
    return [[tagset[int(np.argmax(w_star[int(w[1:])]))] for w in s] for s in sentences]


def test_count_tagger_approaches_the_bayes_tagger(data):
    sentences, gold, w_star, tagset = data
    crowd = simulate_crowd(
        gold, len(tagset), window=4, tags_per_task=2, obs_per_sentence=2, random_state=0
    )
    with np.errstate(invalid="raise"):
        model = CountTagger(features=CONFIG, schedule=EMSchedule(n_em_iter=5), random_state=0).fit(
            TrainingSet(sentences, crowd.observations, tagset)
        )
    gold_names = [[tagset[t] for t in g] for g in gold]
    bayes = accuracy(gold_names, _best_tags(sentences, w_star, tagset))
    assert accuracy(gold_names, model.predict(sentences)) > bayes - 0.02
    assert model.word_tag_probs_.shape == (len(model.vocabulary_), len(tagset))
    assert set(model.timings_) >= {"solve", "fit", "refine"}
    assert len(model.flagged_annotators_) == 0
    assert model.history_[-1]["log_likelihood"] >= model.history_[0]["log_likelihood"]


def test_impossible_observations_are_skipped_and_reported(data):
    sentences, gold, _, tagset = data
    crowd = simulate_crowd(gold[:300], len(tagset), window=4, random_state=1)
    obs = crowd.observations
    counts = obs.counts.copy()
    bad = np.flatnonzero(obs.length >= 2)[:3]
    counts[bad] = 0
    counts[bad, 0] = 1  # all tags asked, but the counts sum to less than the window
    broken = Observations.create(
        sentence=obs.sentence,
        start=obs.start,
        length=obs.length,
        tag_mask=obs.tag_mask,
        counts=counts,
        annotator=obs.annotator,
        sentence_lengths=[len(s) for s in sentences],
    )
    model = CountTagger(
        features=CONFIG,
        schedule=EMSchedule(n_em_iter=2),
        crowd=CrowdSettings(reliability=False),
        random_state=0,
    )
    model.fit(TrainingSet(sentences, broken, tagset))
    assert set(bad) <= set(model.skipped_observations_)


def test_warm_start_and_tagset_mismatch(data):
    sentences, gold, _, tagset = data
    crowd = simulate_crowd(gold[:400], len(tagset), window=4, random_state=2)
    first = CountTagger(features=CONFIG, schedule=EMSchedule(n_em_iter=1), random_state=0).fit(
        TrainingSet(sentences, crowd.observations, tagset)
    )
    second = CountTagger(features=CONFIG, schedule=EMSchedule(n_em_iter=1), random_state=0).fit(
        TrainingSet(sentences, crowd.observations, tagset), warm_start=first
    )
    assert second.tagger_.tagset_ == tuple(tagset)
    with pytest.raises(ValueError, match="tag columns"):
        CountTagger(features=CONFIG).fit(TrainingSet(sentences, crowd.observations, tagset[:-1]))


def test_core_does_not_import_django():
    code = "import sys, learning.core, learning.experiments.crowd_report, "
    code += "learning.experiments.core_benchmark; print('django' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.strip() == "False"


def test_alpha_and_ridge_chosen_from_held_out_observations(data):
    sentences, gold, _, tagset = data
    crowd = simulate_crowd(gold[:500], len(tagset), window=4, random_state=3)
    model = CountTagger(
        features=CONFIG,
        schedule=EMSchedule(alpha="auto", alpha_grid=(0.5, 5.0), n_em_iter=1),
        ridge_grid=(0.01, 1.0),
        random_state=0,
    ).fit(TrainingSet(sentences, crowd.observations, tagset))
    assert model.alpha_ in (0.5, 5.0) and set(model.alpha_errors_) == {0.5, 5.0}
    assert model.ridge_ in (0.01, 1.0) and set(model.ridge_errors_) == {0.01, 1.0}
    assert (
        model.node_tagger_.alpha == model.alpha_
        and model.tagger_.alpha == model.schedule_.context_alpha
    )


def test_context_alpha_descends_from_its_start_to_the_served_alpha(data):
    sentences, gold, _, tagset = data
    crowd = simulate_crowd(gold[:400], len(tagset), window=4, tags_per_task=2, random_state=4)
    model = CountTagger(
        features=CONFIG,
        schedule=EMSchedule(
            n_em_iter=1,
            n_context_iter=3,
            context_alpha=0.3,
            context_alpha_start=3.0,
            em_tol=1.0,  # would stop after the first iteration, were it not still descending
        ),
        random_state=0,
    ).fit(TrainingSet(sentences, crowd.observations, tagset))
    alphas = [h["alpha"] for h in model.history_ if h["model"] == "context"]
    np.testing.assert_allclose(alphas, [3.0, np.sqrt(0.9), 0.3])
    assert model.tagger_.alpha == pytest.approx(0.3)
    plain = CountTagger(
        features=CONFIG, schedule=EMSchedule(n_em_iter=1, n_context_iter=2), random_state=0
    )
    plain.fit(TrainingSet(sentences, crowd.observations, tagset))
    assert [h["alpha"] for h in plain.history_ if h["model"] == "context"] == [0.3, 0.3]


def test_schedule_follows_the_share_of_tags_asked(data):
    _, gold, _, tagset = data
    few = simulate_crowd(gold, len(tagset), window=4, tags_per_task=1, random_state=5)
    every = simulate_crowd(gold, len(tagset), window=4, random_state=5)
    weak = choose_schedule(few.observations)  # 1 of 4 tags asked: weak answers
    assert (weak.name, weak.n_em_iter, weak.n_context_iter, weak.cross_fit) == ("weak", 40, 10, 2)
    informative = choose_schedule(every.observations)
    assert (informative.name, informative.n_context_iter, informative.cross_fit) == (
        "informative", 2, 0,
    )  # fmt: skip
    private = choose_schedule(few.observations, private=True)  # releases: their own preset
    assert private.name == "private" and private.cross_fit == 0 and private.em_tol is None
    assert choose_schedule(few.observations, warm=True).name == "warm"
    assert choose_schedule(every.observations, warm=True).name == "warm"
    assert choose_schedule(few.observations, private=True, warm=True).name == "private-warm"


def test_weak_answers_cross_fit_every_contextual_iteration_but_the_last(data):
    """Cross-fitting itself: tests/learning/core/test_crossfit.py; the served model is fitted
    on every token's beliefs."""
    sentences, gold, _, tagset = data
    crowd = simulate_crowd(gold[:300], len(tagset), window=4, tags_per_task=1, random_state=6)
    schedule = EMSchedule(n_em_iter=1, n_context_iter=3, cross_fit=2)
    model = CountTagger(features=CONFIG, schedule=schedule, random_state=0)
    model.fit(TrainingSet(sentences[:300], crowd.observations, tagset))
    assert model.schedule_.cross_fit == 2
    context = [h for h in model.history_ if h["model"] == "context"]
    assert [h["cross_fitted"] for h in context] == [True, True, False]
    assert [h["alpha"] for h in context] == [0.9, 0.9, model.schedule_.context_alpha]
    assert (
        model.tagger_.alpha == model.schedule_.context_alpha
    )  # the served model: every token's beliefs


def test_tasks_chosen_by_the_model_do_not_enter_the_moments(data):
    """ŵ comes from the uniformly drawn tasks only: answers to chosen tasks, here corrupted,
    leave it unchanged, while the same answers flagged uniform move it."""
    sentences, gold, _, tagset = data
    crowd = simulate_crowd(gold[:300], len(tagset), window=4, tags_per_task=2, random_state=2)
    obs = crowd.observations
    n = len(obs)
    chosen = np.arange(n) >= n // 2
    corrupted = Observations.create(
        sentence=obs.sentence, start=obs.start, length=obs.length, tag_mask=obs.tag_mask,
        counts=np.where(chosen[:, None] & obs.tag_mask, 0, obs.counts), annotator=obs.annotator,
        sentence_lengths=[len(s) for s in sentences],
    )  # fmt: skip
    settings = dict(features=CONFIG, ridge=0.1, crowd=CrowdSettings(reliability=False),
                    random_state=0, schedule=EMSchedule(n_em_iter=0, n_context_iter=0))  # fmt: skip

    def moments(observations, uniform=None):
        model = CountTagger(**settings).fit(
            TrainingSet(sentences, observations, tagset, uniform=uniform)
        )
        return dict(zip(model.vocabulary_, model.word_tag_probs_, strict=True))

    clean = moments(obs.subset(np.flatnonzero(~chosen)))
    kept = moments(corrupted, uniform=~chosen)
    moved = moments(corrupted)
    shared = list(clean)
    np.testing.assert_allclose([kept[w] for w in shared], [clean[w] for w in shared], atol=1e-3)
    assert max(np.abs(moved[w] - clean[w]).max() for w in shared) > 0.1
    with pytest.raises(ValueError, match="one flag per observation"):
        CountTagger(**settings).fit(TrainingSet(sentences, obs, tagset, uniform=np.ones(3, bool)))


def test_fit_sample_takes_whole_sentences_up_to_the_budget():
    rng = np.random.default_rng(0)
    sentence = np.repeat(np.arange(200), rng.integers(1, 30, 200))  # covered tokens' sentences
    untouched = np.random.default_rng(5)
    assert fit_sample(sentence, sentence.shape[0], untouched).all()
    assert fit_sample(sentence, None, untouched).all()
    assert untouched.random() == np.random.default_rng(5).random()  # no draw under the budget
    for budget in (1_000, 2_000):
        fitted = fit_sample(sentence, budget, np.random.default_rng(1))
        taken = np.unique(sentence[fitted])
        assert np.isin(sentence, taken).sum() == fitted.sum()  # whole sentences only
        assert budget - 30 < fitted.sum() <= budget
        again = fit_sample(sentence, budget, np.random.default_rng(1))
        other = fit_sample(sentence, budget, np.random.default_rng(2))
        assert (again == fitted).all() and (other != fitted).any()


def test_contextual_m_steps_fit_a_sample_of_sentences_past_the_token_budget(data, monkeypatch):
    """Past ``context_fit_tokens`` every contextual M-step (fold models, served model and the
    calibration refit) fits whole sentences holding at most that many covered tokens; within
    it the fit is the same as with no budget."""
    sentences, gold, _, tagset = data
    crowd = simulate_crowd(gold[:600], len(tagset), window=4, tags_per_task=2, random_state=7)
    obs = crowd.observations
    offsets = np.cumsum([0] + [len(s) for s in sentences[:600]])
    windows = zip(obs.sentence, obs.start, obs.length, strict=True)
    n_covered = len(
        {offsets[s] + i for s, start, length in windows for i in range(start, start + length)}
    )
    fits = []
    original = ContextTagger.fit

    def recording(self, sentences, token_counts, tagset, **kwargs):
        fits.append((int((token_counts.sum(axis=1) > 0).sum()), token_counts.shape[0],
                     int(kwargs["lengths"].sum())))  # fmt: skip
        return original(self, sentences, token_counts, tagset, **kwargs)

    monkeypatch.setattr(ContextTagger, "fit", recording)
    schedule = EMSchedule(n_em_iter=2, n_context_iter=3, cross_fit=2)

    def fit(budget):
        fits.clear()
        model = CountTagger(
            features=CONFIG, schedule=schedule.replace(context_fit_tokens=budget), random_state=0
        ).fit(TrainingSet(sentences[:600], crowd.observations, tagset))
        return model, list(fits)

    whole, whole_fits = fit(None)
    same, _ = fit(n_covered)
    np.testing.assert_array_equal(same.coef_, whole.coef_)
    budget = n_covered // 3
    sampled, sampled_fits = fit(budget)
    assert len(sampled_fits) == len(whole_fits) >= 5  # 2 folds × 2, served, calibration
    for labelled, rows, sentence_tokens in sampled_fits:
        assert labelled <= budget and rows == sentence_tokens  # whole sentences, within budget
    assert max(labelled for labelled, _, _ in sampled_fits) > budget // 2
    # Every sentence still gets its priors (and predictions) from the sampled fits.
    assert len(sampled.predict(sentences[:600])) == 600


def test_priors_read_on_some_sentences_equal_those_of_the_whole_corpus(data):
    """The calibration reads the refitted model on the held-out answers' sentences only: their
    tokens' priors are those the whole corpus' reading gives (each sentence is read alone)."""
    sentences, gold, _, tagset = data
    crowd = simulate_crowd(gold[:300], len(tagset), window=4, tags_per_task=2, random_state=8)
    model = CountTagger(
        features=CONFIG, schedule=EMSchedule(n_em_iter=1, n_context_iter=1), random_state=0
    ).fit(TrainingSet(sentences[:300], crowd.observations, tagset))
    models = Models("context", tuple(tagset), FeatureSettings.of(CONFIG),
                    model.word_classes_, model.schedule_)  # fmt: skip
    data = TrainingSet(sentences[:300], crowd.observations, tagset)
    problem = build_problem(data, models, Stopwatch())
    whole = models.token_probs(problem, model.tagger_)
    needed = np.random.default_rng(0).random(whole.shape[0]) < 0.05
    part = models.token_probs(problem, model.tagger_, needed)
    sentence = np.searchsorted(problem.corpus.offsets, problem.tokens, side="right") - 1
    read = np.isin(sentence, sentence[needed])
    assert needed.sum() > 0 and not read.all()
    np.testing.assert_allclose(part[read], whole[read], rtol=1e-12, atol=1e-15)
    assert (part[~read] == 0).all()


def test_moments_fall_back_to_every_trusted_answer_when_no_uniform_one_is_trusted(data):
    """A small project whose uniform answers all came from a spammer: once the spammer is found
    doubtful, the moments fit the trusted annotators' chosen answers instead of failing."""
    sentences, gold, _, tagset = data
    crowd = simulate_crowd(gold[:300], len(tagset), window=4, tags_per_task=2, n_annotators=5,
                           spam_fraction=0.2, random_state=3)  # fmt: skip
    spammer = crowd.annotators_of_kind("spammer")
    uniform = np.isin(crowd.observations.annotator, spammer)
    settings = dict(features=CONFIG, random_state=0, crowd=CrowdSettings(min_observations=5),
                    schedule=EMSchedule(n_em_iter=1, n_context_iter=0))  # fmt: skip
    model = CountTagger(**settings).fit(
        TrainingSet(sentences[:300], crowd.observations, tagset, uniform=uniform)
    )
    assert list(model.flagged_annotators_) == list(spammer)

    weights, drawn = np.array([0.0, 0.0, 1.0, 0.5]), np.array([1.0, 1.0, 0.0, 0.0])
    np.testing.assert_array_equal(moment_weights(weights, drawn), weights)
    np.testing.assert_array_equal(moment_weights(weights, 1 - drawn), [0, 0, 1, 0.5])


def test_a_reliability_pass_that_would_flag_every_annotator_is_not_applied(data, monkeypatch):
    """A small project whose weak model disagrees with everyone: the pass that would weigh every
    answer 0 keeps the last weights, so the retrain ends and the crowd is still served."""
    from learning.core.pipeline import reliability

    sentences, gold, _, tagset = data
    crowd = simulate_crowd(gold[:40], len(tagset), window=4, tags_per_task=2, n_annotators=4,
                           spam_fraction=1.0, random_state=2)  # fmt: skip
    everyone_flagged = []
    estimate = reliability.estimate_reliability

    def spy(*args, **kwargs):
        result = estimate(*args, **kwargs)
        everyone_flagged.append(bool(result.flagged.all()))
        return result

    monkeypatch.setattr(reliability, "estimate_reliability", spy)
    model = CountTagger(
        features=CONFIG, random_state=0, crowd=CrowdSettings(min_observations=5)
    ).fit(TrainingSet(sentences[:40], crowd.observations, tagset))
    assert any(everyone_flagged)  # the case this test is about did arise
    assert len(model.flagged_annotators_) < 4
    assert [len(tags) for tags in model.predict(sentences[:2])] == [len(s) for s in sentences[:2]]


# ------------------------------------------------------------------ the estimator contract
def test_the_estimator_takes_one_training_set_and_checks_it_is_fitted(data):
    """Issue 43: ``fit(data, *, warm_start=None)`` on one frozen training set, validated when
    made; a fitted check before predicting; parameters read back, set and cloned."""
    from learning.core.params import NotFittedError, clone

    sentences, gold, _, tagset = data
    crowd = simulate_crowd(gold[:200], len(tagset), window=4, random_state=3)
    model = CountTagger(features=CONFIG, schedule=EMSchedule(n_em_iter=1), random_state=0)
    with pytest.raises(NotFittedError, match="not fitted"):
        model.predict(sentences[:2])
    with pytest.raises(NotFittedError):
        model.token_proba(sentences[:2])
    with pytest.raises(TypeError):
        model.fit(sentences[:200], crowd.observations, tagset)  # the old contract
    with pytest.raises(TypeError, match="TrainingSet"):
        model.fit(sentences[:200])
    with pytest.raises(ValueError, match="tag columns"):
        TrainingSet(sentences[:200], crowd.observations, tagset[:-1])
    data_set = TrainingSet(sentences[:200], crowd.observations, tagset)
    with pytest.raises(AttributeError):
        data_set.observations = None  # frozen
    params = model.get_params()
    assert params["random_state"] == 0 and params["features"] is CONFIG
    assert set(params) == set(CountTagger._param_names())
    twin = clone(model.set_params(holdout_fraction=0.2))
    assert twin is not model and twin.get_params()["holdout_fraction"] == 0.2
    assert not hasattr(twin, "tagger_")
    with pytest.raises(ValueError, match="no parameter"):
        model.set_params(flag_threshold=0.3)  # a crowd setting now: CrowdSettings
    with pytest.raises(ValueError, match="holdout_fraction"):
        CountTagger(holdout_fraction=1.5).fit(data_set)  # validated once, at fit
    fitted = twin.fit(data_set)
    assert fitted is twin and len(twin.predict(sentences[:2])) == 2
    sklearn_base = pytest.importorskip("sklearn.base")
    assert sklearn_base.clone(twin).get_params(deep=False) == twin.get_params(deep=False)


def test_the_estimator_is_an_orchestration_and_documents_what_the_platform_reads():
    """Issue 43: the class at most about 250 lines, no stage state on ``self`` mid-fit, the
    adversarial model outside the served estimator, every attribute the platform reads named
    in the docstring."""
    import importlib.util
    import inspect

    from learning.core.pipeline import estimator

    source = inspect.getsource(estimator.CountTagger)
    assert len(source.splitlines()) <= 250
    assert "self._last_m_step" not in source and "__dict__" not in source
    assert importlib.util.find_spec("learning.core.agm") is None
    read = ["tagger_", "schedule_", "ridge_", "alpha_", "min_flag_observations_", "history_",
            "skipped_observations_", "timings_", "calibration_", "reliability_",
            "verification_reliability_", "n_observations_"]  # fmt: skip
    doc = estimator.CountTagger.__doc__
    assert all(name in doc for name in read), [name for name in read if name not in doc]
