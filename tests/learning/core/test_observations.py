import numpy as np
import pytest

from learning.core.observations import Observations

LENGTHS = [5, 3]


def _create(**overrides):
    arguments = {
        "sentence": [0, 1],
        "start": [1, 0],
        "length": [3, 3],
        "tag_mask": np.array([[True, True, False], [True, False, False]]),
        "counts": np.array([[1, 2, 0], [3, 0, 0]]),
        "annotator": [7, 8],
        "sentence_lengths": LENGTHS,
    }
    arguments.update(overrides)
    return Observations.create(**arguments)


def test_valid_observations_are_copied_not_shared():
    mask = np.array([[True, True, False], [True, False, False]])
    obs = _create(tag_mask=mask)
    mask[0, 0] = False
    assert obs.tag_mask[0, 0]
    assert len(obs) == 2 and obs.n_tags == 3
    assert obs.counts.dtype == np.int64


def test_window_longer_than_sentence_is_clipped_to_whole_sentence():
    obs = _create(length=[3, 10])
    assert obs.length.tolist() == [3, 3]


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"counts": np.array([[4, 0, 0], [3, 0, 0]])}, "count 4 is above the window length 3"),
        ({"counts": np.array([[-1, 0, 0], [3, 0, 0]])}, "negative count"),
        ({"counts": np.array([[2, 2, 0], [3, 0, 0]])}, "sum to 4, above the window length 3"),
        ({"tag_mask": np.array([[False] * 3, [True, False, False]])}, "subset B is empty"),
        ({"start": [4, 0]}, r"window \[4, 7\) reaches outside sentence 0"),
        ({"start": [5, 0]}, "window start 5 is outside sentence 0"),
        ({"sentence": [0, 2]}, "sentence index 2 is not in the corpus"),
        ({"length": [0, 3]}, "window length 0 must be at least 1"),
    ],
)
def test_bad_observations_give_clear_errors(overrides, message):
    with pytest.raises(ValueError, match=message):
        _create(**overrides)


def test_empty_observation_set_is_an_error():
    with pytest.raises(ValueError, match="observation set is empty"):
        Observations.create(
            sentence=[],
            start=[],
            length=[],
            tag_mask=np.zeros((0, 3), bool),
            counts=np.zeros((0, 3), int),
            sentence_lengths=LENGTHS,
        )


def test_from_records_and_unknown_tags():
    records = [{"sentence": 0, "start": 0, "length": 2, "counts": {"B": 1}, "annotator": 3}]
    obs = Observations.from_records(records, ["A", "B"], LENGTHS)
    assert obs.tag_mask.tolist() == [[False, True]]
    assert obs.counts.tolist() == [[0, 1]]
    records[0]["counts"] = {"Z": 1}
    with pytest.raises(ValueError, match="unknown tag 'Z'"):
        Observations.from_records(records, ["A", "B"], LENGTHS)


def test_token_index():
    obs = _create()
    offsets = np.array([0, 5])
    which, token = obs.token_index(offsets)
    assert which.tolist() == [0, 0, 0, 1, 1, 1]
    assert token.tolist() == [1, 2, 3, 5, 6, 7]
