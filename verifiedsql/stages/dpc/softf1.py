"""Bipartite soft-F1 (BS-F1): a graded agreement score between two result sets (DPC, Algorithm 1).

Where ``results.equivalent`` says yes or no, BS-F1 says how much two results agree, in [0, 1]:

1. **Normalise** every cell (DPC Table 1): numbers and Decimals become floats rounded to 4 places
   (integers stay exact integers, which compare equal to the same float); datetimes and dates become
   ISO text; None, NaN and NaT become NULL; strings are stripped. Unlike DPC, no string is ever
   NULL: a real ``"None"`` (or ``"null"``) stays a string.
2. **Match rows**: the similarity of two rows is the share of their cells that agree, column by
   column, ``m = 2k / (width_a + width_b)`` with k the number of agreeing positions. Identical rows
   are paired first by hashing (multiset intersection); only the rows left over go to the Hungarian
   algorithm (``scipy.optimize.linear_sum_assignment``), which maximises the total similarity.
   Pairing identical rows first never loses score: ``1 - m`` is a normalised Hamming distance, so
   an exchange argument turns any optimal matching into one that pairs them.
3. **Aggregate**: the matched similarity mass ``TP = sum(m)`` over the pairs; unmatched rows count
   in full against it, so precision ``TP / N``, recall ``TP / M`` and the score is their harmonic
   mean, ``2 TP / (N + M)``. Both empty: 1.0; one empty: 0.0.

Columns are compared by position, and when both results have the same width also under the column
pairing that best matches the columns' value multisets (and its mirror image taken from the other
side, so the score stays symmetric); the best score wins. Beyond ``MAX_DENSE`` similarity-matrix
entries the leftover rows are first paired when they differ in one cell only (by hashing the other
cells), and what is still left is matched block by block (both sides sorted by value): a lower
bound of the optimum instead of the optimum itself, and only there may a and b's order matter.
"""

from __future__ import annotations

import datetime as dt
import math
import numbers
from collections import Counter
from decimal import Decimal
from typing import Any, Hashable, Sequence

import numpy as np
from scipy.optimize import linear_sum_assignment

from verifiedsql.results import ResultSet, normalize_value

FLOAT_DIGITS = 4
MAX_DENSE = 4_000_000  # most similarity-matrix entries for one Hungarian run (a 2,000 x 2,000 residual)
BLOCK_ROWS = 1_000  # rows per block when the residual is too large for one Hungarian run
_MISSING_TYPES = frozenset({"NAType", "NaTType"})  # pandas' NA and NaT, without importing pandas


def normalize_cell(value: Any) -> Hashable:
    """DPC Table 1: the canonical form of one cell (None stands for NULL)."""
    if value is None or type(value).__name__ in _MISSING_TYPES:
        return None
    if isinstance(value, str):
        return value.strip()  # "None" and "null" stay strings
    if isinstance(value, (bool, np.bool_)):
        return float(value)
    if isinstance(value, numbers.Integral):  # numpy integers too
        return int(value)
    if isinstance(value, Decimal):
        if value.is_nan():
            return None
        value = float(value)
    if isinstance(value, numbers.Real):  # floats, numpy floats
        number = float(value)
        if math.isnan(number):
            return None
        if math.isinf(number):
            return number
        return round(number, FLOAT_DIGITS) + 0.0  # + 0.0: -0.0 becomes 0.0
    if isinstance(value, dt.datetime):
        if value.tzinfo is None and value.time() == dt.time():
            return value.date().isoformat()  # a midnight timestamp matches the DATE it came from
        return value.isoformat(sep=" ")  # the text form SQL engines give a timestamp
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    try:
        if bool(value != value):  # other NaN-like objects (numpy's NaT)
            return None
    except (TypeError, ValueError):
        pass
    return normalize_value(value)  # bytes as hex, anything else as its text


def _encode(a: ResultSet, b: ResultSet) -> tuple[np.ndarray, np.ndarray, list[Hashable]]:
    """Both results as integer codes, one per normalised cell value (equal values, equal codes)."""
    codes: dict[Hashable, int] = {}

    def table(result: ResultSet) -> np.ndarray:
        width = result.width
        if result.rows and set(map(len, result.rows)) != {width}:
            raise ValueError(f"a row of a {width}-column result holds another number of cells")
        out = np.empty((len(result.rows), width), dtype=np.int64)
        for j, column in enumerate(zip(*result.rows)):
            out[:, j] = [codes.setdefault(v, len(codes)) for v in map(normalize_cell, column)]
        return out

    ta, tb = table(a), table(b)
    return ta, tb, list(codes)


def _row_keys(table: np.ndarray) -> list[bytes]:
    table = np.ascontiguousarray(table)
    return [table[i].tobytes() for i in range(table.shape[0])]


def _pair_identical(ta: np.ndarray, tb: np.ndarray) -> tuple[int, list[int], list[int]]:
    """Pair identical rows (multiset intersection): their count, and the indices of the rows left over."""
    keys_a, keys_b = _row_keys(ta), _row_keys(tb)
    count_a, count_b = Counter(keys_a), Counter(keys_b)
    if count_a == count_b:
        return len(keys_a), [], []
    common = count_a & count_b  # the first min(count_a, count_b) copies of each row are paired

    def left(keys: list[bytes]) -> list[int]:
        budget = Counter(common)
        rest = []
        for i, key in enumerate(keys):
            if budget[key] > 0:
                budget[key] -= 1
            else:
                rest.append(i)
        return rest

    return sum(common.values()), left(keys_a), left(keys_b)


def _agreement(ta: np.ndarray, tb: np.ndarray) -> np.ndarray:
    """k[i, j]: how many of the first min(width) positions rows ta[i] and tb[j] agree on."""
    width = min(ta.shape[1], tb.shape[1])
    k = np.zeros((ta.shape[0], tb.shape[0]), dtype=np.int32)
    for c in range(width):
        k += ta[:, c, None] == tb[None, :, c]
    return k


def _best_agreement(ta: np.ndarray, tb: np.ndarray) -> int:
    """Hungarian matching: the largest total number of agreeing cells over a one-to-one row pairing."""
    if ta.shape[0] == 0 or tb.shape[0] == 0:
        return 0
    k = _agreement(ta, tb)
    rows, cols = linear_sum_assignment(k, maximize=True)
    return int(k[rows, cols].sum())


def _sorted_rows(table: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """The rows in the order of their values (a value-based order, the same whichever side they are on)."""
    ranked = rank[table]
    return table[np.lexsort(ranked.T[::-1])] if table.shape[1] else table


def _blockwise_agreement(ta: np.ndarray, tb: np.ndarray, values: list[Hashable]) -> int:
    """For residuals too large for one Hungarian run: sort both sides by value, match block by block."""
    order = sorted(range(len(values)), key=lambda c: (type(values[c]).__name__, repr(values[c])))
    rank = np.empty(len(values), dtype=np.int64)
    rank[order] = np.arange(len(values))
    sa, sb = _sorted_rows(ta, rank), _sorted_rows(tb, rank)
    n, m = sa.shape[0], sb.shape[0]
    blocks = max(1, math.ceil(max(n, m) / BLOCK_ROWS))
    total = 0
    for i in range(blocks):
        total += _best_agreement(sa[i * n // blocks : (i + 1) * n // blocks],
                                 sb[i * m // blocks : (i + 1) * m // blocks])
    return total


def _agreeing_cells(ta: np.ndarray, tb: np.ndarray, values: list[Hashable]) -> int:
    """The matched similarity mass, in cells: identical rows first, then the Hungarian step."""
    if ta.shape[1] == tb.shape[1]:
        paired, left_a, left_b = _pair_identical(ta, tb)
        exact = paired * ta.shape[1]
        ta, tb = ta[left_a], tb[left_b]
    else:
        exact = 0
    if ta.shape[0] * tb.shape[0] <= MAX_DENSE:
        return exact + _best_agreement(ta, tb)
    if ta.shape[1] == tb.shape[1] and ta.shape[1] > 1:  # too large: first pair rows that differ in one cell
        for c in range(ta.shape[1]):
            keep = [i for i in range(ta.shape[1]) if i != c]
            paired, left_a, left_b = _pair_identical(ta[:, keep], tb[:, keep])
            exact += paired * len(keep)
            ta, tb = ta[left_a], tb[left_b]
        if ta.shape[0] * tb.shape[0] <= MAX_DENSE:
            return exact + _best_agreement(ta, tb)
    return exact + _blockwise_agreement(ta, tb, values)


def _column_overlap(ta: np.ndarray, tb: np.ndarray) -> np.ndarray:
    """s[i, j]: the size of the multiset intersection of column i of ta and column j of tb."""
    bags_a = [np.unique(ta[:, i], return_counts=True) for i in range(ta.shape[1])]
    bags_b = [np.unique(tb[:, j], return_counts=True) for j in range(tb.shape[1])]
    s = np.zeros((ta.shape[1], tb.shape[1]), dtype=np.int64)
    for i, (va, ca) in enumerate(bags_a):
        for j, (vb, cb) in enumerate(bags_b):
            _, ia, ib = np.intersect1d(va, vb, assume_unique=True, return_indices=True)
            s[i, j] = np.minimum(ca[ia], cb[ib]).sum()
    return s


def _column_pairings(ta: np.ndarray, tb: np.ndarray) -> list[np.ndarray]:
    """Orders of tb's columns to try: by position, and the pairing that best matches value bags.

    The bag pairing is found from both sides (a's columns against b's and b's against a's), so the
    set of pairings tried, and with it the score, does not depend on the argument order. Ties
    prefer columns at the same position.
    """
    width = ta.shape[1]
    identity = np.arange(width)
    if width < 2:
        return [identity]
    s = _column_overlap(ta, tb).astype(np.float64)
    bonus = np.eye(width) * 0.5  # overlaps are integers: this only breaks ties, in favour of position
    _, forward = linear_sum_assignment(s + bonus, maximize=True)
    _, backward = linear_sum_assignment(s.T + bonus, maximize=True)
    mirrored = np.argsort(backward)  # b's column j goes with a's column backward[j]
    pairings = [identity]
    for order in (forward, mirrored):
        if not any(np.array_equal(order, p) for p in pairings):
            pairings.append(order)
    return pairings


def bipartite_soft_f1(a: ResultSet, b: ResultSet) -> float:
    """BS-F1 of two results, in [0, 1]: 1.0 for the same multiset of rows, row order never matters."""
    n, m = a.row_count, b.row_count
    if n == 0 and m == 0:
        return 1.0
    if n == 0 or m == 0:
        return 0.0
    ta, tb, values = _encode(a, b)
    wa, wb = ta.shape[1], tb.shape[1]
    if wa + wb == 0:  # rows with no cells: every pair of rows agrees fully
        return 2 * min(n, m) / (n + m)
    best = 0
    for order in _column_pairings(ta, tb) if wa == wb else [np.arange(wb)]:
        best = max(best, _agreeing_cells(ta, tb[:, order], values))
        if best == min(n, m) * min(wa, wb):
            break  # every row of the smaller side matched in full: nothing can beat it
    # m_ij = 2 k_ij / (wa + wb) per matched pair; precision TP / n, recall TP / m; F1 = 2 TP / (n + m)
    score = 4 * best / ((wa + wb) * (n + m))
    return min(1.0, max(0.0, score))


def soft_f1_rows(a: Sequence[Sequence[Any]], b: Sequence[Sequence[Any]]) -> float:
    """BS-F1 of two bare lists of rows (columns named by position)."""
    width_a = len(a[0]) if a else 0
    width_b = len(b[0]) if b else 0
    return bipartite_soft_f1(ResultSet(tuple(f"c{i}" for i in range(width_a)), tuple(map(tuple, a))),
                             ResultSet(tuple(f"c{i}" for i in range(width_b)), tuple(map(tuple, b))))
