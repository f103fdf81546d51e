"""The Spider databases on each benchmark engine, loaded from the same data.

SQLite uses the files as they are. DuckDB gets a copy per database (declared types, primary keys, and
the foreign keys the data satisfies), built once under a cache folder. PostgreSQL loads the
``postgres/<db>.sql`` dumps into a server given by URL, one schema per database, and reaches each through
the connection's ``search_path``, as a database of its own would be reached: the tables are reflected and
shown to the model unqualified, as on the other engines (no ``schema`` option), so the prompts differ from
SQLite's only in types, keys the data allows and the dialect's rules.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from graphlib import CycleError, TopologicalSorter
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from .. import backends
from ..errors import ConfigurationError
from .data import sqlite_path

# The registered engines the benchmark runs on (``Backend.spider_bench``; ``open_target`` loads them).
ENGINES = tuple(backend.name for backend in backends.registry().values() if backend.spider_bench)


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


@dataclass(frozen=True)
class _SqliteTable:
    name: str
    columns: list[tuple[str, str]]  # (name, declared type)
    primary_key: list[str]
    foreign_keys: list[tuple[list[str], str, list[str]]]


def _sqlite_tables(conn: sqlite3.Connection) -> list[_SqliteTable]:
    names = [r[0] for r in conn.execute(
        "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' ORDER BY name")]
    tables = []
    for name in names:
        info = conn.execute(f"PRAGMA table_info({_quote(name)})").fetchall()
        columns = [(row[1], row[2] or "VARCHAR") for row in info]
        primary = [row[1] for row in sorted(info, key=lambda r: r[5]) if row[5]]
        grouped: dict[int, tuple[list[str], str, list[str]]] = {}
        for row in conn.execute(f"PRAGMA foreign_key_list({_quote(name)})"):
            fk = grouped.setdefault(row[0], ([], row[2], []))
            fk[0].append(row[3])
            fk[2].append(row[4] or "")
        tables.append(_SqliteTable(name, columns, primary, list(grouped.values())))
    return tables


def duckdb_type(declared: str, level: int = 0) -> str:
    """A DuckDB type for a SQLite declared type, by SQLite's affinity rules. Level 0 keeps date and
    time types, level 1 makes them VARCHAR, level 2 makes everything VARCHAR (for messy data)."""
    upper = declared.upper()
    if level >= 2:
        return "VARCHAR"
    if "INT" in upper:
        return "BIGINT"
    if any(word in upper for word in ("CHAR", "CLOB", "TEXT")) or not upper:
        return "VARCHAR"
    if any(word in upper for word in ("REAL", "FLOA", "DOUB", "NUMERIC", "DECIMAL", "NUMBER")):
        return "DOUBLE"
    if any(word in upper for word in ("DATE", "TIME", "YEAR")):
        return upper.split("(")[0].strip() if level == 0 else "VARCHAR"
    if "BOOL" in upper:
        return "BOOLEAN" if level == 0 else "VARCHAR"
    return "VARCHAR"


def _duckdb_ddl(table: _SqliteTable, keys: dict[str, list[str]], pk: bool, fk: bool, level: int) -> str:
    parts = [f"{_quote(c)} {duckdb_type(t, level)}" for c, t in table.columns]
    if pk and table.primary_key:
        parts.append(f"PRIMARY KEY ({', '.join(map(_quote, table.primary_key))})")
    if fk:
        for columns, referred, referred_columns in table.foreign_keys:
            if referred in keys and referred_columns == keys[referred] and referred != table.name:
                parts.append(f"FOREIGN KEY ({', '.join(map(_quote, columns))}) REFERENCES "
                             f"{_quote(referred)} ({', '.join(map(_quote, referred_columns))})")
    return f"CREATE TABLE {_quote(table.name)} ({', '.join(parts)})"


def build_duckdb(source: Path, target: Path) -> Path:
    """Copy a SQLite database into a new DuckDB file (kept if it already exists)."""
    import duckdb

    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    partial.unlink(missing_ok=True)
    lite = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
    lite.text_factory = lambda b: b.decode("utf-8", "replace")
    tables = {t.name: t for t in _sqlite_tables(lite)}
    graph = {t.name: {fk[1] for fk in t.foreign_keys if fk[1] in tables and fk[1] != t.name}
             for t in tables.values()}
    try:
        order = list(TopologicalSorter(graph).static_order())
        linked = True
    except CycleError:
        order, linked = sorted(tables), False
    duck = duckdb.connect(str(partial))
    keys: dict[str, list[str]] = {}
    try:
        for name in order:
            table = tables[name]
            rows = lite.execute(f"SELECT * FROM {_quote(name)}").fetchall()
            insert = f"INSERT INTO {_quote(name)} VALUES ({', '.join('?' * len(table.columns))})"
            attempts = ((True, linked, 0), (True, False, 0), (False, False, 0), (False, False, 1), (False, False, 2))
            for pk, fk, level in attempts:
                try:
                    duck.execute("BEGIN")
                    duck.execute(_duckdb_ddl(table, keys, pk, fk, level))
                    if rows:
                        duck.executemany(insert, rows)
                    duck.execute("COMMIT")
                    break
                except duckdb.Error:
                    duck.execute("ROLLBACK")
            else:
                raise ConfigurationError(f"could not copy table {name!r} of {source} into DuckDB.")
            if pk and table.primary_key:
                keys[name] = table.primary_key
    finally:
        duck.close()
        lite.close()
    partial.rename(target)
    return target


def load_postgres(engine: sa.Engine, dump: Path, db_id: str) -> None:
    """Load ``postgres/<db_id>.sql`` into schema ``db_id`` unless it is already there; foreign keys
    the data violates are skipped, as the data set's README advises. An advisory lock on the name makes a
    second process that loads the same database at once (``bench verify``'s parallel replays) wait, then
    find it there."""
    raw = engine.raw_connection()
    try:
        cursor = raw.cursor()
        cursor.execute("SELECT pg_advisory_lock(hashtext(%s))", (db_id.lower(),))
        raw.commit()
        try:
            cursor.execute("SELECT 1 FROM pg_namespace WHERE nspname IN (%s, %s)", (db_id.lower(), db_id))
            if cursor.fetchone() is None:
                _load(raw, cursor, dump)
        finally:
            raw.rollback()
            cursor.execute("SELECT pg_advisory_unlock(hashtext(%s))", (db_id.lower(),))
            raw.commit()
    finally:
        raw.close()


def _load(raw: Any, cursor: Any, dump: Path) -> None:
    """Run a dump's tables and rows, then each foreign key the data allows."""
    body, constraints = dump_parts(dump.read_text("utf-8"))
    cursor.execute(body)
    raw.commit()
    for statement in constraints:
        try:
            cursor.execute(statement)
            raw.commit()
        except Exception:  # the data violates this key: leave it out  # noqa: BLE001
            raw.rollback()


def dump_parts(text: str) -> tuple[str, list[str]]:
    """A dump's tables and rows, and its foreign-key statements one by one (each from its ``ALTER TABLE``, so
    the comment line above the first is not part of it)."""
    body, _, constraints = text.partition("-- Foreign key constraints")
    statements = [s[s.index("ALTER TABLE"):].strip() for s in constraints.split(";") if "ALTER TABLE" in s]
    return body, statements


def has_database(engine_name: str, data_dir: Path, db_id: str) -> bool:
    """Whether ``db_id`` can be loaded on ``engine_name``: PostgreSQL needs its dump (the data set has none
    for ``wta_1``); the other engines are built from the SQLite file every database has."""
    if engine_name == "postgresql":
        return (Path(data_dir) / "postgres" / f"{db_id}.sql").exists()
    return True


def open_target(engine_name: str, data_dir: Path, db_id: str, cache_dir: Path, pg_url: str | None) -> sa.Engine:
    """An engine holding ``db_id`` for ``engine_name`` (see the module docstring)."""
    source = sqlite_path(data_dir, db_id)
    if engine_name == "sqlite":
        return sa.create_engine(f"sqlite:///{source}")
    if engine_name == "duckdb":
        path = build_duckdb(source, cache_dir / "duckdb" / f"{db_id}.duckdb")
        # One thread: with several, DuckDB returns rows that an ORDER BY ranks equal in any order from run to run
        # (a LIMIT 1 over tied groups in a subquery picked another group), so a replay could cluster differently.
        return sa.create_engine(f"duckdb:///{path}", connect_args={"config": {"threads": 1}})
    if engine_name == "postgresql":
        if not pg_url:
            raise ConfigurationError("--engine postgresql needs --pg-url postgresql+psycopg://user@host:port/db.")
        dump = Path(data_dir) / "postgres" / f"{db_id}.sql"
        if not dump.exists():
            raise ConfigurationError(f"no PostgreSQL dump for {db_id} ({dump}); run it on sqlite or duckdb.")
        load_postgres(sa.create_engine(pg_url, poolclass=sa.NullPool), dump, db_id)
        # Unqualified names reach the database's schema too, as they do on the other engines.
        return sa.create_engine(pg_url, connect_args={"options": f"-c search_path={db_id.lower()},public"})
    raise ConfigurationError(f"unknown engine {engine_name!r}; choose one of {ENGINES}.")


def gold_connection(data_dir: Path, db_id: str) -> sqlite3.Connection:
    """A read-only SQLite connection for the gold queries (they are written for SQLite)."""
    conn = sqlite3.connect(f"file:{sqlite_path(data_dir, db_id)}?mode=ro", uri=True)
    conn.text_factory = lambda b: b.decode("utf-8", "replace")
    return conn
