"""Bulk reflection (``verifiedsql.db.catalog_reflect``) on all four engines, and lazy sample values.

On each engine, a schema with single and composite primary keys, composite foreign keys, odd names
(spaces, a doubled quote, mixed case, a reserved word), several types, a view (never reflected, as
before) and a second namespace (``schema=``: an attached database on SQLite, a schema elsewhere) is
reflected twice: by the engine's catalog reader and by SQLAlchemy's inspector; both give the same
``Schema``, samples included. A failing reader falls back to the inspector. The reader issues the same
few statements whatever the number of tables (counted with ``before_cursor_execute``; no test times
anything). fakesnow's ``SHOW IMPORTED KEYS`` breaks foreign-key reflection on both paths, so Snowflake
tables have none.

Samples: a schema of more than ``EAGER_SAMPLE_TABLES`` tables is reflected without them, and
``Database.with_samples`` reads them per table on first need; schema compression asks only for the tables
it shows, and its text is the one the eagerly sampled schema gives.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from backends import DIALECTS

import verifiedsql.db.database as database_module
from verifiedsql.backends import backend_for
from verifiedsql.config import LLMSettings, Options
from verifiedsql.db.database import Database
from verifiedsql.db.schema import Schema, render_schema
from verifiedsql.stages.reforce.compress import compress_schema

pytestmark = pytest.mark.filterwarnings("ignore:verifiedsql could not reflect foreign keys")

ODD = '"Odd ""Name"" Table"'  # the table Odd "Name" Table
# integer, short text, decimal, date, timestamp, boolean, float
TYPES = {
    "sqlite": ("INTEGER", "VARCHAR(40)", "NUMERIC(10, 2)", "DATE", "DATETIME", "BOOLEAN", "REAL"),
    "duckdb": ("INTEGER", "VARCHAR(40)", "DECIMAL(10, 2)", "DATE", "TIMESTAMP", "BOOLEAN", "DOUBLE"),
    "postgresql": ("INTEGER", "VARCHAR(40)", "NUMERIC(10, 2)", "DATE", "TIMESTAMP", "BOOLEAN", "DOUBLE PRECISION"),
    "snowflake": ("INTEGER", "VARCHAR(40)", "NUMBER(10, 2)", "DATE", "TIMESTAMP", "BOOLEAN", "FLOAT"),
}
# Engine-specific columns and tables: SQLite's implicit referred columns, a key declared twice, generated
# and untyped columns; enums, domains, arrays, collations, nested types.
EXTRAS = {
    "sqlite": (
        "CREATE TABLE {ns}implicit (id INTEGER PRIMARY KEY, customer INTEGER REFERENCES customers, "
        "other INTEGER REFERENCES Customers, odd INTEGER, sel TEXT, "
        'FOREIGN KEY (odd, sel) REFERENCES "Odd ""Name"" Table")',
        "CREATE TABLE {ns}twice (id INTEGER PRIMARY KEY, c INTEGER, FOREIGN KEY (c) REFERENCES customers (id), "
        "FOREIGN KEY (c) REFERENCES customers (id))",
        "CREATE TABLE {ns}generated (a INTEGER, b INTEGER GENERATED ALWAYS AS (a * 2) VIRTUAL, "
        "c TEXT GENERATED ALWAYS AS ('x') STORED, weird \"my type\"(3), untyped, t2 text(10), d double)",
        "CREATE TABLE {ns}no_rowid (k TEXT PRIMARY KEY, v BLOB) WITHOUT ROWID",
    ),
    "duckdb": (
        "CREATE TYPE {ns}mood AS ENUM ('sad', 'ok')",
        "CREATE TABLE {ns}extras (id INTEGER PRIMARY KEY, m {ns}mood, tags INTEGER[], "
        "pair STRUCT(a INTEGER, b VARCHAR), lookup MAP(VARCHAR, INTEGER), raw BLOB, big HUGEINT, stamped TIMESTAMPTZ)",
    ),
    "postgresql": (
        "CREATE TYPE {ns}mood AS ENUM ('sad', 'ok')",
        "CREATE DOMAIN {ns}positive AS INTEGER NOT NULL CHECK (VALUE > 0)",
        "CREATE TABLE {ns}extras (id SERIAL PRIMARY KEY, m {ns}mood, moods {ns}mood[], p {ns}positive, "
        'tags TEXT[], c TEXT COLLATE "C", stamped TIMESTAMPTZ, span INTERVAL, doc JSONB, raw BYTEA, n NUMERIC)',
        "CREATE TABLE {ns}parted (id INTEGER, day DATE, PRIMARY KEY (id, day)) PARTITION BY RANGE (day)",
        "CREATE TABLE {ns}parted_2020 PARTITION OF {ns}parted FOR VALUES FROM ('2020-01-01') TO ('2021-01-01')",
        "CREATE TABLE {ns}empty ()",
    ),
    "snowflake": (
        "CREATE TABLE {ns}extras (id INTEGER PRIMARY KEY, doc VARIANT, tags ARRAY, stamped TIMESTAMP_TZ, raw BINARY)",
    ),
}


def options(**values: Any) -> Options:
    return Options(llm=LLMSettings(), **values)


def ddl(dialect: str, ns: str) -> list[str]:
    """The test schema, its tables prefixed by ``ns`` (``"ns".`` or "")."""
    integer, text, decimal, date, timestamp, boolean, floating = TYPES[dialect]
    ref = "" if dialect == "sqlite" else ns  # SQLite's REFERENCES takes no schema
    return [
        f"CREATE TABLE {ns}customers (id {integer} PRIMARY KEY, name {text} NOT NULL, balance {decimal}, "
        f"joined {date}, seen {timestamp}, active {boolean}, score {floating})",
        f'CREATE TABLE {ns}{ODD} ("Mixed Case" {integer} NOT NULL, "select" {text} NOT NULL, "a b" {integer}, '
        'PRIMARY KEY ("Mixed Case", "select"))',
        f"CREATE TABLE {ns}line_items (order_id {integer}, line {integer}, customer_id {integer} REFERENCES "
        f"{ref}customers (id), odd_id {integer}, odd_sel {text}, qty {integer}, PRIMARY KEY (order_id, line), "
        f'FOREIGN KEY (odd_id, odd_sel) REFERENCES {ref}{ODD} ("Mixed Case", "select"))',
        f"CREATE TABLE {ns}shipments (order_id {integer}, line {integer}, shipped {timestamp}, "
        f"FOREIGN KEY (order_id, line) REFERENCES {ref}line_items (order_id, line))",
        f"CREATE VIEW {ns}big_customers AS SELECT id, name FROM {ns}customers WHERE balance > 100",
        f"INSERT INTO {ns}customers (id, name, balance, active) VALUES (1, 'Ann', 12.5, true), (2, 'Bo', 300, false)",
        f"INSERT INTO {ns}{ODD} VALUES (1, 'x', 7), (2, 'y', NULL)",
        f"INSERT INTO {ns}line_items (order_id, line, customer_id, odd_id, odd_sel, qty) VALUES (1, 1, 1, 1, 'x', 3)",
        *(statement.format(ns=ns) for statement in EXTRAS[dialect]),
    ]


def build(dialect: str, engine: sa.Engine, tmp_path: Path) -> sa.Engine:
    """The test schema in the default namespace and in ``ns``; on PostgreSQL, also a key from ``ns`` to a
    table of the default schema."""
    if dialect == "sqlite":  # the namespace is an attached database, on every connection
        attached = tmp_path / "ns.sqlite"

        @sa.event.listens_for(engine, "connect")
        def attach(dbapi_connection: Any, _record: Any) -> None:
            dbapi_connection.execute("ATTACH DATABASE ? AS ns", (str(attached),))

    with engine.begin() as conn:
        if dialect == "snowflake":  # fakesnow refuses qualified foreign keys: create each schema's tables in it
            conn.exec_driver_sql("CREATE SCHEMA IF NOT EXISTS db1.ns")
            for schema in ("db1.ns", "db1.schema1"):
                conn.exec_driver_sql(f"USE SCHEMA {schema}")
                for statement in ddl(dialect, ""):
                    conn.exec_driver_sql(statement)
            return engine
        if dialect != "sqlite":
            conn.exec_driver_sql("CREATE SCHEMA ns")
        for ns in ("", "ns."):
            for statement in ddl(dialect, ns):
                conn.exec_driver_sql(statement)
        if dialect == "postgresql":
            conn.exec_driver_sql("CREATE TABLE ns.audit (id INTEGER PRIMARY KEY, who INTEGER REFERENCES "
                                 "public.customers (id))")
    return engine


def reflect_both(engine: sa.Engine, monkeypatch: pytest.MonkeyPatch, **values: Any) -> tuple[Schema, Schema]:
    """(the catalog reader's schema, the inspector's)."""
    bulk = Database(engine, options(**values))
    by_catalog = bulk.reflect()
    assert bulk.reflected_with == "catalog"
    with monkeypatch.context() as patch:
        patch.setattr(database_module, "registry", lambda: {})
        inspector = Database(engine, options(**values))
        by_inspector = inspector.reflect()
        assert inspector.reflected_with == "inspector"
    return by_catalog, by_inspector


@pytest.fixture(params=DIALECTS)
def test_engine(request: pytest.FixtureRequest, engine_factory, tmp_path: Path) -> sa.Engine:
    return build(request.param, engine_factory(request.param), tmp_path)


@pytest.mark.parametrize("namespace", [None, "ns"])
def test_catalog_equals_inspector(test_engine: sa.Engine, namespace: str | None,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    dialect = test_engine.dialect.name
    by_catalog, by_inspector = reflect_both(test_engine, monkeypatch, schema=namespace, sample_values=2)
    assert by_catalog == by_inspector
    assert render_schema(by_catalog) == render_schema(by_inspector)

    prefix = f"{namespace}." if namespace else ""
    names = [t.name for t in by_catalog.tables]
    assert f"{prefix}big_customers" not in names  # views are not reflected
    customers, odd = by_catalog.table(f"{prefix}customers"), by_catalog.table(f'{prefix}Odd "Name" Table')
    line_items = by_catalog.table(f"{prefix}line_items")
    assert customers is not None and odd is not None and line_items is not None
    assert [c.name for c in customers.columns] == ["id", "name", "balance", "joined", "seen", "active", "score"]
    assert customers.primary_key == ("id",) and line_items.primary_key == ("order_id", "line")
    assert odd.primary_key == ("Mixed Case", "select") and odd.column("a b") is not None
    assert not customers.column("name").nullable and customers.column("balance").nullable
    assert set(customers.column("name").samples) == {"Ann", "Bo"}
    assert len({c.type for c in customers.columns}) >= 6  # several types
    if dialect != "snowflake":  # fakesnow's SHOW IMPORTED KEYS (module docstring)
        keys = {(fk.columns, fk.referred_table, fk.referred_columns) for fk in line_items.foreign_keys}
        assert keys == {(("customer_id",), f"{prefix}customers", ("id",)),
                        (("odd_id", "odd_sel"), f'{prefix}Odd "Name" Table', ("Mixed Case", "select"))}
        (shipped,) = by_catalog.table(f"{prefix}shipments").foreign_keys
        assert (shipped.columns, shipped.referred_columns) == (("order_id", "line"), ("order_id", "line"))
    if dialect == "postgresql" and namespace:
        (audit,) = by_catalog.table("ns.audit").foreign_keys
        assert audit.referred_table == "ns.customers"  # as SQLAlchemy reports a key to a visible table


def test_sqlite_foreign_keys_as_sqlalchemy_reads_them(engine_factory, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """An unnamed referred column list (the referred table's primary key, found by the exact name), one
    key declared twice, generated and untyped columns."""
    by_catalog, by_inspector = reflect_both(build("sqlite", engine_factory("sqlite"), tmp_path), monkeypatch)
    assert by_catalog == by_inspector
    implicit = by_catalog.table("implicit")
    assert [(fk.columns, fk.referred_table, fk.referred_columns) for fk in implicit.foreign_keys] == [
        (("odd", "sel"), 'Odd "Name" Table', ("Mixed Case", "select")),
        (("other",), "Customers", ()),  # SQLAlchemy finds no table named exactly Customers
        (("customer",), "customers", ("id",)),
    ]
    assert len(by_catalog.table("twice").foreign_keys) == 1
    assert [c.name for c in by_catalog.table("generated").columns] == ["a", "b", "c", "weird", "untyped", "t2", "d"]


def test_failing_reader_falls_back_to_the_inspector(test_engine: sa.Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    """A reader whose statement the engine rejects (a PostgreSQL transaction is aborted by it) or whose
    dialect helper is missing: the inspector reads the same schema."""
    dialect = test_engine.dialect.name
    expected = Database(test_engine, options(sample_values=2)).reflect()

    def rejected(conn: sa.Connection, schema: str | None) -> Any:
        conn.exec_driver_sql("SELECT * FROM no_such_table_for_verifiedsql")

    def moved(conn: sa.Connection, schema: str | None) -> Any:
        return conn.dialect._no_such_reflection_helper()  # type: ignore[attr-defined]

    for reader, error in ((rejected, "Error"), (moved, "AttributeError")):
        backend = replace(backend_for(dialect), bulk_catalog=reader)
        monkeypatch.setattr(database_module, "registry", lambda: {dialect: backend})
        db = Database(test_engine, options(sample_values=2))
        assert db.reflect() == expected
        assert db.reflected_with.startswith("inspector, after the catalog reader failed") and error in db.reflected_with


def add_tables(dialect: str, engine: sa.Engine, start: int, count: int) -> None:
    integer, text = TYPES[dialect][:2]
    with engine.begin() as conn:
        for n in range(start, start + count):
            parent = f", parent {integer} REFERENCES t{n - 1} (id)" if n else ""
            conn.exec_driver_sql(f"CREATE TABLE t{n} (id {integer} PRIMARY KEY, label {text}{parent})")


def statements(engine: sa.Engine, **values: Any) -> int:
    """How many statements one reflection issues through SQLAlchemy (sample queries run on the driver's
    connection, so ``sample_values=0`` leaves none out)."""
    seen: list[str] = []

    def count(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        seen.append(statement)

    sa.event.listen(engine, "before_cursor_execute", count)
    try:
        db = Database(engine, options(sample_values=0, **values))
        assert len(db.reflect().tables) > 0 and db.reflected_with in ("catalog", "inspector")
    finally:
        sa.event.remove(engine, "before_cursor_execute", count)
    return len(seen)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_statement_count_is_small_and_independent_of_the_table_count(dialect: str, engine_factory) -> None:
    engine = engine_factory(dialect)
    add_tables(dialect, engine, 0, 3)
    Database(engine, options(sample_values=0)).reflect()  # the connection's first-use checks, outside the count
    few = statements(engine)
    add_tables(dialect, engine, 3, 12)
    many = statements(engine)
    assert few == many <= 6, (few, many)


def test_the_inspector_reads_sqlite_table_by_table(engine_factory, monkeypatch: pytest.MonkeyPatch) -> None:
    """What the catalog reader saves: SQLAlchemy's SQLite inspector issues statements per table."""
    engine = engine_factory("sqlite")
    add_tables("sqlite", engine, 0, 3)
    monkeypatch.setattr(database_module, "registry", lambda: {})
    few = statements(engine)
    add_tables("sqlite", engine, 3, 12)
    assert statements(engine) >= few + 3 * 12


# ------------------------------------------------------------------------------------------ lazy samples


def sample_queries(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every sample query ``Database`` runs from now on (they all go through ``_run_on``)."""
    queries: list[str] = []
    run_on = Database._run_on

    def counting(self: Database, conn: Any, sql: str, cap: int, timeout_s: float, **engine: Any) -> Any:
        queries.append(sql)
        return run_on(self, conn, sql, cap, timeout_s, **engine)

    monkeypatch.setattr(Database, "_run_on", counting)
    return queries


def filled(engine: sa.Engine, tables: list[str], wide: int = 0) -> sa.Engine:
    """``tables`` with two rows each; those after the first two with ``wide`` more columns."""
    with engine.begin() as conn:
        for i, name in enumerate(tables):
            extra = "".join(f", {name}_extra_{k} INTEGER" for k in range(wide if i >= 2 else 0))
            conn.exec_driver_sql(f"CREATE TABLE {name} (id INTEGER PRIMARY KEY, {name}_label TEXT, "
                                 f"amount INTEGER{extra})")
            conn.exec_driver_sql(f"INSERT INTO {name} (id, {name}_label, amount) VALUES (1, '{name} one', {i}), "
                                 f"(2, '{name} two', {i + 1})")
    return engine


def test_a_large_schema_is_sampled_per_table_on_first_need(engine_factory, monkeypatch: pytest.MonkeyPatch) -> None:
    engine = filled(engine_factory("sqlite"), ["alpha", "beta", "gamma"])
    eager = Database(engine, options(sample_values=2)).reflect()
    assert all(c.samples for t in eager.tables for c in t.columns)  # 3 tables <= EAGER_SAMPLE_TABLES

    monkeypatch.setattr(database_module, "EAGER_SAMPLE_TABLES", 2)
    queries = sample_queries(monkeypatch)
    db = Database(engine, options(sample_values=2))
    schema = db.reflect()
    assert not queries and not any(c.samples for t in schema.tables for c in t.columns)
    one = db.with_samples(schema, ["BETA"])  # names in any case
    assert len(queries) == 1 and one.table("beta") == eager.table("beta")
    assert one.table("alpha") == schema.table("alpha")
    assert db.with_samples(schema, ["beta", "gamma"]).table("gamma") == eager.table("gamma") and len(queries) == 2
    assert db.with_samples(schema) == eager and len(queries) == 3  # each table read once
    db.reflect(refresh=True)
    db.with_samples(db.reflect(), ["alpha"])
    assert len(queries) == 4  # a new reflection reads again
    assert Database(engine, options(sample_values=0)).with_samples(schema) == schema


def test_lazy_samples_keep_to_the_questions_deadline(engine_factory, monkeypatch: pytest.MonkeyPatch) -> None:
    """With a question's deadline spent, no table is read and none is remembered as read: a later question
    with time left reads them. Each read gets at most the time left."""
    from verifiedsql.guard.deadline import Deadline

    engine = filled(engine_factory("sqlite"), ["alpha", "beta", "gamma"])
    monkeypatch.setattr(database_module, "EAGER_SAMPLE_TABLES", 1)
    timeouts: list[float] = []
    run_on = Database._run_on

    def timed(self: Database, conn: Any, sql: str, cap: int, timeout_s: float, **engine: Any) -> Any:
        timeouts.append(timeout_s)
        return run_on(self, conn, sql, cap, timeout_s, **engine)

    monkeypatch.setattr(Database, "_run_on", timed)
    db = Database(engine, options(sample_values=2))
    schema = db.reflect()
    assert db.with_samples(schema, deadline=Deadline(0.0)) == schema and not timeouts
    sampled = db.with_samples(schema, ["alpha"], deadline=Deadline(2.0))
    assert sampled.table("alpha").columns[1].samples and len(timeouts) == 1 and timeouts[0] <= 2.0
    assert db.with_samples(schema, deadline=Deadline()) != schema and len(timeouts) == 2  # beta and gamma: one batch
    assert timeouts[-1] == db.options.statement_timeout_s  # no budget: the statement timeout


@pytest.mark.parametrize("budget", [100, 100_000])
def test_compression_samples_only_the_tables_it_shows(engine_factory, monkeypatch: pytest.MonkeyPatch,
                                                      budget: int) -> None:
    """Over budget, linking keeps the two tables the question names (the others are too wide), only they
    are read, and their samples fit; within it, every table is shown and read. Either way the text and
    what was kept are those of the eagerly sampled schema."""
    names = ["orders", "customers", "invoices", "shipments", "products", "suppliers", "warehouses", "returns"]
    engine = filled(engine_factory("sqlite"), names, wide=30)
    question = "How many orders does each customer have?"
    eager = compress_schema(Database(engine, options(sample_values=2)).reflect(), question, budget)

    monkeypatch.setattr(database_module, "EAGER_SAMPLE_TABLES", 0)
    queries = sample_queries(monkeypatch)
    db = Database(engine, options(sample_values=2))
    lazy = compress_schema(db.reflect(), question, budget, sampler=db.with_samples)
    assert lazy.text == eager.text and "-- e.g." in lazy.text
    assert lazy.tables_kept == eager.tables_kept and lazy.tables_shown == eager.tables_shown
    assert sum(sql.count("LIMIT 1000") for sql in queries) == len(lazy.tables_shown)  # each read once
    assert lazy.tables_shown == ("customers", "orders") if budget == 100 else len(lazy.tables_shown) == len(names)


def test_without_compression_a_large_schema_is_sampled_for_the_prompt(engine_factory,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A question's context shows every table, so one reflected without samples (too large to sample at
    reflection) is sampled when the context opens: its prompt is the small schema's."""
    from fakes import context

    engine = filled(engine_factory("sqlite"), ["alpha", "beta", "gamma"])
    eager = context(Database(engine, options(sample_values=2))).schema_text
    monkeypatch.setattr(database_module, "EAGER_SAMPLE_TABLES", 1)
    lazy = Database(engine, options(sample_values=2))
    assert not any(c.samples for t in lazy.reflect().tables for c in t.columns)
    assert context(lazy).schema_text == eager and "-- e.g." in eager
