import io
import json
import pickle

import numpy as np
import pytest

from learning.core.context_tagger import ContextTagger
from learning.core.features import ContextConfig, FeatureConfig
from learning.core.modelfile import ModelFileError, load_tagger, save_tagger
from learning.core.node_tagger import NodeTagger
from learning.core.wordclasses import learn_word_classes

SENTENCES = [["the", "dog", "runs"], ["the", "cat", "runs"], ["a", "dog", "sleeps"]]
LABELS = np.eye(3)[[2, 0, 1, 2, 0, 1, 2, 0, 1]]
TAGSET = ["NOUN", "VERB", "DET"]
WORD = FeatureConfig(n_features=2**10, suffix_lengths=(1, 2))


@pytest.fixture
def tagger():
    return NodeTagger(alpha=0.5, features=WORD).fit(SENTENCES, LABELS, TAGSET)


@pytest.fixture
def context_tagger():
    classes = learn_word_classes(SENTENCES * 5, sizes=(2, 3), n_components=2, random_state=0)
    return ContextTagger(
        alpha=0.5, features=ContextConfig(word=WORD, offsets=(-1, 1)), word_classes=classes
    ).fit(SENTENCES, LABELS, TAGSET)


@pytest.mark.parametrize("kind", ["tagger", "context_tagger"])
def test_round_trip(tmp_path, kind, request):
    tagger = request.getfixturevalue(kind)
    path = tmp_path / "model.npz"
    save_tagger(tagger, path, metadata={"version": 3, "accuracy": 0.9})
    loaded, metadata = load_tagger(path)
    assert metadata == {"version": 3, "accuracy": 0.9}
    assert type(loaded) is type(tagger) and loaded.kind == tagger.kind
    assert loaded.tagset_ == tagger.tagset_
    assert loaded.feature_config_ == tagger.feature_config_
    np.testing.assert_array_equal(loaded.coef_, tagger.coef_)
    np.testing.assert_array_equal(loaded.intercept_, tagger.intercept_)
    sentences = [["dog", "the", "unseen"], ["a", "cat"]]
    np.testing.assert_array_equal(loaded.token_proba(sentences), tagger.token_proba(sentences))
    if tagger.kind == "context":
        assert loaded.word_classes.forms == tagger.word_classes.forms
        np.testing.assert_array_equal(loaded.word_classes.classes, tagger.word_classes.classes)


def _format_1_file(path, tagger):
    """A model file as format version 1 wrote it (before contextual models)."""
    header = {
        "format": "tally-tagger",
        "format_version": 1,
        "tagset": list(tagger.tagset_),
        "features": tagger.feature_config_.to_dict(),
        "alpha": tagger.alpha,
        "metadata": {"version": 7},
    }
    rows = np.flatnonzero(np.any(tagger.coef_ != 0, axis=1))
    np.savez_compressed(
        path,
        header=np.frombuffer(json.dumps(header).encode(), dtype=np.uint8),
        coef_rows=rows,
        coef_values=tagger.coef_[rows],
        intercept=tagger.intercept_,
    )


def test_format_1_files_still_load_and_predict(tmp_path, tagger):
    path = tmp_path / "old.npz"
    _format_1_file(path, tagger)
    loaded, metadata = load_tagger(path)
    assert metadata == {"version": 7} and loaded.kind == "node"
    assert loaded.predict(SENTENCES) == tagger.predict(SENTENCES)


def test_inconsistent_word_classes_are_refused(tmp_path, context_tagger):
    buffer = io.BytesIO()
    save_tagger(context_tagger, buffer)
    buffer.seek(0)
    with np.load(buffer) as archive:
        arrays = {name: archive[name] for name in archive.files}
    broken = dict(arrays, class_ids=arrays["class_ids"][:-1])
    np.savez(tmp_path / "short.npz", **broken)
    with pytest.raises(ModelFileError, match="word class ids"):
        load_tagger(tmp_path / "short.npz")
    missing = {k: v for k, v in arrays.items() if not k.startswith("class_")}
    np.savez(tmp_path / "missing.npz", **missing)
    with pytest.raises(ModelFileError, match="word classes named in the header are missing"):
        load_tagger(tmp_path / "missing.npz")


class _Exploit:
    def __reduce__(self):
        return (exec, ("raise SystemExit('code ran')",))


def test_pickle_file_is_refused(tmp_path):
    path = tmp_path / "evil.npz"
    path.write_bytes(pickle.dumps(_Exploit()))
    with pytest.raises(ModelFileError):
        load_tagger(path)


def test_object_array_inside_archive_is_refused(tmp_path, tagger):
    buffer = io.BytesIO()
    save_tagger(tagger, buffer)
    buffer.seek(0)
    with np.load(buffer) as archive:
        arrays = {name: archive[name] for name in archive.files}
    arrays["intercept"] = np.array([_Exploit()], dtype=object)
    path = tmp_path / "object.npz"
    np.savez(path, **arrays)
    with pytest.raises(ModelFileError):
        load_tagger(path)


def test_wrong_version_and_garbage_are_refused(tmp_path, tagger):
    buffer = io.BytesIO()
    save_tagger(tagger, buffer)
    buffer.seek(0)
    with np.load(buffer) as archive:
        arrays = {name: archive[name] for name in archive.files}
    header = arrays["header"].tobytes().replace(b'"format_version": 2', b'"format_version": 99')
    arrays["header"] = np.frombuffer(header, dtype=np.uint8)
    path = tmp_path / "future.npz"
    np.savez(path, **arrays)
    with pytest.raises(ModelFileError, match="unsupported format version 99"):
        load_tagger(path)
    garbage = tmp_path / "garbage.npz"
    garbage.write_bytes(b"not a model")
    with pytest.raises(ModelFileError):
        load_tagger(garbage)
    arrays["header"] = np.frombuffer(b"[" * 100_000 + b"]" * 100_000, dtype=np.uint8)
    deep = tmp_path / "deep.npz"
    np.savez(deep, **arrays)
    with pytest.raises(ModelFileError, match="malformed header"):
        load_tagger(deep)


def test_count_tagger_saves_its_final_tagger(tmp_path):
    from learning.core import CountTagger, simulate_crowd
    from tests.learning.core.synthetic import make_corpus

    sentences, gold, _, tagset = make_corpus(np.random.default_rng(61), n_sentences=200)
    crowd = simulate_crowd(gold, len(tagset), window=3, random_state=0)
    model = CountTagger(features=FeatureConfig(n_features=2**10), n_em_iter=1, random_state=0)
    model.fit(sentences, crowd.observations, tagset)
    model.save(tmp_path / "m.npz", metadata={"n_observations": model.n_observations_})
    loaded, metadata = load_tagger(tmp_path / "m.npz")
    assert metadata == {"n_observations": len(crowd.observations)}
    assert loaded.predict(sentences[:5]) == model.predict(sentences[:5])
