"""PEP 249 wrapper: ``connect(raw_connection)`` gives a Connection whose cursors run SQL unchanged
and answer questions through the verified pipeline.

``cursor.execute(text)`` decides by parsing: text that parses as SQL in the connection's dialect runs
on the wrapped driver exactly as given (its parameters in the driver's own paramstyle,
``connection.paramstyle``); anything else is a question. ``mode="sql"`` or ``mode="question"`` forces
either reading. Questions run in their own read-only transaction, so the wrapped connection must not
be inside a transaction when one is asked: commit or roll back first (a typed error says so).
"""

from __future__ import annotations

from typing import Any, Iterator, Literal, Sequence

import sqlalchemy as sa
import sqlglot
from sqlalchemy.pool import StaticPool
from sqlglot import exp
from sqlglot.errors import SqlglotError

from . import errors
from .config import Options
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

# Statements sqlglot keeps as an opaque Command but that are still SQL, not questions.
SQL_COMMAND_WORDS = frozenset(
    "call vacuum explain grant revoke analyze copy load install checkpoint reindex execute prepare "
    "deallocate listen notify unlisten do reset discard cluster comment begin start end abort "
    "savepoint release put get list remove undrop describe desc pragma attach detach use export "
    "import summarize truncate".split()
)


def looks_like_sql(text: str, profile: DialectProfile) -> bool:
    """True when ``text`` parses as SQL in the profile's dialect (not as an opaque fallback)."""
    try:
        statements = [s for s in sqlglot.parse(text, read=profile.sqlglot_dialect) if s is not None]
    except SqlglotError:
        return False
    if not statements:
        return False
    for statement in statements:
        if isinstance(statement, (exp.Condition, exp.Alias)) and not isinstance(statement, exp.Query):
            return False  # a bare expression (a word, a CJK sentence, a control character) is no statement
        if isinstance(statement, exp.Command):
            word = str(statement.this).lower()
            short = len(text.split()) <= 3 and "?" not in text
            if word not in SQL_COMMAND_WORDS and not (word == "show" and short):
                return False
    return True


_URLS = {"sqlite3": "sqlite://", "duckdb": "duckdb:///:memory:", "psycopg": "postgresql+psycopg://",
         "snowflake": "snowflake://"}


def _driver_of(raw: Any) -> str:
    root = type(raw).__module__.split(".")[0]
    if root == "_duckdb":
        root = "duckdb"
    if root not in _URLS:
        raise InterfaceError(
            f"cannot wrap a {type(raw).__module__}.{type(raw).__name__}; supported drivers: "
            "sqlite3, duckdb, psycopg (3) and snowflake.connector."
        )
    return root


def _in_transaction(raw: Any, driver: str) -> bool:
    if driver == "sqlite3":
        return bool(raw.in_transaction)
    if driver == "psycopg":
        from psycopg.pq import TransactionStatus

        return raw.info.transaction_status != TransactionStatus.IDLE
    return False


class Connection:
    """A PEP 249 connection over a raw driver connection (sqlite3, duckdb, psycopg, snowflake)."""

    def __init__(self, raw: Any, options: Options, llm: ChatModel | None = None) -> None:
        self._raw = raw
        self._driver = _driver_of(raw)
        self._require_idle()
        self._engine = sa.create_engine(
            _URLS[self._driver], creator=lambda: raw, poolclass=StaticPool, pool_reset_on_return=None
        )
        with self._engine.connect():
            pass  # SQLAlchemy inspects the server once, now, while the connection is known idle
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
        if _in_transaction(self._raw, self._driver):
            raise InterfaceError(
                "the wrapped connection is inside a transaction; commit or roll back before asking a "
                "question (questions run in their own read-only transaction)."
            )

    def answer(self, question: str) -> Answer:
        """Answer a question (used by cursors; also handy directly)."""
        self._check_open()
        self._require_idle()
        return self._state.answer(self._engine, question)

    def cursor(self) -> Cursor:
        self._check_open()
        return Cursor(self)

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
        is_sql = mode == "sql" or (
            mode == "auto" and isinstance(operation, str) and looks_like_sql(operation, self.connection.profile)
        )
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
