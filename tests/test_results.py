from decimal import Decimal

from hypothesis import given, strategies as st

from verifiedsql.results import ResultSet, results_equivalent


def rs(columns, rows):
    return ResultSet(tuple(columns), tuple(tuple(r) for r in rows))


def test_equal_as_multisets_regardless_of_row_order():
    assert results_equivalent(rs("ab", [(1, "x"), (2, "y")]), rs("ab", [(2, "y"), (1, "x")]))


def test_duplicates_matter():
    assert not results_equivalent(rs("a", [(1,), (1,)]), rs("a", [(1,)]))


def test_column_permutation_is_allowed():
    assert results_equivalent(rs("ab", [(1, "x"), (2, "y")]), rs("ba", [("y", 2), ("x", 1)]))


def test_permutation_must_keep_rows_together():
    a = rs("ab", [(1, 1), (2, 2)])
    b = rs("ab", [(1, 2), (2, 1)])
    assert not results_equivalent(a, b)


def test_order_matters_only_when_ordered():
    a, b = rs("a", [(1,), (2,)]), rs("a", [(2,), (1,)])
    assert results_equivalent(a, b)
    assert not results_equivalent(a, b, ordered=True)


def test_numbers_compare_by_value_across_types():
    assert results_equivalent(rs("a", [(1,)]), rs("a", [(Decimal("1.00"),)]))
    assert results_equivalent(rs("a", [(0.1 + 0.2,)]), rs("a", [(0.3,)]))


def test_different_widths_are_different():
    assert not results_equivalent(rs("a", [(1,)]), rs("ab", [(1, 1)]))


cells = st.one_of(st.none(), st.integers(-5, 5), st.sampled_from(["a", "b", "None"]))


@given(st.lists(st.tuples(cells, cells), max_size=12), st.randoms())
def test_shuffled_rows_and_swapped_columns_stay_equivalent(rows, rnd):
    shuffled = list(rows)
    rnd.shuffle(shuffled)
    swapped = [(b, a) for a, b in shuffled]
    assert results_equivalent(rs("ab", rows), rs("ba", swapped))
