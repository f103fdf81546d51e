"""The caller's transaction, hooks and session state stay theirs (issue 17, findings 3, 8 and 9).

* Wrapping a connection or asking a question never commits, rolls back or joins the caller's open
  transaction: ``verifiedsql.dbapi`` refuses a question inside one with ``OpenTransactionError`` (a PEP 249
  ``InterfaceError``) on every engine; ``create_engine`` answers on a connection of its own.
* The caller's SQLite authorizer and progress handler survive a question.
* On PostgreSQL, a generated query leaves no advisory lock or backup mode behind, a powerful login role
  is warned about, and ``question_role`` runs each query under a least-privilege role.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from fakes import ScriptedChatModel, fenced

import verifiedsql
import verifiedsql.dbapi as dbapi
from verifiedsql import backends, errors
from verifiedsql.guard import readonly
from verifiedsql.profiles import profile_for

COUNT = "SELECT COUNT(*) FROM t"


def _model(sql: str = COUNT) -> ScriptedChatModel:
    return ScriptedChatModel(lambda request: fenced(sql))


# ------------------------------------------------------------------------------- the caller's transaction


class RawWorld:
    """One raw driver connection with table ``t`` (one committed row), and a way to count committed rows
    from elsewhere."""

    def __init__(self, raw: Any, committed: Callable[[], int], begin: str = "BEGIN") -> None:
        self.raw, self.committed, self.begin = raw, committed, begin

    def run(self, sql: str) -> None:
        cursor = self.raw.cursor()
        cursor.execute(sql)
        cursor.close()

    def count_here(self) -> int:
        cursor = self.raw.cursor()
        cursor.execute(COUNT)
        (count,) = cursor.fetchone()
        cursor.close()
        return int(count)


@pytest.fixture(params=["sqlite", "duckdb", "postgresql", "postgresql-autocommit", "snowflake"])
def raw_world(request: pytest.FixtureRequest, tmp_path: Path, engine_factory) -> Iterator[RawWorld]:
    kind = request.param
    if kind == "sqlite":
        path = tmp_path / "t.sqlite"
        raw = sqlite3.connect(path)
        raw.execute("CREATE TABLE t (x INTEGER)")
        raw.execute("INSERT INTO t VALUES (1)")
        raw.commit()

        def committed() -> int:
            with sqlite3.connect(path) as other:
                return other.execute(COUNT).fetchone()[0]

        world = RawWorld(raw, committed)
    elif kind == "duckdb":
        import duckdb

        raw = duckdb.connect(str(tmp_path / "t.duckdb"))
        raw.execute("CREATE TABLE t (x INTEGER)")
        raw.execute("INSERT INTO t VALUES (1)")
        world = RawWorld(raw, lambda: raw.cursor().execute(COUNT).fetchone()[0])  # a duplicate: own transaction
        world.run = lambda sql: raw.execute(sql)  # type: ignore[method-assign]  # raw.cursor() is a duplicate
        world.count_here = lambda: raw.execute(COUNT).fetchone()[0]  # type: ignore[method-assign]
    elif kind.startswith("postgresql"):
        import psycopg

        engine = engine_factory("postgresql")
        url = engine.url.set(drivername="postgresql").render_as_string(False)
        with psycopg.connect(url, autocommit=True) as setup:
            setup.execute("CREATE TABLE t (x INTEGER)")
            setup.execute("INSERT INTO t VALUES (1)")
        raw = psycopg.connect(url, autocommit=kind.endswith("autocommit"))

        def committed() -> int:
            with psycopg.connect(url) as other:
                return other.execute(COUNT).fetchone()[0]

        world = RawWorld(raw, committed)
        if not raw.autocommit:
            world.begin = "SELECT 1"  # psycopg opens the transaction itself
    else:
        import snowflake.connector

        engine_factory("snowflake")  # creates db1.schema1 and keeps fakesnow patched
        raw = snowflake.connector.connect(database="db1", schema="schema1")
        raw.cursor().execute("CREATE TABLE t (x INTEGER)")
        raw.cursor().execute("INSERT INTO t VALUES (1)")
        other = snowflake.connector.connect(database="db1", schema="schema1")
        world = RawWorld(raw, lambda: other.cursor().execute(COUNT).fetchone()[0])
    yield world
    raw.close()


def _open_transaction(world: RawWorld) -> None:
    world.run(world.begin)
    world.run("INSERT INTO t VALUES (2)")
    assert world.count_here() == 2 and world.committed() == 1


def test_wrapping_keeps_the_pending_rows(raw_world: RawWorld) -> None:
    """Finding 3: wrapping a DuckDB connection inside a transaction lost its pending row."""
    _open_transaction(raw_world)
    conn = dbapi.connect(raw_world.raw, llm=_model(), candidates=1)
    assert raw_world.count_here() == 2, "wrapping ended the caller's transaction"
    conn.commit()
    assert raw_world.committed() == 2


def test_question_inside_a_transaction_is_refused_and_the_rows_are_kept(raw_world: RawWorld) -> None:
    """Finding 3: a question mid-transaction is refused with a typed PEP 249 error, the same on every
    engine, and the transaction is neither joined nor ended."""
    conn = dbapi.connect(raw_world.raw, llm=_model(), candidates=1)
    _open_transaction(raw_world)
    cursor = conn.cursor()
    with pytest.raises(dbapi.OpenTransactionError, match="commit or roll back") as caught:
        cursor.execute("How many rows are there?", mode="question")
    assert isinstance(caught.value, dbapi.InterfaceError) and isinstance(caught.value, errors.OpenTransactionError)
    assert raw_world.count_here() == 2
    conn.commit()
    assert raw_world.committed() == 2
    cursor.execute("How many rows are there?", mode="question")  # idle again: answered
    assert cursor.fetchall() == [(2,)]


@pytest.mark.parametrize("dialect", backends.names())
def test_engine_question_inside_a_transaction_leaves_it_alone(dialect: str, engine_factory) -> None:
    """Through create_engine the question runs on a connection of its own: the caller's open transaction
    keeps its pending row and commits it afterwards."""
    seed = engine_factory(dialect)
    with seed.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE t (x INTEGER)")
        conn.exec_driver_sql("INSERT INTO t VALUES (1)")
    engine = verifiedsql.create_engine(seed.url, llm=_model(), candidates=1)
    try:
        with engine.connect() as conn:
            conn.exec_driver_sql("INSERT INTO t VALUES (2)")
            assert conn.execute(verifiedsql.ask("How many rows are there?")).all() == [(1,)]
            assert conn.exec_driver_sql(COUNT).scalar() == 2
            conn.commit()
        with engine.connect() as conn:
            assert conn.exec_driver_sql(COUNT).scalar() == 2
    finally:
        engine.dispose()


# ----------------------------------------------------------------------------------------- SQLite hooks


def _deny_delete(action: int, *_: Any) -> int:
    return sqlite3.SQLITE_DENY if action == sqlite3.SQLITE_DELETE else sqlite3.SQLITE_OK


def _sqlite_file(tmp_path: Path) -> Path:
    path = tmp_path / "hooks.sqlite"
    with sqlite3.connect(path) as setup:
        setup.execute("CREATE TABLE t (x INTEGER)")
        setup.executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(50)])
    return path


def _assert_hooks_hold(raw: sqlite3.Connection, progress_calls: list[int]) -> None:
    with pytest.raises(sqlite3.DatabaseError, match="not authorized"):
        raw.execute("DELETE FROM t")
    before = len(progress_calls)
    raw.execute("SELECT COUNT(*) FROM t a, t b").fetchone()
    assert len(progress_calls) > before, "the progress handler was removed"


def test_sqlite_hooks_set_on_the_raw_connection_survive_a_question(tmp_path: Path) -> None:
    """Finding 9: the caller's authorizer denying DELETE, and their progress handler, on a raw sqlite3
    connection are still installed after a question through the wrapper."""
    raw = sqlite3.connect(_sqlite_file(tmp_path))
    calls: list[int] = []
    raw.set_authorizer(_deny_delete)
    raw.set_progress_handler(lambda: calls.append(1) or 0, 100)
    conn = dbapi.connect(raw, llm=_model(), candidates=1)
    cursor = conn.cursor()
    cursor.execute("How many rows are there?", mode="question")
    assert cursor.fetchall() == [(50,)]
    _assert_hooks_hold(raw, calls)
    conn.close()


def test_sqlite_hooks_set_through_the_wrapper_survive_a_question_on_the_callers_connection(monkeypatch) -> None:
    """Where the question has to run on the caller's own connection (an in-memory database too large to
    copy), the hooks set through the wrapper are put back afterwards."""
    from verifiedsql.guard import bounded

    monkeypatch.setattr(bounded, "SNAPSHOT_MAX_BYTES", 0)  # no copy: the guard runs on the caller's connection
    raw = sqlite3.connect(":memory:")
    raw.execute("CREATE TABLE t (x INTEGER)")
    raw.executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(50)])
    raw.commit()
    conn = dbapi.connect(raw, llm=_model(), candidates=1)
    calls: list[int] = []
    conn.set_authorizer(_deny_delete)
    conn.set_progress_handler(lambda: calls.append(1) or 0, 100)
    cursor = conn.cursor()
    cursor.execute("How many rows are there?", mode="question")
    assert cursor.fetchall() == [(50,)]
    _assert_hooks_hold(raw, calls)
    conn.close()


def test_sqlite_hooks_of_a_pooled_engine_connection_survive_a_question(tmp_path: Path) -> None:
    """Hooks the caller installs on every pooled connection (a ``connect`` listener) are still there after
    a question through create_engine."""
    calls: list[int] = []
    engine = verifiedsql.create_engine(f"sqlite:///{_sqlite_file(tmp_path)}", llm=_model(), candidates=1,
                                       pool_size=2, max_overflow=0, poolclass=sa.pool.QueuePool)

    @sa.event.listens_for(engine, "connect")
    def install(dbapi_connection: sqlite3.Connection, _record: Any) -> None:
        dbapi_connection.set_authorizer(_deny_delete)
        dbapi_connection.set_progress_handler(lambda: calls.append(1) or 0, 100)

    try:
        with engine.connect() as conn:
            assert conn.execute(verifiedsql.ask("How many rows are there?")).all() == [(50,)]
        with engine.connect() as first, engine.connect() as second:  # both pooled connections, one the question's
            for conn in (first, second):
                _assert_hooks_hold(conn.connection.driver_connection, calls)
    finally:
        engine.dispose()


# ------------------------------------------------------------------------------ PostgreSQL session state


@pytest.fixture
def pg(engine_factory) -> Iterator[Any]:
    """An autocommit psycopg connection to a fresh database on the test server."""
    import psycopg

    engine = engine_factory("postgresql")
    with psycopg.connect(engine.url.set(drivername="postgresql").render_as_string(False), autocommit=True) as raw:
        yield raw


def _advisory_locks(raw: Any) -> set[tuple[int, str]]:
    rows = raw.execute("SELECT objid::int, mode FROM pg_locks WHERE locktype = 'advisory' "
                       "AND pid = pg_backend_pid()").fetchall()
    return {(objid, mode) for objid, mode in rows}


def _run_guarded(raw: Any, sql: str, monkeypatch) -> None:
    """``sql`` through the PostgreSQL engine guard with its function check off (the net behind it is
    what is tested here: a function the allowlist lets through, or a wrapper that hides the call)."""
    monkeypatch.setattr(readonly, "_plan_refusal", lambda *args, **kwargs: None)
    with readonly.postgresql(raw, sql, profile_for("postgresql"), 2.0) as rows:
        rows.fetchmany(10)


def test_advisory_lock_does_not_outlive_the_question(pg: Any, monkeypatch) -> None:
    """Finding 8: pg_advisory_lock_shared(42) stayed held after the question; the caller's own lock stays."""
    pg.execute("SELECT pg_advisory_lock(7)")  # the caller's
    _run_guarded(pg, "SELECT pg_advisory_lock_shared(42), pg_advisory_lock(43) FROM generate_series(1, 3)",
                 monkeypatch)
    assert _advisory_locks(pg) == {(7, "ExclusiveLock")}
    pg.execute("SELECT pg_advisory_lock_shared(7)")  # the caller's lock in another mode: not theirs to lose
    _run_guarded(pg, "SELECT pg_advisory_lock_shared(42)", monkeypatch)
    assert _advisory_locks(pg) == {(7, "ExclusiveLock"), (7, "ShareLock")}
    assert pg.info.transaction_status == 0  # idle


def test_session_settings_do_not_outlive_the_question(pg: Any, monkeypatch) -> None:
    """A session-level set_config in the question is reverted with its rolled-back transaction."""
    work_mem = pg.execute("SHOW work_mem").fetchone()[0]
    _run_guarded(pg, "SELECT set_config('work_mem', '77MB', false), set_config('search_path', 'x', false)",
                 monkeypatch)
    assert pg.execute("SHOW work_mem").fetchone()[0] == work_mem
    assert pg.execute("SHOW search_path").fetchone()[0] != "x"


def test_backup_mode_does_not_outlive_the_question(pg: Any, monkeypatch) -> None:
    """Finding 8: pg_backup_start was left running after the question."""
    import psycopg

    _run_guarded(pg, "SELECT pg_backup_start('verifiedsql-test', true) IS NOT NULL", monkeypatch)
    with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState):  # "backup is not in progress"
        pg.execute("SELECT pg_backup_stop(false)")


def test_session_state_check_undoes_exactly_what_appeared(pg: Any) -> None:
    """The net on its own: what appeared between the snapshot and ``settle`` is undone, the rest kept."""
    from verifiedsql.guard import session_state

    pg.execute("LISTEN mine")
    before = session_state.snapshot(pg.cursor())
    pg.execute("SELECT pg_advisory_lock(-5, 9), pg_advisory_lock(-(2^40)::bigint)")
    pg.execute("LISTEN theirs")
    undone = session_state.settle(pg, before)
    assert len(undone) == 3
    assert session_state.snapshot(pg.cursor()) == before


def test_powerful_login_role_is_warned_about(engine_factory, caplog) -> None:
    """The test server's login role is a superuser: logged on the ``verifiedsql`` logger and reported."""
    engine = verifiedsql.create_engine(load_t(engine_factory("postgresql")).url, llm=_model(), candidates=1)
    try:
        with caplog.at_level(logging.WARNING, logger="verifiedsql"), engine.connect() as conn:
            report = conn.execute(verifiedsql.ask("How many rows are there?")).verification
        assert report.warnings and "SUPERUSER" in report.warnings[0] and "question_role" in report.warnings[0]
        assert "warnings" in report.to_dict()
        assert any("SUPERUSER" in record.getMessage() for record in caplog.records if record.name == "verifiedsql")
    finally:
        engine.dispose()


def load_t(engine: sa.Engine) -> sa.Engine:
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE t (x INTEGER)")
        conn.exec_driver_sql("INSERT INTO t VALUES (1)")
    return engine


def test_question_role_runs_each_query_under_it(engine_factory) -> None:
    seed = load_t(engine_factory("postgresql"))
    with seed.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.exec_driver_sql("DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'vsql_reader') "
                             "THEN CREATE ROLE vsql_reader NOLOGIN; END IF; END $$")
        conn.exec_driver_sql("GRANT pg_read_all_data TO vsql_reader")
    engine = verifiedsql.create_engine(seed.url, llm=_model("SELECT current_user AS u, COUNT(*) AS n FROM t"),
                                       candidates=1, question_role="vsql_reader")
    try:
        with engine.connect() as conn:
            result = conn.execute(verifiedsql.ask("Who am I, and how many rows are there?"))
            assert result.all() == [("vsql_reader", 1)]
            assert result.verification.warnings == []  # the role questions run under is not powerful
    finally:
        engine.dispose()
    missing = verifiedsql.create_engine(seed.url, llm=_model(), candidates=1, question_role="no_such_role")
    try:
        with missing.connect() as conn, pytest.raises(errors.ConfigurationError, match="CREATE ROLE no_such_role"):
            conn.execute(verifiedsql.ask("How many rows are there?"))
    finally:
        missing.dispose()
    with pytest.raises(errors.ConfigurationError, match="PostgreSQL-only"):
        with verifiedsql.create_engine("sqlite://", llm=_model(), question_role="r").connect() as conn:
            conn.exec_driver_sql("CREATE TABLE t (x INTEGER)")
            conn.execute(verifiedsql.ask("How many rows are there?"))
