import io
import pickle

import numpy as np
import pytest

from learning.core.features import FeatureConfig
from learning.core.modelfile import ModelFileError, load_tagger, save_tagger
from learning.core.tagger import LogLinearTagger


@pytest.fixture
def tagger():
    forms = ["dog", "runs", "the"]
    soft = np.array([[3.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 4.0]])
    config = FeatureConfig(n_features=2**10, suffix_lengths=(1, 2))
    return LogLinearTagger(alpha=0.5, features=config).fit(forms, soft, ["NOUN", "VERB", "DET"])


def test_round_trip(tmp_path, tagger):
    path = tmp_path / "model.npz"
    save_tagger(tagger, path, metadata={"version": 3, "accuracy": 0.9})
    loaded, metadata = load_tagger(path)
    assert metadata == {"version": 3, "accuracy": 0.9}
    assert loaded.tagset_ == tagger.tagset_
    assert loaded.feature_config_ == tagger.feature_config_
    np.testing.assert_array_equal(loaded.coef_, tagger.coef_)
    np.testing.assert_array_equal(loaded.intercept_, tagger.intercept_)
    tokens = ["dog", "the", "unseen"]
    np.testing.assert_array_equal(loaded.predict_proba(tokens), tagger.predict_proba(tokens))


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
    header = arrays["header"].tobytes().replace(b'"format_version": 1', b'"format_version": 99')
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
