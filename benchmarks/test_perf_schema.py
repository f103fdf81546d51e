"""(d) Schema reflection (``Database.reflect``) on SQLite, DuckDB and PostgreSQL, prompt rendering
(``render_schema``), and the sample values of the tables a compressed prompt shows
(``Database.with_samples``), for synthetic schemas of 10, 500 and 5,000 tables x 20 columns.

Reflection reads the catalog in a few statements (``verifiedsql.db.catalog_reflect``). Up to
``EAGER_SAMPLE_TABLES`` tables it also samples every table (the 10-table case); beyond, samples are read
when a prompt shows a table (a batch of tables per statement: ``verifiedsql.db.samples``), which the last group
measures for 20 tables of the 5,000. The first question at scale is ``test_perf_scale.py``.

PostgreSQL runs on a throw-away server, started as for the test suite (``tests/pg_server.py``; skipped
where the server binaries are missing)."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
import sqlalchemy as sa

sys.path.insert(0, str(Path(__file__).parent.parent / "tests"))

from pg_server import throwaway_postgres  # noqa: E402

from verifiedsql.config import Options  # noqa: E402
from verifiedsql.db.database import Database  # noqa: E402
from verifiedsql.db.schema import Column, ForeignKey, Schema, Table, render_schema  # noqa: E402

SIZES = [10, 500, 5_000]
COLUMNS = 20
ENGINES = ["sqlite", "duckdb", "postgresql"]
TARGET_S = {"sqlite": 2.0, "duckdb": 3.0, "postgresql": 3.0}  # 5,000 tables
SHOWN = 20  # tables a compressed prompt shows


def table_ddl(t: int) -> str:
    """Table ``t``: an integer key, 18 columns alternately INTEGER and TEXT, and a key to table ``t - 1``."""
    cols = ", ".join(f"c{j} {'INTEGER' if j % 2 else 'TEXT'}" for j in range(1, COLUMNS - 1))
    ref = f", parent_id INTEGER REFERENCES t{t - 1}(id)" if t else ", parent_id INTEGER"
    return f"CREATE TABLE t{t} (id INTEGER PRIMARY KEY, {cols}{ref})"


def table_rows(t: int) -> list[list[Any]]:
    return [[i] + [i * j if j % 2 else f"v{i}_{j}" for j in range(1, COLUMNS - 1)] + [i] for i in range(3)]


def build(execute: Callable[[str, list[list[Any]] | None], None], commit: Callable[[], None], tables: int,
          placeholder: str) -> None:
    """``tables`` tables of 20 columns with 3 rows each; every table after the first refers to the previous.
    Commits every 500 tables (PostgreSQL's lock table holds one transaction's new tables)."""
    for t in range(tables):
        execute(table_ddl(t), None)
        execute(f"INSERT INTO t{t} VALUES ({', '.join([placeholder] * COLUMNS)})", table_rows(t))
        if t % 500 == 499:
            commit()
    commit()


def build_sqlite(path: Path, tables: int) -> str:
    conn = sqlite3.connect(path)
    build(lambda sql, rows: conn.executemany(sql, rows) if rows else conn.execute(sql), conn.commit, tables, "?")
    conn.close()
    return f"sqlite:///{path}"


def build_duckdb(path: Path, tables: int) -> str:
    import duckdb

    # reopened every 500 tables: one connection that creates thousands of tables grows by about 1 MB a table
    state = {"conn": duckdb.connect(str(path))}

    def reopen() -> None:
        state["conn"].close()
        state["conn"] = duckdb.connect(str(path))

    build(lambda sql, rows: state["conn"].executemany(sql, rows) if rows else state["conn"].execute(sql), reopen,
          tables, "?")
    state["conn"].close()
    return f"duckdb:///{path}"


def build_postgresql(server_url: str, tables: int) -> str:
    name = f"schema_{tables}"
    admin = sa.create_engine(server_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.exec_driver_sql(f"CREATE DATABASE {name}")
    admin.dispose()
    url = sa.make_url(server_url).set(database=name)
    import psycopg

    with psycopg.connect(url.set(drivername="postgresql").render_as_string(False)) as conn:
        cursor = conn.cursor()
        build(lambda sql, rows: cursor.executemany(sql, rows) if rows else cursor.execute(sql), conn.commit, tables,
              "%s")
    return url.render_as_string(False)


@pytest.fixture(scope="module")
def postgres_server() -> Iterator[str]:
    """A PostgreSQL 15 server on 127.0.0.1 for this module."""
    with throwaway_postgres("verifiedsql-pg-bench-") as url:
        yield url


@pytest.fixture(scope="module")
def databases(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Callable[[str, int], str]:
    """``databases(engine, tables)``: the URL of a database with that schema, built once per module."""
    cache: dict[tuple[str, int], str] = {}

    def get(engine: str, tables: int) -> str:
        if (engine, tables) not in cache:
            folder = tmp_path_factory.mktemp(f"schema-{engine}")
            cache[engine, tables] = (
                build_sqlite(folder / f"s{tables}.db", tables) if engine == "sqlite" else
                build_duckdb(folder / f"s{tables}.duckdb", tables) if engine == "duckdb" else
                build_postgresql(request.getfixturevalue("postgres_server"), tables)
            )
        return cache[engine, tables]

    return get


def synthetic_schema(tables: int) -> Schema:
    return Schema(tuple(
        Table(
            f"t{t}",
            tuple(Column(f"c{j}", "INTEGER" if j % 2 else "TEXT", primary_key=j == 0,
                         samples=(1, 2, 3) if j % 2 else ("alpha", "beta", "gamma")) for j in range(COLUMNS)),
            (ForeignKey(("c1",), f"t{t - 1}", ("c0",)),) if t else (),
        )
        for t in range(tables)
    ))


@pytest.mark.parametrize("tables", SIZES)
@pytest.mark.parametrize("engine", ENGINES)
def test_reflect(benchmark, databases, engine: str, tables: int) -> None:
    database = Database(sa.create_engine(databases(engine, tables)), Options.build({"sample_values": 3}))
    benchmark.group = "(d) schema reflection"
    benchmark.extra_info.update(case=f"{engine}: {tables:,} tables x {COLUMNS} cols, sample_values=3",
                                target_s=TARGET_S[engine] if tables == 5_000 else None)
    schema = benchmark.pedantic(database.reflect, kwargs={"refresh": True}, rounds=5 if tables < 5_000 else 3)
    assert len(schema.tables) == tables and database.reflected_with == "catalog"
    assert all(c.samples for c in schema.tables[0].columns) == (tables == 10)  # lazily sampled beyond 100
    database.engine.dispose()


@pytest.mark.parametrize("engine", ENGINES)
def test_samples_of_shown_tables(benchmark, databases, engine: str) -> None:
    url = databases(engine, 5_000)
    shown = [f"t{t}" for t in range(0, 5_000, 5_000 // SHOWN)]

    def reflected() -> tuple[tuple[Database, Schema], dict[str, Any]]:  # untimed: a fresh reflection per round
        database = Database(sa.create_engine(url), Options.build({"sample_values": 3}))
        return (database, database.reflect()), {}

    benchmark.group = "(d) samples of the tables a prompt shows"
    benchmark.extra_info.update(case=f"{engine}: {SHOWN} of 5,000 tables (with_samples)")
    sampled = benchmark.pedantic(lambda database, schema: database.with_samples(schema, shown), setup=reflected,
                                 rounds=3)
    assert all(c.samples for name in shown for c in sampled.table(name).columns)


@pytest.mark.parametrize("tables", SIZES)
def test_render(benchmark, tables):
    schema = synthetic_schema(tables)
    benchmark.group = "(d) prompt rendering"
    benchmark.extra_info.update(case=f"{tables:,} tables x {COLUMNS} cols, with samples",
                                target_s=2.0 if tables == 5_000 else None)
    text = benchmark.pedantic(render_schema, args=(schema,), rounds=3 if tables == 5_000 else 10)
    assert text.count("CREATE TABLE") == tables
