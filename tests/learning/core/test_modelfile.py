import io
import json
import pickle

import numpy as np
import pytest

from learning.core.context_tagger import ContextTagger
from learning.core.features import ContextConfig, FeatureConfig
from learning.core.modelfile import (
    FORMAT_VERSION,
    ModelFileError,
    load_tagger,
    save_tagger,
    with_metadata,
)
from learning.core.node_tagger import NodeTagger
from learning.core.schedule import EMSchedule
from learning.core.training import TrainingSet
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
    if tagger.kind == "context":  # the second stage, which reads the neighbours' tags
        assert tagger.tag_coef_ is not None and np.any(tagger.tag_coef_ != tagger.coef_)
        np.testing.assert_array_equal(loaded.tag_coef_, tagger.tag_coef_)
        np.testing.assert_array_equal(loaded.tag_intercept_, tagger.tag_intercept_)
    sentences = [["dog", "the", "unseen"], ["a", "cat"]]
    np.testing.assert_array_equal(loaded.token_proba(sentences), tagger.token_proba(sentences))
    if tagger.kind == "context":
        assert loaded.word_classes.forms == tagger.word_classes.forms
        np.testing.assert_array_equal(loaded.word_classes.classes, tagger.word_classes.classes)


def test_metadata_added_to_a_file_keeps_every_array(context_tagger):
    """An export adds the cost matrix of the moment to a copy of the file (`with_metadata`):
    the arrays byte for byte, the rest of the metadata kept."""
    buffer = io.BytesIO()
    save_tagger(context_tagger, buffer, metadata={"version": 3, "cost_matrix": None})
    data = buffer.getvalue()
    carried = {"tags": TAGSET, "matrix": (1 - np.eye(3)).tolist()}
    exported = with_metadata(data, {"cost_matrix": carried})
    loaded, metadata = load_tagger(io.BytesIO(exported))
    assert metadata == {"version": 3, "cost_matrix": carried}
    before, after = np.load(io.BytesIO(data)), np.load(io.BytesIO(exported))
    assert set(before.files) == set(after.files)
    for name in before.files:
        if name != "header":
            np.testing.assert_array_equal(before[name], after[name])
    sentences = [["dog", "the", "unseen"]]
    np.testing.assert_array_equal(
        loaded.token_proba(sentences), context_tagger.token_proba(sentences)
    )
    with pytest.raises(ModelFileError):
        with_metadata(b"not a zip", {})


def _old_file(path, tagger, header: dict, **arrays):
    """A model file as an earlier format version wrote it: ``header`` and one stage's arrays."""
    header = {"format": "tally-tagger", "tagset": list(tagger.tagset_), "alpha": tagger.alpha,
              **header}  # fmt: skip
    rows = np.flatnonzero(np.any(tagger.coef_ != 0, axis=1))
    np.savez_compressed(
        path,
        header=np.frombuffer(json.dumps(header).encode(), dtype=np.uint8),
        coef_rows=rows,
        coef_values=tagger.coef_[rows],
        intercept=tagger.intercept_,
        **arrays,
    )


def _format_1_file(path, tagger):
    """A model file as format version 1 wrote it (before contextual models)."""
    header = {"format_version": 1, "features": tagger.feature_config_.to_dict(),
              "metadata": {"version": 7}}  # fmt: skip
    _old_file(path, tagger, header)


def test_format_1_files_still_load_and_predict(tmp_path, tagger):
    path = tmp_path / "old.npz"
    _format_1_file(path, tagger)
    loaded, metadata = load_tagger(path)
    assert metadata == {"version": 7} and loaded.kind == "node"
    assert loaded.predict(SENTENCES) == tagger.predict(SENTENCES)


def _format_2_file(path, tagger):
    """A contextual model file as format version 2 wrote it (one stage, no tag_offsets)."""
    features = tagger.feature_config_.to_dict()
    del features["tag_offsets"], features["tag_pairs"]
    header = {"format_version": 2, "kind": "context", "features": features,
              "word_classes": {"sizes": list(tagger.word_classes.sizes)},
              "metadata": {"version": 8}}  # fmt: skip
    encoded = [form.encode() for form in tagger.word_classes.forms]
    _old_file(
        path, tagger, header,
        class_forms=np.frombuffer(b"".join(encoded), dtype=np.uint8),
        class_form_ends=np.cumsum([len(b) for b in encoded], dtype=np.int64),
        class_ids=tagger.word_classes.classes.astype(np.int32),
    )  # fmt: skip


def test_format_2_contextual_files_still_load_and_predict(tmp_path, context_tagger):
    one_stage = ContextTagger(
        alpha=0.5,
        features=ContextConfig(word=WORD, offsets=(-1, 1), tag_offsets=(), tag_pairs=False),
        word_classes=context_tagger.word_classes,
    ).fit(SENTENCES, LABELS, TAGSET)
    path = tmp_path / "v2.npz"
    _format_2_file(path, one_stage)
    loaded, metadata = load_tagger(path)
    assert metadata == {"version": 8} and loaded.kind == "context" and loaded.tag_coef_ is None
    assert loaded.feature_config_ == one_stage.feature_config_
    sentences = [["dog", "the", "unseen"], ["a", "cat"]]
    np.testing.assert_array_equal(loaded.token_proba(sentences), one_stage.token_proba(sentences))


def test_a_second_stage_without_its_setting_or_the_reverse_is_refused(tmp_path, context_tagger):
    buffer = io.BytesIO()
    save_tagger(context_tagger, buffer)
    buffer.seek(0)
    with np.load(buffer) as archive:
        arrays = {name: archive[name] for name in archive.files}
    without = {k: v for k, v in arrays.items() if not k.startswith("tag_")}
    np.savez(tmp_path / "without.npz", **without)
    with pytest.raises(ModelFileError, match="second stage"):
        load_tagger(tmp_path / "without.npz")
    partial = {k: v for k, v in arrays.items() if k != "tag_intercept"}
    np.savez(tmp_path / "partial.npz", **partial)
    with pytest.raises(ModelFileError, match="unexpected arrays"):
        load_tagger(tmp_path / "partial.npz")
    wide = dict(arrays, tag_coef_rows=arrays["tag_coef_rows"] + WORD.n_features)
    np.savez(tmp_path / "wide.npz", **wide)
    with pytest.raises(ModelFileError, match="tag_coef_rows outside"):
        load_tagger(tmp_path / "wide.npz")


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
    current = f'"format_version": {FORMAT_VERSION}'.encode()
    header = arrays["header"].tobytes().replace(current, b'"format_version": 99')
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
    from learning.core import CountTagger
    from learning.experiments.simulate import simulate_crowd
    from tests.support.synthetic import make_corpus

    sentences, gold, _, tagset = make_corpus(np.random.default_rng(61), n_sentences=200)
    crowd = simulate_crowd(gold, len(tagset), window=3, random_state=0)
    model = CountTagger(
        features=FeatureConfig(n_features=2**10), schedule=EMSchedule(n_em_iter=1), random_state=0
    )
    model.fit(TrainingSet(sentences, crowd.observations, tagset))
    model.save(tmp_path / "m.npz", metadata={"n_observations": model.n_observations_})
    loaded, metadata = load_tagger(tmp_path / "m.npz")
    assert metadata == {"n_observations": len(crowd.observations)}
    assert loaded.predict(sentences[:5]) == model.predict(sentences[:5])
