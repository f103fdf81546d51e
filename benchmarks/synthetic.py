"""Synthetic schemas of N tables x 20 columns with 3 rows each, on SQLite, DuckDB and PostgreSQL, for the
schema and scale benchmarks (``conftest.databases`` builds them once per run).

Every table after the first refers to the previous one. DuckDB is built from a generated script, 500 tables
per transaction with a checkpoint after each: one DuckDB connection holds about 1 MB per table it has
written until the buffer manager evicts it, so its ``memory_limit`` is capped, and a script runs far faster
than a statement per call (20,000 tables in minutes rather than hours).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any, Callable

import sqlalchemy as sa

COLUMNS = 20
DUCKDB_CHUNK = 500  # tables per transaction
DUCKDB_MEMORY_LIMIT = "3GB"  # the builder's connection only


def table_ddl(t: int) -> str:
    """Table ``t``: an integer key, 18 columns alternately INTEGER and TEXT, and a key to table ``t - 1``."""
    cols = ", ".join(f"c{j} {'INTEGER' if j % 2 else 'TEXT'}" for j in range(1, COLUMNS - 1))
    ref = f", parent_id INTEGER REFERENCES t{t - 1}(id)" if t else ", parent_id INTEGER"
    return f"CREATE TABLE t{t} (id INTEGER PRIMARY KEY, {cols}{ref})"


def table_rows(t: int) -> list[list[Any]]:
    return [[i] + [i * j if j % 2 else f"v{i}_{j}" for j in range(1, COLUMNS - 1)] + [i] for i in range(3)]


def literal(value: Any) -> str:
    return str(value) if isinstance(value, int) else "'" + str(value).replace("'", "''") + "'"


def table_script(t: int) -> str:
    """Table ``t``'s DDL and its rows as one SQL script (literal values)."""
    rows = ", ".join("(" + ", ".join(literal(v) for v in row) + ")" for row in table_rows(t))
    return f"{table_ddl(t)};\nINSERT INTO t{t} VALUES {rows};\n"


def build(execute: Callable[[str, list[list[Any]] | None], None], commit: Callable[[], None], tables: int,
          placeholder: str) -> None:
    """``tables`` tables, a statement each and an ``executemany`` for each table's rows. Commits every 500
    tables (PostgreSQL's lock table holds one transaction's new tables)."""
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

    conn = duckdb.connect(str(path), config={"memory_limit": DUCKDB_MEMORY_LIMIT})
    try:
        for first in range(0, tables, DUCKDB_CHUNK):
            script = "".join(table_script(t) for t in range(first, min(tables, first + DUCKDB_CHUNK)))
            conn.execute("BEGIN TRANSACTION")
            conn.execute(script)
            conn.execute("COMMIT")
            conn.execute("CHECKPOINT")
    finally:
        conn.close()
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
