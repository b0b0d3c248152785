import zlib

import numpy as np
import pytest
import scipy.sparse as sp

from learning.core import (
    ContextConfig,
    ContextTagger,
    CountTagger,
    FeatureConfig,
    NodeTagger,
    accuracy,
    featurize_tokens,
)
from learning.core.features import join_rows, neighbour_tag_features
from learning.core.schedule import EMSchedule
from learning.core.softmax import compact_columns, soft_label_objective
from learning.core.training import TrainingSet
from learning.experiments.simulate import simulate_crowd

WORD = FeatureConfig(n_features=2**14)
CONTEXT = ContextConfig(word=WORD)


def _context_corpus(rng, n_sentences):
    """Tags that depend on the previous word: after "the" an ambiguous word is a NOUN, after "to"
    a VERB. The ambiguous words come equally often after either, so a tagger that sees the word
    alone is right about them half the time at best."""
    ambiguous = [f"amb{i}" for i in range(8)]
    sentences, tags = [], []
    for _ in range(n_sentences):
        words, labels = [], []
        for _ in range(rng.integers(2, 5)):
            if rng.random() < 0.5:
                words += ["the", str(rng.choice(ambiguous))]
                labels += ["DET", "NOUN"]
            else:
                words += ["to", str(rng.choice(ambiguous))]
                labels += ["PART", "VERB"]
            if rng.random() < 0.1:
                words.append("and")
                labels.append("CONJ")
        sentences.append(words)
        tags.append(labels)
    return sentences, tags


def _node_only_ceiling(sentences, tags):
    """The best any tagger reading the word alone can score on this corpus: each word type's
    most frequent tag (read off the corpus itself)."""
    table: dict[str, dict[str, int]] = {}
    for words, labels in zip(sentences, tags, strict=True):
        for word, tag in zip(words, labels, strict=True):
            table.setdefault(word, {}).setdefault(tag, 0)
            table[word][tag] += 1
    best = sum(max(counts.values()) for counts in table.values())
    return best / sum(len(s) for s in sentences)


def test_token_objective_gradient_matches_finite_differences():
    rng = np.random.default_rng(3)
    sentences, _ = _context_corpus(rng, 6)
    x, _ = compact_columns(featurize_tokens(sentences, ContextConfig(word=FeatureConfig(2**8))))
    q = rng.random((x.shape[0], 3)) * (rng.random((x.shape[0], 3)) < 0.7)
    params = rng.normal(size=x.shape[1] * 3 + 3) * 0.3
    with np.errstate(invalid="raise", over="raise", divide="raise"):
        _, grad = soft_label_objective(params, x, None, q, 0.5)
        h = 1e-6
        for i in rng.choice(params.shape[0], size=40, replace=False):
            step = np.zeros_like(params)
            step[i] = h
            numeric = (
                soft_label_objective(params + step, x, None, q, 0.5)[0]
                - soft_label_objective(params - step, x, None, q, 0.5)[0]
            ) / (2 * h)
            assert grad[i] == pytest.approx(numeric, rel=1e-5, abs=1e-6)


def test_features_change_with_a_neighbour_and_not_otherwise():
    before = [["a", "b", "c", "d", "e", "f", "g"]]
    after = [["a", "b", "c", "X", "e", "f", "g"]]
    x, y = featurize_tokens(before, CONTEXT), featurize_tokens(after, CONTEXT)
    changed = [(x[j] != y[j]).nnz > 0 for j in range(7)]
    # Position 3 changed: it and its neighbours up to two away read it; 0 and 6 do not.
    assert changed == [False, True, True, True, True, True, False]
    # Sentence boundaries are features too: the same word first or in the middle differs.
    first, middle = featurize_tokens([["b", "c"], ["a", "b", "c"]], CONTEXT)[[0, 3]]
    assert (first != middle).nnz > 0


def test_contextual_em_beats_the_node_only_ceiling():
    rng = np.random.default_rng(11)
    sentences, tags = _context_corpus(rng, 600)
    test_sentences, test_tags = _context_corpus(rng, 200)
    tagset = sorted({t for labels in tags for t in labels})
    gold = [[tagset.index(t) for t in labels] for labels in tags]
    crowd = simulate_crowd(gold, len(tagset), window=3, obs_per_sentence=2, random_state=0)
    ceiling = _node_only_ceiling(test_sentences, test_tags)
    assert ceiling < 0.82  # the corpus is built so that the word alone is not enough
    FIVE = EMSchedule(n_em_iter=5)
    with np.errstate(invalid="raise"):
        node = CountTagger(model="node", features=WORD, schedule=FIVE, random_state=0).fit(
            TrainingSet(sentences, crowd.observations, tagset)
        )
        context = CountTagger(
            features=CONTEXT, word_classes=False, schedule=FIVE, random_state=0
        ).fit(TrainingSet(sentences, crowd.observations, tagset))
    node_accuracy = accuracy(test_tags, node.predict(test_sentences))
    context_accuracy = accuracy(test_tags, context.predict(test_sentences))
    assert node_accuracy <= ceiling + 1e-9
    assert context.tagger_.kind == "context"
    assert context_accuracy > ceiling + 0.15
    assert context_accuracy > 0.97


def test_warm_start_from_a_node_model_starts_at_its_solution():
    sentences = [["the", "dog", "runs"], ["a", "cat", "sleeps"]]
    tagset = ["DET", "NOUN", "VERB"]
    labels = np.eye(3)[[0, 1, 2, 0, 1, 2]]
    node = NodeTagger(features=WORD).fit(sentences, labels, tagset)
    start = ContextTagger(features=CONTEXT, max_iter=0).fit(
        sentences, labels, tagset, warm_start=node
    )
    np.testing.assert_allclose(start.token_proba(sentences), node.token_proba(sentences))
    with pytest.raises(ValueError, match="different word features"):
        ContextTagger(features=ContextConfig(word=FeatureConfig(2**12))).fit(
            sentences, labels, tagset, warm_start=node
        )


def test_bad_soft_labels_are_refused():
    sentences = [["a", "b"]]
    tagger = ContextTagger(features=CONTEXT)
    with pytest.raises(ValueError, match="one row per token"):
        tagger.fit(sentences, np.ones((3, 2)), ["X", "Y"])
    with pytest.raises(ValueError, match="finite and non-negative"):
        tagger.fit(sentences, np.array([[1.0, -1.0], [0.0, 1.0]]), ["X", "Y"])
    with pytest.raises(ValueError, match="all soft labels are zero"):
        tagger.fit(sentences, np.zeros((2, 2)), ["X", "Y"])


def test_neighbour_tag_features_read_the_neighbours_tags_and_nothing_else():
    config = ContextConfig(word=WORD, tag_offsets=(-1, 2), tag_pairs=False)
    tagset = ["A", "B"]
    probs = np.array([[0.9, 0.1], [0.2, 0.8], [0.5, 0.5], [1.0, 0.0], [0.3, 0.7]])
    x = neighbour_tag_features(probs, [3, 2], tagset, config).toarray()
    column = {
        (d, tag): int(zlib.crc32(f"t{d}={tag}".encode()) % WORD.n_features)
        for d in (-1, 2)
        for tag in tagset
    }
    # Token 1 (second of the first sentence): its left neighbour is token 0; no token 3 ahead.
    assert x[1, column[(-1, "A")]] == 0.9 and x[1, column[(-1, "B")]] == pytest.approx(0.1)
    assert x[1, column[(2, "A")]] == 0 and x[1, column[(2, "B")]] == 0
    # Token 0 reads token 2 at +2; token 3 (first of the second sentence) has no left neighbour.
    assert x[0, column[(2, "A")]] == 0.5 and x[0, column[(-1, "A")]] == 0
    assert x[3].sum() == 0 and x[4, column[(-1, "A")]] == 1.0
    assert x[4, column[(-1, "B")]] == 0  # under 1e-3: left out
    # A change of token 2's probabilities reaches only the token that reads it (token 0, at +2):
    # not token 3, the next row but in another sentence.
    changed = probs.copy()
    changed[2] = [0.1, 0.9]
    y = neighbour_tag_features(changed, [3, 2], tagset, config).toarray()
    assert [bool((x[j] != y[j]).any()) for j in range(5)] == [True, False, False, False, False]


def test_neighbour_tag_features_of_some_rows_are_those_rows_of_all():
    config = ContextConfig(word=WORD, tag_offsets=(-2, -1, 1, 2), tag_pairs=True)
    rng = np.random.default_rng(3)
    lengths = np.array([1, 4, 2, 5])
    probs = rng.dirichlet(np.ones(3) * 0.3, size=lengths.sum())
    full = neighbour_tag_features(probs, lengths, ["A", "B", "C"], config)
    rows = np.array([7, 0, 3, 11, 3])  # any order, a row twice
    some = neighbour_tag_features(probs, lengths, ["A", "B", "C"], config, rows=rows)
    assert some.shape == (5, WORD.n_features)
    np.testing.assert_array_equal(some.toarray(), full[rows].toarray())


def test_join_rows_is_the_sum_for_products():
    rng = np.random.default_rng(4)
    x = sp.random(30, 50, density=0.2, random_state=1, format="csr")
    extra = sp.random(30, 50, density=0.2, random_state=2, format="csr")  # shared columns too
    joined = join_rows(x, extra)
    np.testing.assert_allclose(joined.toarray(), (x + extra).toarray())
    w = rng.normal(size=(50, 3))
    np.testing.assert_allclose(joined @ w, (x + extra) @ w)
    np.testing.assert_allclose(joined.T @ w[:30], (x + extra).T @ w[:30])
    with pytest.raises(ValueError, match="shapes differ"):
        join_rows(x, extra[:5])


def _distant_corpus(rng, n_sentences):
    """The tag of the last word depends on a marker three words back: "m1 f f z" tags z as X,
    "m2 f f z" as Y. The first filler's tag says which marker came (F1 after m1, F2 after m2),
    so a tagger reading the words within two and the likely tags of the tokens two back can
    tag z; one reading words alone, within two, is right half the time at best."""
    sentences, tags = [], []
    for _ in range(n_sentences):
        mark = int(rng.integers(2))
        sentences.append([f"m{mark + 1}", "f", "f", "z"])
        tags.append(["M", f"F{mark + 1}", "G", "X" if mark == 0 else "Y"])
    return sentences, tags


def test_the_second_stage_reads_what_the_first_cannot_see():
    rng = np.random.default_rng(5)
    sentences, tags = _distant_corpus(rng, 300)
    test_sentences, test_tags = _distant_corpus(rng, 100)
    tagset = sorted({t for labels in tags for t in labels})
    labels = np.eye(len(tagset))[[tagset.index(t) for labels_ in tags for t in labels_]]
    one_stage = ContextConfig(word=WORD, class_offsets=(), tag_offsets=(), tag_pairs=False)
    two_stages = ContextConfig(word=WORD, class_offsets=())
    first = ContextTagger(alpha=0.1, features=one_stage).fit(sentences, labels, tagset)
    both = ContextTagger(alpha=0.1, features=two_stages).fit(sentences, labels, tagset)

    def last_word_accuracy(tagger):
        predicted = tagger.predict(test_sentences)
        return np.mean([p[3] == g[3] for p, g in zip(predicted, test_tags, strict=True)])

    assert first.tag_coef_ is None and both.tag_coef_ is not None
    assert last_word_accuracy(first) < 0.65
    assert last_word_accuracy(both) == 1.0
    # Tagging a token needs its whole sentence: the rows of a batch come back for those rows.
    rows = np.array([3, 7])
    np.testing.assert_allclose(
        both.token_proba(test_sentences[:2])[rows],
        both.token_proba(
            None,
            features=both.featurize(test_sentences[:2]),
            lengths=np.array([4, 4]),
            rows=rows,
        ),
    )
