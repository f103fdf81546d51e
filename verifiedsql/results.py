"""Result sets and the equivalence test used to cluster candidates and score accuracy.

Two results are equivalent when their rows are equal as multisets under some permutation of the
columns; when the outermost query orders its rows, row order must match too.
"""

from __future__ import annotations

import datetime as dt
import math
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal
from functools import cached_property
from operator import itemgetter
from typing import Any, Callable, Hashable, Iterable, Iterator, Sequence

import numpy as np

FLOAT_DIGITS = 6
MAX_PERMUTATIONS = 5_040  # beyond this many column orders, only the canonical one is tried


@dataclass(frozen=True)
class ResultSet:
    """Rows fetched by a read-only query; ``truncated`` is set when the row cap cut them short."""

    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    truncated: bool = False

    @property
    def row_count(self) -> int:
        return len(self.rows)

    @property
    def width(self) -> int:
        return len(self.columns)


def normalize_value(value: Any) -> Hashable:
    """A hashable, type-tolerant form of one cell: numbers compare by value, times by ISO text."""
    if value is None:
        return None
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float, Decimal)):
        number = float(value)
        if math.isnan(number):
            return None
        return round(number, FLOAT_DIGITS) + 0.0
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if isinstance(value, str):
        return value
    return str(value)


def normalize_rows(rows: Iterable[Sequence[Any]]) -> list[tuple[Hashable, ...]]:
    return [tuple(normalize_value(v) for v in row) for row in rows]


_NONE = type(None)
_STR_KINDS = frozenset({str, _NONE})
_NUMBER_KINDS = frozenset({bool, int, float, _NONE})
_NUMBER_TYPES = (bool, int, float)
_EXACT_INT = 2.0**53  # below this, every int is exactly a float
_EXACT_LIMIT = 2.0**32  # below this, a float that numpy's rounding leaves alone is left alone by round()
_SCALE = 10.0**FLOAT_DIGITS
_CHUNK_ROWS = 512
_NONE_HASH = np.array([hash(None)], dtype=np.int64).view(np.uint64)[0]
_NUMBER_SALT = np.uint64(0x6A09E667F3BCC908)


@dataclass
class _Column:
    """One column being normalised: its cells, and per cell a float value and a hash.

    ``is_number[i]``: cell i is a number (or None, as NaN) whose value is ``numbers[i]``;
    otherwise ``hashes[i]`` is its ``hash()``. ``raw[i]``: cell i is a number not normalised yet.
    ``numeric``: every cell is a number or None.
    """

    cells: list[Hashable]
    numbers: np.ndarray
    is_number: np.ndarray
    raw: np.ndarray
    hashes: np.ndarray
    numeric: bool = True

    @classmethod
    def empty(cls, count: int) -> _Column:
        return cls([], np.full(count, math.nan), np.zeros(count, dtype=bool), np.zeros(count, dtype=bool),
                   np.zeros(count, dtype=np.uint64))

    def add(self, cells: tuple[Any, ...], start: int) -> None:
        """Cells start..start+len(cells): typed and hashed (or read as floats) while still in the CPU cache."""
        stop = start + len(cells)
        kinds = set(map(type, cells))
        if kinds <= _STR_KINDS:
            self.hashes[start:stop] = np.fromiter(map(hash, cells), dtype=np.int64, count=len(cells)).view(np.uint64)
            self.numeric = self.numeric and str not in kinds
        elif kinds <= _NUMBER_KINDS:
            source = (math.nan if v is None else v for v in cells) if _NONE in kinds else cells
            self.numbers[start:stop] = np.fromiter(source, dtype=np.float64, count=len(cells))  # float(v), exactly
            self.is_number[start:stop] = True
            self.raw[start:stop] = True
        else:
            cells = tuple(map(normalize_value, cells))
            flags = [type(v) in _NUMBER_TYPES for v in cells]
            self.numbers[start:stop] = [float(v) if f else math.nan for v, f in zip(cells, flags)]
            self.is_number[start:stop] = flags
            self.hashes[start:stop] = np.array([0 if f else hash(v) for v, f in zip(cells, flags)],
                                                dtype=np.int64).view(np.uint64)
            self.numeric = self.numeric and all(f or v is None for v, f in zip(cells, flags))
        self.cells.extend(cells)

    def finish(self) -> tuple[list[Hashable], np.ndarray, np.ndarray | None]:
        """Normalise the number cells; return the cells, their mixed hashes and (if numeric) their floats.

        Number cells are kept as they are, with no new object, when they equal ``normalize_value``'s
        form under ``==`` and ``hash``: ints and bools below 2**53 (3 == 3.0 and True == 1 == 1.0
        compare and hash alike) and floats that rounding to FLOAT_DIGITS leaves unchanged (-0.0 too:
        it equals 0.0). Every other number cell goes through ``normalize_value`` itself.

        numpy finds the floats that ``round(x, FLOAT_DIGITS)`` leaves unchanged: integral ones, and
        those with ``|x| < 2**32`` and ``rint(x * 10**6) / 10**6 == x``. Such an x is the double
        nearest to a 6-decimal number d and lies within half an ulp (< 2.4e-7) of d, so Python's
        correctly rounded ``round`` maps x to d and back to x.
        """
        numbers, is_number, cells = self.numbers, self.is_number, self.cells
        with np.errstate(all="ignore"):
            magnitude = np.abs(numbers)
            kept = (magnitude < _EXACT_INT) & (
                (np.floor(numbers) == numbers)
                | ((magnitude < _EXACT_LIMIT) & (np.rint(numbers * _SCALE) / _SCALE == numbers))
            )  # NaN (None, or a NaN normalize_value turns into None) is never kept
            for i in np.flatnonzero(self.raw & ~kept).tolist():
                if cells[i] is not None:
                    value = cells[i] = normalize_value(cells[i])
                    numbers[i] = math.nan if value is None else value
            bits = (numbers + 0.0).view(np.uint64) ^ _NUMBER_SALT  # + 0.0 turns -0.0 into 0.0
            number_hashes = np.where(np.isnan(numbers), _NONE_HASH, bits)
        hashes = _mix(np.where(is_number, number_hashes, self.hashes))
        return cells, hashes, (numbers if self.numeric else None)


def _mix(hashes: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser over an array of uint64 (wrapping arithmetic)."""
    hashes = hashes ^ (hashes >> np.uint64(30))
    hashes *= np.uint64(0xBF58476D1CE4E5B9)
    hashes ^= hashes >> np.uint64(27)
    hashes *= np.uint64(0x94D049BB133111EB)
    hashes ^= hashes >> np.uint64(31)
    return hashes


def _row_hashes(cell_hashes: Sequence[np.ndarray], order: Iterable[int]) -> np.ndarray:
    """One hash per row of the columns taken in ``order`` (equal rows always get equal hashes)."""
    rows: np.ndarray | None = None
    for j in order:
        rows = cell_hashes[j].copy() if rows is None else rows * np.uint64(0x100000001B3) + cell_hashes[j]
    assert rows is not None
    return _mix(rows)


def _gatherer(indices: np.ndarray) -> Callable[[Sequence[Any]], tuple[Any, ...]]:
    """A function taking a column to the tuple of its cells at ``indices``."""
    positions = indices.tolist()
    if len(positions) == 1:
        return lambda column: (column[positions[0]],)
    return itemgetter(*positions)


@dataclass(frozen=True)
class Fingerprint:
    """A normalised result, with a key that equivalent results always share.

    The normalised cells are held by column, with a mixed 64-bit hash of each cell (equal cells
    always get equal hashes) and, for columns of numbers and None, their float64 values (None as
    NaN). ``signatures`` holds one order-independent hash of each column's multiset of values (the
    wrapped sum of its cell hashes) and ``key`` is (width, row count, sorted signatures). Equal
    multisets always get equal signatures; a collision only makes a pairing candidate, which
    ``equivalent`` then settles by comparing the cells themselves.
    """

    columns: tuple[list[Hashable], ...] = field(hash=False)
    row_count: int
    ordered: bool
    signatures: tuple[int, ...]
    key: tuple
    cell_hashes: tuple[np.ndarray, ...] = field(compare=False, repr=False)
    numbers: tuple[np.ndarray | None, ...] = field(compare=False, repr=False)

    @classmethod
    def of(cls, result: ResultSet, *, ordered: bool = False) -> Fingerprint:
        width, rows = result.width, result.rows
        if rows and set(map(len, rows)) != {width}:
            raise ValueError(f"a row of a {width}-column result holds another number of cells")
        building = [_Column.empty(len(rows)) for _ in range(width)]
        # A chunk of rows at a time: each cell is handled while still in the CPU cache, and zip(*chunk)
        # keeps few iterators alive (zip(*rows) would set off the cyclic garbage collector over and over).
        for start in range(0, len(rows) if width else 0, _CHUNK_ROWS):
            for column, cells in zip(building, zip(*rows[start : start + _CHUNK_ROWS])):
                column.add(cells, start)
        columns, cell_hashes, numbers = zip(*(c.finish() for c in building)) if width else ((), (), ())
        signatures = tuple(int(h.sum(dtype=np.uint64)) for h in cell_hashes)
        key = (width, len(rows), tuple(sorted(signatures)))
        return cls(tuple(columns), len(rows), ordered, signatures, key, tuple(cell_hashes), tuple(numbers))

    @property
    def width(self) -> int:
        return len(self.columns)

    @cached_property
    def rows(self) -> tuple[tuple[Hashable, ...], ...]:
        if not self.columns:
            return tuple(() for _ in range(self.row_count))
        return tuple(zip(*self.columns))

    @cached_property
    def _by_row_hash(self) -> tuple[np.ndarray, np.ndarray, Callable[[Sequence[Any]], tuple[Any, ...]]]:
        """Row order by row hash, the sorted row hashes, and a gatherer for that order.

        Computed once, and reused while this result is a cluster's representative.
        """
        hashes = _row_hashes(self.cell_hashes, range(self.width))
        order = np.argsort(hashes, kind="stable")
        return order, hashes[order], _gatherer(order)

    @cached_property
    def _gathered(self) -> dict[int, tuple[Hashable, ...]]:
        return {}

    def sorted_column(self, index: int) -> tuple[Hashable, ...]:
        """Column ``index`` with its rows in row-hash order (cached)."""
        if index not in self._gathered:
            self._gathered[index] = self._by_row_hash[2](self.columns[index])
        return self._gathered[index]


def _column_orders(a: Fingerprint, b: Fingerprint) -> Iterator[tuple[int, ...]]:
    """Permutations of b's columns worth trying: only those pairing columns with equal value bags.

    Orders come in lexicographic order, at most MAX_PERMUTATIONS of them. Among b's columns that are
    identical cell for cell, only orders that use them left to right are produced: the others would
    give exactly the same permuted rows again.
    """
    width = a.width
    by_signature: dict[int, list[int]] = {}
    for j, sig in enumerate(b.signatures):
        by_signature.setdefault(sig, []).append(j)
    choices = [by_signature.get(sig, []) for sig in a.signatures]
    if any(not c for c in choices):
        return
    twin = [-1] * b.width  # twin[j]: the nearest earlier column of b identical to column j, or -1
    for group in by_signature.values():
        for pos, j in enumerate(group):
            for k in reversed(group[:pos]):
                if _same_column(b, k, b, j):
                    twin[j] = k
                    break
    used = [False] * b.width
    order: list[int] = []
    budget = [MAX_PERMUTATIONS]

    def extend(i: int) -> Iterator[tuple[int, ...]]:
        if i == width:
            budget[0] -= 1
            yield tuple(order)
            return
        for j in choices[i]:
            if used[j] or (twin[j] >= 0 and not used[twin[j]]):
                continue
            used[j] = True
            order.append(j)
            yield from extend(i + 1)
            order.pop()
            used[j] = False
            if budget[0] <= 0:
                return

    yield from extend(0)


def _same_column(a: Fingerprint, i: int, b: Fingerprint, j: int) -> bool:
    """Exactly: is a's column i equal, cell for cell and in order, to b's column j?"""
    x, y = a.numbers[i], b.numbers[j]
    if x is not None and y is not None:  # float values stand exactly for the cells (None as NaN)
        return bool(np.array_equal(x, y, equal_nan=True))
    return a.columns[i] == b.columns[j]


def _same_row_multiset(a: Fingerprint, b: Fingerprint, order: tuple[int, ...]) -> bool:
    """Exactly: do a's rows and b's rows, with b's columns taken in ``order``, form the same multiset?

    Equal multisets of rows have equal multisets of row hashes, so different sorted hashes settle
    it. Otherwise both sides are put in row-hash order and compared cell by cell; if they match,
    that pairing of rows proves the multisets equal. Only a hash collision between different rows
    can leave the question open, and then the rows are counted.
    """
    order_a, sorted_a, _ = a._by_row_hash
    hashes_b = _row_hashes(b.cell_hashes, order)
    order_b = np.argsort(hashes_b, kind="stable")
    if not np.array_equal(hashes_b[order_b], sorted_a):
        return False
    gather_b = None
    for i, j in enumerate(order):
        x, y = a.numbers[i], b.numbers[j]
        if x is not None and y is not None:
            if not np.array_equal(x[order_a], y[order_b], equal_nan=True):
                break
        else:
            gather_b = gather_b or _gatherer(order_b)
            if a.sorted_column(i) != gather_b(b.columns[j]):
                break
    else:
        return True
    permuted = Counter(zip(*(b.columns[j] for j in order)))
    return dict.__eq__(permuted, Counter(a.rows))  # plain dict equality: both hold only positive counts


def equivalent(a: Fingerprint, b: Fingerprint) -> bool:
    """True when a and b hold the same rows under some column permutation (in order if either is ordered)."""
    if a.key != b.key:
        return False
    ordered = a.ordered or b.ordered
    if a.width == 0 or a.row_count == 0:
        return True
    for order in _column_orders(a, b):
        if all(_same_column(a, i, b, j) for i, j in enumerate(order)):
            return True  # the same rows in the same order
        if not ordered and _same_row_multiset(a, b, order):
            return True
    return False


def results_equivalent(a: ResultSet, b: ResultSet, *, ordered: bool = False) -> bool:
    """Convenience wrapper: the equivalence test on two raw result sets."""
    return equivalent(Fingerprint.of(a, ordered=ordered), Fingerprint.of(b, ordered=ordered))
