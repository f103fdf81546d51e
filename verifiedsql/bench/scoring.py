"""Spider execution accuracy: a result is correct when it equals the gold result as a multiset of rows
under some column permutation, in order only when the gold query's outermost SELECT orders its rows.
The equivalence test itself is ``results.results_equivalent``; the gold SQL runs on the SQLite file.

Rows that the gold's ORDER BY ranks equal (two employees of the same age) may come in any order: engines,
and plans on one engine, break such ties differently. So an ordered gold without LIMIT also records its
runs of tied rows (``Gold.ties``, read by running it once more with its sort keys as extra columns), and a
result whose rows differ from the gold's only in their order within those runs is correct too."""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from itertools import groupby
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from ..db.database import Database
from ..errors import VerifiedSQLError
from ..guard.safety import outermost_orders, parse_one_query
from ..profiles import all_profiles
from ..results import ResultSet, results_equivalent
from ..stages.common.orderkeys import sort_keys, with_keys


@dataclass(frozen=True)
class Gold:
    result: ResultSet | None
    ordered: bool
    error: str | None = None
    ties: tuple[int, ...] | None = None  # the sizes of the runs of rows the ORDER BY ranks equal, in order
    # a text cell that spells an integer ('2023', '03') equals that integer, in the gold and in the result: for a
    # gold run on SQLite, whose dates and their parts are text, graded against an engine that gives a year as a
    # number (the analytics set; Spider keeps its strict grading)
    text_integers: bool = False


def _sort_keys(select: exp.Select) -> list[exp.Expr] | None:
    """The outermost ORDER BY's expressions, select aliases resolved; None where ties cannot be read (no
    ORDER BY, a LIMIT or OFFSET, DISTINCT, a key given by position)."""
    order = select.args.get("order")
    if order is None or select.args.get("limit") or select.args.get("offset") or select.args.get("distinct"):
        return None
    if any(isinstance(ordered.this, exp.Literal) for ordered in order.expressions):
        return None
    return sort_keys(select)


def tie_runs(conn: sqlite3.Connection, sql: str, rows: list[tuple[Any, ...]]) -> tuple[int, ...] | None:
    """The sizes of the runs of ``rows`` (the gold's result) that its ORDER BY ranks equal; None when the
    query has no such runs to read or the keyed query does not give back the same rows in the same order."""
    try:
        select = sqlglot.parse_one(sql, read="sqlite")
    except SqlglotError:
        return None
    if not isinstance(select, exp.Select) or (keys := _sort_keys(select)) is None:
        return None
    keyed = with_keys(select, keys)
    width = len(select.expressions)
    try:
        keyed_rows = conn.execute(keyed.sql(dialect="sqlite")).fetchall()
    except (sqlite3.Error, SqlglotError):
        return None
    if [tuple(r[:width]) for r in keyed_rows] != [tuple(r) for r in rows]:
        return None
    return tuple(len(list(run)) for _, run in groupby(keyed_rows, key=lambda r: tuple(r[width:])))


def _settled(result: ResultSet, ties: tuple[int, ...]) -> ResultSet:
    """``result`` with each run of tied rows put in one canonical order (the same whatever the column order)."""
    def canonical(row: tuple[Any, ...]) -> tuple[str, ...]:
        return tuple(sorted(repr(float(v)) if isinstance(v, (int, float)) and not isinstance(v, bool) else repr(v)
                            for v in row))

    rows, start = [], 0
    for size in ties:
        rows.extend(sorted(result.rows[start:start + size], key=canonical))
        start += size
    return ResultSet(result.columns, tuple(rows))


def run_gold(conn: sqlite3.Connection, sql: str) -> Gold:
    """Execute a gold query (SQLite dialect) and note whether its order counts, and its runs of ties."""
    try:
        ordered = outermost_orders(parse_one_query(sql, all_profiles()["sqlite"]))
    except VerifiedSQLError:
        ordered = "order by" in sql.lower()
    try:
        cursor = conn.execute(sql)
        rows = cursor.fetchall()
    except sqlite3.Error as error:
        return Gold(None, ordered, f"gold query failed: {error}")
    columns = tuple(str(d[0]) for d in cursor.description or ())
    ties = tie_runs(conn, sql, rows) if ordered else None
    return Gold(ResultSet(columns, tuple(tuple(r) for r in rows)), ordered, ties=ties)


_INTEGER_TEXT = re.compile(r"-?[0-9]+")


def integers_read(result: ResultSet) -> ResultSet:
    """``result`` with each text cell that spells an integer ('2023', '-4', '03') read as that integer."""
    def read(value: Any) -> Any:
        return int(value) if isinstance(value, str) and _INTEGER_TEXT.fullmatch(value) else value

    return ResultSet(result.columns, tuple(tuple(read(v) for v in row) for row in result.rows))


def matches(result: ResultSet | None, gold: Gold) -> bool:
    """Execution accuracy of one result against the gold (in order up to the gold's runs of ties)."""
    if result is None or gold.result is None:
        return False
    expected = gold.result
    if gold.text_integers:
        result, expected = integers_read(result), integers_read(expected)
    if results_equivalent(result, expected, ordered=gold.ordered):
        return True
    ties = gold.ties
    if not gold.ordered or not ties or max(ties) < 2 or len(result.rows) != len(expected.rows):
        return False
    return results_equivalent(_settled(result, ties), _settled(expected, ties), ordered=True)


class CandidateGrader:
    """Grades candidate SQL against one question's gold, running each distinct SQL once."""

    def __init__(self, database: Database, gold: Gold) -> None:
        self.database = database
        self.gold = gold
        self._seen: dict[str, bool] = {}

    def correct(self, sql: str | None) -> bool:
        if not sql:
            return False
        if sql not in self._seen:
            try:
                result = self.database.run_query(sql)
            except VerifiedSQLError:
                result = None
            self._seen[sql] = matches(result, self.gold)
        return self._seen[sql]
