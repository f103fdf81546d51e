"""Server state and settings read through the catalog (issue 33: findings 1, 2, 9 and 14).

* Another session's SQL (an ``ALTER ROLE ... PASSWORD``) is not readable through the statistics functions
  (``pg_stat_get_backend_activity`` over ``pg_stat_get_backend_idset``): every built-in function the server
  marks not parallel-safe is a server-state reader, and so is every ``pg_stat_*`` view built on one. Each
  layer alone refuses them, with and without ``schema=`` and ``question_role``, through both APIs.
* Settings set with ``ALTER DATABASE/ROLE ... SET`` (``pg_db_role_setting.setconfig``,
  ``pg_roles.rolconfig``) are refused by each layer alone: the settings columns come from the catalog.
* The engine guard alone refuses a whole-row read of a secret catalog (``a::text`` of ``pg_authid``,
  ``row_to_json`` of ``pg_statistic``), not only a read of the secret column by name.
* Refused functions under other names: DuckDB's ``pg_sleep`` macro (a macro over ``sleep_ms``, on DuckDB
  and under fakesnow), PostgreSQL's ``pg_current_xact_id`` and ``pg_get_replication_slots``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from conftest import HOSTILE_OPTIONS, HostileModel, Outcome, World, Worlds

import verifiedsql
from verifiedsql.config import LLMSettings, Options
from verifiedsql.db.database import Database
from verifiedsql.errors import NoAnswerError, UnsafeSQLError
from verifiedsql.guard.safety import check_query

pytestmark = pytest.mark.timeout(120)

QUESTION = "How many orders are there?"
PASSWORD = "app-password-5c1e0f"  # what another session's ALTER ROLE carries
JWT = "jwt-secret-77d2a9"  # ALTER DATABASE ... SET app.jwt_secret
ROLE_TOKEN = "role-token-0b3f6e"  # ALTER ROLE ... SET app.api_token
READER = "vsql_hostile_reader"


def _database(world: World, **options: Any) -> Database:
    return Database(world.engine, Options(llm=LLMSettings(), statement_timeout_s=2.0, **options))


def refused_by_each_layer(database: Database, sql: str, named: str) -> None:
    """The statement guard alone (the database's policy and secret relations: ``Database._check``) and the
    engine guard alone (``guard=False``) each refuse ``sql``, the refusal naming ``named``."""
    with pytest.raises(UnsafeSQLError) as statement:
        database._check(sql)
    assert statement.value.layer == "statement" and named in str(statement.value).lower(), statement.value
    with pytest.raises(UnsafeSQLError) as engine:
        database.run_query(sql, guard=False)
    assert engine.value.layer == "engine", engine.value


def leaked(outcome: Outcome, hostile: HostileModel, *secrets: str) -> list[str]:
    shown = hostile.prompt_text() + json.dumps(outcome.report.to_dict(), default=str) + repr(outcome.rows)
    return [secret for secret in secrets if secret in shown]


def _admin(world: World) -> psycopg.Connection:
    return psycopg.connect(world.engine.url.set(drivername="postgresql").render_as_string(False), autocommit=True)


@pytest.fixture(scope="module")
def postgres(worlds: Worlds) -> Iterator[World]:
    """The PostgreSQL shop with: another session whose last statement was an ``ALTER ROLE ... PASSWORD``
    (left open, idle), database- and role-level settings holding secrets, ``question_role``'s role, and
    column statistics (``ANALYZE``)."""
    world = worlds("postgresql")
    admin = _admin(world)
    database = admin.execute("SELECT current_database()").fetchone()[0]  # type: ignore[index]
    admin.execute("DROP ROLE IF EXISTS vsql_hostile_app")
    admin.execute("CREATE ROLE vsql_hostile_app LOGIN")
    admin.execute(f'ALTER DATABASE "{database}" SET app.jwt_secret = \'{JWT}\'')
    admin.execute(f"ALTER ROLE vsql_hostile_app SET app.api_token = '{ROLE_TOKEN}'")
    admin.execute(f"DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{READER}') "
                  f"THEN CREATE ROLE {READER} NOLOGIN; END IF; END $$")
    admin.execute(f"GRANT pg_read_all_data, pg_read_all_stats TO {READER}")
    admin.execute("ANALYZE orders")
    other = _admin(world)
    other.execute(f"ALTER ROLE vsql_hostile_app PASSWORD '{PASSWORD}'")
    try:
        yield world
    finally:
        other.close()
        admin.execute(f'ALTER DATABASE "{database}" RESET app.jwt_secret')
        admin.execute("DROP ROLE IF EXISTS vsql_hostile_app")
        admin.close()


# ------------------------------------------------------- 1: other sessions' SQL, statistics, server state

ACTIVITY = "SELECT pg_stat_get_backend_activity(s) FROM pg_stat_get_backend_idset() AS s"
SERVER_STATE = {  # SQL -> the function or relation its refusal names
    ACTIVITY: "pg_stat_get_backend_idset",
    "SELECT pg_catalog.pg_stat_get_backend_activity(1)": "pg_stat_get_backend_activity",
    "SELECT * FROM pg_stat_get_wal()": "pg_stat_get_wal",
    "SELECT relname, seq_scan FROM pg_stat_user_tables": "pg_stat_user_tables",
    "SELECT datname, xact_commit FROM pg_catalog.pg_stat_database": "pg_stat_database",
    "SELECT inet_server_addr()": "inet_server_addr",
}


def test_another_sessions_password_is_really_there(postgres: World) -> None:
    """The attack works when run as the caller would run it directly: the secret is on the server."""
    with _admin(postgres) as admin:
        texts = [row[0] for row in admin.execute(ACTIVITY).fetchall()]
    assert any(PASSWORD in (text or "") for text in texts)


@pytest.mark.parametrize("sql", list(SERVER_STATE))
@pytest.mark.parametrize("options", [{}, {"schema": "public"}, {"question_role": READER}],
                         ids=["plain", "schema", "question_role"])
def test_server_state_readers_refused_by_each_layer(sql: str, options: dict[str, Any], postgres: World) -> None:
    refused_by_each_layer(_database(postgres, **options), sql, SERVER_STATE[sql])


@pytest.mark.parametrize("options", [{}, {"schema": "public"}, {"question_role": READER}],
                         ids=["plain", "schema", "question_role"])
def test_another_sessions_password_never_reaches_the_model(options: dict[str, Any], postgres: World,
                                                           hostile: HostileModel) -> None:
    world = postgres.variant(hostile.url, **options)
    try:
        for api in world.apis():
            hostile.serve(ACTIVITY)
            outcome = world.ask(api, QUESTION)
            assert not outcome.answered, (api, outcome.rows)
            assert all(status == "unsafe" for _, _, status, _ in outcome.attempts()), outcome.attempts()
            assert not leaked(outcome, hostile, PASSWORD)
    finally:
        world.close()


def test_harmless_catalog_reads_still_run(postgres: World) -> None:
    """What the new rules must not refuse: ``pg_roles`` without its settings, ``age`` of dates,
    ``current_schema``, ``pg_tables``, ``count(*)`` over a catalog with settings columns."""
    database = _database(postgres)
    for sql in ("SELECT rolname FROM pg_roles WHERE rolname = 'vsql_hostile_app'",
                "SELECT age(timestamp '2024-02-01', timestamp '2024-01-01'), current_schema()",
                "SELECT count(*) FROM pg_tables WHERE tablename = 'orders'",
                "SELECT count(*) > 0 FROM pg_proc"):
        for guard in (True, False):
            assert len(database.run_query(sql, guard=guard).rows) == 1, (sql, guard)


# ------------------------------------------------------------------ 2: database and role settings

SETTINGS = {
    "SELECT unnest(setconfig) FROM pg_db_role_setting": "pg_db_role_setting",
    "SELECT rolname, unnest(rolconfig) FROM pg_roles": "rolconfig",
    "SELECT r::text FROM pg_catalog.pg_roles r WHERE rolname = 'vsql_hostile_app'": "rolconfig",
    "SELECT usename, useconfig FROM pg_user": "useconfig",
}


def test_the_settings_are_really_there(postgres: World) -> None:
    with _admin(postgres) as admin:
        stored = " ".join(map(str, admin.execute("SELECT setconfig FROM pg_db_role_setting").fetchall()))
    assert JWT in stored and ROLE_TOKEN in stored


@pytest.mark.parametrize("sql", list(SETTINGS))
@pytest.mark.parametrize("options", [{}, {"question_role": READER}], ids=["plain", "question_role"])
def test_settings_refused_by_each_layer(sql: str, options: dict[str, Any], postgres: World) -> None:
    refused_by_each_layer(_database(postgres, **options), sql, SETTINGS[sql])


@pytest.mark.parametrize("options", [{}, {"question_role": READER}], ids=["plain", "question_role"])
def test_settings_never_reach_the_model(options: dict[str, Any], postgres: World, hostile: HostileModel) -> None:
    world = postgres.variant(hostile.url, **options)
    try:
        for sql in SETTINGS:
            for api in world.apis():
                hostile.serve(sql)
                outcome = world.ask(api, QUESTION)
                assert not outcome.answered, (sql, api, outcome.rows)
                assert not leaked(outcome, hostile, JWT, ROLE_TOKEN), sql
    finally:
        world.close()


# ---------------------------------------------------------------------- 9: whole-row reads, engine alone

WHOLE_ROWS = [
    "SELECT a::text FROM pg_authid a",
    "SELECT row_to_json(a) FROM pg_catalog.pg_authid a WHERE rolname = 'vsql_hostile_app'",
    "SELECT s::text FROM pg_statistic s",
    "SELECT count(*) FROM pg_authid a WHERE a::text LIKE '%SCRAM%'",
]


@pytest.mark.parametrize("sql", WHOLE_ROWS)
def test_whole_row_reads_of_secret_catalogs_refused_by_the_engine_guard(sql: str, postgres: World) -> None:
    with pytest.raises(UnsafeSQLError) as refused:
        _database(postgres).run_query(sql, guard=False)
    assert refused.value.layer == "engine" and "pg_catalog.pg_" in refused.value.construct, refused.value


# ------------------------------------------------------------------ 14: refused functions, other names

OTHER_NAMES = [
    ("postgresql", "SELECT pg_current_xact_id()", "pg_current_xact_id"),
    ("postgresql", "SELECT * FROM pg_get_replication_slots()", "pg_get_replication_slots"),
    ("postgresql", "SELECT slot_name FROM pg_catalog.pg_get_replication_slots()", "pg_get_replication_slots"),
    ("duckdb", "SELECT pg_sleep(0.01)", "pg_sleep"),
    ("snowflake", "SELECT pg_sleep(0.01)", "pg_sleep"),
]


@pytest.mark.parametrize(("dialect", "sql", "function"), OTHER_NAMES, ids=[f"{d}-{f}" for d, _, f in OTHER_NAMES])
def test_refused_functions_under_other_names(dialect: str, sql: str, function: str, worlds: Worlds) -> None:
    database = _database(worlds(dialect))
    with pytest.raises(UnsafeSQLError) as statement:
        check_query(sql, database.profile, database.functions())
    assert function in statement.value.construct.lower(), statement.value
    with pytest.raises(UnsafeSQLError) as engine:
        database.run_query(sql, guard=False)
    assert engine.value.layer == "engine" and function in str(engine.value).lower(), engine.value


@pytest.mark.parametrize(("dialect", "sql", "function"), OTHER_NAMES, ids=[f"{d}-{f}" for d, _, f in OTHER_NAMES])
def test_refused_functions_under_other_names_through_the_apis(dialect: str, sql: str, function: str,
                                                              worlds: Worlds, hostile: HostileModel) -> None:
    world = worlds(dialect)
    for api in world.apis():
        hostile.serve(sql)
        outcome = world.ask(api, QUESTION)
        assert not outcome.answered, (api, outcome.rows)
        assert function in (outcome.report.candidates[0].error or "").lower()


# ------------------------------------------------------------------------------- the asyncio path

def test_server_state_and_settings_through_the_async_engine(postgres: World, hostile: HostileModel) -> None:
    """Findings 1 and 2 through ``create_async_engine`` (asyncpg): it answers on a synchronous twin, whose
    guards refuse the same SQL."""
    async def ask(sql: str) -> Any:
        engine = verifiedsql.create_async_engine(postgres.engine.url.set(drivername="postgresql+asyncpg"),
                                                 **dict(HOSTILE_OPTIONS, llm_base_url=hostile.url))
        try:
            hostile.serve(sql)
            async with engine.connect() as conn:
                return (await conn.execute(verifiedsql.ask(QUESTION))).all()
        except NoAnswerError as error:
            return error.report
        finally:
            await engine.dispose()

    for sql in (ACTIVITY, *SETTINGS):
        report = asyncio.run(ask(sql))
        assert not isinstance(report, list), (sql, report)
        assert report.candidates[0].status == "unsafe", (sql, report.candidates[0])
        shown = hostile.prompt_text() + json.dumps(report.to_dict(), default=str)
        assert not [s for s in (PASSWORD, JWT, ROLE_TOKEN) if s in shown], sql
