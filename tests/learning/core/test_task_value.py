"""The value of a task (bits its answer teaches) against brute-force enumeration of the
window's taggings, and the round that spends a budget on the most valuable tasks."""

from itertools import product

import numpy as np
import pytest
from scipy import stats

from learning.core.task_value import (
    count_answer_distribution,
    count_values,
    given_answers,
    given_verifications,
    round_plan,
    verification_share,
    verification_values,
)


def _random_probs(rng, *shape, sharp=1.0):
    return rng.dirichlet(np.full(shape[-1], sharp), size=shape[:-1])


def _brute_counts(token_probs, asked):
    """The distribution of the asked tags' count vector, by enumerating every tagging."""
    width, n_tags = token_probs.shape
    dist: dict[tuple, float] = {}
    for tagging in product(range(n_tags), repeat=width):
        p = float(np.prod(token_probs[np.arange(width), tagging]))
        key = tuple(sum(t == b for t in tagging) for b in asked)
        dist[key] = dist.get(key, 0.0) + p
    return dist


def _entropy(probabilities) -> float:
    p = np.array([q for q in probabilities if q > 0])
    return float(-(p * np.log2(p)).sum())


@pytest.mark.parametrize("asked", [(0,), (1, 3), (0, 2, 3), (0, 1, 2, 3)])
def test_the_count_distribution_equals_enumeration(asked):
    rng = np.random.default_rng(len(asked))
    token_probs = _random_probs(rng, 4, 4, sharp=0.7)
    dist = count_answer_distribution(token_probs[None, :, list(asked)])[0]
    brute = _brute_counts(token_probs, asked)
    assert sorted(dist[dist > 1e-15]) == pytest.approx(sorted(v for v in brute.values() if v > 0))
    assert dist.sum() == pytest.approx(1.0)


def test_a_padded_window_counts_only_its_tokens():
    rng = np.random.default_rng(1)
    token_probs = _random_probs(rng, 3, 5)
    padded = np.concatenate([token_probs, np.zeros((2, 5))])
    short = count_values(token_probs[None, :, [1, 4]])
    long = count_values(padded[None, :, [1, 4]])
    assert long == pytest.approx(short)


@pytest.mark.parametrize("noise", [0.0, 0.2])
def test_the_value_of_a_count_task_is_the_mutual_information_of_its_answer(noise):
    """I(A; tags) with A = N, or with probability `noise` a uniformly random valid answer."""
    rng = np.random.default_rng(7)
    asked = (0, 2)
    for _ in range(5):
        token_probs = _random_probs(rng, 3, 4, sharp=0.5)
        counts = _brute_counts(token_probs, asked)
        answers = [v for v in product(range(4), repeat=2) if sum(v) <= 3]
        joint = {
            (n, a): p * ((1 - noise) * (a == n) + noise / len(answers))
            for n, p in counts.items()
            for a in answers
        }
        p_answer = {a: sum(joint[(n, a)] for n in counts) for a in answers}
        information = sum(
            q * np.log2(q / (counts[n] * p_answer[a])) for (n, a), q in joint.items() if q > 0
        )
        value = count_values(token_probs[None, :, list(asked)], noise=noise)[0]
        assert value == pytest.approx(information, abs=1e-9)


def _brute_given(token_probs, windows):
    """P(tagging | answers) for a sentence by enumeration: ``windows`` are (start, length,
    asked tags, counts)."""
    width, n_tags = token_probs.shape
    taggings, weights = [], []
    for tagging in product(range(n_tags), repeat=width):
        if all(
            sum(t == b for t in tagging[a : a + n]) == c
            for a, n, asked, counts in windows
            for b, c in zip(asked, counts, strict=True)
        ):
            taggings.append(tagging)
            weights.append(float(np.prod(token_probs[np.arange(width), tagging])))
    weights = np.array(weights)
    return np.array(taggings), weights / weights.sum()


def test_the_probabilities_given_an_answer_are_its_exact_posterior():
    rng = np.random.default_rng(3)
    token_probs = _random_probs(rng, 6, 3, sharp=0.8)
    answer = (1, 3, (0, 2), (1, 1))  # tokens 1..3 hold one tag 0 and one tag 2
    mask = np.zeros((1, 3), dtype=bool)
    mask[0, list(answer[2])] = True
    counts = np.zeros((1, 3), dtype=np.int64)
    counts[0, list(answer[2])] = answer[3]
    given = given_answers(token_probs, np.array([0, 6]), np.array([0]), np.array([1]),
                          np.array([3]), mask, counts, floor=0.0)  # fmt: skip
    taggings, weights = _brute_given(token_probs, [answer])
    brute = np.stack([np.bincount(taggings[:, i], weights, minlength=3) for i in range(6)])
    assert given == pytest.approx(brute, abs=1e-9)
    assert given[[0, 4, 5]] == pytest.approx(token_probs[[0, 4, 5]])  # outside: unchanged


@pytest.mark.parametrize(
    ("answer", "wrong"),
    [(True, -1), (False, 0), (False, 2), (False, -1)],
    ids=["yes", "no, first word tapped", "no, last word tapped", "no, no tap"],
)
def test_the_probabilities_given_a_verification_are_its_exact_posterior(answer, wrong):
    """Tokens 1..3 shown with tags (0, 2, 1): the marginals given the answer (Yes, or the first
    wrong word, or a No without a tap) equal the enumeration of every tagging of the sentence."""
    rng = np.random.default_rng(5)
    token_probs = _random_probs(rng, 5, 3, sharp=0.8)
    shown = np.array([0, 2, 1])
    given = given_verifications(token_probs, np.array([0, 5]), np.array([0]), np.array([1]),
                                shown[None], np.array([answer]), np.array([wrong]),
                                floor=0.0)  # fmt: skip
    brute = np.zeros((5, 3))
    for tagging in product(range(3), repeat=5):
        right = np.asarray(tagging[1:4]) == shown
        first_wrong = int(np.argmin(right)) if not right.all() else -1
        if answer:
            fits = right.all()
        elif wrong >= 0:
            fits = first_wrong == wrong
        else:
            fits = not right.all()
        if fits:
            brute[np.arange(5), tagging] += np.prod(token_probs[np.arange(5), tagging])
    brute /= brute.sum(axis=1, keepdims=True)
    assert given == pytest.approx(brute, abs=1e-9)
    if answer:  # a Yes settles the shown tags
        assert given[[1, 2, 3], shown] == pytest.approx(1.0)


def test_the_value_of_a_second_window_is_what_the_first_answer_left():
    """A window sharing one token with an answered one: its value given that answer is the
    conditional entropy of its counts, H(N2 | N1 = n1), by enumeration; several answers on
    disjoint windows each condition their own tokens."""
    rng = np.random.default_rng(11)
    token_probs = _random_probs(rng, 7, 3, sharp=0.7)
    answers = [(0, 3, (1,), (1,)), (4, 3, (0, 2), (1, 0))]
    mask = np.zeros((2, 3), dtype=bool)
    counts = np.zeros((2, 3), dtype=np.int64)
    for row, (_, _, asked, c) in enumerate(answers):
        mask[row, list(asked)] = True
        counts[row, list(asked)] = c
    given = given_answers(token_probs, np.array([0, 7]), np.array([0, 0]), np.array([0, 4]),
                          np.array([3, 3]), mask, counts, floor=0.0)  # fmt: skip
    taggings, weights = _brute_given(token_probs, answers)
    for asked in [(0,), (0, 1), (1, 2)]:  # the new window: tokens 2..4, one shared with each
        dist: dict[tuple, float] = {}
        for tagging, w in zip(taggings, weights, strict=True):
            key = tuple(sum(t == b for t in tagging[2:5]) for b in asked)
            dist[key] = dist.get(key, 0.0) + w
        value = count_values(given[None, 2:5, list(asked)])[0]
        assert value == pytest.approx(_entropy(dist.values()), abs=1e-9)


def test_asking_all_tags_is_valued_by_an_upper_bound_that_is_tight_without_shared_doubt():
    """All tags: Σ_i H(p_i) bounds H(N) from above, with equality when no two tokens are unsure
    between the same tags (measured on real windows in docs/decisions/009-task-value.md)."""
    rng = np.random.default_rng(3)
    token_probs = _random_probs(rng, 3, 3)
    everything = tuple(range(3))
    exact = _entropy(_brute_counts(token_probs, everything).values())
    bound = sum(_entropy(row) for row in token_probs)
    assert exact <= bound + 1e-12 and exact < bound - 0.1  # shared doubt: the bound is loose
    tidy = np.array([[0.5, 0.5, 0.0, 0.0], [0.0, 0.0, 0.3, 0.7], [1.0, 0.0, 0.0, 0.0]])
    exact = _entropy(_brute_counts(tidy, tuple(range(4))).values())
    assert exact == pytest.approx(sum(_entropy(row) for row in tidy))


def test_the_value_of_a_verification_is_the_entropy_of_its_outcome():
    rng = np.random.default_rng(5)
    lengths = np.array([4, 2])
    token_probs = _random_probs(rng, 6, 3, sharp=0.8)
    offsets = np.array([0, 4, 6])
    starts = np.array([1, 0])
    values = verification_values(token_probs, offsets, starts, width=3)
    for s, (value, start) in enumerate(zip(values, starts, strict=True)):
        width = min(3, lengths[s])
        probs = token_probs[offsets[s] + start : offsets[s] + start + width]
        shown = probs.argmax(axis=1)
        outcomes: dict[int, float] = {}
        for tagging in product(range(3), repeat=width):
            p = float(np.prod(probs[np.arange(width), tagging]))
            wrong = [i for i in range(width) if tagging[i] != shown[i]]
            key = wrong[0] if wrong else -1  # the first wrong word tapped, or Yes
            outcomes[key] = outcomes.get(key, 0.0) + p
        assert value == pytest.approx(_entropy(outcomes.values()), abs=1e-9)


def _corpus(rng, n_sentences=300, n_tags=6):
    lengths = rng.integers(1, 15, size=n_sentences)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    sharp = rng.choice([0.05, 1.0], size=offsets[-1], p=[0.8, 0.2])  # mostly sure, some doubt
    token_probs = np.array([rng.dirichlet(np.full(n_tags, s)) for s in sharp])
    return token_probs, offsets


def test_a_round_takes_the_most_valuable_windows_without_overlap():
    rng = np.random.default_rng(0)
    token_probs, offsets = _corpus(rng)
    plan = round_plan(
        token_probs, offsets, window=4, tags_per_task=2, n_tasks=200, exploration=0.0,
        random_state=0,
    )  # fmt: skip
    assert len(plan) == 200 and not plan.explore.any()
    assert (plan.tag_mask.sum(axis=1) == 2).all()
    assert np.all(np.diff(plan.value) <= 1e-12)  # served most valuable first
    for s in np.unique(plan.sentence):
        mine = plan.sentence == s
        spans = sorted(zip(plan.start[mine], plan.start[mine] + plan.length[mine], strict=True))
        assert all(end <= begin for (_, end), (begin, _) in zip(spans, spans[1:], strict=False))
    # Each chosen task is the best subset of its window: no pair of its tags is worth more.
    lengths = np.diff(offsets)
    for row in range(0, 200, 37):
        s, a, n = plan.sentence[row], plan.start[row], plan.length[row]
        assert n == min(4, lengths[s])
        probs = token_probs[offsets[s] + a : offsets[s] + a + n]
        best = max(
            count_values(probs[None, :, [i, j]])[0] for i in range(6) for j in range(i + 1, 6)
        )
        assert plan.value[row] == pytest.approx(best)


def test_a_round_discounts_windows_about_a_word_it_already_asks_about():
    """Six one-window sentences: three doubt most on word 0, three a little less on word 1.
    Undiscounted, a round of 2 asks twice about word 0; with the discount, once about each,
    and a discount of 1 changes nothing."""
    sure = np.array([0.97, 0.01, 0.01, 0.01])
    token_probs = np.tile(sure, (30, 1))
    keys = np.full(30, 2)
    for s in range(6):
        token_probs[5 * s + 2] = [0.5, 0.5, 0.0, 0.0] if s < 3 else [0.6, 0.4, 0.0, 0.0]
        keys[5 * s + 2] = 0 if s < 3 else 1
    offsets = np.arange(0, 31, 5)

    def asked_words(**options):
        plan = round_plan(token_probs, offsets, window=5, tags_per_task=2, n_tasks=2,
                          exploration=0.0, token_keys=keys, random_state=0, **options)  # fmt: skip
        return sorted(int(s >= 3) for s in plan.sentence)

    assert asked_words() == [0, 0] == asked_words(repeat_discount=1.0)
    assert asked_words(repeat_discount=0.5) == [0, 1]
    assert asked_words(repeat_discount=0.99) == [0, 0]  # 0.99 × 1 bit > 0.97 bit


def test_a_round_leaves_out_what_was_asked_and_values_all_tags_tasks():
    rng = np.random.default_rng(1)
    token_probs, offsets = _corpus(rng, n_sentences=50)
    first = round_plan(token_probs, offsets, window=3, tags_per_task=None, n_tasks=20,
                       exploration=0.0, random_state=0)  # fmt: skip
    assert first.tag_mask.all()
    asked = np.concatenate(
        [first.sentence[:, None], first.start[:, None], first.length[:, None], first.tag_mask],
        axis=1,
    )
    again = round_plan(token_probs, offsets, window=3, tags_per_task=None, n_tasks=20,
                       exploration=0.0, asked=asked, random_state=0)  # fmt: skip
    old = {tuple(r) for r in asked[:, :3].tolist()}
    assert not old & {
        (s, a, n) for s, a, n in zip(again.sentence, again.start, again.length, strict=True)
    }


def test_the_exploration_share_holds():
    """Over many rounds, the share of uniform rows is `exploration` (chi-square), and their
    window starts are uniform over the sentence's starts (chi-square)."""
    rng = np.random.default_rng(2)
    token_probs, offsets = _corpus(rng, n_sentences=40)
    explored = total = 0
    starts = []
    lengths = np.diff(offsets)
    for seed in range(200):
        plan = round_plan(token_probs, offsets, window=3, tags_per_task=1, n_tasks=25,
                          exploration=0.3, random_state=seed)  # fmt: skip
        explored += int(plan.explore.sum())
        total += len(plan)
        long = plan.explore & (lengths[plan.sentence] == 12)
        starts.extend(plan.start[long].tolist())
    expected = np.array([0.3, 0.7]) * total
    assert stats.chisquare([explored, total - explored], expected).pvalue > 0.001
    if len(starts) > 50:  # sentences of 12 tokens: 10 starts of a 3-token window
        observed = np.bincount(starts, minlength=10)
        assert stats.chisquare(observed).pvalue > 0.001


def test_a_round_with_no_doubt_left_explores():
    token_probs = np.eye(3)[[0, 1, 2, 0, 1]]
    plan = round_plan(token_probs, np.array([0, 5]), window=2, tags_per_task=1, n_tasks=3,
                      exploration=0.0, random_state=0)  # fmt: skip
    assert len(plan) == 3 and plan.explore.all()  # nothing to learn: uniform draws


def test_the_verification_share_follows_value_per_second():
    counts = np.full(100, 1.0)
    assert verification_share(counts, 10.0, np.zeros(100), 3.0) == 0.0  # nothing to learn
    assert verification_share(counts, 10.0, np.full(100, 0.5), 3.0) == 1.0  # 0.17 bit/s > 0.1
    assert verification_share(counts, 10.0, np.full(50, 0.5), 3.0) == 0.5  # 50 worth asking
    assert verification_share(counts, 10.0, np.full(100, 0.2), 3.0) == 0.0  # 0.067 bit/s < 0.1
    mixed = verification_share(counts, 10.0, np.linspace(0, 1, 100), 5.0)
    assert mixed == pytest.approx(0.5, abs=0.02)  # the half worth more than 0.1 bit/s


def test_exploration_rows_are_new_regions():
    """Uniform rows repeat neither an asked region nor the round's other rows (a repeat would
    be skipped when the round is stored, and the exploration share would shrink)."""
    rng = np.random.default_rng(4)
    token_probs, offsets = _corpus(rng, n_sentences=30)
    first = round_plan(token_probs, offsets, window=3, tags_per_task=None, n_tasks=60,
                       exploration=0.5, random_state=0)  # fmt: skip
    asked = np.concatenate(
        [first.sentence[:, None], first.start[:, None], first.length[:, None], first.tag_mask],
        axis=1,
    )
    plan = round_plan(token_probs, offsets, window=3, tags_per_task=None, n_tasks=60,
                      exploration=0.5, asked=asked, random_state=1)  # fmt: skip
    regions = [(s, a, n) for s, a, n in zip(plan.sentence, plan.start, plan.length, strict=True)]
    assert len(set(regions)) == len(regions)
    assert not set(regions) & {tuple(row) for row in asked[:, :3].tolist()}


def test_each_sentence_verifies_its_most_informative_window():
    from learning.core.task_value import best_verification_windows

    rng = np.random.default_rng(8)
    token_probs, offsets = _corpus(rng, n_sentences=40)
    starts, values = best_verification_windows(token_probs, offsets, 4)
    lengths = np.diff(offsets)
    for s in range(40):
        n_starts = lengths[s] - min(4, lengths[s]) + 1
        each = [
            verification_values(token_probs[offsets[s] : offsets[s + 1]], np.array([0, lengths[s]]),
                                np.array([a]), 4)[0]
            for a in range(n_starts)
        ]  # fmt: skip
        assert values[s] == pytest.approx(max(each)) and starts[s] == int(np.argmax(each))
