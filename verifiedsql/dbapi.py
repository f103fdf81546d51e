"""PEP 249 wrapper: ``connect(raw_connection)`` gives a Connection whose cursors run SQL unchanged
and answer questions through the verified pipeline.

``cursor.execute(text)`` decides with the engine's own parser (``statements.classify``): text that parses
as SQL runs on the wrapped driver exactly as given (its parameters in the driver's own paramstyle,
``connection.paramstyle``) and never reaches the model; text that starts like a statement but does not
parse raises ``ProgrammingError``; anything else is a question. ``mode="sql"`` or ``mode="question"`` forces
either reading. Questions run in their own read-only transaction, so the wrapped connection must not
be inside a transaction when one is asked: commit or roll back first (``OpenTransactionError``, an
``InterfaceError``, says so). Wrapping a connection inside a transaction is fine, and never ends it.
"""

from __future__ import annotations

from typing import Any, Iterator, Literal, Sequence

import sqlalchemy as sa
from sqlalchemy.pool import StaticPool

from . import backends, errors
from .config import Options
from .guard import sqlite_hooks, statements, transactions
from .llm.base import ChatModel
from .pipeline import Answer
from .profiles import DialectProfile, profile_for
from .report import VerificationReport
from .session import VerifiedState

apilevel = "2.0"
threadsafety = 1
paramstyle = "qmark"  # plain SQL uses the wrapped driver's style: see Connection.paramstyle

Error = errors.VerifiedSQLError


class Warning(Exception):  # noqa: A001 - the name is fixed by PEP 249
    """PEP 249 warning class (verifiedsql raises none)."""


class InterfaceError(Error):
    """Misuse of the wrapper itself (closed cursor, unknown connection type, busy connection)."""


class DatabaseError(Error):
    pass


class DataError(DatabaseError):
    pass


class OperationalError(DatabaseError):
    pass


class IntegrityError(DatabaseError):
    pass


class InternalError(DatabaseError):
    pass


class ProgrammingError(DatabaseError):
    pass


class NotSupportedError(DatabaseError):
    pass


ExecuteMode = Literal["auto", "sql", "question"]

def looks_like_sql(text: str, profile: DialectProfile) -> bool:
    """True when ``cursor.execute`` would run ``text`` as SQL on this engine (see ``statements.classify``)."""
    return statements.classify(text, profile.name).kind == "sql"


class UnsupportedDriverError(InterfaceError, errors.UnknownBackendError):
    """``connect`` was handed a connection of a driver no backend takes (PEP 249 class: ``InterfaceError``;
    also ``verifiedsql.errors.UnknownBackendError``)."""


def _backend_of(raw: Any) -> backends.Backend:
    """The backend whose driver made ``raw`` (``verifiedsql.backends``: fakesnow's connection, in tests,
    counts as snowflake's)."""
    try:
        return backends.backend_for_driver(transactions.module_root(raw))
    except errors.UnknownBackendError as error:
        raise UnsupportedDriverError(f"cannot wrap a {type(raw).__module__}.{type(raw).__name__}: {error}") from None


def _in_transaction(raw: Any, driver: str) -> bool:
    """Whether the wrapped connection is inside a transaction, asked by the backend of ``driver`` (its
    ``in_transaction``; the check never ends or joins it). ``UnknownBackendError`` for a driver no backend
    takes: an unknown driver is never taken for idle."""
    return backends.backend_for_driver(driver).in_transaction(raw)


class OpenTransactionError(InterfaceError, errors.OpenTransactionError):
    """A question was asked while the wrapped connection is inside a transaction (PEP 249 class:
    ``InterfaceError``; also ``verifiedsql.errors.OpenTransactionError``, as on the engine API)."""


class Connection:
    """A PEP 249 connection over a raw driver connection (sqlite3, duckdb, psycopg, snowflake)."""

    def __init__(self, raw: Any, options: Options, llm: ChatModel | None = None) -> None:
        self._raw = raw
        backend = _backend_of(raw)
        self._driver = backend.driver
        self._engine = sa.create_engine(
            backend.dbapi_url, creator=lambda: raw, poolclass=StaticPool, pool_reset_on_return=None
        )
        # SQLAlchemy's first checkout inspects the server and then rolls back (create.py first_connect),
        # which would end a transaction the caller has open: it waits for an idle moment (here, or the
        # first question, which requires one), so wrapping never touches the caller's transaction.
        if not _in_transaction(raw, self._driver):
            with self._engine.connect():
                pass
        self.profile = profile_for(self._engine.dialect.name)
        self._state = VerifiedState(options, llm)
        self.closed = False

    @property
    def paramstyle(self) -> str:
        """The wrapped driver's paramstyle, used for plain SQL parameters."""
        return self._engine.dialect.paramstyle

    @property
    def raw_connection(self) -> Any:
        return self._raw

    def _require_idle(self) -> None:
        """Refuse a question while the wrapped connection is inside a transaction (``OpenTransactionError``)."""
        transactions.require_idle(self._raw, OpenTransactionError)

    def answer(self, question: str) -> Answer:
        """Answer a question (used by cursors; also handy directly)."""
        self._check_open()
        self._require_idle()
        return self._state.answer(self._engine, question)

    def cursor(self) -> Cursor:
        self._check_open()
        return Cursor(self)

    def set_authorizer(self, authorizer: Any) -> None:
        """SQLite only: ``sqlite3.Connection.set_authorizer`` on the wrapped connection, kept across
        questions (Python cannot read an authorizer back, so one set on the raw connection directly is
        cleared where a question has to run on it: see ``verifiedsql.guard.sqlite_hooks``)."""
        self._sqlite_only("set_authorizer")
        sqlite_hooks.set_authorizer(self._raw, authorizer)

    def set_progress_handler(self, handler: Any, n: int) -> None:
        """SQLite only: ``sqlite3.Connection.set_progress_handler``, kept across questions like
        ``set_authorizer``."""
        self._sqlite_only("set_progress_handler")
        sqlite_hooks.set_progress_handler(self._raw, handler, n)

    def _sqlite_only(self, method: str) -> None:
        self._check_open()
        if self._driver != "sqlite3":
            raise NotSupportedError(f"{method} is a sqlite3 connection method; this wraps a {self._driver} one.")

    def commit(self) -> None:
        self._check_open()
        self._raw.commit()

    def rollback(self) -> None:
        self._check_open()
        self._raw.rollback()

    def close(self) -> None:
        """Close the wrapper and the wrapped connection."""
        if not self.closed:
            self._engine.dispose(close=False)
            sqlite_hooks.forget(self._raw)
            self._raw.close()
            self.closed = True

    def _check_open(self) -> None:
        if self.closed:
            raise InterfaceError("the connection is closed.")

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, exc_type: Any, *_: Any) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.rollback()


class Cursor:
    """A PEP 249 cursor; after a question, ``verification`` holds the report."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.arraysize = 1
        self.verification: VerificationReport | None = None
        self._raw_cursor: Any = None
        self._rows: list[tuple[Any, ...]] | None = None
        self._position = 0
        self._description: list[tuple[Any, ...]] | None = None
        self.closed = False

    @property
    def description(self) -> Sequence[tuple[Any, ...]] | None:
        if self._rows is not None:
            return self._description
        return self._raw_cursor.description if self._raw_cursor is not None else None

    @property
    def rowcount(self) -> int:
        if self._rows is not None:
            return len(self._rows)
        return self._raw_cursor.rowcount if self._raw_cursor is not None else -1

    @property
    def lastrowid(self) -> Any:
        return getattr(self._raw_cursor, "lastrowid", None)

    def execute(self, operation: str, parameters: Any = None, *, mode: ExecuteMode = "auto") -> Cursor:
        """Run SQL unchanged, or answer a question; see the module docstring for how it decides."""
        self._check_open()
        if mode not in ("auto", "sql", "question"):
            raise InterfaceError(f"mode={mode!r}: use 'auto', 'sql' or 'question'.")
        is_sql = mode == "sql" or (mode == "auto" and isinstance(operation, str) and self._reads_as_sql(operation))
        if is_sql:
            self._reset(question=False)
            if parameters is None:
                self._raw_cursor.execute(operation)
            else:
                self._raw_cursor.execute(operation, parameters)
            return self
        if parameters:
            raise ProgrammingError("parameters are only accepted with SQL, not with a question.")
        answer = self.connection.answer(operation)
        self._reset(question=True)
        self._rows = list(answer.result.rows)
        self._description = [(name, None, None, None, None, None, None) for name in answer.result.columns]
        self.verification = answer.report
        return self

    def _reads_as_sql(self, operation: str) -> bool:
        """The engine's parser decides (``statements.classify``): SQL runs, a question goes to the model,
        and text that starts like a statement but does not parse raises, with no model call."""
        reading = statements.classify(operation, self.connection.profile.name)
        if reading.kind == "malformed":
            raise ProgrammingError(
                f"this reads as SQL, but the {self.connection.profile.display_name} parser refused it "
                f"({reading.reason}); nothing was run and nothing was sent to the model. Fix the statement, "
                "or, if it is a question, end it with '?' or pass mode='question'."
            )
        return reading.kind == "sql"

    def executemany(self, operation: str, seq_of_parameters: Sequence[Any]) -> Cursor:
        """Plain SQL only: questions take no parameters."""
        self._check_open()
        self._reset(question=False)
        self._raw_cursor.executemany(operation, seq_of_parameters)
        return self

    def fetchone(self) -> tuple[Any, ...] | None:
        rows = self.fetchmany(1)
        return rows[0] if rows else None

    def fetchmany(self, size: int | None = None) -> list[tuple[Any, ...]]:
        size = self.arraysize if size is None else size
        if self._rows is None:
            return list(self._require_result().fetchmany(size))
        chunk = self._rows[self._position:self._position + size]
        self._position += len(chunk)
        return chunk

    def fetchall(self) -> list[tuple[Any, ...]]:
        if self._rows is None:
            return list(self._require_result().fetchall())
        chunk = self._rows[self._position:]
        self._position = len(self._rows)
        return chunk

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        while (row := self.fetchone()) is not None:
            yield row

    def setinputsizes(self, sizes: Any) -> None:
        """Accepted and ignored, as PEP 249 allows."""

    def setoutputsize(self, size: Any, column: Any = None) -> None:
        """Accepted and ignored, as PEP 249 allows."""

    def close(self) -> None:
        if self._raw_cursor is not None:
            self._raw_cursor.close()
        self.closed = True

    def _reset(self, *, question: bool) -> None:
        self._rows, self._description, self._position, self.verification = None, None, 0, None
        if not question and self._raw_cursor is None:
            self._raw_cursor = self.connection.raw_connection.cursor()

    def _require_result(self) -> Any:
        if self._raw_cursor is None:
            raise InterfaceError("no statement has been executed on this cursor.")
        return self._raw_cursor

    def _check_open(self) -> None:
        if self.closed:
            raise InterfaceError("the cursor is closed.")
        self.connection._check_open()

    def __enter__(self) -> Cursor:
        return self

    def __exit__(self, *_: Any) -> None:
        self.close()


def connect(raw_connection: Any, *, llm: ChatModel | None = None, **options: Any) -> Connection:
    """Wrap an open sqlite3, duckdb, psycopg or snowflake connection. Options as for create_engine."""
    return Connection(raw_connection, Options.build(options), llm)
