"""Read-only execution and schema reflection on a user's SQLAlchemy engine.

Every statement runs through both safety layers: the statement guard (``safety.check_query``) and the
engine guard (``readonly``: the engine's own read-only mode, a timeout, always rolled back). Rows are
capped at ``Options.row_cap`` and the result says when it was cut short. Reflection samples a few
values per column with bounded queries that go through the same two layers.
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Iterator

import sqlalchemy as sa
from sqlalchemy.pool import SingletonThreadPool, StaticPool

from .config import Options
from .errors import ConfigurationError, QueryError
from .profiles import DialectProfile, profile_for
from .readonly import STRATEGIES, Strategy
from .results import ResultSet
from .safety import check_query
from .schema import Column, ForeignKey, Schema, Table

# The connection a question was asked on (set by ``Database.asked_on``), per thread or task.
_CALLER: ContextVar[sa.Connection | None] = ContextVar("verifiedsql_caller", default=None)
SHARED_POOLS = (SingletonThreadPool, StaticPool)
SAMPLE_SCAN_ROWS = 1_000  # rows a sample query may look at, per column
SAMPLE_TEXT_CHARS = 60


def _trim(value: Any) -> Any:
    if isinstance(value, str) and len(value) > SAMPLE_TEXT_CHARS:
        return value[: SAMPLE_TEXT_CHARS - 3] + "..."
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value[:SAMPLE_TEXT_CHARS])
    return value


class Database:
    """One user engine, seen read-only: ``reflect()`` its schema, ``run_query()`` generated SQL."""

    def __init__(self, engine: sa.Engine, options: Options) -> None:
        self.engine = engine
        self.options = options
        self.profile: DialectProfile = profile_for(engine.dialect.name)
        strategy = STRATEGIES.get(self.profile.read_only_strategy)
        if strategy is None:
            raise ConfigurationError(
                f"read_only_strategy={self.profile.read_only_strategy!r} of the {self.profile.name} profile "
                f"is not implemented; choose one of {sorted(STRATEGIES)}."
            )
        self._strategy: Strategy = strategy
        self._schema: Schema | None = None

    # ---------------------------------------------------------------------------------- connections

    @contextmanager
    def asked_on(self, connection: sa.Connection | None) -> Iterator[None]:
        """Within this block, work happens on ``connection`` when the pool shares one raw connection.

        With SingletonThreadPool or StaticPool (in-memory SQLite and DuckDB, wrapped DB-API
        connections) a checkout returns the caller's own raw connection, and checking it back in
        would reset it: a rollback of the caller's uncommitted work. Reusing the caller's
        connection avoids that; every other pool gives verifiedsql a connection of its own.
        """
        token = _CALLER.set(connection)
        try:
            yield
        finally:
            _CALLER.reset(token)

    @contextmanager
    def _connect(self) -> Iterator[sa.Connection]:
        caller = _CALLER.get()
        if caller is not None and isinstance(self.engine.pool, SHARED_POOLS):
            yield caller
            return
        with self.engine.connect() as conn:
            yield conn

    # ---------------------------------------------------------------------------------- execution

    def run_query(self, sql: str, *, guard: bool = True) -> ResultSet:
        """Run one generated query read-only and return at most ``row_cap`` rows.

        ``guard=False`` skips the statement guard; it exists only so tests can show that the engine
        guard holds on its own.
        """
        if guard:
            check_query(sql, self.profile)
        cap = self.options.row_cap
        with self._connect() as conn:
            raw = conn.connection.driver_connection
            with self._strategy(raw, sql, self.profile, self.options.statement_timeout_s) as cursor:
                columns = tuple(str(d[0]) for d in cursor.description or ())
                rows = cursor.fetchmany(cap + 1)
        return ResultSet(columns, tuple(tuple(row) for row in rows[:cap]), truncated=len(rows) > cap)

    # --------------------------------------------------------------------------------- reflection

    def reflect(self, *, refresh: bool = False) -> Schema:
        """Tables of ``options.schema`` (or the default schema) with keys and sample values; cached."""
        if self._schema is None or refresh:
            self._schema = self._reflect()
        return self._schema

    def _reflect(self) -> Schema:
        with self._connect() as conn:
            return self._reflect_with(sa.inspect(conn))

    def _reflect_with(self, inspector: sa.Inspector) -> Schema:
        namespace = self.options.schema
        tables = []
        for name in sorted(inspector.get_table_names(schema=namespace)):
            primary = set(inspector.get_pk_constraint(name, schema=namespace).get("constrained_columns") or ())
            columns = tuple(
                Column(
                    name=info["name"],
                    type=self._type_text(info["type"]),
                    nullable=bool(info.get("nullable", True)),
                    primary_key=info["name"] in primary,
                    samples=self._samples(name, info["name"]),
                )
                for info in inspector.get_columns(name, schema=namespace)
            )
            tables.append(Table(self._qualified(name), columns, self._foreign_keys(inspector, name)))
        return Schema(tuple(tables), namespace=namespace)

    def _qualified(self, table: str, schema: str | None = None) -> str:
        schema = schema or self.options.schema
        return f"{schema}.{table}" if schema else table

    def _type_text(self, type_: Any) -> str:
        try:
            return str(type_.compile(dialect=self.engine.dialect))
        except sa.exc.SQLAlchemyError:
            return type(type_).__name__.upper()

    def _foreign_keys(self, inspector: sa.Inspector, table: str) -> tuple[ForeignKey, ...]:
        try:
            keys = inspector.get_foreign_keys(table, schema=self.options.schema)
        except (sa.exc.SQLAlchemyError, ValueError, KeyError) as error:  # e.g. fakesnow's SHOW IMPORTED KEYS
            warnings.warn(f"verifiedsql could not reflect foreign keys of {table!r}: {error}", stacklevel=3)
            return ()
        return tuple(
            ForeignKey(
                tuple(fk["constrained_columns"]),
                self._qualified(fk["referred_table"], fk.get("referred_schema")),
                tuple(fk["referred_columns"]),
            )
            for fk in keys
        )

    def _samples(self, table: str, column: str) -> tuple[Any, ...]:
        """Up to ``options.sample_values`` distinct non-null values among the first rows of a column."""
        limit = self.options.sample_values
        if limit <= 0:
            return ()
        quote = self.engine.dialect.identifier_preparer.quote
        source = quote(table)
        if self.options.schema:
            source = f"{self.engine.dialect.identifier_preparer.quote_schema(self.options.schema)}.{source}"
        col = quote(column)
        sql = (
            f"SELECT DISTINCT {col} FROM (SELECT {col} FROM {source} LIMIT {SAMPLE_SCAN_ROWS}) s "
            f"WHERE {col} IS NOT NULL LIMIT {limit}"
        )
        try:
            result = self.run_query(sql)
        except QueryError:  # e.g. a type without equality (PostgreSQL json): no samples, not a failure
            return ()
        return tuple(_trim(row[0]) for row in result.rows)
