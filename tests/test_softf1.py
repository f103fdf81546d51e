import datetime as dt
import itertools
import math
import random
from decimal import Decimal

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linear_sum_assignment

from verifiedsql.results import ResultSet
from verifiedsql.stages.dpc import softf1
from verifiedsql.stages.dpc.softf1 import bipartite_soft_f1, normalize_cell, soft_f1_rows


def rs(rows, width=None):
    rows = [tuple(r) for r in rows]
    width = len(rows[0]) if rows else (width or 0)
    return ResultSet(tuple(f"c{i}" for i in range(width)), tuple(rows))


# --- normalisation (DPC Table 1, with "None" kept as a string) ---------------------------------------

def test_floats_round_to_four_places():
    assert normalize_cell(0.1 + 0.2) == 0.3
    assert normalize_cell(1.23456) == 1.2346
    assert normalize_cell(1.23454) == 1.2345
    assert normalize_cell(-0.00001) == 0.0 and math.copysign(1, normalize_cell(-0.00001)) == 1
    assert soft_f1_rows([(1.00001,)], [(1.0,)]) == 1.0
    assert soft_f1_rows([(1.001,)], [(1.0,)]) == 0.0


def test_decimal_becomes_float_and_ints_match_floats():
    assert normalize_cell(Decimal("2.50")) == 2.5 and isinstance(normalize_cell(Decimal("2.50")), float)
    assert soft_f1_rows([(Decimal("3.00"), 7)], [(3, 7.0)]) == 1.0
    assert normalize_cell(np.int64(4)) == 4 and normalize_cell(np.float32(0.5)) == 0.5
    assert normalize_cell(True) == 1.0


def test_datetimes_become_iso_text():
    assert normalize_cell(dt.date(2024, 1, 5)) == "2024-01-05"
    assert normalize_cell(dt.datetime(2024, 1, 5)) == "2024-01-05"  # a midnight timestamp is its date
    assert normalize_cell(dt.datetime(2024, 1, 5, 10, 30)) == "2024-01-05 10:30:00"
    assert soft_f1_rows([(dt.date(2024, 1, 5),)], [("2024-01-05",)]) == 1.0
    assert soft_f1_rows([(dt.datetime(2024, 1, 5, 10, 30),)], [("2024-01-05 10:30:00",)]) == 1.0


def test_none_and_nan_are_null_but_the_string_none_is_not():
    assert normalize_cell(None) is None
    assert normalize_cell(float("nan")) is None
    assert normalize_cell(np.float64("nan")) is None
    assert normalize_cell(Decimal("NaN")) is None
    assert normalize_cell(np.datetime64("NaT")) is None
    assert normalize_cell("None") == "None"
    assert normalize_cell(" null ") == "null"
    assert soft_f1_rows([(None, 1)], [(float("nan"), 1)]) == 1.0
    assert soft_f1_rows([(None, 1)], [("None", 1)]) == 0.5


def test_strings_are_stripped_but_keep_case():
    assert normalize_cell("  abc \n") == "abc"
    assert soft_f1_rows([(" x",)], [("x ",)]) == 1.0
    assert soft_f1_rows([("X",)], [("x",)]) == 0.0
    assert soft_f1_rows([("1",)], [(1,)]) == 0.0  # text is not a number


def test_bytes_go_through_the_equivalence_conventions():
    assert normalize_cell(b"\x01\xff") == "01ff"


# --- scoring -----------------------------------------------------------------------------------------

def test_worked_example():
    # 3 SQL rows against 2 Python rows, width 2: (1,a)~(1,a) fully, (2,b)~(2,c) half, (3,d) unmatched.
    # TP = 1 + 0.5; precision 1.5 / 3, recall 1.5 / 2, F1 = 2 * 1.5 / 5 = 0.6.
    assert soft_f1_rows([(1, "a"), (2, "b"), (3, "d")], [(2, "c"), (1, "a")]) == pytest.approx(0.6)


def test_empty_sides():
    assert bipartite_soft_f1(rs([], 2), rs([], 3)) == 1.0
    assert bipartite_soft_f1(rs([(1,)]), rs([], 1)) == 0.0
    assert bipartite_soft_f1(rs([], 1), rs([(1,)])) == 0.0


def test_duplicates_count():
    assert soft_f1_rows([(1,), (1,)], [(1,)]) == pytest.approx(2 / 3)
    assert soft_f1_rows([(1,), (1,), (2,)], [(1,), (2,), (2,)]) == pytest.approx(2 / 3)
    assert soft_f1_rows([(1, 2)] * 3, [(1, 2)] * 3) == 1.0


def test_column_permutation_when_widths_match():
    a = [(1, "x", 2.5), (2, "y", 3.5)]
    b = [("y", 3.5, 2), ("x", 2.5, 1)]
    assert soft_f1_rows(a, b) == 1.0
    # rows must stay together: the best pairing of columns is by position here
    assert soft_f1_rows([(1, 1), (2, 2)], [(1, 2), (2, 1)]) == pytest.approx(0.5)


def test_different_widths_compare_by_position():
    # first two columns agree: m = 2 * 2 / (3 + 2) per row
    assert soft_f1_rows([(1, "a", 9), (2, "b", 8)], [(2, "b"), (1, "a")]) == pytest.approx(0.8)
    assert soft_f1_rows([("a", 1)], [(1, "a", 0)]) == 0.0


def test_zero_width_rows():
    assert bipartite_soft_f1(rs([(), ()], 0), rs([(), ()], 0)) == 1.0
    assert bipartite_soft_f1(rs([(), ()], 0), rs([()], 0)) == pytest.approx(2 / 3)


def test_ragged_rows_are_rejected():
    with pytest.raises(ValueError):
        bipartite_soft_f1(ResultSet(("a", "b"), ((1, 2), (1,))), rs([(1, 2)]))


def test_perturbed_cell_lowers_the_score():
    rows = [(i, f"n{i}", i * 0.5) for i in range(20)]
    changed = list(rows)
    changed[7] = (7, "n7", 99.0)
    score = soft_f1_rows(rows, changed)
    assert score == pytest.approx(1 - 1 / (3 * 20))


def test_large_identical_results_pair_rows_by_hashing(monkeypatch):
    """Identical rows never reach the Hungarian step: it only sees the 5 x 5 column pairing and the one
    changed row, never a 10,000-row matrix."""
    sizes: list[int] = []

    def spy(matrix, maximize=False):
        sizes.append(matrix.size)
        return linear_sum_assignment(matrix, maximize=maximize)

    monkeypatch.setattr(softf1, "linear_sum_assignment", spy)
    rows = [(i, f"name {i % 97}", i * 0.5, i % 7, f"2024-01-{i % 28 + 1:02d}") for i in range(10_000)]
    other = list(rows)
    random.Random(3).shuffle(other)
    a, b = rs(rows), rs(other)
    assert bipartite_soft_f1(a, b) == 1.0
    other[123] = (other[123][0], "changed", *other[123][2:])
    assert bipartite_soft_f1(a, rs(other)) == pytest.approx(1 - 1 / (5 * 10_000))
    assert sizes and max(sizes) <= 5 * 5, sizes


def test_large_residual_pairs_rows_differing_in_one_cell():
    rows = [(i, i % 13, f"s{i % 31}") for i in range(2_500)]
    other = [(i + 10_000, m, s) for i, m, s in rows]  # every row differs in its first cell
    assert soft_f1_rows(rows, other) == pytest.approx(2 / 3)


# --- properties --------------------------------------------------------------------------------------

cells = st.one_of(st.none(), st.integers(-3, 3), st.sampled_from(["a", "b", " a", "None"]),
                  st.sampled_from([0.5, 1.0, float("nan")]))
tables = st.integers(1, 3).flatmap(lambda w: st.tuples(
    st.lists(st.tuples(*[cells] * w), max_size=6), st.lists(st.tuples(*[cells] * w), max_size=6)))


@settings(max_examples=60, deadline=None)
@given(tables, st.randoms())
def test_row_order_never_matters(pair, rng):
    a, b = pair
    shuffled = list(b)
    rng.shuffle(shuffled)
    assert bipartite_soft_f1(rs(a), rs(b)) == bipartite_soft_f1(rs(a), rs(shuffled))


@settings(max_examples=60, deadline=None)
@given(tables, st.randoms())
def test_symmetric_and_bounded(pair, rng):
    a, b = pair
    score = bipartite_soft_f1(rs(a), rs(b))
    assert 0.0 <= score <= 1.0
    assert score == bipartite_soft_f1(rs(b), rs(a))


@settings(max_examples=60, deadline=None)
@given(tables, st.randoms())
def test_identical_multisets_score_one(pair, rng):
    a, _ = pair
    shuffled = list(a)
    rng.shuffle(shuffled)
    assert bipartite_soft_f1(rs(a), rs(shuffled)) == 1.0


@settings(max_examples=40, deadline=None)
@given(tables)
def test_one_empty_side_scores_zero(pair):
    a, _ = pair
    if a:
        assert bipartite_soft_f1(rs(a), rs([], len(a[0]))) == 0.0
        assert bipartite_soft_f1(rs([], len(a[0])), rs(a)) == 0.0


@settings(max_examples=60, deadline=None)
@given(tables, st.data())
def test_perturbed_cell_lowers_but_keeps_positive(pair, data):
    a, _ = pair
    if not a or len(a) * len(a[0]) < 2:
        return
    i = data.draw(st.integers(0, len(a) - 1))
    j = data.draw(st.integers(0, len(a[0]) - 1))
    changed = [list(r) for r in a]
    changed[i][j] = "a value no cell holds"
    score = bipartite_soft_f1(rs(a), rs(changed))
    assert 0.0 < score < 1.0


def _brute_force(a, b, orders):
    """The best total of agreeing cells over every row matching and the given column orders."""
    def norm(rows):
        return [tuple(normalize_cell(v) for v in r) for r in rows]

    na, nb = norm(a), norm(b)
    best = 0
    for order in orders:
        pb = [tuple(r[k] for k in order) for r in nb]
        small, large = (na, pb) if len(na) <= len(pb) else (pb, na)
        for chosen in itertools.permutations(range(len(large)), len(small)):
            best = max(best, sum(sum(x == y for x, y in zip(small[i], large[k])) for i, k in enumerate(chosen)))
    width = len(a[0])
    return 2 * best / (width * (len(a) + len(b)))


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 3).flatmap(lambda w: st.tuples(
    st.lists(st.tuples(*[cells] * w), min_size=1, max_size=4),
    st.lists(st.tuples(*[cells] * w), min_size=1, max_size=4))))
def test_optimal_row_matching(pair):
    a, b = pair
    score = bipartite_soft_f1(rs(a), rs(b))
    width = len(a[0])
    by_position = _brute_force(a, b, [tuple(range(width))])
    best_any = _brute_force(a, b, list(itertools.permutations(range(width))))
    assert by_position - 1e-12 <= score <= best_any + 1e-12


def test_pandas_missing_values_and_timestamps():
    pd = pytest.importorskip("pandas")
    assert normalize_cell(pd.NA) is None and normalize_cell(pd.NaT) is None
    assert normalize_cell(pd.Timestamp("2024-01-05")) == "2024-01-05"
    frame = pd.DataFrame({"d": pd.to_datetime(["2024-01-05"]), "x": [1.5]})
    assert soft_f1_rows(list(frame.itertuples(index=False)), [(dt.date(2024, 1, 5), Decimal("1.50"))]) == 1.0
