import itertools

import numpy as np
import pytest

from learning.core.cost import (
    MAX_COST,
    NEAR_COST,
    PRESETS,
    CostMatrixError,
    TagCosts,
    bayes_decision,
    check_cost_matrix,
    cost_matrix_named,
    cost_matrix_preset,
    cost_report,
    expected_cost,
    number_text,
    read_cost_csv,
    read_cost_table,
    realised_cost,
    write_cost_csv,
)
from tests.support.synthetic import random_cost

UPOS = sorted(
    [
        "ADJ",
        "ADP",
        "ADV",
        "AUX",
        "CCONJ",
        "DET",
        "INTJ",
        "NOUN",
        "NUM",
        "PART",
        "PRON",
        "PROPN",
        "PUNCT",
        "SCONJ",
        "SYM",
        "VERB",
        "X",
    ]
)


def random_probs(rng, n, k):
    p = rng.gamma(0.3, size=(n, k))
    return p / p.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("seed", range(5))
def test_bayes_decision_equals_brute_force_minimisation(seed):
    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, 6))
    probs, cost = random_probs(rng, 40, k), random_cost(rng, k)
    with np.errstate(invalid="raise"):
        decided = bayes_decision(probs, cost)
    for t in range(probs.shape[0]):
        risks = [sum(probs[t, i] * cost[i, j] for i in range(k)) for j in range(k)]
        assert risks[decided[t]] == pytest.approx(min(risks))


def test_bayes_decision_minimises_the_expected_cost_of_a_whole_window():
    """Additive cost: the best joint decision over every tagging of a window is per token."""
    rng = np.random.default_rng(7)
    k, w = 3, 3
    probs, cost = random_probs(rng, w, k), random_cost(rng, k)
    decided = tuple(bayes_decision(probs, cost))

    def risk(decision):
        total = 0.0
        for truth in itertools.product(range(k), repeat=w):
            p = np.prod([probs[j, truth[j]] for j in range(w)])
            total += p * sum(cost[truth[j], decision[j]] for j in range(w))
        return total

    best = min(itertools.product(range(k), repeat=w), key=risk)
    assert risk(decided) == pytest.approx(risk(best))


def test_zero_one_decision_is_the_argmax_ties_included():
    rng = np.random.default_rng(3)
    probs = random_probs(rng, 200, 17)
    probs[:20, :2] = probs[:20, :2].sum(axis=1, keepdims=True) / 2  # exact ties
    for cost in (cost_matrix_preset("zero-one", UPOS), 3.0 * (1 - np.eye(17)), None):
        np.testing.assert_array_equal(bayes_decision(probs, cost), probs.argmax(axis=1))


def test_inputs_are_not_mutated():
    rng = np.random.default_rng(4)
    probs, cost = random_probs(rng, 10, 4), random_cost(rng, 4)
    before = probs.copy(), cost.copy()
    bayes_decision(probs, cost)
    cost_report(probs.argmax(1), bayes_decision(probs, cost), cost, "ABCD", probs)
    np.testing.assert_array_equal(before[0], probs)
    np.testing.assert_array_equal(before[1], cost)


@pytest.mark.parametrize("name", PRESETS)
def test_presets_are_valid_cost_matrices(name):
    cost = cost_matrix_preset(name, UPOS)
    check_cost_matrix(cost, UPOS)
    off = cost[~np.eye(17, dtype=bool)]
    assert off.min() > 0


def test_near_classes_are_cheap_both_ways_and_other_errors_cost_one():
    cost = cost_matrix_preset("near-classes", UPOS)
    i = {t: k for k, t in enumerate(UPOS)}
    assert cost[i["NOUN"], i["PROPN"]] == cost[i["PROPN"], i["NOUN"]] == NEAR_COST
    assert cost[i["AUX"], i["VERB"]] == NEAR_COST
    assert cost[i["NOUN"], i["VERB"]] == 1.0
    # A tag set without some of the tags still gets the pairs it has.
    small = cost_matrix_preset("near-classes", ["NOUN", "PROPN", "X"])
    np.testing.assert_array_equal(small, [[0, NEAR_COST, 1], [NEAR_COST, 0, 1], [1, 1, 0]])


def test_ordinal_is_a_distance_in_one_fixed_order_with_mean_error_cost_one():
    cost = cost_matrix_preset("ordinal", UPOS)
    np.testing.assert_array_equal(cost, cost_matrix_preset("ordinal", UPOS))
    np.testing.assert_allclose(cost, cost.T)
    assert cost[~np.eye(17, dtype=bool)].mean() == pytest.approx(1.0)
    # Triangle equality along the order: the adjacent tags' costs add up.
    order = np.argsort(cost[np.argmax(cost.sum(axis=1))])  # from one end of the line
    steps = [cost[order[n], order[n + 1]] for n in range(16)]
    np.testing.assert_allclose(steps, steps[0])
    assert cost[order[0], order[-1]] == pytest.approx(16 * steps[0])


def test_unknown_preset_names_the_choices():
    with pytest.raises(ValueError, match="zero-one, near-classes, ordinal"):
        cost_matrix_preset("hamming", UPOS)


@pytest.mark.parametrize(
    ("edit", "cell", "message"),
    [
        (lambda c: c.__setitem__((1, 2), -0.5), (1, 2), r"true B, predicted C\) is negative"),
        (lambda c: c.__setitem__((2, 2), 1.0), (2, 2), r"true C, predicted C\) must be 0"),
        (lambda c: c.__setitem__((0, 1), np.nan), (0, 1), "is not a finite number"),
        (lambda c: c.__setitem__((2, 0), np.inf), (2, 0), "is not a finite number: inf$"),
        (lambda c: c.__setitem__((1, 0), -1.0), (1, 0), r"predicted A\) is negative: -1$"),
        (lambda c: c.__setitem__((0, 2), 1e308), (0, 2), r"is more than 1,000,000.*: 1e\+308$"),
    ],
)
def test_validation_names_the_bad_cell(edit, cell, message):
    cost = 1.0 - np.eye(3)
    edit(cost)
    with pytest.raises(CostMatrixError, match=message) as caught:
        check_cost_matrix(cost, "ABC")
    assert caught.value.cell == cell


@pytest.mark.parametrize("bad", [np.ones((3, 2)), np.ones(9), [["a", 1], [1, 0]], [[0, 1], [1]]])
def test_validation_refuses_a_wrong_shape_or_non_numbers(bad):
    with pytest.raises(CostMatrixError, match="must be 3 × 3|must be 2 × 2"):
        check_cost_matrix(bad, "AB" if len(bad) == 2 else "ABC")


def test_cost_report_adds_up():
    rng = np.random.default_rng(5)
    k = 4
    gold = rng.integers(0, k, 300)
    probs = random_probs(rng, 300, k)
    cost = random_cost(rng, k)
    predicted = bayes_decision(probs, cost)
    report = cost_report(gold, predicted, cost, "ABCD", probs)
    assert report["cost_per_token"] == pytest.approx(realised_cost(gold, predicted, cost))
    assert np.sum(report["cost_confusion"]) == pytest.approx(report["cost_per_token"])
    assert sum(report["cost_share"].values()) == pytest.approx(1.0)
    believed = expected_cost(probs, cost)[np.arange(300), predicted].mean()
    assert report["expected_cost_per_token"] == pytest.approx(believed)


def test_csv_round_trip_in_any_order():
    cost = cost_matrix_preset("ordinal", UPOS)
    text = write_cost_csv(cost, UPOS)
    np.testing.assert_allclose(read_cost_csv(text, UPOS), cost, rtol=1e-5)
    lines = text.strip().split("\n")
    shuffled = "\n".join([lines[0], *reversed(lines[1:])])
    np.testing.assert_allclose(read_cost_csv(shuffled, UPOS), cost, rtol=1e-5)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("x,A,B\nA,0,1\nC,1,0\n", r"unknown tag 'C' in the CSV's row names"),
        ("x,A,Q\nA,0,1\nB,1,0\n", r"unknown tag 'Q' in the CSV's column names"),
        ("x,A,B\nA,0,1\n", "row names must list every tag once: B"),
        ("x,A,B\nA,0,one\nB,1,0\n", r"cell \(true A, predicted B\) is not a number: 'one'"),
        ("x,A,B\nA,0,1\nB,-1,0\n", r"cell \(true B, predicted A\) is negative"),
        ("x,A,B\nA,2,1\nB,1,0\n", r"cell \(true A, predicted A\) must be 0"),
        ("x,A,B\nA,0\nB,1,0\n", "line 2 .A. has 1 costs, not 2"),
        ("", "empty"),
    ],
)
def test_csv_errors_say_what_is_wrong(text, message):
    with pytest.raises(CostMatrixError, match=message):
        read_cost_csv(text, ["A", "B"])


def test_a_name_is_a_preset_or_a_csv_file(tmp_path):
    path = tmp_path / "mine.csv"
    path.write_text("t,A,B\nA,0,3\nB,1,0\n")
    np.testing.assert_array_equal(cost_matrix_named(str(path), "AB"), [[0, 3], [1, 0]])
    np.testing.assert_array_equal(cost_matrix_named("zero-one", "AB"), [[0, 1], [1, 0]])
    with pytest.raises(ValueError, match="neither a preset"):
        cost_matrix_named(str(tmp_path / "missing.csv"), "AB")


def test_the_bound_and_a_matrix_of_zeros():
    """Issue 44.3 and 44.5: cells near 1e308 were taken (every report then overflowed), and a
    matrix of zeros made every decision the first tag."""
    at_bound = MAX_COST * (1 - np.eye(3))
    np.testing.assert_array_equal(check_cost_matrix(at_bound, "ABC"), at_bound)
    with pytest.raises(CostMatrixError, match="^every cost is 0"):
        check_cost_matrix(np.zeros((3, 3)), "ABC")
    check_cost_matrix(np.zeros((1, 1)), "A")  # one tag: nothing to decide
    assert number_text(np.float64(-1.0)) == "-1" and number_text(np.float64(1e308)) == "1e+308"
    assert number_text("x") == "'x'"


@pytest.mark.parametrize("cell", [1e308, np.finfo(np.float64).max, 1e6])
def test_cost_report_of_extreme_cells_is_finite(cell):
    """Issue 44.3: `cost_report` multiplied counts by costs before dividing: inf, then NaN."""
    rng = np.random.default_rng(11)
    k, n = 4, 5000
    gold, probs = rng.integers(0, k, n), random_probs(rng, n, k)
    cost = cell * (1 - np.eye(k))
    predicted = rng.integers(0, k, n)
    with np.errstate(over="raise", invalid="raise"):
        report = cost_report(gold, predicted, cost, "ABCD", probs)
        assert realised_cost(gold, predicted, cost) == pytest.approx(report["cost_per_token"])
    error_rate = np.mean(gold != predicted)
    assert report["cost_per_token"] == pytest.approx(cell * error_rate)
    assert np.isfinite(report["cost_confusion"]).all()
    assert sum(report["cost_share"].values()) == pytest.approx(1.0)
    believed = (1 - probs[np.arange(n), predicted]).mean()
    assert report["expected_cost_per_token"] == pytest.approx(cell * believed)


def test_one_value_type_keyed_by_tag_names():
    """The one reorder-and-check: a table in any order of rows and columns, put over a tag set;
    `over` another order of the same tags; never over other tags."""
    mine = np.array([[0, 1, 2], [3, 0, 4], [5, 6, 0]], dtype=float)  # rows/cols A, B, C
    costs = TagCosts("ABC", mine)
    assert costs.tags == ("A", "B", "C") and not costs.matrix.flags.writeable
    order = ["C", "A", "B"]
    np.testing.assert_array_equal(costs.over(order), mine[np.ix_([2, 0, 1], [2, 0, 1])])
    assert costs.over("ABC") is costs.matrix
    rows, columns = ["B", "C", "A"], ["C", "A", "B"]
    table = [[mine["ABC".index(r), "ABC".index(c)] for c in columns] for r in rows]
    np.testing.assert_array_equal(
        TagCosts.table(table, rows=rows, columns=columns, tagset="ABC").matrix, mine
    )
    with pytest.raises(CostMatrixError, match="not A, B, D") as caught:
        costs.over("ABD")
    assert caught.value.names and not costs.applies_to("ABD") and costs.applies_to("CBA")
    for bad, message in [
        (dict(rows=["A", "B", "D"]), r"unknown tag 'D' in the matrix's tags \(the project's"),
        (dict(rows=["A", "B", "B"]), "must list every tag once: C"),
        (dict(rows=["A", "B"]), "must list every tag once: C"),
        (dict(rows="ABC"), "must be a list of tag names"),
    ]:
        with pytest.raises(CostMatrixError, match=message) as caught:
            TagCosts.table(mine.tolist(), tagset="ABC", **bad)
        assert caught.value.names
    with pytest.raises(CostMatrixError, match=r"\(true A, predicted B\) is not a number: True"):
        TagCosts.table([[0, True, 1], [1, 0, 1], [1, 1, 0]], rows=list("ABC"), tagset="ABC")
    with pytest.raises(CostMatrixError, match=r"more than 1,000,000.*a number of 401 digits"):
        TagCosts.table([[0, 10**400, 1], [1, 0, 1], [1, 1, 0]], rows=list("ABC"), tagset="ABC")
    with pytest.raises(CostMatrixError, match="names a tag twice: A"):
        TagCosts("AAB", mine)


def test_a_csv_cell_past_the_field_limit_is_a_cost_matrix_error():
    """Issue 44.5: `_csv.Error: field larger than field limit` was a 500."""
    text = "t,A,B\nA,0," + "1" * 200_000 + "\nB,1,0\n"
    with pytest.raises(CostMatrixError, match="line 2 of the CSV file has a cell longer than"):
        read_cost_csv(text, "AB")


def test_csv_names_escaped_for_spreadsheets_read_back():
    tags = ["=A", "+B", "C;@D", "'=E"]
    cost = cost_matrix_preset("ordinal", tags)
    text = write_cost_csv(cost, tags)
    assert text.splitlines()[0] == "true \\ predicted,'=A,'+B,C;'@D,'=E"
    np.testing.assert_allclose(read_cost_table(text, tags).matrix, cost, rtol=1e-5)
