"""(d) Schema reflection (``Database.reflect``) on SQLite, DuckDB and PostgreSQL, prompt rendering
(``render_schema``), and the sample values of the tables a compressed prompt shows
(``Database.with_samples``), for synthetic schemas of 10, 500 and 5,000 tables x 20 columns.

Reflection reads the catalog in a few statements (``verifiedsql.db.catalog_reflect``). Up to
``EAGER_SAMPLE_TABLES`` tables it also samples every table (the 10-table case); beyond, samples are read
when a prompt shows a table (a batch of tables per statement: ``verifiedsql.db.samples``), which the last group
measures for 20 tables of the 5,000. The first question at scale is ``test_perf_scale.py``.

The databases are ``synthetic.py``'s, built once per run (``conftest.databases``). PostgreSQL runs on a
throw-away server, started as for the test suite (``tests/pg_server.py``; skipped where the server binaries
are missing)."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa
from synthetic import COLUMNS

from verifiedsql.config import Options
from verifiedsql.db.database import Database
from verifiedsql.db.schema import Column, ForeignKey, Schema, Table, render_schema

SIZES = [10, 500, 5_000]
ENGINES = ["sqlite", "duckdb", "postgresql"]
TARGET_S = {"sqlite": 2.0, "duckdb": 3.0, "postgresql": 3.0}  # 5,000 tables
SHOWN = 20  # tables a compressed prompt shows


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
