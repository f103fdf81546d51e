"""The syntax check of verify-and-repair: the dialect's EXPLAIN compiles a query without running it."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from backends import checksum
from fakes import context

from verifiedsql.config import LLMSettings, Options
from verifiedsql.db.database import Database
from verifiedsql.errors import QueryError, QueryTimeoutError, UnsafeSQLError
from verifiedsql.stages.generate import execute_candidate

# Runs for minutes, plans in milliseconds.
SLOW = ("WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 1000000000) "
        "SELECT COUNT(*) FROM r")


def database(engine: sa.Engine) -> Database:
    return Database(engine, Options(llm=LLMSettings(), statement_timeout_s=1.0))


def test_explain_plans_without_running(shop_engine):
    """Planned under the 1 s statement timeout that stops the same query when it runs."""
    db = database(shop_engine)
    db.explain(SLOW)
    if shop_engine.dialect.name != "snowflake":  # fakesnow has no statement timeout
        with pytest.raises(QueryTimeoutError):
            db.run_query(SLOW)


def test_explain_reports_the_engines_error_and_refuses_writes(shop_engine):
    db = database(shop_engine)
    before = checksum(shop_engine)
    with pytest.raises(QueryError):
        db.explain("SELECT no_such_column FROM customers")
    with pytest.raises(UnsafeSQLError):
        db.explain("DELETE FROM customers")
    assert checksum(shop_engine) == before


def test_a_candidate_the_engine_rejects_is_never_run(shop_engine, monkeypatch):
    db = database(shop_engine)
    ran: list[str] = []
    monkeypatch.setattr(Database, "run_query", lambda self, sql, **kw: ran.append(sql))
    failed = execute_candidate(context(db), "SELECT no_such_column FROM customers", explain=True)
    assert failed.status == "error" and failed.checks == ("parse",) and ran == []
    assert "no_such_column" in (failed.error or "").lower()


def test_a_good_candidate_passes_parse_explain_and_run(shop_engine):
    execution = execute_candidate(context(database(shop_engine)), "SELECT COUNT(*) FROM customers", explain=True)
    assert execution.checks == ("parse", "explain", "run") and execution.result.rows == ((10,),)
