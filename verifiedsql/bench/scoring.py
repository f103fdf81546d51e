"""Spider execution accuracy: a result is correct when it equals the gold result as a multiset of rows
under some column permutation, in order only when the gold query's outermost SELECT orders its rows.
The equivalence test itself is ``results.results_equivalent``; the gold SQL runs on the SQLite file."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from ..database import Database
from ..errors import VerifiedSQLError
from ..profiles import all_profiles
from ..results import ResultSet, results_equivalent
from ..safety import outermost_orders, parse_one_query


@dataclass(frozen=True)
class Gold:
    result: ResultSet | None
    ordered: bool
    error: str | None = None


def run_gold(conn: sqlite3.Connection, sql: str) -> Gold:
    """Execute a gold query (SQLite dialect) and note whether its order counts."""
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
    return Gold(ResultSet(columns, tuple(tuple(r) for r in rows)), ordered)


def matches(result: ResultSet | None, gold: Gold) -> bool:
    """Execution accuracy of one result against the gold."""
    if result is None or gold.result is None:
        return False
    return results_equivalent(result, gold.result, ordered=gold.ordered)


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
