"""Hard bounds on one generated statement: its time, the size of its values and the size of its result.

* **Time.** SQLite and DuckDB statements run on a worker thread on a connection of their own (SQLite: a
  read-only connection to the same file, or a copy of a small in-memory database; DuckDB: the duplicate
  its strategy opens). The engine's own interrupt stops them at ``timeout_s``; when it cannot (inside one
  long function call) the caller gets ``QueryTimeoutError`` ``watchdog.GRACE_S`` later, the abandoned
  statement is interrupted once more (it stops at its next step, so its read lock does not outlive the
  question by more than one function call), and its connection is closed when it ends. A SQLite
  database with no such connection (a large in-memory one, a file that cannot be opened again) is read on
  the caller's thread and connection, where the strategy's timer ``interrupt()``s the statement
  ``GRACE_S`` after ``timeout_s`` if its progress handler has not stopped it by then. PostgreSQL and
  Snowflake statements run on the calling thread: the server's statement timeout stops them (PostgreSQL:
  for every fetch).
* **Connections.** A SQLite read-only connection is opened once and reused by the statements that follow
  while ``Workers.scope()`` is open (a question, a batch of sample reads): opening one parses the whole
  schema, which a statement per table would otherwise pay for each table. A copy of an in-memory database
  is reused only while the database is unchanged.
* **Values.** SQLite's ``SQLITE_LIMIT_LENGTH`` is lowered to ``max_result_bytes`` for the statement, so a
  ``zeroblob(10^9)`` or a ``replace`` blown up to a gigabyte fails at once instead of filling the memory.
* **Result size.** Rows are fetched with ``fetchmany`` in batches sized to the bytes left, and the fetch
  stops once ``row_cap`` rows or ``max_result_bytes`` (the estimated size of the fetched cells) is
  reached: the result is then marked ``truncated``, like a row-capped one, rather than failing, since its
  first rows still answer most questions. PostgreSQL streams through a server-side cursor, so the client
  never buffers more than one batch.
"""

from __future__ import annotations

import sqlite3
import sys
import threading
import time
import uuid
from contextlib import contextmanager
from typing import Any, Callable, Iterator
from urllib.parse import quote

from ..errors import QueryError, QueryTimeoutError
from ..profiles import DialectProfile
from ..results import ResultSet
from .watchdog import GRACE_S, run_within

Cursor = Any
MAX_BATCH_ROWS = 1_000
SNAPSHOT_MAX_BYTES = 64 * 1024 * 1024  # an in-memory SQLite database up to this size is copied for the worker
IDLE_WORKERS = 4  # read-only SQLite connections kept between statements while a scope is open
_MIN_LENGTH_LIMIT = 1024 * 1024  # SQLITE_LIMIT_LENGTH is never lowered below this (1 MB)
_SCALAR_BYTES = 8


def cell_bytes(value: Any) -> int:
    """The estimated size of one fetched cell: the length of text and bytes, 8 for a scalar, the sum of
    the parts of a list, tuple or dict (a JSON or array value), ``sys.getsizeof`` for anything else."""
    total, stack = 0, [value]
    while stack:
        item = stack.pop()
        if item is None or isinstance(item, (bool, int, float)):
            total += _SCALAR_BYTES
        elif isinstance(item, (str, bytes, bytearray, memoryview)):
            total += len(item)
        elif isinstance(item, dict):
            total += _SCALAR_BYTES * len(item)
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple, set, frozenset)):
            total += _SCALAR_BYTES * len(item)
            stack.extend(item)
        else:
            total += sys.getsizeof(item)
    return total


def fetch_bounded(cursor: Cursor, row_cap: int, max_bytes: int) -> ResultSet:
    """At most ``row_cap`` rows and about ``max_bytes`` of cells from an executed cursor, in batches;
    ``truncated`` when rows were left unread."""
    columns = tuple(str(d[0]) for d in cursor.description or ())
    rows: list[tuple[Any, ...]] = []
    size, truncated = 0, False
    while not truncated:
        # one row first, then as many as the bytes left hold at the average size so far
        batch = int((max_bytes - size) // max(1.0, size / len(rows))) if rows else 1
        batch = max(1, min(batch, MAX_BATCH_ROWS, row_cap + 1 - len(rows)))
        fetched = cursor.fetchmany(batch)
        if not fetched:
            break
        for row in fetched:
            if len(rows) == row_cap or size > max_bytes:
                truncated = True
                break
            if len(row) != len(columns):
                raise QueryError(f"the driver returned rows that do not match the {len(columns)} result columns; "
                                 "name every selected column uniquely (e.g. avoid a.*, b.* with shared names).")
            size += sum(cell_bytes(cell) for cell in row)
            rows.append(tuple(row))
        if size > max_bytes:
            truncated = True
    return ResultSet(columns, tuple(rows), truncated=truncated)


def _timeout_error(timeout_s: float) -> QueryTimeoutError:
    return QueryTimeoutError(
        f"the query ran longer than statement_timeout_s={timeout_s:g}s and was abandoned (the engine could not "
        "stop it in time; it ends in the background on a connection of its own); simplify it or raise "
        "statement_timeout_s."
    )


def run_statement(strategy: Any, raw: Any, sql: str, profile: DialectProfile, timeout_s: float, *,
                  row_cap: int, max_bytes: int, plan: bool = False,
                  workers: Workers | None = None) -> ResultSet | None:
    """Run ``sql`` behind the engine guard ``strategy`` within the bounds of the module docstring; its
    result (None for ``plan=True``, which only plans it). ``workers``: where a SQLite read-only connection
    is taken from and given back (none: one is opened for this statement and closed after it)."""

    def work(connection: Any, **extra: Any) -> ResultSet | None:
        with strategy(connection, sql, profile, timeout_s, plan=plan, **extra) as cursor:
            return None if plan else fetch_bounded(cursor, row_cap, max_bytes)

    if profile.read_only_strategy == "sqlite":
        workers = workers or Workers()
        duplicate = workers.take(raw, max_bytes)
        if duplicate is None:  # the caller's connection, on this thread: the strategy's timer is the watchdog
            with _length_limit(raw, max_bytes):
                return work(raw, interrupt_after_s=timeout_s + GRACE_S)
        return _abandonable(duplicate, work, timeout_s, workers)
    if profile.read_only_strategy == "duckdb":  # its strategy runs the statement on a duplicate connection
        return run_within(lambda: work(raw), timeout_s, lambda: _timeout_error(timeout_s), name="verifiedsql-duckdb")
    return work(raw)


def _abandonable(duplicate: _Duplicate, work: Callable[[Any], ResultSet | None], timeout_s: float,
                 workers: Workers) -> ResultSet | None:
    """``work(connection)`` on a worker thread within ``timeout_s`` (``watchdog``). Once the caller has given
    up on it, the statement is interrupted, and its connection is closed when it ends instead of being
    given back."""
    lock = threading.Lock()
    state = {"abandoned": False, "ended": False}

    def job() -> ResultSet | None:
        try:
            return work(duplicate.connection)
        finally:
            with lock:
                state["ended"] = True
                abandoned = state["abandoned"]
            if abandoned:
                duplicate.connection.close()
            else:
                workers.give(duplicate)

    def abandon() -> BaseException:
        with lock:
            state["abandoned"] = True
            if not state["ended"]:
                duplicate.connection.interrupt()  # it stops at its next step, and so releases its read lock
        return _timeout_error(timeout_s)

    return run_within(job, timeout_s, abandon, name="verifiedsql-sqlite")


# --------------------------------------------------------------------------------------------- sqlite


class _Duplicate:
    """A read-only connection a worker thread may use, and what it is a duplicate of (``_identity``)."""

    def __init__(self, connection: sqlite3.Connection, identity: tuple[Any, ...]) -> None:
        self.connection, self.identity = connection, identity


class Workers:
    """Read-only SQLite connections for worker threads: each statement takes one (an idle one made for the
    same database, else a new one) and gives it back; while a ``scope()`` is open (on any thread) up to
    IDLE_WORKERS stay open between statements, and when the last scope closes they are closed."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: list[_Duplicate] = []
        self._scopes = 0

    @contextmanager
    def scope(self) -> Iterator[None]:
        with self._lock:
            self._scopes += 1
        try:
            yield
        finally:
            with self._lock:
                self._scopes -= 1
                closing, self._idle = (self._idle, []) if self._scopes == 0 else ([], self._idle)
            for duplicate in closing:
                duplicate.connection.close()

    def take(self, raw: sqlite3.Connection, max_bytes: int) -> _Duplicate | None:
        """A connection that sees what ``raw`` sees, its values capped at ``max_bytes``; None when none can be
        made (a large in-memory database, a file that cannot be opened again)."""
        try:
            identity = _identity(raw)
            with self._lock:
                found = next((d for d in self._idle if d.identity == identity), None)
                if found is not None:
                    self._idle.remove(found)
            duplicate = found or _Duplicate(_sqlite_duplicate(raw), identity)
        except (sqlite3.Error, _NoDuplicate):
            return None
        duplicate.connection.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, max(_MIN_LENGTH_LIMIT, max_bytes))
        return duplicate

    def give(self, duplicate: _Duplicate) -> None:
        """Keep ``duplicate`` for a later statement while a scope is open; else close it."""
        with self._lock:
            keep = self._scopes > 0 and len(self._idle) < IDLE_WORKERS
            if keep:
                self._idle.append(duplicate)
        if not keep:
            duplicate.connection.close()


class _NoDuplicate(Exception):
    """No read-only connection can be made for another thread (a large in-memory database)."""


def _identity(raw: sqlite3.Connection) -> tuple[Any, ...]:
    """What a duplicate of ``raw`` depends on: the files of its databases, and for an in-memory one (which is
    copied) the connection and its change counters, so that a copy is reused only while nothing changed."""
    databases = tuple((str(name), str(path or "")) for _, name, path in raw.execute("PRAGMA database_list")
                      if name != "temp")
    if all(path for _, path in databases):
        return databases
    versions = tuple(raw.execute(f"PRAGMA {_quoted(name)}.schema_version").fetchone()[0] for name, _ in databases)
    data = raw.execute("PRAGMA data_version").fetchone()[0]
    return databases, id(raw), raw.total_changes, data, versions


@contextmanager
def _length_limit(raw: sqlite3.Connection, max_bytes: int) -> Iterator[None]:
    """``raw``'s SQLITE_LIMIT_LENGTH lowered to ``max_bytes`` (at least 1 MB), put back afterwards."""
    previous = raw.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, max(_MIN_LENGTH_LIMIT, max_bytes))
    try:
        yield
    finally:
        raw.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, previous)


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _sqlite_duplicate(raw: sqlite3.Connection) -> sqlite3.Connection:
    """A connection for another thread that sees what ``raw`` sees: the same files opened read-only (its
    attached ones too), or a copy of an in-memory database up to SNAPSHOT_MAX_BYTES; ``_NoDuplicate``
    otherwise."""
    databases = [(str(name), str(path or "")) for _, name, path in raw.execute("PRAGMA database_list").fetchall()
                 if name != "temp"]
    main = dict(databases).get("main", "")
    if main:
        duplicate = sqlite3.connect(_read_only_uri(main), uri=True, check_same_thread=False,
                                    isolation_level=None, timeout=1.0)
    else:
        if not hasattr(raw, "serialize") or _sqlite_size(raw, "main") > SNAPSHOT_MAX_BYTES:
            raise _NoDuplicate("the in-memory database is too large to copy")
        duplicate = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        duplicate.deserialize(raw.serialize(name="main"))
    try:
        for name, path in databases:
            if name == "main":
                continue
            quoted = _quoted(name)
            if path:
                duplicate.execute(f"ATTACH DATABASE ? AS {quoted}", (_read_only_uri(path),))
            elif _sqlite_size(raw, name) <= SNAPSHOT_MAX_BYTES:
                duplicate.execute(f"ATTACH DATABASE ':memory:' AS {quoted}")
                duplicate.deserialize(raw.serialize(name=name), name=name)
            else:
                raise sqlite3.OperationalError(f"attached in-memory database {name} is too large to copy")
        duplicate.execute("SELECT count(*) FROM sqlite_master").fetchone()  # opens the files now
    except sqlite3.Error:
        duplicate.close()
        raise
    return duplicate


def _read_only_uri(path: str) -> str:
    return f"file:{quote(path)}?mode=ro"


def _sqlite_size(raw: sqlite3.Connection, name: str) -> int:
    quoted = _quoted(name)
    pages = raw.execute(f"PRAGMA {quoted}.page_count").fetchone()[0]
    page_size = raw.execute(f"PRAGMA {quoted}.page_size").fetchone()[0]
    return int(pages) * int(page_size)


# ----------------------------------------------------------------------------------------- postgresql


class _TimedServerCursor:
    """A psycopg server-side cursor whose every fetch runs under ``statement_timeout`` set to the time
    left of the statement's budget (a server-side cursor's fetches are statements of their own)."""

    def __init__(self, stream: Any, control: Any, timeout_s: float) -> None:
        self._stream, self._control = stream, control
        self._timeout_s = timeout_s
        self._deadline = time.monotonic() + timeout_s

    @property
    def description(self) -> Any:
        return self._stream.description

    def fetchmany(self, size: int) -> list[tuple[Any, ...]]:
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise QueryTimeoutError(
                f"the query ran longer than statement_timeout_s={self._timeout_s:g}s while its rows were "
                "fetched and was stopped; simplify it or raise statement_timeout_s."
            )
        self._control.execute(f"SET LOCAL statement_timeout = {max(1, int(left * 1000))}")
        return list(self._stream.fetchmany(size))

    def fetchone(self) -> tuple[Any, ...] | None:
        rows = self.fetchmany(1)
        return rows[0] if rows else None

    def fetchall(self) -> list[tuple[Any, ...]]:
        rows: list[tuple[Any, ...]] = []
        while batch := self.fetchmany(MAX_BATCH_ROWS):
            rows.extend(batch)
        return rows


@contextmanager
def postgresql_stream(raw: Any, control: Any, sql: str, timeout_s: float) -> Iterator[_TimedServerCursor]:
    """``sql`` declared as a server-side cursor in the open (read-only) transaction of ``raw``, so rows reach
    the client one batch at a time; ``control`` (a client-side cursor of ``raw``) sets each fetch's timeout.
    The cursor is closed on exit (the transaction's rollback would close it too)."""
    stream = raw.cursor(name=f"verifiedsql_{uuid.uuid4().hex[:16]}")
    try:
        stream.execute(sql)
        yield _TimedServerCursor(stream, control, timeout_s)
    finally:
        try:
            stream.close()
        except Exception:  # an aborted transaction has already dropped it; the rollback follows
            pass
