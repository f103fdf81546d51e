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
from itertools import permutations, product
from typing import Any, Hashable, Iterable, Sequence

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


@dataclass(frozen=True)
class Fingerprint:
    """A normalised result, with a key that equivalent results always share."""

    rows: tuple[tuple[Hashable, ...], ...]
    width: int
    ordered: bool
    key: tuple

    @classmethod
    def of(cls, result: ResultSet, *, ordered: bool = False) -> "Fingerprint":
        rows = tuple(normalize_rows(result.rows))
        width = result.width
        column_bags = sorted(
            (_bag_key(Counter(row[i] for row in rows)) for i in range(width)), key=repr
        )
        key = (width, len(rows), tuple(column_bags))
        return cls(rows=rows, width=width, ordered=ordered, key=key)


def _bag_key(bag: Counter) -> tuple:
    return tuple(sorted(bag.items(), key=repr))


def _column_orders(a: Fingerprint, b: Fingerprint) -> Iterable[tuple[int, ...]]:
    """Permutations of b's columns worth trying: only those pairing columns with equal value bags."""
    bags_a = [_bag_key(Counter(r[i] for r in a.rows)) for i in range(a.width)]
    bags_b = [_bag_key(Counter(r[i] for r in b.rows)) for i in range(b.width)]
    choices = [[j for j in range(b.width) if bags_b[j] == bags_a[i]] for i in range(a.width)]
    if any(not c for c in choices):
        return
    budget = MAX_PERMUTATIONS
    for order in product(*choices):
        if len(set(order)) == len(order):
            yield order
            budget -= 1
            if budget <= 0:
                return


def equivalent(a: Fingerprint, b: Fingerprint) -> bool:
    """True when a and b hold the same rows under some column permutation (in order if either is ordered)."""
    if a.key != b.key:
        return False
    ordered = a.ordered or b.ordered
    if a.width == 0:
        return True
    target_bag = None if ordered else Counter(a.rows)
    for order in _column_orders(a, b):
        permuted = [tuple(row[j] for j in order) for row in b.rows]
        if ordered:
            if list(a.rows) == permuted:
                return True
        elif Counter(permuted) == target_bag:
            return True
    return False


def results_equivalent(a: ResultSet, b: ResultSet, *, ordered: bool = False) -> bool:
    """Convenience wrapper: the equivalence test on two raw result sets."""
    return equivalent(Fingerprint.of(a, ordered=ordered), Fingerprint.of(b, ordered=ordered))
