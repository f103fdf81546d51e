"""Sample values of many tables in a few statements: one ``UNION ALL`` per batch of tables.

Each table of a batch is one branch, ``SELECT <k>, <slots> FROM (SELECT * FROM <table> LIMIT n)``, where
``k`` says which table a row comes from and each of the table's columns has a slot (a result column) of its
own; the slots of the other tables' columns are NULL. On SQLite a value keeps its own type whatever the
column, so the slots are shared by position. Elsewhere a result column has one type, so a slot is shared
only by columns of the same reflected type. Where an untyped NULL in a union resolves as text (PostgreSQL,
Snowflake; DuckDB gives it the other branches' type), a first branch that returns no row gives each slot
its type (``(SELECT <column> FROM <table> WHERE 1 = 0)``: a NULL of that column's own type). The values
read are those a statement per table would read, in the same order: a table's branch scans its first ``n``
rows as ``SELECT * ... LIMIT n`` does.

A batch the engine rejects (types that do not unite), that times out or that is cut at the size bounds
is read again one table at a time by the caller (``Database``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..results import ResultSet
from .schema import Column, Table

UNTYPED_NULL_UNITES = ("sqlite", "duckdb")  # engines whose union gives a NULL the other branches' type
BATCH_TABLES = 50  # tables per statement at most
BATCH_SLOTS = 500  # result columns per statement at most (PostgreSQL allows 1,664; SQLite 2,000)
SAMPLE_TEXT_CHARS = 60
MARKER = "verifiedsql_table"


def trimmed(value: Any) -> Any:
    """A sample value as a prompt shows it: text and bytes cut to SAMPLE_TEXT_CHARS."""
    if isinstance(value, str) and len(value) > SAMPLE_TEXT_CHARS:
        return value[: SAMPLE_TEXT_CHARS - 3] + "..."
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value[:SAMPLE_TEXT_CHARS])
    return value


def distinct_values(values: Iterable[Any], limit: int) -> list[Any]:
    """Up to ``limit`` distinct non-null values, in first-seen order; unhashable ones (lists, dicts)
    are told apart by their repr."""
    seen: set[Any] = set()
    picked: list[Any] = []
    for value in values:
        if value is None:
            continue
        try:
            key: Any = (0, value)
            if key in seen:
                continue
        except TypeError:
            key = (1, repr(value))
            if key in seen:
                continue
        seen.add(key)
        picked.append(value)
        if len(picked) >= limit:
            break
    return picked


def with_values(columns: Sequence[Column], cells: Sequence[Sequence[Any] | None], limit: int) -> tuple[Column, ...]:
    """``columns`` with up to ``limit`` sample values each from its cells (a column's values in row order;
    None: the column was not read, so it stays as it was)."""
    return tuple(
        Column(column.name, column.type, column.nullable, column.primary_key,
               tuple(trimmed(v) for v in distinct_values(values, limit)))
        if values is not None else column
        for column, values in zip(columns, cells)
    )


@dataclass(frozen=True)
class Batch:
    """One statement's tables and where each of their columns is in the result (1 + slot)."""

    tables: tuple[Table, ...]
    slots: tuple[tuple[int, ...], ...]  # per table, per column
    width: int


def batches(tables: Sequence[Table], typed: bool) -> list[Batch]:
    """``tables`` in batches of at most BATCH_TABLES tables and BATCH_SLOTS slots. ``typed``: a slot holds
    columns of one reflected type only (every engine but SQLite)."""
    done: list[Batch] = []
    chosen: list[Table] = []
    keys: dict[tuple[str | None, int], int] = {}
    slots: list[tuple[int, ...]] = []
    for table in tables:
        counts: dict[str | None, int] = {}
        wanted = []
        for column in table.columns:
            kind = column.type if typed else None
            counts[kind] = counts.get(kind, 0) + 1
            wanted.append((kind, counts[kind]))
        new = len({key for key in wanted if key not in keys})
        if chosen and (len(chosen) == BATCH_TABLES or len(keys) + new > BATCH_SLOTS):
            done.append(Batch(tuple(chosen), tuple(slots), len(keys)))
            chosen, keys, slots = [], {}, []
        chosen.append(table)
        slots.append(tuple(keys.setdefault(key, len(keys)) for key in wanted))
    if chosen:
        done.append(Batch(tuple(chosen), tuple(slots), len(keys)))
    return done


def batch_sql(batch: Batch, quote_table: Callable[[str], str], quote_column: Callable[[str], str], rows: int,
              typed_nulls: bool) -> str:
    """The batch's statement (module docstring); ``rows``: the rows each table's branch scans. ``typed_nulls``:
    a first branch gives each slot its type (an engine that resolves an untyped NULL as text)."""
    def branch(index: int, table: Table, source: str) -> str:
        cells = ["NULL"] * batch.width
        for column, slot in zip(table.columns, batch.slots[index]):
            cells[slot] = f"{source}.{quote_column(column.name)}"
        items = [f"{index} AS {MARKER}"] + [f"{cell} AS s{slot}" for slot, cell in enumerate(cells)]
        return f"SELECT {', '.join(items)} FROM (SELECT * FROM {quote_table(table.name)} LIMIT {rows}) AS s"

    parts = [branch(i, table, "s") for i, table in enumerate(batch.tables)]
    if typed_nulls:  # a first branch of no rows whose every slot has the type of the columns it holds
        header = ["NULL"] * batch.width
        for table, slots in zip(reversed(batch.tables), reversed(batch.slots)):
            for column, slot in zip(table.columns, slots):
                header[slot] = (f"(SELECT t.{quote_column(column.name)} FROM {quote_table(table.name)} AS t "
                                "WHERE 1 = 0)")
        items = [f"-1 AS {MARKER}"] + [f"{cell} AS s{slot}" for slot, cell in enumerate(header)]
        parts.insert(0, f"SELECT {', '.join(items)} WHERE 1 = 0")
    return " UNION ALL ".join(parts)


def split(batch: Batch, result: ResultSet, limit: int) -> dict[str, tuple[Column, ...]]:
    """Each table's columns with the sample values the batch's result holds for it."""
    rows: list[list[tuple[Any, ...]]] = [[] for _ in batch.tables]
    for row in result.rows:
        rows[int(row[0])].append(row)
    sampled = {}
    for index, table in enumerate(batch.tables):
        found = rows[index]
        cells = [[row[1 + slot] for row in found] if found else None for slot in batch.slots[index]]
        sampled[table.name] = with_values(table.columns, cells, limit)
    return sampled
