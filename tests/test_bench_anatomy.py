"""Failure anatomy: error classes read from each real engine's own messages, and outcome classes."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from verifiedsql.bench.anatomy import anatomy, error_class, outcome_of
from verifiedsql.config import LLMSettings, Options
from verifiedsql.db.database import Database
from verifiedsql.errors import QueryError, QueryTimeoutError, UnsafeSQLError

# class -> SQL over the shop tables that each engine rejects for that reason (None: the engine accepts it)
MISTAKES: dict[str, dict[str, str | None]] = {
    "unknown column": {"*": "SELECT c.population FROM customers AS c"},
    "unknown table": {"*": "SELECT name FROM clients"},
    "ambiguous column": {"*": "SELECT id FROM customers JOIN orders ON customers.id = orders.customer_id"},
    "unknown function": {"*": "SELECT no_such_fn(name) FROM customers"},
    "syntax": {"*": "SELECT name FROM customers WHERE"},
    # SQLite's type affinity accepts the comparison; fakesnow (DuckDB underneath) casts it silently
    "type": {"*": "SELECT name FROM customers WHERE country = 5", "sqlite": None, "snowflake": None},
    "aggregate misuse": {"*": "SELECT country, COUNT(*) FROM customers",  # SQLite allows bare columns
                         "sqlite": "SELECT name FROM customers WHERE COUNT(*) > 1"},
}


def _failure(database: Database, sql: str) -> tuple[str, str]:
    """The (status, error) the candidate runner would record for ``sql``."""
    try:
        database.run_query(sql)
    except QueryTimeoutError as error:
        return "timeout", str(error)
    except UnsafeSQLError as error:
        return "unsafe", str(error)
    except QueryError as error:
        return "error", str(error)
    raise AssertionError(f"{sql!r} ran")


@pytest.mark.parametrize("expected", sorted(MISTAKES))
def test_error_class_from_real_engine_messages(expected: str, shop_engine: sa.Engine) -> None:
    dialect = shop_engine.dialect.name
    cases = MISTAKES[expected]
    sql = cases.get(dialect, cases["*"])
    if sql is None:
        pytest.skip(f"{dialect} does not reject this kind of mistake")
    database = Database(shop_engine, Options(llm=LLMSettings()))
    status, error = _failure(database, sql)
    assert error_class(status, error) == expected, error


def test_unsafe_and_timeout_statuses_win_over_the_text() -> None:
    assert error_class("unsafe", "no such column: x") == "unsafe"
    assert error_class("timeout", None) == "timeout"
    assert error_class("error", "something nobody anticipated") == "other"


def _record(strategy: str, correct: bool, *candidates: tuple[str, bool]) -> dict:
    return {"strategy": strategy, "status": "answered", "correct": correct,
            "candidates": [{"status": status, "correct": right, "error": None if status == "ok" else
                            "the database rejected the query: no such column: T2.Population"}
                           for status, right in candidates]}


def test_outcome_classes_and_counts() -> None:
    records = [
        _record("sc", True, ("ok", True), ("ok", False)),
        _record("sc", False, ("ok", False), ("ok", True)),        # a right candidate was outvoted
        _record("sc", False, ("ok", False), ("error", False)),    # nothing right ran
        _record("sc", False, ("error", False), ("error", False)),  # nothing ran
        {"strategy": "sc", "status": "llm_error", "correct": False, "candidates": []},
    ]
    assert [outcome_of(r) for r in records[:4]] == ["right", "majority wrong", "pool all wrong", "no candidate ran"]
    found = anatomy(records, "sc")
    assert found.questions == 4
    assert found.outcomes == {"right": 1, "majority wrong": 1, "pool all wrong": 1, "no candidate ran": 1}
    assert (found.candidates, found.failed_candidates) == (8, 3)
    assert found.errors == {"unknown column": 3}
