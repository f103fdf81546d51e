"""Functions by allowlist, from each engine's own catalog (issue 17: findings 1, 2, 13 and the ``U&``
half of 14).

* Plan scans are linear: one-million-character plan texts are checked without holding the GIL (the old
  quadratic scan froze every thread of the host for 32 s at 60,000 characters; on a million it would run
  for hours, past this module's timeout). Their speed is not timed here.
* PostgreSQL functions that act outside the read-only transaction (replication slots, ``pg_stat_reset``)
  are refused by each layer alone, and nothing of theirs is left on the server.
* ``U&"pg_r\\0065ad_file"(...)`` is refused by the statement guard alone (pglast decodes the name as the
  server does) and by the engine guard alone.
* Snowflake's ``SYSTEM$*``, ``SNOWFLAKE.CORTEX.*`` and, under fakesnow, DuckDB's ``read_csv`` are
  refused by each layer alone; DuckDB's volatile and file/state table functions too.
* Ordinary functions (aggregates, string, date and cast functions) still run on every engine.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Iterator

import pytest
import sqlalchemy as sa
from conftest import HostileModel, Worlds, layer_of

from verifiedsql.config import LLMSettings, Options
from verifiedsql.db.database import Database
from verifiedsql.errors import UnsafeSQLError
from verifiedsql.guard.safety import check_query

pytestmark = pytest.mark.timeout(60)


def _database(world: Any) -> Database:
    return Database(world.engine, Options(llm=LLMSettings(), statement_timeout_s=2.0))


def _refused_by_each_layer(database: Database, sql: str, function: str) -> None:
    """The statement guard alone (with the database's function policy) and the engine guard alone
    (statement guard skipped) each refuse ``sql``, naming ``function``."""
    functions = getattr(database, "functions", None)  # the database's function policy (none before issue 17)
    with pytest.raises(UnsafeSQLError) as statement:
        check_query(sql, database.profile, *([functions()] if functions else []))
    assert function in statement.value.construct.lower(), statement.value
    assert function in str(statement.value).lower(), statement.value
    with pytest.raises(UnsafeSQLError) as engine:
        database.run_query(sql, guard=False)
    assert engine.value.layer == "engine" and function in engine.value.construct.lower(), engine.value
    assert function in str(engine.value).lower(), engine.value


# ------------------------------------------------------------------------ 1: linear plan scans

PLAN_TEXTS = {
    "literal": "'" + "x" * 1_000_000 + "'::text",  # what SELECT repeat('x', 1000000) puts in the plan
    "word": "x" * 1_000_000,
    "quoted": '"' + "x" * 1_000_000,
    "escaped quotes": "'" + "''" * 500_000,
    "parentheses": "(" * 1_000_000,
    "calls": "f(" * 300_000,
}


def _scan(text: str) -> None:
    from verifiedsql.guard.readonly import _plan_refusal
    from verifiedsql.profiles import profile_for

    assert _plan_refusal([{"Plan": {"Node Type": "Result", "Output": [text]}}], profile_for("postgresql")) is None


def test_plan_scan_of_a_million_characters_is_linear() -> None:
    """The PostgreSQL plan check on one-million-character plan texts refuses nothing, and another thread is
    never kept from the GIL for long."""
    gaps: list[float] = [0.0]
    stop = threading.Event()

    def tick() -> None:  # how long this thread waits for the GIL while the scans run
        last = time.perf_counter()
        while not stop.is_set():
            time.sleep(0.001)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    ticker = threading.Thread(target=tick, daemon=True)
    ticker.start()
    try:
        for text in PLAN_TEXTS.values():
            _scan(text)
    finally:
        stop.set()
        ticker.join()
    assert max(gaps) < 0.25, max(gaps)


def test_million_character_literal_on_postgresql(worlds: Worlds, hostile: HostileModel) -> None:
    """``SELECT repeat('x', 1000000)`` through ``run_query`` (both layers, its EXPLAIN plan checked), and as
    every reply of a model through both public APIs (each probe, candidate and repair planned and checked)."""
    world = worlds("postgresql")
    rows = _database(world).run_query("SELECT repeat('x', 1000000) AS long_text").rows
    assert len(rows[0][0]) == 1_000_000
    for api in world.apis():
        hostile.serve("SELECT repeat('x', 1000000) AS long_text")
        world.ask(api, "What is the long text?")


# ------------------------------------------------- 2: PostgreSQL functions that outlive the transaction

SLOT = "verifiedsql_hostile_slot"
SERVER_CALLS = {
    "pg_create_physical_replication_slot": f"SELECT pg_create_physical_replication_slot('{SLOT}_new')",
    "pg_drop_replication_slot": f"SELECT pg_drop_replication_slot('{SLOT}')",
    "pg_replication_slot_advance": f"SELECT * FROM pg_replication_slot_advance('{SLOT}', pg_current_wal_lsn())",
    "pg_stat_reset": "SELECT pg_stat_reset()",
}


def _server_state(engine: sa.Engine) -> tuple[Any, ...]:
    with engine.connect() as conn:
        slots = conn.exec_driver_sql("SELECT slot_name, restart_lsn FROM pg_replication_slots ORDER BY 1").all()
        reset = conn.exec_driver_sql(
            "SELECT stats_reset FROM pg_stat_database WHERE datname = current_database()").scalar()
    return tuple(slots), reset


@pytest.fixture
def slot(worlds: Worlds) -> Iterator[sa.Engine]:
    """A physical replication slot that exists (so dropping and advancing it can be tried); every slot
    of this test is dropped afterwards (a forgotten slot makes the server keep WAL forever)."""
    engine = worlds("postgresql").engine
    with engine.connect() as conn:
        conn.exec_driver_sql(f"SELECT pg_create_physical_replication_slot('{SLOT}', true)")
        conn.commit()
    try:
        yield engine
    finally:
        with engine.connect() as conn:
            conn.exec_driver_sql(f"SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
                                 f"WHERE slot_name IN ('{SLOT}', '{SLOT}_new')")
            conn.commit()


@pytest.mark.parametrize("function", list(SERVER_CALLS))
def test_server_functions_refused_by_each_layer(function: str, slot: sa.Engine, worlds: Worlds) -> None:
    """Replication slots and statistics resets are not undone by ROLLBACK: each layer alone refuses them,
    and the slots and statistics are as they were."""
    before = _server_state(slot)
    database = _database(worlds("postgresql"))
    _refused_by_each_layer(database, SERVER_CALLS[function], function)
    with pytest.raises(UnsafeSQLError):
        database.run_query(SERVER_CALLS[function])
    assert _server_state(slot) == before


@pytest.mark.parametrize("function", list(SERVER_CALLS))
def test_server_functions_through_both_apis(function: str, slot: sa.Engine, worlds: Worlds,
                                           hostile: HostileModel) -> None:
    """The same calls as every reply of a hostile model, through ``create_engine`` and ``dbapi``."""
    before = _server_state(slot)
    world = worlds("postgresql")
    for api in world.apis():
        hostile.serve(SERVER_CALLS[function])
        outcome = world.ask(api, "How many orders are there?")
        assert not outcome.answered, (api, outcome.rows)
        assert all(status == "unsafe" for _, _, status, _ in outcome.attempts()), outcome.attempts()
        assert function in (outcome.report.candidates[0].error or "")
    assert _server_state(slot) == before


# -------------------------------------------------------------------- 14: U& names, each layer alone

UNICODE_NAME = "SELECT U&\"pg_r\\0065ad_file\"('/etc/passwd')"


def test_unicode_escaped_name_refused_by_statement_guard_alone() -> None:
    """pglast decodes ``U&"pg_r\\0065ad_file"`` to ``pg_read_file`` as the server does, so the
    statement guard refuses it even without a database's catalog."""
    from verifiedsql.profiles import profile_for

    with pytest.raises(UnsafeSQLError) as refused:
        check_query(UNICODE_NAME, profile_for("postgresql"))
    assert refused.value.construct == "pg_read_file()" and refused.value.layer == "statement"


def test_unicode_escaped_name_refused_by_each_layer(worlds: Worlds) -> None:
    _refused_by_each_layer(_database(worlds("postgresql")), UNICODE_NAME, "pg_read_file")


def test_unicode_escaped_name_through_both_apis(worlds: Worlds, hostile: HostileModel) -> None:
    world = worlds("postgresql")
    for api in world.apis():
        hostile.serve(UNICODE_NAME)
        outcome = world.ask(api, "How many orders are there?")
        assert not outcome.answered
        layers = {layer_of(status, error) for _, _, status, error in outcome.attempts()}
        assert layers == {"statement guard"}, outcome.attempts()


# -------------------------------------------------------------------- 13: Snowflake and DuckDB

REFUSED = [
    ("snowflake", "SELECT SYSTEM$CANCEL_ALL_QUERIES(1)", "system$cancel_all_queries"),
    ("snowflake", "SELECT system$abort_session(1)", "system$abort_session"),
    ("snowflake", "SELECT SYSTEM$USER_TASK_CANCEL_ONGOING_EXECUTIONS('nightly')",
     "system$user_task_cancel_ongoing_executions"),
    ("snowflake", "SELECT SNOWFLAKE.CORTEX.COMPLETE('mistral-large', 'hello')", "complete"),
    ("snowflake", "SELECT * FROM read_csv('/etc/passwd')", "read_csv"),
    ("snowflake", "SELECT * FROM TABLE(INFER_SCHEMA(LOCATION => '@stage'))", "infer_schema"),
    ("duckdb", "SELECT * FROM read_csv('/etc/passwd')", "read_csv"),
    ("duckdb", "SELECT setseed(0.5)", "setseed"),
    ("duckdb", "SELECT sleep_ms(10)", "sleep_ms"),
    ("duckdb", "SELECT current_query()", "current_query"),
    ("duckdb", "SELECT * FROM duckdb_databases()", "duckdb_databases"),
    ("duckdb", "SELECT * FROM duckdb_extensions()", "duckdb_extensions"),
    ("duckdb", "SELECT * FROM pragma_database_size()", "pragma_database_size"),
    ("postgresql", "SELECT current_setting('data_directory')", "current_setting"),
    ("postgresql", "SELECT pg_catalog.pg_advisory_lock_shared(42)", "pg_advisory_lock_shared"),
    ("postgresql", "SELECT table_to_xml('orders', true, false, '')", "table_to_xml"),
]


@pytest.mark.parametrize(("dialect", "sql", "function"), REFUSED, ids=[f"{d}-{f}" for d, _, f in REFUSED])
def test_functions_refused_by_each_layer(dialect: str, sql: str, function: str, worlds: Worlds) -> None:
    _refused_by_each_layer(_database(worlds(dialect)), sql, function)


API_PAYLOADS = [
    ("snowflake", "SELECT SYSTEM$CANCEL_ALL_QUERIES(1)", "system$cancel_all_queries"),
    ("snowflake", "SELECT SYSTEM$USER_TASK_CANCEL_ONGOING_EXECUTIONS('nightly')",
     "system$user_task_cancel_ongoing_executions"),
    ("snowflake", "SELECT SNOWFLAKE.CORTEX.COMPLETE('mistral-large', 'hello')", "complete"),
    ("snowflake", "SELECT * FROM read_csv('/etc/passwd')", "read_csv"),
    ("duckdb", "SELECT setseed(0.5)", "setseed"),
    ("duckdb", "SELECT * FROM duckdb_databases()", "duckdb_databases"),
]


@pytest.mark.parametrize(("dialect", "sql", "function"), API_PAYLOADS, ids=[f"{d}-{f}" for d, _, f in API_PAYLOADS])
def test_functions_refused_through_the_apis(dialect: str, sql: str, function: str, worlds: Worlds,
                                           hostile: HostileModel) -> None:
    world = worlds(dialect)
    for api in world.apis():
        hostile.serve(sql)
        outcome = world.ask(api, "How many orders are there?")
        assert not outcome.answered, (api, outcome.rows)
        layers = {layer_of(status, error) for _, _, status, error in outcome.attempts()}
        assert layers == {"statement guard"}, outcome.attempts()  # refused before it reached the engine
        assert function in (outcome.report.candidates[0].error or "").lower()


SNOWFLAKE_TEXTS = [
    ("SELECT SYSTEM$WAIT(1)", "system$wait"),
    ('SELECT "SNOWFLAKE"."CORTEX"."COMPLETE"(\'m\', \'p\')', "complete"),
    ("SELECT 'it\\'s', SYSTEM$ABORT_SESSION(1), 'x'", "system$abort_session"),  # a backslash-escaped quote
    ("SELECT $$'$$, SYSTEM$CANCEL_QUERY('1'), 'x'", "system$cancel_query"),  # a quote inside $$ ... $$
    ("SELECT /* ' */ read_csv('/etc/passwd') -- '", "read_csv"),  # a quote inside a comment
]


@pytest.mark.parametrize(("sql", "function"), SNOWFLAKE_TEXTS)
def test_snowflake_engine_guard_scans_the_text_itself(sql: str, function: str, worlds: Worlds) -> None:
    """The Snowflake engine guard's own lexical scan (independent of sqlglot) finds the call behind
    quoting tricks; with fakesnow's DuckDB catalog, file readers are table functions outside the allowlist."""
    from verifiedsql.guard import function_calls as calls

    policy = _database(worlds("snowflake")).functions()  # type: ignore[attr-defined]
    hit = policy.first_refusal(calls.statement_text(sql), written=False)
    assert hit is not None and hit[0].lower() == function, hit


# ---------------------------------------------------------------- ordinary functions stay allowed

ORDINARY = {
    "sqlite": "SELECT status, count(*), sum(amount), avg(amount), min(amount), max(amount), lower(status), "
              "upper(status), substr(status, 1, 2), round(avg(amount), 1), cast(sum(amount) AS INTEGER), "
              "coalesce(status, '?'), length(status), abs(min(amount)), strftime('%Y', 'now'), "
              "group_concat(id, ','), date('now') FROM orders GROUP BY status",
    "duckdb": "SELECT status, count(*), sum(amount), avg(amount), min(amount), max(amount), lower(status), "
              "upper(status), substr(status, 1, 2), round(avg(amount), 1), cast(sum(amount) AS INTEGER), "
              "coalesce(status, '?'), length(status), abs(min(amount)), strftime(current_date, '%Y'), "
              "date_trunc('month', current_date), extract(year FROM current_date), string_agg(status, ','), "
              "now(), random() < 2 FROM orders GROUP BY status",
    "postgresql": "SELECT status, count(*), sum(amount), avg(amount), min(amount), max(amount), lower(status), "
                  "upper(status), substr(status, 1, 2), round(avg(amount), 1), cast(sum(amount) AS INTEGER), "
                  "coalesce(status, '?'), length(status), abs(min(amount)), to_char(now(), 'YYYY'), "
                  "date_trunc('month', now()), extract(year FROM current_date), string_agg(status, ','), "
                  "random() < 2, trim(both ' ' from status), position('p' in status) FROM orders GROUP BY status",
    "snowflake": "SELECT status, COUNT(*), SUM(amount), AVG(amount), MIN(amount), MAX(amount), LOWER(status), "
                 "UPPER(status), SUBSTR(status, 1, 2), ROUND(AVG(amount), 1), CAST(SUM(amount) AS INTEGER), "
                 "COALESCE(status, '?'), LENGTH(status), ABS(MIN(amount)), YEAR(CURRENT_DATE), "
                 "DATE_TRUNC('month', CURRENT_DATE), IFF(COUNT(*) > 1, 'many', 'one'), LISTAGG(status, ',') "
                 "FROM orders GROUP BY status",
}


@pytest.mark.parametrize("dialect", list(ORDINARY))
def test_ordinary_functions_run_on_every_engine(dialect: str, worlds: Worlds) -> None:
    database = _database(worlds(dialect))
    for guard in (True, False):
        result = database.run_query(ORDINARY[dialect], guard=guard)
        assert len(result.rows) == 4, (guard, result)  # shipped, pending, cancelled, returned
