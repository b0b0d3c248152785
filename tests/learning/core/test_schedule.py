"""The EM schedule: validation, presets and the choice among them on hand-made answers."""

import numpy as np
import pytest

from learning.core.observations import Observations
from learning.core.schedule import (
    PRESETS,
    WEAK_SHARE,
    EMSchedule,
    choose_schedule,
    schedule_named,
)


def _answers(tags_asked: list[int], n_tags: int = 10) -> Observations:
    """One window of 3 words per entry, asking the first ``tags_asked[i]`` tags."""
    mask = np.zeros((len(tags_asked), n_tags), dtype=bool)
    for i, k in enumerate(tags_asked):
        mask[i, :k] = True
    return Observations.create(
        sentence=np.arange(len(tags_asked)),
        start=np.zeros(len(tags_asked), dtype=int),
        length=np.full(len(tags_asked), 3),
        tag_mask=mask,
        counts=np.where(mask, 0, 0),
        sentence_lengths=[3] * len(tags_asked),
    )


def test_the_share_of_tags_asked_chooses_weak_or_informative():
    assert choose_schedule(_answers([2, 2, 2])).name == "weak"  # 0.2 of the tag set
    assert choose_schedule(_answers([10, 10])).name == "informative"
    assert choose_schedule(_answers([10, 1, 1])).name == "weak"  # 0.4 of the tag set on average
    exactly = int(WEAK_SHARE * 10)
    assert choose_schedule(_answers([exactly])).name == "informative"  # not below the share
    assert choose_schedule(_answers([exactly - 1])).name == "weak"


def test_releases_and_warm_starts_have_their_own_presets():
    weak, every = _answers([1, 2]), _answers([10])
    assert choose_schedule(weak, private=True).name == "private"
    assert choose_schedule(every, private=True).name == "private"  # whatever the tags asked
    assert choose_schedule(every, private=True, warm=True).name == "private-warm"
    assert choose_schedule(weak, warm=True).name == "warm"
    assert choose_schedule(every, warm=True).name == "warm"
    private = PRESETS["private"]
    assert private.em_tol is None and private.context_alpha > PRESETS["informative"].context_alpha
    assert PRESETS["warm"].prior_from_previous and not PRESETS["weak"].prior_from_previous
    for warm, full in (("warm", "informative"), ("warm", "weak"), ("private-warm", "private")):
        assert PRESETS[warm].n_em_iter < PRESETS[full].n_em_iter
        assert PRESETS[warm].context_alpha == PRESETS[full].context_alpha


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"n_em_iter": -1}, "n_em_iter must be at least 0"),
        ({"n_context_iter": 2.5}, "n_context_iter must be an integer"),
        ({"context_fit_iter": 0}, "context_fit_iter must be at least 1"),
        ({"alpha": "fast"}, "alpha must be positive or 'auto'"),
        ({"context_alpha": 0.0}, "every L2 strength must be positive"),
        ({"alpha_grid": ()}, "every L2 strength must be positive"),
        ({"em_tol": -1.0}, "em_tol must be non-negative"),
        ({"posterior_floor": 1.0}, "posterior_floor must be in"),
        ({"context_fit_tokens": 0}, "context_fit_tokens must be a positive integer or None"),
        ({"context_fit_tokens": 1e5}, "context_fit_tokens must be a positive integer or None"),
    ],
)
def test_a_wrong_setting_is_refused_with_its_name(change, message):
    with pytest.raises(ValueError, match=message):
        EMSchedule(**change)


def test_replace_makes_a_custom_schedule_and_names_are_checked():
    custom = PRESETS["weak"].replace(n_context_iter=4)
    assert custom.name == "custom" and custom.cross_fit == 2 and custom.n_context_iter == 4
    assert PRESETS["weak"].n_context_iter == 10  # frozen: the preset is unchanged
    assert schedule_named("weak") is PRESETS["weak"]
    with pytest.raises(ValueError, match="no EM schedule called 'fast'; the presets are"):
        schedule_named("fast")
    assert EMSchedule().as_dict()["alpha_grid"] == [0.3, 1.0, 3.0, 10.0]


def test_a_warm_start_suits_a_few_more_uniform_answers_on_a_corpus_asked_enough():
    from learning.core.schedule import WARM_GROWTH, WARM_MIN_ASKED, warm_start_suits

    def suits(full, answers, asked=0.5, chosen_since=0):
        return warm_start_suits(full, answers, asked=asked, chosen_since=chosen_since)

    assert suits(1000, 1050) and suits(1000, int(1000 * (1 + WARM_GROWTH)))
    assert not suits(1000, 1200) and not suits(0, 10)
    # Answers chosen by value since the full fit: a full fit, however few.
    assert not suits(1000, 1050, chosen_since=1) and suits(1000, 1050, chosen_since=-3)
    # A corpus its answers have barely asked about: the model is young, each answer moves it.
    assert not suits(1000, 1050, asked=WARM_MIN_ASKED / 2) and suits(1000, 1050, WARM_MIN_ASKED)


def test_the_asked_share_counts_window_tokens_times_asked_tags():
    from learning.core.schedule import asked_share

    answers = _answers([1, 2, 10])  # windows of 3 words: 3 + 6 + 30 cells of 10 tags
    assert asked_share(answers, n_tokens=13) == pytest.approx(39 / 130)
    assert asked_share(answers, n_tokens=0) == 0.0
