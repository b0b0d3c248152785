import copy

import numpy as np
import pytest

from learning.core import FeatureConfig, accuracy
from learning.core.context_tagger import ContextTagger
from learning.core.counts import CountEvidence
from learning.core.design import encode_corpus
from learning.core.em import expected_labels, window_token_index
from learning.core.features import ContextConfig
from learning.core.online import OnlineCountTagger, annotator_slot
from learning.core.pipeline import CountTagger
from learning.core.settings import CrowdSettings
from learning.core.training import TrainingSet
from learning.experiments.simulate import simulate_crowd

CONFIG = FeatureConfig(n_features=2**12)
CONTEXT = ContextConfig(word=CONFIG)


def _learner(**params) -> OnlineCountTagger:
    """The online steps themselves: no refits of a small stream unless asked for."""
    params.setdefault("refit_below", 0)
    return OnlineCountTagger(features=CONTEXT, random_state=0, **params)


def _blocks(observations, n_blocks, seed=0):
    order = np.random.default_rng(seed).permutation(len(observations))
    return [observations.subset(np.sort(b)) for b in np.array_split(order, n_blocks)]


def _two_tag_crowd(data):
    """2 windows per sentence, 2 tags asked in each: answers that say little per token."""
    _, gold, _, tagset = data
    return simulate_crowd(
        gold, len(tagset), window=4, tags_per_task=2, obs_per_sentence=2, random_state=0
    )


def _accuracy_along_the_stream(learner, data, crowd, n_blocks=20) -> list[float]:
    """``crowd``'s answers through ``learner`` in ``n_blocks`` blocks; the accuracy on the gold
    tags after each (no invalid arithmetic allowed on the way)."""
    sentences, gold, _, tagset = data
    names = [[tagset[t] for t in g] for g in gold]
    scores = []
    with np.errstate(invalid="raise"):
        for block in _blocks(crowd.observations, n_blocks):
            learner.partial_fit(TrainingSet(sentences, block, tagset))
            scores.append(accuracy(names, learner.predict(sentences)))
    return scores


def test_error_shrinks_as_blocks_arrive(data):
    sentences, gold, w_star, tagset = data
    crowd = _two_tag_crowd(data)
    names = [[tagset[t] for t in g] for g in gold]
    bayes = accuracy(names, [[tagset[int(np.argmax(w_star[int(w[1:])]))] for w in s]
                             for s in sentences])  # fmt: skip
    learner = _learner()
    scores = _accuracy_along_the_stream(learner, data, crowd)
    errors = [row["count_error"] for row in learner.progressive_]
    assert scores[-1] > scores[0] + 0.05
    assert scores[-1] > bayes - 0.04
    # Progressive count error: later blocks are predicted better than the early ones.
    assert np.mean(errors[-5:]) < np.mean(errors[1:6])
    assert learner.n_blocks_ == 20 and learner.n_answers_ == len(crowd.observations)
    assert len(learner.flagged_annotators_) == 0


def test_block_e_step_equals_the_batch_one(data):
    sentences, gold, _, tagset = data
    crowd = simulate_crowd(gold, len(tagset), window=4, obs_per_sentence=1, random_state=2)
    first, second = _blocks(crowd.observations, 2)
    learner = _learner().partial_fit(TrainingSet(sentences, first, tagset))
    block = learner._block(sentences, second, None, None)
    probs = learner._token_probs(block)
    weights = np.random.default_rng(0).random(len(second))
    online = learner.e_step(block, probs, weights)
    # The batch E-step: every token of the corpus, the windows indexed in it.
    corpus = encode_corpus(sentences)
    all_probs = learner.tagger_.token_proba(sentences)
    windows = window_token_index(corpus, second)
    batch = expected_labels(all_probs, [CountEvidence(second, windows)], [weights], floor=1e-6)
    assert np.allclose(online.log_z[0], batch.log_z[0])
    rows = np.concatenate([corpus.offsets[s] + np.arange(corpus.lengths[s])
                           for s in block["sentences"]])  # fmt: skip
    assert np.allclose(online.beliefs, batch.beliefs[rows])
    assert np.allclose(online.token_weight, batch.token_weight[rows])
    assert batch.token_weight[np.setdiff1d(np.arange(len(all_probs)), rows)].sum() == 0


def test_progressive_validation_scores_the_model_before_the_update(data):
    sentences, gold, _, tagset = data
    crowd = simulate_crowd(gold, len(tagset), window=4, obs_per_sentence=1, random_state=3)
    first, second = _blocks(crowd.observations, 2)
    learner = _learner().partial_fit(TrainingSet(sentences, first, tagset))
    assert learner.progressive_[0]["log_likelihood"] is None  # the start was fitted on it
    before = copy.deepcopy(learner.tagger_)
    learner.partial_fit(TrainingSet(sentences, second, tagset))

    def scored_by(tagger):
        corpus = encode_corpus(sentences)
        windows = window_token_index(corpus, second)
        probs = tagger.token_proba(sentences)
        result = CountEvidence(second, windows).posteriors(
            probs[np.maximum(windows, 0)], np.arange(len(second)), 1e-6
        )
        return float(result.log_z[result.feasible].mean())

    reported = learner.progressive_[-1]["log_likelihood"]
    assert reported == pytest.approx(scored_by(before), rel=1e-9)
    # The update raised the block's likelihood: a report made after it would differ.
    assert scored_by(learner.tagger_) > reported + 1e-3


def test_two_annotators_in_one_slot_fall_back_to_the_population(data):
    sentences, gold, _, tagset = data
    crowd = simulate_crowd(gold, len(tagset), window=4, obs_per_sentence=2, n_annotators=10,
                           spam_fraction=0.2, random_state=4)  # fmt: skip
    spammers = crowd.annotators_of_kind("spammer")
    blocks = _blocks(crowd.observations, 4)
    apart = _learner(n_slots=2**16)
    for block in blocks:
        apart.partial_fit(TrainingSet(sentences, block, tagset))
    assert list(apart.flagged_annotators_) == list(spammers)
    assert not apart.slot_shared_.any()

    # Find a table size where the first spammer shares a slot with an exact annotator only.
    exact = crowd.annotators_of_kind("exact")
    spammer = spammers[0]
    n_slots = next(
        n for n in range(2, 500)
        if (annotator_slot(exact, n) == annotator_slot([spammer], n)[0]).sum() == 1
        and len(np.unique(annotator_slot(np.arange(10), n))) == 9
    )  # fmt: skip
    shared = _learner(n_slots=n_slots)
    for block in blocks:
        shared.partial_fit(TrainingSet(sentences, block, tagset))
    slot = annotator_slot([spammer], n_slots)[0]
    assert shared.slot_shared_[slot] and shared.slot_shared_.sum() == 1
    row = np.flatnonzero(shared.reliability_.annotators == slot)[0]
    assert shared.reliability_.weight[row] == 1.0  # the population's weight, no flag
    assert not shared.reliability_.flagged[row]
    assert spammer not in shared.flagged_annotators_
    assert set(shared.flagged_annotators_) == set(spammers) - {spammer}


def test_stored_labels_stay_within_max_tokens(data):
    sentences, gold, _, tagset = data
    crowd = simulate_crowd(gold, len(tagset), window=4, obs_per_sentence=1, random_state=5)
    learner = _learner(max_tokens=1000)
    for block in _blocks(crowd.observations, 5):
        learner.partial_fit(TrainingSet(sentences, block, tagset))
        assert learner.stored_tokens_ <= 1000
    assert learner.stored_tokens_ > 0


def test_annotator_slots_are_stable_and_bounded():
    ids = np.array([0, 1, 2, 10**12, -5])
    slots = annotator_slot(ids, 97)
    assert ((slots >= 0) & (slots < 97)).all()
    assert np.array_equal(slots, annotator_slot(ids, 97))


def test_the_annotator_table_does_not_grow_with_annotators(data):
    sentences, gold, _, tagset = data
    crowd = simulate_crowd(gold[:300], len(tagset), window=4, obs_per_sentence=2, random_state=6)
    obs = crowd.observations
    many = type(obs)(**{**vars(obs), "annotator": np.arange(len(obs)) * 7919 + 10**9})
    learner = _learner(n_slots=64)
    learner.partial_fit(TrainingSet(sentences[:300], obs, tagset)).partial_fit(
        TrainingSet(sentences[:300], many, tagset)
    )
    assert learner.slot_owner_.shape == (64,) and learner.reliability_.annotators.max() < 64
    assert learner.slot_shared_.sum() > 32  # 600 distinct ids on 64 rows: shared, not flagged
    assert len(learner.flagged_annotators_) == 0


def test_a_restored_learner_goes_on_as_the_saved_one(data):
    sentences, gold, _, tagset = data
    crowd = simulate_crowd(gold, len(tagset), window=4, obs_per_sentence=1, n_annotators=6,
                           spam_fraction=0.2, random_state=7)  # fmt: skip
    blocks = _blocks(crowd.observations, 4)
    learner = _learner()
    for block in blocks[:3]:
        learner.partial_fit(TrainingSet(sentences, block, tagset))
    restored = _learner().restore(learner.state(), copy.deepcopy(learner.tagger_), sentences)
    assert restored.progressive_ == [
        {k: row[k] for k in ("block", "answers", "log_likelihood", "count_error")}
        for row in learner.progressive_
    ]
    learner.partial_fit(TrainingSet(sentences, blocks[3], tagset))
    restored.partial_fit(TrainingSet(sentences, blocks[3], tagset))
    assert np.allclose(restored.tagger_.coef_, learner.tagger_.coef_, atol=1e-5)
    assert np.array_equal(restored.flagged_annotators_, learner.flagged_annotators_)
    assert restored.n_answers_ == learner.n_answers_ == len(crowd.observations)


def test_steps_count_answers_however_the_stream_is_cut(data):
    sentences, gold, _, tagset = data
    crowd = simulate_crowd(gold[:400], len(tagset), window=4, obs_per_sentence=1, random_state=8)
    learner = _learner(block_size=100)
    learner._start(
        _learner().partial_fit(TrainingSet(sentences, crowd.observations, tagset)).tagger_, tagset
    )
    assert learner._eta(300) == 1.0
    assert learner._eta(100) == pytest.approx(100 / 400)  # this block's share of the answers
    assert learner._eta(50) == pytest.approx(50 / 450)


def test_seeded_from_a_batch_model_the_store_holds_its_answers(data):
    sentences, gold, _, tagset = data
    crowd = simulate_crowd(gold, len(tagset), window=4, obs_per_sentence=1, random_state=9)
    first, second = _blocks(crowd.observations, 2)
    batch = _learner().partial_fit(TrainingSet(sentences, first, tagset)).tagger_
    learner = _learner().seed(TrainingSet(sentences, first, tagset), batch)
    assert learner.tagger_ is batch and learner.progressive_ == []
    assert learner.stored_tokens_ > 0 and learner._answers_counted == len(first)
    learner.partial_fit(TrainingSet(sentences, second, tagset))
    assert learner.progressive_[-1]["log_likelihood"] is not None
    assert learner.progressive_[-1]["eta"] == pytest.approx(len(second) / len(crowd.observations))


def test_replayed_m_steps_sample_the_store_and_still_learn(data):
    scores = _accuracy_along_the_stream(
        _learner(replay=1.0, replay_min_tokens=0), data, _two_tag_crowd(data)
    )
    assert scores[-1] > scores[0] + 0.04  # about 5 points over 20 blocks (71.6 → 76.6 %)


def test_a_replay_m_step_reads_at_least_replay_min_tokens_stored_ones(data, monkeypatch):
    sentences, gold, _, tagset = data
    crowd = simulate_crowd(gold, len(tagset), window=4, obs_per_sentence=1, random_state=0)
    first, second = _blocks(crowd.observations, 2)
    read = []
    fit = ContextTagger.fit

    def spy(self, *args, features=None, **kwargs):
        read.append(features.shape[0])
        return fit(self, *args, features=features, **kwargs)

    monkeypatch.setattr(ContextTagger, "fit", spy)
    results = {}
    for name, params in {
        "whole": {"replay": None},
        "floor above the store": {"replay": 0.01, "replay_min_tokens": 10**9},
        "floor": {"replay": 0.01, "replay_min_tokens": 3000},
    }.items():
        learner = _learner(refresh=None, refit_growth=None, **params)
        learner.partial_fit(TrainingSet(sentences, first, tagset))
        read.clear()
        learner.partial_fit(TrainingSet(sentences, second, tagset))
        results[name] = (read[-1], learner.tagger_.tag_coef_, learner.stored_tokens_)
    whole, above, floor = results.values()
    assert whole[0] == whole[2] == above[0]  # a store below the floor is read whole
    np.testing.assert_array_equal(whole[1], above[1])
    block_tokens = sum(len(sentences[s]) for s in np.unique(second.sentence))
    assert 3000 + block_tokens <= floor[0] < whole[0]  # the block and at least the floor


def _stream(learner, sentences, blocks, tagset):
    for block in blocks:
        learner.partial_fit(TrainingSet(sentences, block, tagset))
    return learner


def test_with_every_answer_refreshed_an_update_is_a_batch_em_iteration(data):
    sentences, gold, _, tagset = data
    # Windows of 4 tokens everywhere: each answer's tokens then weigh the same in the stream.
    long = [k for k in range(600) if len(gold[k]) >= 4]
    sentences, gold = [sentences[k] for k in long], [gold[k] for k in long]
    crowd = simulate_crowd(gold, len(tagset), window=4, obs_per_sentence=1, random_state=3)
    blocks = _blocks(crowd.observations, 3)
    learner = _stream(
        _learner(refresh=np.inf, crowd=CrowdSettings(reliability=False), refit_growth=2.0),
        sentences,
        blocks[:2],
        tagset,
    )
    before = copy.deepcopy(learner.tagger_)
    # The batch iteration: every answer's E-step under the model before, then the M-step.
    everything = learner._block(sentences, crowd.observations, None, None)
    probs = before.token_proba(None, features=everything["x"], lengths=everything["lengths"])
    e_step = learner.e_step(everything, probs, np.ones(len(crowd.observations)))
    labels = e_step.beliefs * e_step.token_weight[:, None]
    batch = learner._tagger_like(learner.block_fit_iter).fit(
        None, labels, tagset, warm_start=before, features=everything["x"],
        lengths=everything["lengths"],
    )  # fmt: skip
    learner.partial_fit(TrainingSet(sentences, blocks[2], tagset))
    mass = learner._token_mass[learner._token_mass > 0]
    assert np.allclose(mass, mass[0])  # every answer's tokens weigh the same, as in the batch
    assert np.array_equal(learner._sentence, everything["sentences"])
    assert np.allclose(learner._labels, labels)
    assert np.allclose(learner.tagger_.coef_, batch.coef_, atol=1e-5)


@pytest.mark.parametrize("refresh", [1.0, np.inf])
def test_a_refreshed_answer_replaces_its_old_contribution_once(data, refresh):
    sentences, gold, _, tagset = data
    crowd = simulate_crowd(
        gold[:400], len(tagset), window=4, tags_per_task=2, obs_per_sentence=3, random_state=4
    )
    learner = _learner(refresh=refresh)
    for block in _blocks(crowd.observations, 6):
        stored_before = learner._sentence.copy() if hasattr(learner, "_sentence") else []
        learner.partial_fit(TrainingSet(sentences, block, tagset))
        # Running average: old mass × (1 − η) + η. An old contribution kept beside its
        # replacement would push the total past 1; a sentence is stored once.
        assert learner._token_mass.sum() == pytest.approx(1.0)
        assert np.unique(learner._sentence).shape == learner._sentence.shape
        assert learner.stored_answers_ == learner.n_answers_  # no answer lost or doubled
        assert set(stored_before) <= set(learner._sentence)

    def rows(answers):
        table = np.column_stack(
            [answers.sentence, answers.start, answers.length, answers.annotator,
             answers.tag_mask, answers.counts]
        )  # fmt: skip
        return table[np.lexsort(table.T[::-1])]

    assert np.array_equal(rows(learner._answers), rows(crowd.observations))


def test_a_bounded_refresh_replays_the_least_recently_e_stepped_sentences(data):
    sentences, gold, _, tagset = data
    crowd = simulate_crowd(gold[:500], len(tagset), window=4, obs_per_sentence=1, random_state=5)
    blocks = _blocks(crowd.observations, 5)
    learner = _stream(_learner(refresh=1.0, refresh_min_answers=0), sentences, blocks[:2], tagset)
    oldest = learner._sentence[: len(blocks[2])].copy()
    learner.partial_fit(TrainingSet(sentences, blocks[2], tagset))
    # The oldest stored sentences (one block's worth) moved to the newest end, re-E-stepped.
    tail = learner._sentence[-(len(blocks[2]) + len(oldest) + 1) :]
    assert set(oldest) <= set(tail)
    assert learner._sentence.shape[0] == len(blocks[0]) + len(blocks[1]) + len(blocks[2])


def test_small_blocks_still_refresh_a_floor_of_answers(data):
    sentences, gold, _, tagset = data
    crowd = simulate_crowd(gold[:500], len(tagset), window=4, obs_per_sentence=1, random_state=5)
    blocks = _blocks(crowd.observations, 25)  # 20 answers each: refresh = 1 would replay 20
    learner = _stream(_learner(refresh=1.0, refresh_min_answers=100), sentences, blocks[:10],
                      tagset)  # fmt: skip
    stored = learner._sentence.copy()
    replayed = []
    original = learner.e_step

    def spy(block, probs, weights):
        replayed.append(len(block["observations"]) - len(blocks[10]))
        return original(block, probs, weights)

    learner.e_step = spy
    learner.partial_fit(TrainingSet(sentences, blocks[10], tagset))
    # One answer per sentence: the 100 least recently E-stepped sentences, give or take the
    # last one (whole sentences are replayed), the newer ones left where they were.
    assert 100 <= replayed[0] <= 101
    assert np.array_equal(learner._sentence[: len(stored) - replayed[0]], stored[replayed[0] :])


def test_refits_restart_from_a_batch_fit_as_the_stream_doubles(data):
    sentences, gold, _, tagset = data
    crowd = simulate_crowd(gold[:800], len(tagset), window=4, obs_per_sentence=1, random_state=6)
    blocks = _blocks(crowd.observations, 8)
    learner = _learner(refit_growth=2.0, refresh=1.0)
    fitted_at = []
    for block in blocks:
        learner.partial_fit(TrainingSet(sentences, block, tagset))
        fitted_at.append(learner._fitted_at)
    sizes = np.cumsum([len(b) for b in blocks])
    assert fitted_at == [sizes[0], sizes[1], sizes[1], sizes[3], sizes[3], sizes[3], sizes[3],
                         sizes[7]]  # fmt: skip
    assert [row["block"] for row in learner.progressive_] == list(range(1, 9))
    assert learner.n_answers_ == learner.stored_answers_ == len(crowd.observations)
    restored = _learner(refit_growth=2.0, refresh=1.0).restore(
        learner.state(), learner.tagger_, sentences
    )
    assert restored._fitted_at == sizes[7] and restored.stored_answers_ == len(crowd.observations)


def test_a_small_stream_is_refitted_on_every_update(data):
    sentences, gold, _, tagset = data
    crowd = simulate_crowd(gold[:400], len(tagset), window=4, obs_per_sentence=1, random_state=6)
    blocks = _blocks(crowd.observations, 4)
    learner = _learner(refit_below=250, refit_growth=None)
    fitted_at = []
    for block in blocks:
        learner.partial_fit(TrainingSet(sentences, block, tagset))
        fitted_at.append(learner._fitted_at)
    sizes = np.cumsum([len(b) for b in blocks])
    assert fitted_at == [sizes[0], sizes[1], sizes[1], sizes[1]]
    # A learner started from the batch retrain's model leaves refits to the batch retrain.
    batch = CountTagger(model="context", features=CONTEXT, random_state=0)
    first_block = TrainingSet(sentences, blocks[0], tagset)
    seeded = _learner(refit_below=10**6).partial_fit(first_block, warm_start=batch.fit(first_block))
    seeded.partial_fit(TrainingSet(sentences, blocks[1], tagset))
    assert not hasattr(seeded, "_fitted_at")


def test_a_state_saved_before_answers_were_stored_is_still_read(data):
    sentences, gold, _, tagset = data
    crowd = simulate_crowd(gold[:300], len(tagset), window=4, obs_per_sentence=1, random_state=2)
    first, second = _blocks(crowd.observations, 2)
    learner = _learner(refresh=1.0).partial_fit(TrainingSet(sentences, first, tagset))
    state = {k: v for k, v in learner.state().items() if not k.startswith("answer_")}
    del state["fitted_at"]
    restored = _learner(refresh=1.0).restore(state, learner.tagger_, sentences)
    assert restored.stored_answers_ == 0 and restored.stored_tokens_ == learner.stored_tokens_
    restored.partial_fit(
        TrainingSet(sentences, second, tagset)
    )  # old sentences have no answers to replay
    assert restored.stored_answers_ == len(second)


def test_refresh_and_refits_follow_a_batch_fit_on_synthetic_data(data):
    sentences, gold, _, tagset = data
    crowd = _two_tag_crowd(data)
    names = [[tagset[t] for t in g] for g in gold]
    scores = _accuracy_along_the_stream(_learner(refresh=2.0, refit_growth=2.0), data, crowd)
    batch = CountTagger(model="context", features=CONTEXT, random_state=0)
    batch.fit(TrainingSet(sentences, crowd.observations, tagset))
    assert scores[-1] > scores[0] + 0.04
    assert scores[-1] > accuracy(names, batch.predict(sentences)) - 0.01
