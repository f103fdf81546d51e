"""Read-only execution and schema reflection on a user's SQLAlchemy engine.

Every statement runs through both safety layers: the statement guard (``safety.check_query``) and the
engine guard (``readonly``: the engine's own read-only mode, a timeout, always rolled back). Rows are
capped at ``Options.row_cap`` and the result says when it was cut short.

Reflection reads the namespace's catalog with the engine's bulk reader (``catalog_reflect``: a few catalog
queries whatever the number of tables), or SQLAlchemy's inspector where there is none or it fails. Sample
values (a few per column) come from one bounded query per batch of tables (``samples``; a batch that fails
is read again one table at a time), through the same two layers: for every table at reflection in a schema
of at most EAGER_SAMPLE_TABLES tables, else for the tables a prompt shows, when it shows them
(``with_samples``), each table read once. The statements of a question or of one ``with_samples`` reuse
their SQLite read-only connections (``statements``).
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any, Iterable, Iterator

import sqlalchemy as sa
from sqlalchemy.pool import SingletonThreadPool, StaticPool

from ..backends import registry
from ..config import Options
from ..errors import ConfigurationError, QueryError, QueryTimeoutError, SessionStateError, UnsafeSQLError
from ..guard.boundary import current_catalogs, relation_refusal
from ..guard.bounded import Workers, run_statement
from ..guard.contain import as_query_error
from ..guard.functions import FunctionPolicy, load_policy
from ..guard.privileges import check_role
from ..guard.readonly import STRATEGIES, Strategy
from ..guard.redact import engine_error
from ..guard.safety import check_query
from ..profiles import DialectProfile, profile_for
from ..results import ResultSet
from . import samples
from .catalog_reflect import Catalog, inspected
from .schema import Column, ForeignKey, Schema, Table

if TYPE_CHECKING:
    from ..guard.deadline import Deadline

# The connection a question was asked on (set by ``Database.asked_on``), per thread or task.
_CALLER: ContextVar[sa.Connection | None] = ContextVar("verifiedsql_caller", default=None)
SHARED_POOLS = (SingletonThreadPool, StaticPool)
SAMPLE_SCAN_ROWS = 1_000  # rows a table's sample query may look at
EAGER_SAMPLE_TABLES = 100  # up to this many tables, reflect() samples them all; beyond, with_samples() on demand


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
        self.warnings: list[str] = []  # about the connection's rights (verifiedsql.guard.privileges), for reports
        self._role_checked = False
        self._schema: Schema | None = None
        self._sampled: dict[str, Table] = {}  # tables with their samples, by name (with_samples)
        self.reflected_with = ""  # what read the schema: "catalog" (catalog_reflect) or "inspector" (and why)
        self._functions: tuple[FunctionPolicy | None] | None = None  # read from the catalog on first use
        self._workers = Workers()  # SQLite read-only connections, kept while statements() is open

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
    def statements(self) -> Iterator[None]:
        """Within this block (a question, a batch of sample reads; on any thread), statements reuse the
        read-only connections earlier ones opened (``bounded.Workers``) instead of opening one each."""
        with self._workers.scope():
            yield

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
                              plan=True, workers=self._workers)

    def _check(self, sql: str) -> None:
        """The statement guard, and the schema boundary: with ``options.schema``, only its tables are read."""
        policy = self.functions()
        tree = check_query(sql, self.profile, policy)
        if tree is None:  # only where a test has switched the statement guard off
            return
        tables = [t.name for t in self.reflect().tables] if self.options.schema else []
        relation_refusal(tree, self.profile, self.options.schema, tables, current_catalogs(self.engine.url),
                         secret_relations=policy.relations if policy else (),
                         secret_columns=policy.columns if policy else None)

    def functions(self, conn: sa.Connection | None = None) -> FunctionPolicy | None:
        """Which functions generated SQL may call here (``verifiedsql.guard.functions``), read from the engine's
        catalog once, through the engine guard, on ``conn`` or a connection of its own."""
        if self._functions is None:
            if conn is None:
                with self._connect() as own:
                    return self.functions(own)
            self._functions = (load_policy(self.profile, conn.connection.driver_connection, self._strategy),)
        return self._functions[0]

    def _guarded(self, conn: sa.Connection, **engine: Any) -> Strategy:
        """The engine guard, judging functions by this database's policy (and on PostgreSQL and DuckDB the
        tables read, by ``options.schema``: ``boundary``); ``engine``: more of the strategy's own keywords."""
        schema = self.options.schema
        boundary = {"schema": schema} if schema and self.profile.name in ("postgresql", "duckdb") else {}
        return partial(self._strategy, functions=self.functions(conn), **boundary, **engine)

    def _timeout(self, timeout_s: float | None) -> float:
        limit = self.options.statement_timeout_s
        return limit if timeout_s is None else min(limit, timeout_s)

    def _run_on(self, conn: sa.Connection, sql: str, cap: int, timeout_s: float, **engine: Any) -> ResultSet:
        """The engine guard and the fetch of ``run_query`` (the statement guard must have passed), held to
        the time, value and result-size bounds of ``verifiedsql.guard.bounded``; ``engine``: as for ``_guarded``."""
        result = run_statement(self._guarded(conn, **engine), conn.connection.driver_connection, sql, self.profile,
                               timeout_s, row_cap=cap, max_bytes=self.options.max_result_bytes, workers=self._workers)
        assert result is not None
        return result

    # --------------------------------------------------------------------------------- reflection

    def reflect(self, *, refresh: bool = False) -> Schema:
        """Tables of ``options.schema`` (or the default schema) with keys; cached. Each table comes with its
        sample values when the namespace has at most EAGER_SAMPLE_TABLES tables; in a larger one, a table
        gets them from ``with_samples`` when a prompt shows it."""
        if self._schema is None or refresh:
            self._sampled = {}
            self._schema = self._reflect()
        return self._schema

    def _reflect(self) -> Schema:
        catalog = self._catalog()
        for note in catalog.warnings:
            warnings.warn(note, stacklevel=3)
        texts: dict[int, str] = {}  # type text by type object: a bulk reader shares one per type text
        schema = Schema(tuple(self._table(name, catalog, texts) for name in sorted(catalog.columns)),
                        namespace=self.options.schema)
        return self.with_samples(schema) if len(schema.tables) <= EAGER_SAMPLE_TABLES else schema

    def _catalog(self) -> Catalog:
        """The namespace's tables, columns and keys: the engine's bulk reader (``catalog_reflect``), else,
        or when it fails, SQLAlchemy's inspector. ``reflected_with`` says which answered."""
        backend = registry().get(self.profile.name)
        reader = backend.bulk_catalog if backend is not None else None
        if reader is not None:
            try:
                with self._connect() as conn:
                    catalog = reader(conn, self.options.schema)
                self.reflected_with = "catalog"
                return catalog
            except Exception as error:  # noqa: BLE001 -- any failure: the inspector reads the same, slower
                self.reflected_with = f"inspector, after the catalog reader failed: {type(error).__name__}: {error}"
        else:
            self.reflected_with = "inspector"
        try:
            with self._connect() as conn:
                return inspected(sa.inspect(conn), self.options.schema)
        except sa.exc.DBAPIError as error:  # not a database the driver can read (a file of something else)
            raise QueryError(
                f"cannot read the tables of {self.engine.url.render_as_string()}: "
                f"{engine_error(str(error.orig).strip())}; check that it names a {self.profile.display_name} "
                "database that this driver can open."
            ) from error

    def _table(self, name: str, catalog: Catalog, texts: dict[int, str]) -> Table:
        primary = set(catalog.primary_keys.get(name, ()))
        columns = tuple(Column(c.name, texts.get(id(c.type)) or self._type_text(c.type, texts), c.nullable,
                               c.name in primary) for c in catalog.columns[name])
        keys = tuple(ForeignKey(k.columns, self._qualified(k.referred_table, k.referred_schema), k.referred_columns)
                     for k in catalog.foreign_keys.get(name, ()))
        return Table(self._qualified(name), columns, keys, namespace=self.options.schema)

    def _qualified(self, table: str, schema: str | None = None) -> str:
        schema = schema or self.options.schema
        return f"{schema}.{table}" if schema else table

    def _type_text(self, type_: Any, texts: dict[int, str]) -> str:
        """The type as the engine's DDL writes it, kept in ``texts`` (the catalog holds every type object
        while ``texts`` lives, so an id is never reused meanwhile)."""
        try:
            text = str(type_.compile(dialect=self.engine.dialect))
        except sa.exc.SQLAlchemyError:
            text = type(type_).__name__.upper()
        texts[id(type_)] = text
        return text

    def with_samples(self, schema: Schema, tables: Iterable[str] | None = None,
                     deadline: Deadline | None = None) -> Schema:
        """``schema`` with sample values in the tables named (in any case; all when None): each table is
        read once per reflection, a batch of tables per statement (``samples``), on one connection for all,
        then kept. With a question's ``deadline``, each read is held to the time left, and once it is spent
        the tables not read yet stay without samples (they are read when a later question needs them)."""
        if self.options.sample_values <= 0:
            return schema
        wanted = None if tables is None else {name.lower() for name in tables}
        chosen = [t for t in schema.tables if wanted is None or t.name.lower() in wanted]
        missing = [t for t in chosen if t.name not in self._sampled]
        if missing:
            with self.statements(), self._connect() as conn:
                for batch in samples.batches(missing, typed=self.profile.name != "sqlite"):
                    if deadline is not None and deadline.expired:
                        break
                    self._sample_batch(conn, batch, deadline)
        if not chosen:
            return schema
        return replace(schema, tables=tuple(self._sampled.get(t.name, t) if wanted is None or t.name.lower() in wanted
                                            else t for t in schema.tables))

    def _sample_batch(self, conn: sa.Connection, batch: samples.Batch, deadline: Deadline | None) -> None:
        """Read the samples of ``batch``'s tables in one statement; a batch that fails, times out or is cut at
        the size bounds is read again one table at a time.

        The statement is verifiedsql's own, made only of the catalog's names quoted by the dialect's
        preparer, numbers and NULLs (``samples.batch_sql``): no text of a model or a user is in it. It runs
        behind the engine guard alone; the statement guard's parse of a batch costs far more than its read
        (0.2 s for 50 tables of 20 columns), and the table-at-a-time reads keep both layers. DuckDB runs it
        unoptimized (``readonly.duckdb``'s ``optimize``): its optimizer cost more than the read."""
        timeout = self._timeout(None if deadline is None else deadline.cap(None))
        sql = samples.batch_sql(batch, self.quoted_table, self.engine.dialect.identifier_preparer.quote,
                                SAMPLE_SCAN_ROWS, typed_nulls=self.profile.name not in samples.UNTYPED_NULL_UNITES)
        engine = {"optimize": False} if self.profile.read_only_strategy == "duckdb" else {}
        try:
            with as_query_error("sampling the tables"):
                result = self._run_on(conn, sql, SAMPLE_SCAN_ROWS * len(batch.tables), timeout, **engine)
        except (QueryError, QueryTimeoutError, UnsafeSQLError):  # read one table at a time below
            result = None
        if result is not None and not result.truncated:
            read = samples.split(batch, result, self.options.sample_values)
            for table in batch.tables:
                self._sampled[table.name] = replace(table, columns=read[table.name])
            return
        for table in batch.tables:
            if deadline is not None and deadline.expired:
                return
            timeout = self._timeout(None if deadline is None else deadline.cap(None))
            columns = self._with_samples(conn, table.name, table.columns, timeout)
            if columns is not None:
                self._sampled[table.name] = replace(table, columns=columns)

    def quoted_table(self, name: str) -> str:
        """``name`` (bare, or qualified as ``reflect()`` names it) quoted for this engine, in
        ``options.schema`` when one is set."""
        preparer = self.engine.dialect.identifier_preparer
        schema = self.options.schema
        if schema and name.startswith(schema + "."):
            name = name[len(schema) + 1:]
        return f"{preparer.quote_schema(schema)}.{preparer.quote(name)}" if schema else preparer.quote(name)

    def _with_samples(self, conn: sa.Connection, table: str, columns: tuple[Column, ...],
                      timeout_s: float | None = None) -> tuple[Column, ...] | None:
        """``columns`` with up to ``options.sample_values`` distinct non-null values each, in first-seen
        order among the table's first SAMPLE_SCAN_ROWS rows: one bounded query per table, through
        both safety layers (never a full scan), within ``timeout_s`` (default: the statement timeout). None
        when a ``timeout_s`` shorter than the statement timeout ran out: the table may be read again later."""
        timeout = self._timeout(timeout_s)
        sql = f"SELECT * FROM {self.quoted_table(table)} LIMIT {SAMPLE_SCAN_ROWS}"
        try:
            with as_query_error("sampling the table"):  # e.g. a value the driver cannot convert
                check_query(sql, self.profile)
                result = self._run_on(conn, sql, SAMPLE_SCAN_ROWS, timeout)
        except QueryTimeoutError:  # no samples for this table, not a failure
            return None if timeout < self.options.statement_timeout_s else columns
        except QueryError:
            return columns
        positions = _column_positions(result.columns, [c.name for c in columns])
        cells = list(zip(*result.rows)) if result.rows else []
        return samples.with_values(columns, [cells[p] if cells and p is not None else None for p in positions],
                                   self.options.sample_values)


def _column_positions(found: tuple[str, ...], wanted: list[str]) -> list[int | None]:
    """Where each wanted column is among the result's columns: by name, else by name in any case."""
    exact = {name: i for i, name in reversed(list(enumerate(found)))}
    folded = {name.lower(): i for i, name in reversed(list(enumerate(found)))}
    return [exact.get(name, folded.get(name.lower())) for name in wanted]
