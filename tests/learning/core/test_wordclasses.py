import numpy as np
import pytest

from learning.core.wordclasses import kmeans, learn_word_classes


def _distributional_corpus(rng, n_sentences=400):
    """Nouns follow "the"/"a" and precede verbs; verbs follow nouns and precede "it"/"them"."""
    nouns = [f"n{i}" for i in range(12)]
    verbs = [f"v{i}" for i in range(12)]
    sentences = []
    for _ in range(n_sentences):
        sentences.append(
            [
                str(rng.choice(["the", "a"])),
                str(rng.choice(nouns)),
                str(rng.choice(verbs)),
                str(rng.choice(["it", "them"])),
            ]  # fmt: skip
        )
    return sentences, nouns, verbs


def test_words_in_the_same_contexts_share_a_class():
    sentences, nouns, verbs = _distributional_corpus(np.random.default_rng(0))
    classes = learn_word_classes(sentences, sizes=(4, 8), n_components=4, random_state=0)
    coarse = classes.lookup(nouns + verbs + ["the", "a", "it", "them"])[:, 0]
    # Four groups of words by their contexts: nouns, verbs, determiners, pronouns.
    assert len(set(coarse[:12])) == 1 and len(set(coarse[12:24])) == 1
    assert coarse[24] == coarse[25] and coarse[26] == coarse[27]
    assert len({coarse[0], coarse[12], coarse[24], coarse[26]}) == 4
    # Case-insensitive lookup; unknown words get -1 at every level.
    np.testing.assert_array_equal(classes.lookup(["N3"]), classes.lookup(["n3"]))
    assert (classes.lookup(["never-seen"]) == -1).all()
    # Levels nest: every fine class lies inside one coarse class.
    table = classes.classes
    for fine in np.unique(table[:, 1]):
        assert len(np.unique(table[table[:, 1] == fine, 0])) == 1


def test_word_classes_are_deterministic_given_the_seed():
    sentences, _, _ = _distributional_corpus(np.random.default_rng(1))
    a = learn_word_classes(sentences, sizes=(2, 4), n_components=4, random_state=5)
    b = learn_word_classes(sentences, sizes=(2, 4), n_components=4, random_state=5)
    assert a.forms == b.forms
    np.testing.assert_array_equal(a.classes, b.classes)


def test_kmeans_finds_separated_clusters():
    rng = np.random.default_rng(2)
    centres = np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]])
    points = np.concatenate([c + rng.normal(size=(50, 2)) for c in centres])
    found, assignment = kmeans(points, 3, random_state=0)
    assert len(set(assignment[:50])) == len(set(assignment[50:100])) == 1
    assert len(set(assignment)) == 3
    np.testing.assert_allclose(np.sort(found[:, 0]), np.sort(centres[:, 0]), atol=0.5)
    with pytest.raises(ValueError):
        kmeans(points, 0)
    with pytest.raises(ValueError, match="no tokens"):
        learn_word_classes([[]])
