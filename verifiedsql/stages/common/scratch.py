"""Scratch databases for dual-paradigm selection: a schema slice, filled with a few made-up rows, on
which the candidate SQLs run instead of the user's data.

* **SQLite, DuckDB**: a brand-new in-memory database (never the user's); queries run through the
  engine's read-only strategy (``readonly``), which also bounds them with a timeout.
* **PostgreSQL**: ``TEMPORARY`` tables (``ON COMMIT DROP``) on a connection of the user's engine of its
  own, inside one transaction that is always rolled back at close; ``pg_temp`` is put first on the
  search path. Each query runs read-only under a savepoint that is rolled back, with
  ``statement_timeout`` set for the transaction.
* **Snowflake**: DuckDB in memory; the SQL is transpiled from Snowflake to DuckDB with sqlglot.

Every query passes the statement guard with the *user's* profile first, and every table it reads must
be in the slice (so nothing can read real data); references are rewritten to the scratch tables'
names when they differ (schema-qualified names, transpiled SQL). Column types are the reflected type
text where the scratch engine is the user's, else sqlglot's translation of it, else TEXT. Foreign
keys are not declared (data may hold deliberate orphans); primary keys and NOT NULL are.
"""

from __future__ import annotations

import datetime as dt
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from decimal import Decimal
from typing import Any

from sqlglot import exp
from sqlglot.errors import SqlglotError

from ...db.database import Database
from ...db.schema import Table
from ...errors import QueryError, QueryTimeoutError, SliceError
from ...guard import readonly
from ...guard.functions import FunctionPolicy
from ...guard.safety import check_query
from ...profiles import DialectProfile, all_profiles
from ...results import ResultSet
from .slicer import TableIndex, bare_name, table_references
from .slices import SchemaSlice

__all__ = ["ROW_CAP", "TIMEOUT_S", "Scratch", "open_scratch", "type_candidates"]

ROW_CAP = 1_000  # rows one scratch query may return
TIMEOUT_S = 5.0  # seconds one scratch query may run
_PARAMS_PER_INSERT = 900  # bound parameters per INSERT statement (SQLite's old limit is 999)


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _fetch(cursor: Any, cap: int) -> ResultSet:
    columns = tuple(str(d[0]) for d in cursor.description or ())
    rows = cursor.fetchmany(cap + 1)
    return ResultSet(columns, tuple(tuple(row) for row in rows[:cap]), truncated=len(rows) > cap)


def _failed(error: Exception) -> QueryError:
    return QueryError(f"the scratch database rejected the statement: {str(error).strip()}")


# --------------------------------------------------------------------------------------- engines


class _Engine:
    """One scratch engine: data statements on its own connection, and guarded, bounded queries."""

    placeholder = "?"
    temporary = False
    driver_errors: tuple[type[Exception], ...] = ()

    def __init__(self, profile: DialectProfile, timeout_s: float) -> None:
        self.profile = profile
        self.timeout_s = timeout_s
        self.raw: Any = None

    def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        try:
            self.raw.execute(sql, list(params))
        except self.driver_errors as error:
            raise _failed(error) from error

    @contextmanager
    def atomic(self) -> Iterator[None]:
        """All statements of the block take effect, or none."""
        self.execute("BEGIN")
        try:
            yield
        except BaseException:
            self.execute("ROLLBACK")
            raise
        self.execute("COMMIT")

    def query(self, sql: str, cap: int) -> ResultSet:
        """Run a query under the engine's read-only strategy (which also times it out)."""
        strategy = readonly.STRATEGIES[self.profile.read_only_strategy]
        with strategy(self.raw, sql, self.profile, self.timeout_s) as cursor:
            return _fetch(cursor, cap)

    def adapt(self, value: Any) -> Any:
        return value

    def ready(self) -> None:
        """Called once the tables exist."""

    def close(self) -> None:
        self.raw.close()


class _SQLite(_Engine):
    driver_errors = (sqlite3.Error,)

    def __init__(self, profile: DialectProfile, timeout_s: float) -> None:
        super().__init__(profile, timeout_s)
        self.raw = sqlite3.connect(":memory:", isolation_level=None)

    def adapt(self, value: Any) -> Any:
        """What the user's SQLite stores through SQLAlchemy: REAL for decimals, ISO text for times."""
        if isinstance(value, Decimal):
            return float(value)
        if isinstance(value, dt.datetime):
            return value.isoformat(sep=" ")
        if isinstance(value, (dt.date, dt.time)):
            return value.isoformat()
        return value


class _DuckDB(_Engine):
    def __init__(self, profile: DialectProfile, timeout_s: float) -> None:
        import duckdb

        super().__init__(profile, timeout_s)
        self.driver_errors = (duckdb.Error,)
        self.raw = duckdb.connect(":memory:")


class _Postgres(_Engine):
    """Temporary tables in one transaction of a connection of its own, rolled back at close."""

    placeholder = "%s"
    temporary = True

    def __init__(self, profile: DialectProfile, timeout_s: float, database: Database) -> None:
        import psycopg

        super().__init__(profile, timeout_s)
        self.driver_errors = (psycopg.Error,)
        self.connection = database.engine.connect()
        try:
            self.raw = self.connection.connection.driver_connection
            if self.raw.autocommit:
                self.execute("BEGIN")
            self.execute(f"SET LOCAL statement_timeout = {max(1, round(timeout_s * 1000))}")
        except BaseException:
            self.connection.close()
            raise

    def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        try:
            with self.raw.cursor() as cursor:
                cursor.execute(sql, list(params) or None)
        except self.driver_errors as error:
            raise _failed(error) from error

    @contextmanager
    def atomic(self) -> Iterator[None]:
        self.execute("SAVEPOINT verifiedsql_load")
        try:
            yield
        except BaseException:
            self.execute("ROLLBACK TO SAVEPOINT verifiedsql_load")
            raise
        self.execute("RELEASE SAVEPOINT verifiedsql_load")

    def ready(self) -> None:
        self.execute("SELECT set_config('search_path', 'pg_temp,' || current_setting('search_path'), true)")

    def query(self, sql: str, cap: int) -> ResultSet:
        """Read-only under a savepoint that is always rolled back."""
        import psycopg

        cursor = self.raw.cursor()
        try:
            cursor.execute("SAVEPOINT verifiedsql_query")
            try:
                cursor.execute("SET LOCAL transaction_read_only = on")
                cursor.execute(sql)
                return _fetch(cursor, cap)
            finally:
                cursor.execute("ROLLBACK TO SAVEPOINT verifiedsql_query")
        except psycopg.errors.QueryCanceled as error:
            raise QueryTimeoutError(f"the query ran longer than {self.timeout_s:g}s on the scratch "
                                    "database and was stopped.") from error
        except psycopg.Error as error:
            raise _failed(error) from error
        finally:
            cursor.close()

    def close(self) -> None:
        try:
            self.raw.rollback()
        finally:
            self.connection.close()


def _open_engine(database: Database, scratch_dialect: str, timeout_s: float) -> _Engine:
    profile = all_profiles()[scratch_dialect]
    if scratch_dialect == "sqlite":
        return _SQLite(profile, timeout_s)
    if scratch_dialect == "duckdb":
        return _DuckDB(profile, timeout_s)
    if scratch_dialect == "postgresql" and database.profile.name == "postgresql":
        return _Postgres(profile, timeout_s, database)
    raise SliceError(f"no scratch {scratch_dialect} database can be opened for a {database.profile.display_name} "
                     "database.")


# --------------------------------------------------------------------------------------- tables


def type_candidates(type_text: str, source: DialectProfile, target: DialectProfile) -> list[str]:
    """Column types to try in order: the reflected text (same engine only), sqlglot's translation, TEXT.
    A SQLite column declared without a type (reflected as NULLTYPE) stays untyped on SQLite."""
    if target.name == "sqlite" and type_text.upper() == "NULLTYPE":
        return [""]
    found = [type_text] if source.name == target.name else []
    try:
        found.append(exp.DataType.build(type_text, dialect=source.sqlglot_dialect).sql(dialect=target.sqlglot_dialect))
    except (SqlglotError, ValueError):
        pass
    found.append("TEXT")
    return list(dict.fromkeys(t for t in found if t))


def _scratch_names(tables: Sequence[Table]) -> dict[str, str]:
    """Each slice table's name on the scratch engine: its bare name, made unique."""
    names: dict[str, str] = {}
    taken: set[str] = set()
    for table in tables:
        name, n = bare_name(table.name), 1
        while name.lower() in taken:
            n += 1
            name = f"{bare_name(table.name)}_{n}"
        taken.add(name.lower())
        names[table.name] = name
    return names


def _create_sql(name: str, table: Table, types: Sequence[str], temporary: bool) -> str:
    parts = [f"{_quote(c.name)} {t}" + ("" if c.nullable or c.primary_key else " NOT NULL")
             for c, t in zip(table.columns, types)]
    if table.primary_key:
        parts.append(f"PRIMARY KEY ({', '.join(map(_quote, table.primary_key))})")
    kind, suffix = ("TEMPORARY TABLE", " ON COMMIT DROP") if temporary else ("TABLE", "")
    return f"CREATE {kind} {_quote(name)} ({', '.join(parts)}){suffix}"


def _check_width(table: Table, rows: Sequence[Sequence[Any]]) -> None:
    width = len(table.columns)
    for n, row in enumerate(rows, 1):
        if len(row) != width:
            raise SliceError(f"table {table.name} row {n} has {len(row)} values; the slice has {width} columns.")


# --------------------------------------------------------------------------------------- scratch


class Scratch:
    """A tiny database holding one schema slice; ``load`` rows into it and ``run`` candidate SQL on it."""

    def __init__(self, engine: _Engine, slice_: SchemaSlice, profile: DialectProfile, row_cap: int,
                 functions: FunctionPolicy | None = None) -> None:
        self.slice = slice_
        self.profile = profile  # the user's: the statement guard and the dialect candidates are written in
        self.functions = functions  # the user's database's function policy (PostgreSQL runs on its server)
        self.row_cap = row_cap
        self._engine = engine
        self._index = TableIndex(slice_.tables)
        self._names = _scratch_names(slice_.tables)
        self._prepared: dict[str, str] = {}

    def create_tables(self) -> None:
        """Create every slice table, with the first list of column types the engine accepts."""
        source = all_profiles()[self.slice.source_dialect]
        for table in self.slice.tables:
            options = [type_candidates(c.type, source, self._engine.profile) for c in table.columns]
            levels = max(map(len, options), default=1)
            error: QueryError | None = None
            for level in range(levels):
                types = [o[min(level, len(o) - 1)] for o in options]
                try:
                    with self._engine.atomic():
                        self._engine.execute(_create_sql(self._names[table.name], table, types, self._engine.temporary))
                    break
                except QueryError as failure:
                    error = failure
            else:
                raise SliceError(f"table {table.name} could not be created on the scratch database: {error}")
        self._engine.ready()

    # ---------------------------------------------------------------------------------- data

    def load(self, tables: Mapping[str, Sequence[Sequence[Any]]]) -> None:
        """Replace all rows: each named slice table gets the given rows (in the slice's column order),
        every other slice table is emptied. A row the engine refuses raises ``QueryError`` and
        leaves the previous data in place."""
        given: dict[str, Sequence[Sequence[Any]]] = {}
        for name, rows in tables.items():
            table = self._index.named(name)
            if table is None:
                raise SliceError(f"table {name!r} is not in the schema slice.")
            _check_width(table, rows)
            given[table.name] = rows
        with self._engine.atomic():
            for table in self.slice.tables:
                self._engine.execute(f"DELETE FROM {_quote(self._names[table.name])}")
                self._insert(table, given.get(table.name, ()))

    def _insert(self, table: Table, rows: Sequence[Sequence[Any]]) -> None:
        width = len(table.columns)
        marks = "(" + ", ".join([self._engine.placeholder] * width) + ")"
        chunk = max(1, _PARAMS_PER_INSERT // width)
        for start in range(0, len(rows), chunk):
            part = rows[start:start + chunk]
            params = [self._engine.adapt(v) for row in part for v in row]
            self._engine.execute(f"INSERT INTO {_quote(self._names[table.name])} VALUES "
                                 + ", ".join([marks] * len(part)), params)

    # ---------------------------------------------------------------------------------- queries

    def prepare(self, sql: str) -> str:
        """``sql`` (the user's dialect) as it runs here: guarded, checked to read slice tables only,
        and rewritten to the scratch tables' names and the scratch dialect where needed."""
        prepared = self._prepared.get(sql)
        if prepared is None:
            tree = check_query(sql, self.profile, self.functions)
            references = table_references(tree, self._index)
            prepared = self._rewrite(tree, references) if self._needs_rewrite(references) else sql
            self._prepared[sql] = prepared
        return prepared

    def _needs_rewrite(self, references: list[tuple[exp.Table, Table]]) -> bool:
        """Rewrite for transpiled SQL and for qualified or renamed references. On PostgreSQL, where the
        real tables sit next to the temporary ones, any spelling other than the scratch table's own is
        rewritten, so that every reference that stays resolves to a temporary table."""
        def renamed(node: exp.Table, table: Table) -> bool:
            name, own = node.name, self._names[table.name]
            return name != own if self._engine.temporary else name.lower() != own.lower()

        return self.slice.transpiled or any(
            node.args.get("db") or node.args.get("catalog") or renamed(node, table) for node, table in references
        )

    def _rewrite(self, tree: exp.Expression, references: list[tuple[exp.Table, Table]]) -> str:
        for node, table in references:
            if not node.alias:
                node.set("alias", exp.TableAlias(this=node.this.copy()))
            node.set("this", exp.to_identifier(self._names[table.name], quoted=True))
            node.set("db", None)
            node.set("catalog", None)
        for column in tree.find_all(exp.Column):
            column.set("db", None)
            column.set("catalog", None)
        try:
            return tree.sql(dialect=self._engine.profile.sqlglot_dialect)
        except SqlglotError as error:
            raise SliceError(f"the SQL could not be written for the scratch database: {error}") from error

    def run(self, sql: str) -> ResultSet:
        """Run one candidate on the current data: at most ``row_cap`` rows, within the timeout."""
        return self._engine.query(self.prepare(sql), self.row_cap)

    def dry_run(self, sqls: Sequence[str]) -> None:
        """Run each SQL on the empty slice; ``SliceError`` with the engine's message if one fails."""
        self.load({})
        for sql in sqls:
            try:
                self.run(sql)
            except (QueryError, QueryTimeoutError) as error:
                raise SliceError(f"a candidate fails on the empty schema slice: {error}") from error

    def close(self) -> None:
        self._engine.close()


@contextmanager
def _scratch(database: Database, slice_: SchemaSlice, row_cap: int, timeout_s: float) -> Iterator[Scratch]:
    engine = _open_engine(database, slice_.scratch_dialect, timeout_s)
    scratch = Scratch(engine, slice_, database.profile, row_cap, database.functions())
    try:
        scratch.create_tables()
        yield scratch
    finally:
        scratch.close()


def open_scratch(database: Database, slice_: SchemaSlice, *, row_cap: int = ROW_CAP,
                 timeout_s: float = TIMEOUT_S) -> AbstractContextManager[Scratch]:
    """A scratch database holding ``slice_`` (empty), closed and discarded when the block ends."""
    return _scratch(database, slice_, row_cap, timeout_s)
