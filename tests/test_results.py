from decimal import Decimal

from hypothesis import given
from hypothesis import strategies as st

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


# ---------------------------------------------------------------- fast paths (ints, floats, chunks, wide)

import math  # noqa: E402
from collections import Counter  # noqa: E402
from itertools import permutations  # noqa: E402

from verifiedsql.results import Fingerprint, equivalent, normalize_rows  # noqa: E402


def reference(a, b, ordered=False):
    """The definition, by brute force: normalised rows equal as multisets under some column order."""
    if len(a.columns) != len(b.columns) or len(a.rows) != len(b.rows):
        return False
    na, nb = normalize_rows(a.rows), normalize_rows(b.rows)
    for order in permutations(range(len(a.columns))):
        permuted = [tuple(row[j] for j in order) for row in nb]
        if (na == permuted) if ordered else (Counter(na) == Counter(permuted)):
            return True
    return False


def test_ints_floats_decimals_and_bools_compare_by_value():
    a = rs("a", [(1,), (True,), (0,), (2**53 + 1,), (10**20,), (-0.0,)])
    b = rs("a", [(1.0,), (Decimal("1.000"),), (False,), (float(2**53),), (1e20,), (0,)])
    assert results_equivalent(a, b)
    assert results_equivalent(rs("a", [(1,)]), rs("a", [(1.0000004,)]))  # equal to 6 digits
    assert not results_equivalent(rs("a", [(1,)]), rs("a", [(1.000001,)]))
    assert not results_equivalent(rs("a", [(1,)]), rs("a", [("1",)]))
    a, b = rs("a", [(0.1 + 0.2,), (123456.1234565,)]), rs("a", [(0.3,), (123456.123457,)])
    assert results_equivalent(a, b) == reference(a, b)


def test_nan_is_none_and_infinities_are_kept():
    assert results_equivalent(rs("ab", [(math.nan, "x")]), rs("ab", [(None, "x")]))
    assert results_equivalent(rs("a", [(math.inf,), (-math.inf,)]), rs("a", [(-math.inf,), (math.inf,)]))
    assert not results_equivalent(rs("a", [(math.inf,)]), rs("a", [(None,)]))
    assert not results_equivalent(rs("a", [(None,)]), rs("a", [("None",)]))


def test_cells_of_other_types():
    import datetime as dt

    a = rs("abc", [(dt.date(2024, 1, 2), b"\x01", [1, 2])])
    b = rs("cab", [("[1, 2]", "2024-01-02", "01")])
    assert results_equivalent(a, b)


def test_columns_that_change_type_across_many_rows():
    """Over 512 rows a column is handled a chunk at a time; types may differ from chunk to chunk."""
    rows = [(i if i < 700 else f"s{i}", i * 0.25, None if i % 3 else i) for i in range(1500)]
    other = [(c, a, float(b) if b is not None else None) for a, b, c in reversed(rows)]
    assert results_equivalent(rs("abc", rows), rs("bca", other))
    other[1000] = (other[1000][0], "s1", other[1000][2])
    assert not results_equivalent(rs("abc", rows), rs("bca", other))
    assert not results_equivalent(rs("abc", rows), rs("abc", rows[::-1]), ordered=True)
    assert results_equivalent(rs("abc", rows), rs("cab", [(c, a, b) for a, b, c in rows]), ordered=True)


def test_wide_tables_with_many_equal_columns():
    rows = [tuple([i % 3] * 12) for i in range(50)]
    assert results_equivalent(rs("abcdefghijkl", rows), rs("abcdefghijkl", rows[::-1]))
    # every column holds the same values, so only the rows tell the column orders apart
    base = [(1, 2, 3, 4), (2, 3, 4, 1), (3, 4, 1, 2), (4, 1, 2, 3)]
    for order in [(3, 1, 0, 2), (1, 0, 3, 2)]:
        moved = [tuple(r[j] for j in order) for r in base]
        assert results_equivalent(rs("abcd", base), rs("abcd", moved[::-1]))
    not_a_permutation = [(1, 2, 3, 4), (2, 3, 4, 1), (3, 4, 2, 1), (4, 1, 1, 2)]
    assert not results_equivalent(rs("abcd", base), rs("abcd", not_a_permutation))


def test_fingerprint_rows_and_key():
    fingerprint = Fingerprint.of(rs("ab", [(1, "x"), (2.5, None)]))
    assert fingerprint.rows == ((1.0, "x"), (2.5, None)) and fingerprint.width == 2
    assert fingerprint.key == Fingerprint.of(rs("ba", [(None, 2.5), ("x", 1.0)])).key
    empty = Fingerprint.of(rs("ab", []))
    assert equivalent(empty, Fingerprint.of(rs("ba", []))) and empty.rows == ()


mixed_cells = st.one_of(
    st.none(), st.integers(-3, 3), st.booleans(), st.sampled_from([0.5, -0.0, 1.0000001, 2.0, math.nan, 0.1 + 0.2]),
    st.sampled_from([Decimal("0.3"), Decimal("2")]), st.sampled_from(["a", "1", "0.5", "None"]),
)


@given(st.integers(1, 3).flatmap(lambda w: st.tuples(
    st.lists(st.tuples(*[mixed_cells] * w), max_size=8), st.lists(st.tuples(*[mixed_cells] * w), max_size=8))),
    st.randoms(), st.booleans())
def test_agrees_with_the_definition(pair, rnd, ordered):
    rows, noise = pair
    width = len(rows[0]) if rows else 1
    order = list(range(width))
    rnd.shuffle(order)
    moved = [tuple(r[j] for j in order) for r in rows]
    if not ordered:
        rnd.shuffle(moved)
    a = rs([f"c{i}" for i in range(width)], rows)
    for b_rows in (moved, moved[:-1] + noise[:1], noise):
        if b_rows and len(b_rows[0]) != width:
            continue
        b = rs([f"c{i}" for i in range(width)], b_rows)
        assert results_equivalent(a, b, ordered=ordered) == reference(a, b, ordered)
