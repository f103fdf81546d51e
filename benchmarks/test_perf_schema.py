"""(d) Schema reflection (``Database.reflect`` on a real SQLite file) and prompt rendering
(``render_schema``) for synthetic schemas of 10, 500 and 5,000 tables x 20 columns.
Schema compression does not exist yet, so it is not measured."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import sqlalchemy as sa

from verifiedsql.config import Options
from verifiedsql.database import Database
from verifiedsql.schema import Column, ForeignKey, Schema, Table, render_schema

SIZES = [10, 500, 5_000]
COLUMNS = 20


def build_sqlite(path: Path, tables: int) -> Path:
    """``tables`` tables of 20 columns with 3 rows each; every table after the first refers to the previous."""
    conn = sqlite3.connect(path)
    for t in range(tables):
        cols = ", ".join(f"c{j} {'INTEGER' if j % 2 else 'TEXT'}" for j in range(1, COLUMNS - 1))
        ref = f", parent_id INTEGER REFERENCES t{t - 1}(id)" if t else ", parent_id INTEGER"
        conn.execute(f"CREATE TABLE t{t} (id INTEGER PRIMARY KEY, {cols}{ref})")
        conn.executemany(f"INSERT INTO t{t} VALUES ({', '.join('?' * COLUMNS)})",
                         [[i] + [i * j if j % 2 else f"v{i}_{j}" for j in range(1, COLUMNS - 1)] + [i]
                          for i in range(3)])
    conn.commit()
    conn.close()
    return path


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


@pytest.fixture(scope="module")
def sqlite_files(tmp_path_factory):
    cache: dict[int, Path] = {}

    def get(tables: int) -> Path:
        if tables not in cache:
            cache[tables] = build_sqlite(tmp_path_factory.mktemp("schema") / f"s{tables}.db", tables)
        return cache[tables]

    return get


@pytest.mark.parametrize("samples", [3, 0])
@pytest.mark.parametrize("tables", SIZES)
def test_reflect(benchmark, sqlite_files, tables, samples):
    database = Database(sa.create_engine(f"sqlite:///{sqlite_files(tables)}"),
                        Options.build({"sample_values": samples}))
    benchmark.group = "(d) schema reflection (SQLite file)"
    benchmark.extra_info.update(case=f"{tables:,} tables x {COLUMNS} cols, sample_values={samples}",
                                target_s=2.0 if tables == 5_000 else None)
    schema = benchmark.pedantic(database.reflect, kwargs={"refresh": True}, rounds=1 if tables > 10 else 5)
    assert len(schema.tables) == tables
    database.engine.dispose()


@pytest.mark.parametrize("tables", SIZES)
def test_render(benchmark, tables):
    schema = synthetic_schema(tables)
    benchmark.group = "(d) prompt rendering"
    benchmark.extra_info.update(case=f"{tables:,} tables x {COLUMNS} cols, with samples",
                                target_s=2.0 if tables == 5_000 else None)
    text = benchmark.pedantic(render_schema, args=(schema,), rounds=3 if tables == 5_000 else 10)
    assert text.count("CREATE TABLE") == tables
