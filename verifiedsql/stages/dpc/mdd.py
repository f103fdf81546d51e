"""Deterministic search for a minimal distinguishing database (MDD): small made-up data on which two
candidate SQLs return different results. No model is involved.

Each column of the slice gets two lists of values: a *pool* (the real sample values, or a few
defaults for its kind) and *boundary* values built from the literals the two SQLs compare it with
(``c - 1, c, c + 1`` for numbers, the neighbouring days for dates, the literal and its case, prefix
and containing variants for text, LIKE patterns with their wildcards filled in). Random databases
are then drawn from a seeded ``random.Random``, smallest first (1-2 rows per table, growing with
the tries), with the boundary cases mixed in: NULLs, cells repeating an earlier row's value (ties,
duplicate groups), whole duplicate rows, children without a parent and parents without a child
(INNER vs LEFT JOIN), empty tables. Primary keys stay unique and non-NULL; foreign keys take a parent
row's key except for deliberate orphans. The first database on which the two results score below
``DISTINGUISHED_BELOW`` (BS-F1) is shrunk row by row while it still tells them apart, and returned.
A try on which either SQL fails (or the data is refused) is skipped.
"""

from __future__ import annotations

import datetime as dt
import math
import random
import re
import time
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from sqlglot import exp

from ...db.schema import Table
from ...errors import VerifiedSQLError
from ...profiles import all_profiles
from ...results import ResultSet
from ..common.frames import ColumnKind, column_kind
from ..common.scratch import Scratch
from ..common.slicer import SqlAnalysis, TableIndex, analyze_sql
from ..common.slices import Rows, SchemaSlice
from .data import DISTINGUISHED_BELOW, MDD
from .mdd_model import coerce_value
from .softf1 import bipartite_soft_f1, normalize_cell

__all__ = ["find_mdd"]

P_NULL = 0.15  # a nullable cell is NULL
P_COPY = 0.25  # a cell repeats the same column of an earlier row (ties, duplicate groups)
P_BOUNDARY = 0.5  # a cell takes a boundary value, when its column has any
P_ROW_COPY = 0.1  # a row repeats an earlier row (with a key of its own)
P_ORPHAN = 0.15  # a foreign key points at no parent row
P_EMPTY = 0.05  # a table is left empty
SHRINK_TRIES = 60  # most databases tried while shrinking a found MDD
_KEY_RETRIES = 4

_DEFAULTS: dict[str, list[Any]] = {
    "int": [0, 1, 2],
    "float": [0.0, 1.5, 10.0],
    "text": ["a", "b", "A", ""],
    "date": ["2020-01-01", "2020-01-02", "2021-06-30"],
    "timestamp": ["2020-01-01 00:00:00", "2020-01-01 12:30:00", "2021-06-30 08:00:00"],
    "time": ["00:00:00", "12:30:00"],
    "bool": [True, False],
    "any": ["a", "b"],
}
_INVALID = object()
_NOT_LITERALS = (exp.Limit, exp.Offset, exp.Fetch, exp.Ordered, exp.Group)


# ------------------------------------------------------------------------------------ values


def _as_kind(value: Any, kind: ColumnKind) -> Any:
    """``value`` as a cell of a ``kind`` column (dates as ISO text, decimals as floats), or _INVALID."""
    if isinstance(value, Decimal):
        value = int(value) if kind == "int" and value == value.to_integral_value() else float(value)
    if isinstance(value, dt.datetime):
        value = value.isoformat(sep=" ")
    elif isinstance(value, (dt.date, dt.time)):
        value = value.isoformat()
    try:
        return coerce_value(value, kind)
    except ValueError:
        return _INVALID


def _number(value: Any) -> Decimal | None:
    if isinstance(value, bool):
        return None
    try:
        number = Decimal(str(value).strip())
    except InvalidOperation:
        return None
    return number if number.is_finite() else None


def _numeric_variants(value: Any, kind: ColumnKind) -> list[Any]:
    number = _number(value)
    if number is None:
        return []
    if kind == "int":
        low, high = math.floor(number), math.ceil(number)
        return [low - 1, low, high, high + 1]
    return [float(number) + delta for delta in (-1, -0.5, 0, 0.5, 1)]


def _text_variants(value: Any) -> list[Any]:
    text = str(value)
    base = text.replace("%", "").replace("_", "x") if ("%" in text or "_" in text) else text
    found = [text, base, base.lower(), base.upper(), base.capitalize(), base + "x", "x" + base]
    return found + ([base[:-1]] if len(base) > 1 else [])


def _date_variants(value: Any) -> list[dt.date]:
    text = str(value).strip()
    if re.fullmatch(r"\d{4}", text):
        year = int(text)
        return [dt.date(year - 1, 12, 31), dt.date(year, 1, 1), dt.date(year, 12, 31), dt.date(year + 1, 1, 1)]
    try:
        day = dt.date.fromisoformat(text[:10])
    except ValueError:
        return []
    return [day - dt.timedelta(days=1), day, day + dt.timedelta(days=1)]


def _timestamp_variants(value: Any) -> list[Any]:
    try:
        moment = dt.datetime.fromisoformat(str(value).strip())
    except ValueError:
        return [dt.datetime.combine(day, dt.time()) for day in _date_variants(value)]
    return [moment - dt.timedelta(seconds=1), moment, moment + dt.timedelta(seconds=1)]


def _variants(literal: Any, kind: ColumnKind) -> list[Any]:
    """Values on and around one literal, as cells of a ``kind`` column."""
    if kind in ("int", "float"):
        found = _numeric_variants(literal, kind)
    elif kind == "text":
        found = _text_variants(literal)
    elif kind == "date":
        found = _date_variants(literal)
    elif kind == "timestamp":
        found = _timestamp_variants(literal)
    elif kind == "bool":
        found = [True, False]
    else:
        found = [literal]
    return _distinct(_as_kind(v, kind) for v in found)


def _distinct(values: Iterable[Any]) -> list[Any]:
    """Valid values without repeats (by their normalised form), in first-seen order."""
    seen: set[Hashable] = set()
    kept = []
    for value in values:
        if value is _INVALID or value is None:
            continue
        key = (type(value) is str, normalize_cell(value))
        if key not in seen:
            seen.add(key)
            kept.append(value)
    return kept


# ------------------------------------------------------------------------------------ literals


@dataclass
class _Literals:
    """Literals of the SQLs: by the (table, column) they are compared with, and the rest."""

    attached: dict[tuple[str, str], list[Any]]
    loose: list[Any]


def _literal_value(node: exp.Expr) -> Any:
    if isinstance(node, exp.Boolean):
        return bool(node.this)
    number = None if node.is_string else _number(node.this)
    value: Any = node.this if number is None else number
    if isinstance(node.parent, exp.Neg) and isinstance(value, Decimal):
        value = -value
    return value


def _outside_subqueries(node: exp.Expr) -> Iterable[exp.Expr]:
    return node.walk(prune=lambda n: n is not node and isinstance(n, (exp.Select, exp.Subquery)))


def _harvest(analysis: SqlAnalysis, literals: _Literals) -> None:
    seen: set[int] = set()
    for predicate in analysis.tree.find_all(exp.Predicate):
        nodes = list(_outside_subqueries(predicate))
        columns = [found for n in nodes if isinstance(n, exp.Column) and (found := analysis.column_of(n))]
        values = [n for n in nodes if isinstance(n, (exp.Literal, exp.Boolean))]
        for table, column in columns:
            bucket = literals.attached.setdefault((table.name, column.name), [])
            bucket.extend(_literal_value(v) for v in values)
        if columns:
            seen.update(id(v) for v in values)
    for node in analysis.tree.find_all(exp.Literal, exp.Boolean):
        if id(node) not in seen and not node.find_ancestor(*_NOT_LITERALS):
            literals.loose.append(_literal_value(node))


def _literals(slice_: SchemaSlice, sqls: Sequence[str]) -> _Literals:
    """The literals of ``sqls``; a SQL the slicer cannot resolve contributes none."""
    index, profile = TableIndex(slice_.tables), all_profiles()[slice_.source_dialect]
    literals = _Literals({}, [])
    for sql in sqls:
        try:
            _harvest(analyze_sql(sql, index, profile), literals)
        except VerifiedSQLError:
            continue
    return literals


# ------------------------------------------------------------------------------------ columns


@dataclass(frozen=True)
class _ColumnValues:
    kind: ColumnKind
    nullable: bool
    pool: list[Any]
    boundary: list[Any]


def _fits(literal: Any, kind: ColumnKind) -> bool:
    """Whether a literal compared with no column is worth trying in a ``kind`` column (numbers in
    numeric columns, text in text and time columns, booleans in boolean ones)."""
    if isinstance(literal, bool):
        return kind == "bool"
    if isinstance(literal, Decimal):
        return kind in ("int", "float", "any")
    return kind in ("text", "date", "timestamp", "time", "any")


def _samples_of(samples: Mapping[str, Mapping[str, Sequence[Any]]] | None, table: Table, column: str,
                fallback: Sequence[Any]) -> Sequence[Any]:
    if samples is None:
        return fallback
    per_table = next((v for k, v in samples.items() if k.lower() == table.name.lower()), {})
    return next((v for k, v in per_table.items() if k.lower() == column.lower()), fallback)


def _column_values(slice_: SchemaSlice, samples: Mapping[str, Mapping[str, Sequence[Any]]] | None,
                   literals: _Literals) -> dict[str, list[_ColumnValues]]:
    """Per table (slice order), per column: its kind, pool and boundary values."""
    found: dict[str, list[_ColumnValues]] = {}
    for table in slice_.tables:
        specs = []
        for column in table.columns:
            kind = column_kind(column.type)
            real = _samples_of(samples, table, column.name, column.samples)
            loose = [v for literal in literals.loose if _fits(literal, kind) for v in _variants(literal, kind)]
            pool = _distinct(_as_kind(v, kind) for v in real) or list(_DEFAULTS[kind])
            boundary = _distinct(v for literal in literals.attached.get((table.name, column.name), [])
                                 for v in _variants(literal, kind))
            specs.append(_ColumnValues(kind, column.nullable and not column.primary_key,
                                       _distinct(pool + loose), boundary))
        found[table.name] = specs
    return found


def _parents_first(slice_: SchemaSlice) -> list[Table]:
    """Slice tables with every referred table before its children (cycles broken in slice order)."""
    ordered: list[Table] = []
    visiting: set[str] = set()

    def visit(table: Table) -> None:
        if table in ordered or table.name in visiting:
            return
        visiting.add(table.name)
        for fk in table.foreign_keys:
            parent = slice_.table(fk.referred_table)
            if parent is not None:
                visit(parent)
        ordered.append(table)

    for table in slice_.tables:
        visit(table)
    return ordered


@dataclass(frozen=True)
class _Link:
    """One foreign key inside the slice: positions in the child, the parent, positions in the parent."""

    child_at: tuple[int, ...]
    parent: str
    parent_at: tuple[int, ...]


def _links(table: Table, slice_: SchemaSlice) -> list[_Link]:
    links = []
    for fk in table.foreign_keys:
        parent = slice_.table(fk.referred_table)
        if parent is None:
            continue
        child_at = [_position(table, c) for c in fk.columns]
        parent_at = [_position(parent, c) for c in fk.referred_columns]
        if None not in child_at and None not in parent_at:
            links.append(_Link(tuple(child_at), parent.name, tuple(parent_at)))  # type: ignore[arg-type]
    return links


def _position(table: Table, name: str) -> int | None:
    lowered = name.lower()
    return next((i for i, c in enumerate(table.columns) if c.name.lower() == lowered), None)


def _key(row: Sequence[Any], positions: Sequence[int]) -> tuple[Hashable, ...]:
    return tuple(normalize_cell(row[i]) for i in positions)


# ------------------------------------------------------------------------------------ databases


def _parents(link: _Link, name: str, rows: Sequence[tuple[Any, ...]], built: dict[str, Rows]) -> Rows:
    """The rows a foreign key may point at: the parent's, or the earlier rows of a self-reference."""
    return tuple(rows) if link.parent == name else built.get(link.parent, ())


def _fresh(kind: ColumnKind, n: int) -> Any:
    """A key value unlikely to be taken (for a row whose drawn keys all clash)."""
    if kind in ("int", "float"):
        return 10_000 + n
    if kind == "date":
        return (dt.date(1990, 1, 1) + dt.timedelta(days=n)).isoformat()
    if kind == "timestamp":
        return f"{dt.date(1990, 1, 1) + dt.timedelta(days=n)} 00:00:00"
    return None if kind == "bool" else f"k{n}"


class _Builder:
    """Draws small random databases for a slice (see the module docstring)."""

    def __init__(self, slice_: SchemaSlice, values: dict[str, list[_ColumnValues]], rng: random.Random) -> None:
        self.rng = rng
        self.values = values
        self.order = _parents_first(slice_)
        self.links = {t.name: _links(t, slice_) for t in slice_.tables}
        self.keys = {t.name: [i for i, c in enumerate(t.columns) if c.primary_key] for t in slice_.tables}
        self._fresh_count = 0

    def build(self, cap: int) -> dict[str, Rows]:
        built: dict[str, Rows] = {}
        for table in self.order:
            size = 0 if self.rng.random() < P_EMPTY else self.rng.randint(1, max(1, cap))
            built[table.name] = self._table(table.name, size, built)
        return built

    def _table(self, name: str, size: int, built: dict[str, Rows]) -> Rows:
        rows: list[tuple[Any, ...]] = []
        taken: set[tuple[Hashable, ...]] = set()
        for _ in range(size):
            if rows and self.rng.random() < P_ROW_COPY:
                row = list(self.rng.choice(rows))
            else:
                row = [self._cell(spec, rows, j) for j, spec in enumerate(self.values[name])]
                for link in self.links[name]:
                    self._link(row, link, _parents(link, name, rows, built))
            if self._unique_key(name, row, rows, taken, built):
                rows.append(tuple(row))
        return tuple(rows)

    def _cell(self, spec: _ColumnValues, rows: Sequence[tuple[Any, ...]], j: int, *, allow_null: bool = True) -> Any:
        draw = self.rng.random()
        if allow_null and spec.nullable and draw < P_NULL:
            return None
        if rows and draw < P_NULL + P_COPY:
            value = self.rng.choice(rows)[j]
            if value is not None or (allow_null and spec.nullable):
                return value
        if spec.boundary and self.rng.random() < P_BOUNDARY:
            return self.rng.choice(spec.boundary)
        return self.rng.choice(spec.pool)

    def _link(self, row: list[Any], link: _Link, parents: Rows) -> None:
        """Point the row at a random parent row, or leave it an orphan (NULL where allowed)."""
        if parents and self.rng.random() >= P_ORPHAN:
            parent = self.rng.choice(parents)
            for child_at, parent_at in zip(link.child_at, link.parent_at):
                row[child_at] = parent[parent_at]

    def _unique_key(self, name: str, row: list[Any], rows: Sequence[tuple[Any, ...]],
                    taken: set[tuple[Hashable, ...]], built: dict[str, Rows]) -> bool:
        """Make the row's primary key unique and non-NULL (redrawing it); False if that fails."""
        positions = self.keys[name]
        if not positions:
            return True
        linked = {i for link in self.links[name] for i in link.child_at}
        own = [i for i in positions if i not in linked]
        for attempt in range(_KEY_RETRIES + 1):
            key = _key(row, positions)
            if None not in key and key not in taken:
                taken.add(key)
                return True
            if not own:
                for link in self.links[name]:
                    self._link(row, link, _parents(link, name, rows, built))
                continue
            for i in own:
                spec = self.values[name][i]
                row[i] = self._cell(spec, rows, i, allow_null=False) if attempt < _KEY_RETRIES else self._next(spec)
        key = _key(row, positions)
        if None in key or key in taken:
            return False
        taken.add(key)
        return True

    def _next(self, spec: _ColumnValues) -> Any:
        self._fresh_count += 1
        return _fresh(spec.kind, self._fresh_count)


# ------------------------------------------------------------------------------------ search


@dataclass(frozen=True)
class _Outcome:
    tables: dict[str, Rows]
    result_a: ResultSet
    result_b: ResultSet
    score: float

    @property
    def distinguishes(self) -> bool:
        return self.score < DISTINGUISHED_BELOW


def _compare(scratch: Scratch, tables: dict[str, Rows], sql_a: str, sql_b: str) -> _Outcome | None:
    """Both results on ``tables``; None when the data is refused or either SQL fails on it."""
    try:
        scratch.load(tables)
        result_a = scratch.run(sql_a)
        result_b = scratch.run(sql_b)
    except VerifiedSQLError:
        return None
    return _Outcome(tables, result_a, result_b, bipartite_soft_f1(result_a, result_b))


def _referenced(slice_: SchemaSlice, tables: dict[str, Rows], name: str, row: Sequence[Any]) -> bool:
    """True when some child row's foreign key points at ``row`` of table ``name``."""
    for child in slice_.tables:
        for link in _links(child, slice_):
            if link.parent == name:
                key = _key(row, link.parent_at)
                if any(_key(r, link.child_at) == key for r in tables.get(child.name, ()) if r is not row):
                    return True
    return False


def _without(tables: dict[str, Rows], name: str, index: int) -> dict[str, Rows]:
    smaller = dict(tables)
    smaller[name] = tables[name][:index] + tables[name][index + 1:]
    return smaller


def _shrink(scratch: Scratch, slice_: SchemaSlice, found: _Outcome, sql_a: str, sql_b: str,
            deadline: float) -> tuple[_Outcome, int]:
    """Drop rows one at a time (children first) while the data still tells the SQLs apart."""
    tries = 0
    changed = True
    while changed:
        changed = False
        for table in reversed(_parents_first(slice_)):
            index = len(found.tables[table.name]) - 1
            while index >= 0:
                if tries >= SHRINK_TRIES or time.monotonic() > deadline:
                    return found, tries
                row = found.tables[table.name][index]
                if not _referenced(slice_, found.tables, table.name, row):
                    tries += 1
                    outcome = _compare(scratch, _without(found.tables, table.name, index), sql_a, sql_b)
                    if outcome is not None and outcome.distinguishes:
                        found, changed = outcome, True
                index -= 1
    return found, tries


def _cap(attempt: int, max_rows: int) -> int:
    """Most rows per table at the ``attempt``-th try: 2 at first, one more every ten tries."""
    return max(1, min(max_rows, 2 + attempt // 10))


def find_mdd(
    scratch: Scratch,
    slice_: SchemaSlice,
    sql_a: str,
    sql_b: str,
    *,
    samples: Mapping[str, Mapping[str, Sequence[Any]]] | None = None,
    max_rows: int = 30,
    max_tries: int = 200,
    time_budget_s: float = 5.0,
    seed: int = 0,
) -> MDD | None:
    """A small database on which ``sql_a`` and ``sql_b`` (the user's dialect) give different results,
    or None when ``max_tries`` databases (or ``time_budget_s`` seconds) bring none.

    ``samples`` gives real values per table and column (default: the slice columns' own samples).
    The same arguments and seed give the same answer (unless the time budget cuts the search short).
    ``MDD.tries`` counts the databases tried until one told the SQLs apart (the shrinking that
    follows is in ``MDD.notes``); when this returns an MDD, the scratch database holds it. A SQL the
    scratch database refuses outright (statement guard, a table outside the slice) gives None.
    """
    deadline = time.monotonic() + time_budget_s
    try:
        scratch.prepare(sql_a), scratch.prepare(sql_b)
    except VerifiedSQLError:
        return None  # refused by the statement guard or reading outside the slice: no data can help
    values = _column_values(slice_, samples, _literals(slice_, [sql_a, sql_b]))
    builder = _Builder(slice_, values, random.Random(seed))
    for attempt in range(max_tries):
        if time.monotonic() > deadline:
            break
        outcome = _compare(scratch, builder.build(_cap(attempt, max_rows)), sql_a, sql_b)
        if outcome is None or not outcome.distinguishes:
            continue
        size = sum(map(len, outcome.tables.values()))
        outcome, shrink_tries = _shrink(scratch, slice_, outcome, sql_a, sql_b, deadline)
        scratch.load(outcome.tables)
        shrunk = sum(map(len, outcome.tables.values()))
        notes = [f"found with {size} rows after {attempt + 1} tries; shrunk to {shrunk} rows in {shrink_tries} more"]
        return MDD(tables=outcome.tables, result_a=outcome.result_a, result_b=outcome.result_b,
                   score=outcome.score, method="deterministic", tries=attempt + 1, notes=notes)
    return None
