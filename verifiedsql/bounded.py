"""Hard bounds on one generated statement: its time, the size of its values and the size of its result.

* **Time.** SQLite and DuckDB statements run on a worker thread on a connection of their own (SQLite: a
  read-only connection to the same file, or a copy of a small in-memory database; DuckDB: the duplicate
  its strategy opens). The engine's own interrupt stops them at ``timeout_s``; when it cannot (inside one
  long function call) the caller gets ``QueryTimeoutError`` ``watchdog.GRACE_S`` later and the abandoned
  statement ends in the background, where its connection is closed. PostgreSQL and Snowflake statements
  run on the calling thread: the server's statement timeout stops them (PostgreSQL: for every fetch).
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
import time
import uuid
from contextlib import contextmanager
from typing import Any, Iterator
from urllib.parse import quote

from .errors import QueryError, QueryTimeoutError
from .profiles import DialectProfile
from .results import ResultSet
from .watchdog import run_within

Cursor = Any
MAX_BATCH_ROWS = 1_000
SNAPSHOT_MAX_BYTES = 64 * 1024 * 1024  # an in-memory SQLite database up to this size is copied for the worker
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
                  row_cap: int, max_bytes: int, plan: bool = False) -> ResultSet | None:
    """Run ``sql`` behind the engine guard ``strategy`` within the bounds of the module docstring; its
    result (None for ``plan=True``, which only plans it)."""

    def work(connection: Any) -> ResultSet | None:
        with strategy(connection, sql, profile, timeout_s, plan=plan) as cursor:
            return None if plan else fetch_bounded(cursor, row_cap, max_bytes)

    if profile.read_only_strategy == "sqlite":
        with _sqlite_worker_connection(raw, max_bytes) as (connection, own):
            if not own:  # a large in-memory database: the caller's connection, on this thread
                return work(connection)
            return run_within(lambda: _closing(connection, work), timeout_s, lambda: _timeout_error(timeout_s),
                              name="verifiedsql-sqlite")
    if profile.read_only_strategy == "duckdb":  # its strategy runs the statement on a duplicate connection
        return run_within(lambda: work(raw), timeout_s, lambda: _timeout_error(timeout_s), name="verifiedsql-duckdb")
    return work(raw)


def _closing(connection: sqlite3.Connection, work: Any) -> Any:
    try:
        return work(connection)
    finally:
        connection.close()


# --------------------------------------------------------------------------------------------- sqlite


@contextmanager
def _sqlite_worker_connection(raw: sqlite3.Connection, max_bytes: int) -> Iterator[tuple[sqlite3.Connection, bool]]:
    """(connection, own): a read-only connection to the same database files, or a copy of a small
    in-memory one, that the worker thread owns and closes; else (``raw``, False), with its length limit
    lowered for the statement and put back afterwards. Either way, values are capped at ``max_bytes``."""
    limit = max(_MIN_LENGTH_LIMIT, max_bytes)
    try:
        duplicate = _sqlite_duplicate(raw)
    except sqlite3.Error:
        duplicate = None
    if duplicate is not None:
        duplicate.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, min(limit, duplicate.getlimit(sqlite3.SQLITE_LIMIT_LENGTH)))
        yield duplicate, True
        return
    previous = raw.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, limit)
    try:
        yield raw, False
    finally:
        raw.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, previous)


def _sqlite_duplicate(raw: sqlite3.Connection) -> sqlite3.Connection | None:
    """A connection for another thread that sees what ``raw`` sees: the same files opened read-only (its
    attached ones too), or a copy of an in-memory database up to SNAPSHOT_MAX_BYTES; None otherwise."""
    databases = [(str(name), str(path or "")) for _, name, path in raw.execute("PRAGMA database_list").fetchall()
                 if name != "temp"]
    main = dict(databases).get("main", "")
    if main:
        duplicate = sqlite3.connect(_read_only_uri(main), uri=True, check_same_thread=False,
                                    isolation_level=None, timeout=1.0)
    else:
        if not hasattr(raw, "serialize") or _sqlite_size(raw, "main") > SNAPSHOT_MAX_BYTES:
            return None
        duplicate = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        duplicate.deserialize(raw.serialize(name="main"))
    try:
        for name, path in databases:
            if name == "main":
                continue
            quoted = '"' + name.replace('"', '""') + '"'
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
    quoted = '"' + name.replace('"', '""') + '"'
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
