"""Read-only execution and schema reflection on a user's SQLAlchemy engine.

Every statement runs through both safety layers: the statement guard (``safety.check_query``) and the
engine guard (``readonly``: the engine's own read-only mode, a timeout, always rolled back). Rows are
capped at ``Options.row_cap`` and the result says when it was cut short. Reflection samples a few
values per column with one bounded query per table that goes through the same two layers.
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager
from contextvars import ContextVar
from functools import partial
from typing import Any, Iterable, Iterator

import sqlalchemy as sa
from sqlalchemy.engine.interfaces import ReflectedForeignKeyConstraint
from sqlalchemy.pool import SingletonThreadPool, StaticPool

from .boundary import current_catalogs, relation_refusal
from .bounded import run_statement
from .config import Options
from .contain import as_query_error
from .errors import ConfigurationError, QueryError, QueryTimeoutError, SessionStateError
from .functions import FunctionPolicy, load_policy
from .privileges import check_role
from .profiles import DialectProfile, profile_for
from .readonly import STRATEGIES, Strategy
from .results import ResultSet
from .safety import check_query
from .schema import Column, ForeignKey, Schema, Table

# The connection a question was asked on (set by ``Database.asked_on``), per thread or task.
_CALLER: ContextVar[sa.Connection | None] = ContextVar("verifiedsql_caller", default=None)
SHARED_POOLS = (SingletonThreadPool, StaticPool)
SAMPLE_SCAN_ROWS = 1_000  # rows a table's sample query may look at
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
        if options.question_role is not None:
            if self.profile.read_only_strategy != "postgresql":
                raise ConfigurationError(f"question_role is PostgreSQL-only; on {self.profile.name}, connect as a "
                                         "user with read-only grants instead.")
            self._strategy = partial(strategy, role=options.question_role)
        self.warnings: list[str] = []  # about the connection's rights (verifiedsql.privileges), for reports
        self._role_checked = False
        self._schema: Schema | None = None
        self._functions: tuple[FunctionPolicy | None] | None = None  # read from the catalog on first use

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
            self._check_role(caller)
            yield caller
            return
        try:
            conn = self.engine.connect()
        except sa.exc.DBAPIError as error:  # the server is down or unreachable
            raise QueryError(
                f"cannot connect to the database: {error.orig}; check that the server is running and reachable."
            ) from error
        with conn:
            self._check_role(conn)
            try:
                yield conn
            except SessionStateError:  # a query left session state that could not be undone: discard it
                conn.invalidate()
                raise

    def _check_role(self, conn: sa.Connection) -> None:
        """Once, on the first connection: the role questions run under (PostgreSQL; ``privileges``)."""
        if not self._role_checked and self.profile.read_only_strategy == "postgresql":
            self.warnings = check_role(conn, self.options.question_role)
        self._role_checked = True

    # ---------------------------------------------------------------------------------- execution

    def run_query(self, sql: str, *, guard: bool = True, timeout_s: float | None = None) -> ResultSet:
        """Run one generated query read-only and return at most ``row_cap`` rows.

        ``timeout_s`` may only shorten ``statement_timeout_s``. ``guard=False`` skips the statement
        guard; it exists only so tests can show that the engine guard holds on its own.
        """
        with as_query_error("running the query"):
            if guard:
                self._check(sql)
            with self._connect() as conn:
                return self._run_on(conn, sql, self.options.row_cap, self._timeout(timeout_s))

    def explain(self, sql: str, *, timeout_s: float | None = None) -> None:
        """Have the engine compile and plan ``sql`` without running it (the dialect's EXPLAIN), behind both
        safety layers; raises ``QueryError`` for SQL the engine rejects. ``timeout_s`` may only shorten
        ``statement_timeout_s``."""
        with as_query_error("planning the query"):
            self._check(sql)
            with self._connect() as conn:
                run_statement(self._guarded(conn), conn.connection.driver_connection, sql, self.profile,
                              self._timeout(timeout_s), row_cap=1, max_bytes=self.options.max_result_bytes,
                              plan=True)

    def _check(self, sql: str) -> None:
        """The statement guard, and the schema boundary: with ``options.schema``, only its tables are read."""
        tree = check_query(sql, self.profile, self.functions())
        if tree is None:  # only where a test has switched the statement guard off
            return
        tables = [t.name for t in self.reflect().tables] if self.options.schema else []
        relation_refusal(tree, self.profile, self.options.schema, tables, current_catalogs(self.engine.url))

    def functions(self, conn: sa.Connection | None = None) -> FunctionPolicy | None:
        """Which functions generated SQL may call here (``verifiedsql.functions``), read from the engine's
        catalog once, through the engine guard, on ``conn`` or a connection of its own."""
        if self._functions is None:
            if conn is None:
                with self._connect() as own:
                    return self.functions(own)
            self._functions = (load_policy(self.profile, conn.connection.driver_connection, self._strategy),)
        return self._functions[0]

    def _guarded(self, conn: sa.Connection) -> Strategy:
        """The engine guard, judging functions by this database's policy (and on PostgreSQL and DuckDB the
        tables read, by ``options.schema``: ``boundary``)."""
        schema = self.options.schema
        boundary = {"schema": schema} if schema and self.profile.name in ("postgresql", "duckdb") else {}
        return partial(self._strategy, functions=self.functions(conn), **boundary)

    def _timeout(self, timeout_s: float | None) -> float:
        limit = self.options.statement_timeout_s
        return limit if timeout_s is None else min(limit, timeout_s)

    def _run_on(self, conn: sa.Connection, sql: str, cap: int, timeout_s: float) -> ResultSet:
        """The engine guard and the fetch of ``run_query`` (the statement guard must have passed), held to
        the time, value and result-size bounds of ``verifiedsql.bounded``."""
        result = run_statement(self._guarded(conn), conn.connection.driver_connection, sql, self.profile, timeout_s,
                               row_cap=cap, max_bytes=self.options.max_result_bytes)
        assert result is not None
        return result

    # --------------------------------------------------------------------------------- reflection

    def reflect(self, *, refresh: bool = False) -> Schema:
        """Tables of ``options.schema`` (or the default schema) with keys and sample values; cached."""
        if self._schema is None or refresh:
            self._schema = self._reflect()
        return self._schema

    def _reflect(self) -> Schema:
        with self._connect() as conn:
            reflected = self._reflect_with(sa.inspect(conn))
        tables = [table for _, table in reflected]
        if self.options.sample_values > 0:
            with self._connect() as conn:  # one connection for every table's sample query
                tables = [
                    Table(t.name, self._with_samples(conn, raw_name, t.columns), t.foreign_keys)
                    for raw_name, t in reflected
                ]
        return Schema(tuple(tables), namespace=self.options.schema)

    def _reflect_with(self, inspector: sa.Inspector) -> list[tuple[str, Table]]:
        """Each table of the namespace, by its own name, without samples; bulk reflection where it can."""
        namespace = self.options.schema
        names = sorted(inspector.get_table_names(schema=namespace))
        if not names:
            return []
        columns = self._bulk(inspector.get_multi_columns, names)
        primary_keys = self._bulk(inspector.get_multi_pk_constraint, names)
        foreign_keys = self._bulk_foreign_keys(inspector, names)
        tables = []
        for name in names:
            infos = columns.get(name)
            if infos is None:
                infos = inspector.get_columns(name, schema=namespace)
            pk = primary_keys.get(name)
            if pk is None:
                pk = inspector.get_pk_constraint(name, schema=namespace)
            primary = set(pk.get("constrained_columns") or ())
            table_columns = tuple(
                Column(
                    name=info["name"],
                    type=self._type_text(info["type"]),
                    nullable=bool(info.get("nullable", True)),
                    primary_key=info["name"] in primary,
                )
                for info in infos
            )
            keys = foreign_keys[name] if name in foreign_keys else self._foreign_keys(inspector, name)
            tables.append((name, Table(self._qualified(name), table_columns, keys)))
        return tables

    def _bulk(self, method: Any, names: list[str]) -> dict[str, Any]:
        """One ``Inspector.get_multi_*`` call for all tables, by table name; {} where it fails.

        Dialects without bulk reflection of their own get SQLAlchemy's per-table loop; a name missing
        from the answer is reflected on its own by the caller.
        """
        try:
            found = method(schema=self.options.schema, filter_names=names)
        except (NotImplementedError, sa.exc.SQLAlchemyError, ValueError, KeyError):
            return {}
        return {table: value for (_, table), value in found.items()}

    def _bulk_foreign_keys(self, inspector: sa.Inspector, names: list[str]) -> dict[str, tuple[ForeignKey, ...]]:
        """Foreign keys of all tables at once; {} if that fails (then each table is tried on its own)."""
        with _quiet_fk_parsing():
            found = self._bulk(inspector.get_multi_foreign_keys, names)
        return {table: self._foreign_key_tuple(keys) for table, keys in found.items()}

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
            with _quiet_fk_parsing():
                keys = inspector.get_foreign_keys(table, schema=self.options.schema)
        except (sa.exc.SQLAlchemyError, ValueError, KeyError) as error:  # e.g. fakesnow's SHOW IMPORTED KEYS
            warnings.warn(f"verifiedsql could not reflect foreign keys of {table!r}: {error}", stacklevel=5)
            return ()
        return self._foreign_key_tuple(keys)

    def _foreign_key_tuple(self, keys: Iterable[ReflectedForeignKeyConstraint]) -> tuple[ForeignKey, ...]:
        return tuple(
            ForeignKey(
                tuple(fk["constrained_columns"]),
                self._qualified(fk["referred_table"], fk.get("referred_schema")),
                tuple(fk["referred_columns"]),
            )
            for fk in keys
        )

    def quoted_table(self, name: str) -> str:
        """``name`` (bare, or qualified as ``reflect()`` names it) quoted for this engine, in
        ``options.schema`` when one is set."""
        preparer = self.engine.dialect.identifier_preparer
        schema = self.options.schema
        if schema and name.startswith(schema + "."):
            name = name[len(schema) + 1:]
        return f"{preparer.quote_schema(schema)}.{preparer.quote(name)}" if schema else preparer.quote(name)

    def _with_samples(self, conn: sa.Connection, table: str, columns: tuple[Column, ...]) -> tuple[Column, ...]:
        """``columns`` with up to ``options.sample_values`` distinct non-null values each, in first-seen
        order among the table's first SAMPLE_SCAN_ROWS rows: one bounded query per table, through
        both safety layers (never a full scan)."""
        limit = self.options.sample_values
        sql = f"SELECT * FROM {self.quoted_table(table)} LIMIT {SAMPLE_SCAN_ROWS}"
        try:
            with as_query_error("sampling the table"):  # e.g. a value the driver cannot convert
                check_query(sql, self.profile)
                result = self._run_on(conn, sql, SAMPLE_SCAN_ROWS, self._timeout(None))
        except (QueryError, QueryTimeoutError):  # no samples for this table, not a failure
            return columns
        positions = _column_positions(result.columns, [c.name for c in columns])
        cells = list(zip(*result.rows)) if result.rows else []
        return tuple(
            Column(column.name, column.type, column.nullable, column.primary_key,
                   tuple(_trim(v) for v in _distinct_values(cells[position], limit)))
            if cells and position is not None else column
            for column, position in zip(columns, positions)
        )


def _column_positions(found: tuple[str, ...], wanted: list[str]) -> list[int | None]:
    """Where each wanted column is among the result's columns: by name, else by name in any case."""
    exact = {name: i for i, name in reversed(list(enumerate(found)))}
    folded = {name.lower(): i for i, name in reversed(list(enumerate(found)))}
    return [exact.get(name, folded.get(name.lower())) for name in wanted]


def _distinct_values(values: Iterable[Any], limit: int) -> list[Any]:
    """Up to ``limit`` distinct non-null values, in first-seen order; unhashable ones (lists, dicts)
    are told apart by their repr."""
    seen: set[Any] = set()
    picked: list[Any] = []
    for value in values:
        if value is None:
            continue
        try:
            key: Any = (0, value)
            if key in seen:
                continue
        except TypeError:
            key = (1, repr(value))
            if key in seen:
                continue
        seen.add(key)
        picked.append(value)
        if len(picked) >= limit:
            break
    return picked


@contextmanager
def _quiet_fk_parsing() -> Iterator[None]:
    """Silence SQLAlchemy's SQLite warning about a foreign key written twice in the DDL (Spider's
    dog_kennels declares ``FOREIGN KEY (owner_id) REFERENCES Owners (owner_id)`` twice): the PRAGMA
    lists both, SQLAlchemy keeps one, then warns that it cannot place the second. The data is
    right and the key is kept once; the warning is about the DDL, not about anything to fix."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="WARNING: SQL-parsed foreign key constraint",
                                category=sa.exc.SAWarning)
        yield
