"""Sample values in bulk (``verifiedsql.db.samples``) and the reuse of SQLite read-only connections (issue 34).

A batch of tables read in one ``UNION ALL`` gives each table the samples a query of its own gives (same
values, same types, same order), on every engine; a batch the engine rejects is read one table at a time;
and a question's statements share one read-only SQLite connection instead of opening one each.
"""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa
from fakes import ScriptedChatModel, fenced

import verifiedsql
import verifiedsql.guard.bounded as bounded
from verifiedsql.config import Options
from verifiedsql.db import samples
from verifiedsql.db.database import Database
from verifiedsql.db.schema import Column, Table


def options(**overrides: Any) -> Options:
    return Options.build({"sample_values": 3, **overrides})


def test_a_batch_reads_what_a_query_per_table_reads(shop_engine: sa.Engine) -> None:
    db = Database(shop_engine, options())
    bulk = db.reflect()
    with db._connect() as conn:
        for table in bulk.tables:
            one = db._with_samples(conn, table.name, tuple(Column(c.name, c.type, c.nullable, c.primary_key)
                                                           for c in table.columns))
            assert one == table.columns
            assert [tuple(map(type, c.samples)) for c in one] == [tuple(map(type, c.samples)) for c in table.columns]
    assert any(c.samples for t in bulk.tables for c in t.columns)


def test_a_batch_the_engine_rejects_is_read_one_table_at_a_time(shop_engine: sa.Engine,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    eager = Database(shop_engine, options()).reflect()
    monkeypatch.setattr(samples, "batch_sql", lambda *args, **kwargs: "SELECT no_such_column FROM no_such_table")
    assert Database(shop_engine, options()).reflect() == eager


def test_duckdb_reads_a_batch_unoptimized_behind_the_engine_guard(tmp_path: Any) -> None:
    """DuckDB's sample batches run with the optimizer off (``readonly.duckdb``'s ``optimize``), on the guard's
    duplicate connection only: the user's connection, and the guard's next statement, keep the optimizer;
    and a statement run that way still passes the engine guard."""
    engine = sa.create_engine(f"duckdb:///{tmp_path / 'small.duckdb'}")
    with engine.begin() as conn:
        for i in range(3):
            conn.exec_driver_sql(f"CREATE TABLE t{i} (id INTEGER PRIMARY KEY, label TEXT)")
            conn.exec_driver_sql(f"INSERT INTO t{i} VALUES (1, 'one'), (2, 'two')")
    query = "SELECT label FROM t0 WHERE 1 = 0"  # optimized, its plan is an empty result; else a filter
    db = Database(engine, options())
    optimized: list[bool] = []
    run_on = Database._run_on

    def recording(self: Database, conn: Any, sql: str, cap: int, timeout_s: float, **engine: Any) -> Any:
        optimized.append(engine.get("optimize", True))
        return run_on(self, conn, sql, cap, timeout_s, **engine)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Database, "_run_on", recording)
        schema = db.reflect()
    assert optimized == [False] and all(c.samples for t in schema.tables for c in t.columns)

    def plan(conn: sa.Connection, **engine: Any) -> str:
        with db._guarded(conn, **engine)(conn.connection.driver_connection, query, db.profile, 5.0,
                                         plan=True) as cursor:
            return str(cursor.fetchall()[0][1])

    with db._connect() as conn:
        assert "EMPTY_RESULT" in conn.exec_driver_sql(f"EXPLAIN {query}").all()[0][1]  # the user's connection
        assert "EMPTY_RESULT" not in plan(conn, optimize=False) and "FILTER" in plan(conn, optimize=False)
        assert "EMPTY_RESULT" in plan(conn)  # the next duplicate
        assert "EMPTY_RESULT" in conn.exec_driver_sql(f"EXPLAIN {query}").all()[0][1]
        with pytest.raises(verifiedsql.UnsafeSQLError) as refused:
            db._run_on(conn, "SELECT * FROM read_text('/etc/hostname')", 10, 5.0, optimize=False)
        assert refused.value.layer == "engine"
    engine.dispose()


def test_batches_keep_to_their_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(samples, "BATCH_TABLES", 3)
    monkeypatch.setattr(samples, "BATCH_SLOTS", 5)
    tables = [Table(f"t{i}", tuple(Column(f"c{j}", "INTEGER" if j % 2 else "TEXT") for j in range(i % 4 + 1)))
              for i in range(10)]
    for typed in (False, True):
        found = samples.batches(tables, typed=typed)
        assert [t.name for b in found for t in b.tables] == [t.name for t in tables]
        assert all(len(b.tables) <= 3 and b.width <= 5 for b in found)
        for batch in found:  # a column's slot is its own within its table, and of its type when typed
            for table, slots in zip(batch.tables, batch.slots):
                assert len(set(slots)) == len(slots) == len(table.columns)


def test_a_question_opens_one_read_only_connection(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Reflection, 120 tables' samples (three batches) and the candidates' runs share one connection."""
    url = f"sqlite:///{tmp_path / 'many.sqlite'}"
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        for i in range(120):
            conn.exec_driver_sql(f"CREATE TABLE t{i} (id INTEGER PRIMARY KEY, label TEXT)")
            conn.exec_driver_sql(f"INSERT INTO t{i} VALUES (1, 'one'), (2, 'two')")
    engine.dispose()
    opened: list[int] = []
    duplicate = bounded._sqlite_duplicate

    def counting(raw: Any) -> Any:
        opened.append(1)
        return duplicate(raw)

    monkeypatch.setattr(bounded, "_sqlite_duplicate", counting)
    model = ScriptedChatModel(lambda request: fenced("SELECT COUNT(*) FROM t7"))
    verified = verifiedsql.create_engine(url, llm=model, concurrency=1, sample_values=2)
    try:
        with verified.connect() as conn:
            assert conn.execute(verifiedsql.ask("How many rows are in t7?")).all() == [(2,)]
    finally:
        verified.dispose()
    assert len(opened) == 1


def test_a_schema_beyond_every_window_is_compressed_before_the_first_call(tmp_path: Any,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """With a model whose window is unknown, a schema no window could hold (here: over 400 characters) is
    compressed before the first call, and only the tables its text shows are sampled."""
    import verifiedsql.db.database as database_module
    import verifiedsql.stages.context as context_module

    names = ["orders", "customers", "invoices", "shipments", "products", "suppliers", "warehouses", "returns"]
    url = f"sqlite:///{tmp_path / 'wide.sqlite'}"
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        for name in names:
            extra = "".join(f", {name}_extra_{k} INTEGER" for k in range(30))
            conn.exec_driver_sql(f"CREATE TABLE {name} (id INTEGER PRIMARY KEY, {name}_label TEXT{extra})")
            conn.exec_driver_sql(f"INSERT INTO {name} (id, {name}_label) VALUES (1, '{name} one')")
    engine.dispose()
    monkeypatch.setattr(database_module, "EAGER_SAMPLE_TABLES", 0)
    monkeypatch.setattr(context_module, "LARGEST_WINDOW_TOKENS", 200)
    sampled: list[str] = []
    run_on = Database._run_on

    def recording(self: Database, conn: Any, sql: str, cap: int, timeout_s: float, **engine: Any) -> Any:
        if "LIMIT 1000" in sql:
            sampled.extend(name for name in names if f"FROM {name} LIMIT" in sql)
        return run_on(self, conn, sql, cap, timeout_s, **engine)

    monkeypatch.setattr(Database, "_run_on", recording)
    model = ScriptedChatModel(lambda request: fenced("SELECT COUNT(*) FROM orders"))
    verified = verifiedsql.create_engine(url, llm=model, sample_values=2, prompt_budget_tokens=300)
    try:
        with verified.connect() as conn:
            result = conn.execute(verifiedsql.ask("How many orders are there?"))
            assert result.all() == [(1,)]
            notes = " ".join(result.verification.notes)
    finally:
        verified.dispose()
    assert "far larger than any model's window" in notes
    first = " ".join(m["content"] for m in model.requests[0].messages)
    assert "CREATE TABLE orders" in first and "CREATE TABLE warehouses" not in first
    assert "orders" in sampled and "warehouses" not in sampled
