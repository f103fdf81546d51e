"""The engine guard: the second safety layer, one small strategy per ``read_only_strategy``.

Each strategy is a context manager that takes a DB-API connection, puts the engine in its own
read-only mode for exactly one statement, executes it and yields the cursor; on exit it restores every
setting it touched, so the caller's connection is left as it was. Driver errors raised while the
statement runs or while rows are fetched come out as typed errors: refusals as
``UnsafeSQLError(layer="engine")``, timeouts as ``QueryTimeoutError`` and everything else as
``QueryError`` carrying the database's own message, with the stored values it quotes masked
(``redact.engine_error``) and its positions told about the candidate's SQL, not the ``EXPLAIN`` wrapped
around it (``echo.unwrapped``). With ``Options.schema``, the PostgreSQL and DuckDB guards also refuse a table
outside that schema (``boundary``).

What each engine does:

* **sqlite**: an authorizer that allows only reads (SELECT, READ, RECURSIVE, and functions that are not
  on the deny list; ATTACH, PRAGMA, writes and transactions are denied), ``PRAGMA query_only=ON``, a
  progress handler that interrupts the statement after the timeout, and a timer that ``interrupt()``s it
  (checked at every loop, where the handler runs every 1,000 steps). Python's ``sqlite3`` itself refuses
  more than one statement per ``execute``. It is given a read-only connection of its own where
  ``bounded`` can open one, so the caller's hooks are never touched; on the caller's own connection,
  the hooks set through ``verifiedsql.dbapi`` are put back afterwards (``sqlite_hooks``: Python cannot
  read one back) and ``query_only`` is restored.
* **duckdb**: DuckDB's own parser (``extract_statements``) must see exactly one SELECT statement; its
  parse tree (``json_serialize_sql``) must call only functions the database's function policy allows
  (``functions``: DuckDB's own catalog; table functions by allowlist) and scan no file path (replacement
  scans such as ``FROM 'x.csv'``); extension auto-install and auto-load are off while it runs
  (database-wide settings: the first question on a database turns them off and the last one to end puts
  the user's values back); it runs on a duplicate connection (DuckDB's
  ``cursor()``), in a transaction that is always rolled back, and a timer ``interrupt()``s it.
  ``enable_external_access=false`` was not chosen: DuckDB 1.5 cannot turn it back on while the database
  is open, so it would break the user's own later use (``allowed_paths``/``allowed_directories`` only
  apply once it is off, and ``lock_configuration`` is equally one-way).
* **postgresql**: ``READ ONLY`` transaction with ``SET LOCAL statement_timeout``, always rolled back; the
  statement is first planned with ``EXPLAIN (VERBOSE, FORMAT JSON)`` over the extended protocol (which
  refuses several statements), and refused if the plan modifies a table or calls a function the policy
  refuses: the plan's expressions are scanned in linear time (``callscan``) and the names found are
  looked up in ``pg_proc`` in the same transaction (``functions``).
  A statement PostgreSQL cannot EXPLAIN (COPY, SET, DDL, ...) is refused as not being a query. A
  connection already inside a transaction is refused with ``OpenTransactionError``. With
  ``question_role`` it runs under ``SET LOCAL ROLE``; session state that a rollback does not undo
  (advisory locks, backup mode, ...) is checked and undone afterwards (``session_state``).
* **snowflake**: Snowflake has no read-only transaction, so this is the nearest equivalent and it is
  weaker than the others: the statement type is checked client-side (the connector's own statement
  splitter must see one statement, and the statement guard's sqlglot check runs again in the Snowflake
  dialect, so this check is *not* independent of layer 1; a lexical scan of the text, which is, checks
  every called name against the function policy: ``SYSTEM$*``, ``SNOWFLAKE.*``, table functions outside
  the allowlist); the statement runs in an explicit
  transaction that is always rolled back (which undoes DML but not DDL: Snowflake commits DDL), with
  ``STATEMENT_TIMEOUT_IN_SECONDS`` set for the session and restored, and the connector's client-side
  ``timeout=`` that cancels. Limitations under fakesnow (tests): it does not report or accept
  ``STATEMENT_TIMEOUT_IN_SECONDS`` and ignores ``timeout=``, so there is no timeout there; it also runs
  several statements in one ``execute``. On real Snowflake, also give verifiedsql a role with only
  SELECT grants: that is the only true engine-side guarantee Snowflake offers.
"""

from __future__ import annotations

import io
import json
import math
import re
import sqlite3
import sys
import threading
import time
from collections.abc import Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, ContextManager, Iterator

from .. import backends
from ..errors import OpenTransactionError, QueryError, QueryTimeoutError, UnsafeSQLError, VerifiedSQLError
from ..profiles import DialectProfile
from . import function_calls as calls
from . import session_state, sqlite_hooks
from .boundary import duckdb_relation_refusal, plan_relation_refusal
from .bounded import postgresql_stream
from .echo import unwrapped
from .functions import PG_CATALOG, FunctionPolicy, name_policy, postgresql_policy, refusal_message
from .jsontree import json_nodes
from .redact import clip, engine_error
from .safety import check_query, is_file_path

Cursor = Any
Strategy = Callable[..., ContextManager[Cursor]]  # (raw, sql, profile, timeout_s, *, plan=False)



def _refuse(construct: str, detail: str) -> UnsafeSQLError:
    return UnsafeSQLError(
        f"the engine's read-only mode refused this statement ({detail}); generated SQL may only read.",
        construct=construct,
        layer="engine",
    )


def _engine_text(error: Exception, wrapper: str | None = "", sql: str = "") -> str:
    """The driver's message for ``error``, raised by the statement ``wrapper + sql``: its positions told
    about ``sql``, the text the model wrote (``echo.unwrapped``; ``wrapper=None``: a statement of unknown
    text)."""
    position = getattr(getattr(error, "diag", None), "statement_position", None)  # psycopg's, 1-based
    return unwrapped(clip(str(error).strip()), wrapper, sql, position=int(position) if position else None)


def _query_error(error: Exception, wrapper: str | None = "", sql: str = "", *, ran: bool = False) -> QueryError:
    """``ran``: the error came while the query ran over stored rows (PostgreSQL: after its plan was checked),
    so every value it quotes is masked, whatever the message (``redact.engine_error``'s ``data``)."""
    text = engine_error(_engine_text(error, wrapper, sql), data=ran)
    return QueryError(f"the database rejected the query: {text}")


def _timeout_error(timeout_s: float) -> QueryTimeoutError:
    return QueryTimeoutError(
        f"the query ran longer than statement_timeout_s={timeout_s:g}s and was stopped; "
        "simplify it or raise statement_timeout_s."
    )


def _denied(profile: DialectProfile, name: str) -> bool:
    name = name.lower()
    return name in profile.deny_functions or name in profile.deny_table_functions


# --------------------------------------------------------------------------------------------- sqlite

_SQLITE_READS = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_RECURSIVE}
_SQLITE_ACTIONS = {
    getattr(sqlite3, f"SQLITE_{name}"): name
    for name in (
        "CREATE_INDEX", "CREATE_TABLE", "CREATE_TEMP_INDEX", "CREATE_TEMP_TABLE", "CREATE_TEMP_TRIGGER",
        "CREATE_TEMP_VIEW", "CREATE_TRIGGER", "CREATE_VIEW", "DELETE", "DROP_INDEX", "DROP_TABLE",
        "DROP_TEMP_INDEX", "DROP_TEMP_TABLE", "DROP_TEMP_TRIGGER", "DROP_TEMP_VIEW", "DROP_TRIGGER",
        "DROP_VIEW", "INSERT", "PRAGMA", "TRANSACTION", "UPDATE", "ATTACH", "DETACH", "ALTER_TABLE",
        "REINDEX", "ANALYZE", "CREATE_VTABLE", "DROP_VTABLE", "SAVEPOINT",
    )
}


class _Interrupter:
    """``connection.interrupt()`` once ``seconds`` after ``arm()``, unless ``disarm()`` came first (a lock
    keeps a late timer from interrupting the statements that restore the connection's settings)."""

    def __init__(self, connection: sqlite3.Connection, seconds: float) -> None:
        self._connection, self._seconds = connection, seconds
        self._lock = threading.Lock()
        self._armed = self.fired = False
        self._timer: threading.Timer | None = None

    def arm(self) -> None:
        if math.isinf(self._seconds):
            return
        self._armed = True
        self._timer = threading.Timer(max(0.0, self._seconds), self._fire)
        self._timer.daemon = True
        self._timer.start()

    def _fire(self) -> None:
        with self._lock:
            if self._armed:
                self.fired = True
                self._connection.interrupt()

    def disarm(self) -> None:
        with self._lock:
            self._armed = False
        if self._timer is not None:
            self._timer.cancel()


@contextmanager
def sqlite(raw: sqlite3.Connection, sql: str, profile: DialectProfile, timeout_s: float, *,
           plan: bool = False, functions: FunctionPolicy | None = None,
           interrupt_after_s: float | None = None) -> Iterator[Cursor]:
    """Authorizer (reads only) + ``PRAGMA query_only`` + a progress-handler timeout, and a timer that
    ``interrupt()``s the statement ``interrupt_after_s`` after the start (default: ``timeout_s``): the
    progress handler runs only every 1,000 VM steps, which a statement of slow steps (a long function call
    per row) takes seconds to reach, while SQLite checks an interrupt at every loop. The timer is armed only
    while the statement runs and its rows are read. ``plan=True`` compiles the query with
    ``EXPLAIN QUERY PLAN`` instead of running it."""
    refused: list[str] = []
    deadline = time.monotonic() + timeout_s
    timed_out = False
    interrupter = _Interrupter(raw, timeout_s if interrupt_after_s is None else interrupt_after_s)

    def authorize(action: int, arg1: str | None, arg2: str | None, *_: Any) -> int:
        if action in _SQLITE_READS or (action == sqlite3.SQLITE_FUNCTION and not _denied(profile, arg2 or "")):
            return sqlite3.SQLITE_OK
        what = _SQLITE_ACTIONS.get(action, str(action))
        refused.append(f"{arg2}()" if action == sqlite3.SQLITE_FUNCTION else what)
        return sqlite3.SQLITE_DENY

    def progress() -> int:
        nonlocal timed_out
        timed_out = time.monotonic() > deadline
        return int(timed_out)

    previous = raw.execute("PRAGMA query_only").fetchone()[0]
    raw.execute("PRAGMA query_only = ON")
    raw.set_authorizer(authorize)
    raw.set_progress_handler(progress, 1_000)
    cursor = raw.cursor()
    try:
        interrupter.arm()
        cursor.execute(f"EXPLAIN QUERY PLAN {sql}" if plan else sql)
        yield cursor
    except sqlite3.Error as error:
        if timed_out or (interrupter.fired and "interrupted" in str(error)):
            raise _timeout_error(timeout_s) from error
        if refused:
            raise _refuse(", ".join(dict.fromkeys(refused)), clip(str(error))) from error
        message = clip(str(error))
        if "one statement at a time" in message:
            raise _refuse("several statements", message) from error
        if "readonly database" in message:
            raise _refuse("write", message) from error
        raise _query_error(error, "EXPLAIN QUERY PLAN " if plan else "", sql) from error
    finally:
        cursor.close()  # the statement ends here, so an interrupt that fired is cleared before the restores
        interrupter.disarm()
        sqlite_hooks.restore(raw)  # the caller's hooks, when set through verifiedsql.dbapi; else none
        raw.execute(f"PRAGMA query_only = {int(previous)}")


# --------------------------------------------------------------------------------------------- duckdb

# DuckDB streams a result into a buffer of this size, but counts only a string's 16-byte header: with the
# default (~1 MB) a query of 100 KB strings is computed whole before the first fetch. A tiny buffer makes it
# compute one chunk (2,048 rows) ahead of the fetch, so ``bounded.fetch_bounded`` can stop it in time.
_DUCKDB_STREAM_BUFFER = "1KB"

# Extension auto-install and auto-load exist only database-wide (``SET SESSION`` is refused), so the duplicate
# connection cannot hold values of its own. The first question on a database reads the user's values and
# turns both off, overlapping questions count themselves in, and the last one to end puts the user's values
# back: overlapping questions never put back each other's "off", and once none runs the database holds the
# user's values again. A database is known by its file (every Python connection to one file shares a DuckDB
# instance), an in-memory one by the connection that opened it. A value the user sets while a question runs
# is overwritten when the last one ends.
_DUCKDB_SETTINGS = ("autoinstall_known_extensions", "autoload_known_extensions")


@dataclass
class _DuckDBHeld:
    """The questions running on one database, and the user's values to put back after the last."""

    count: int = 0
    saved: dict[str, str] = field(default_factory=dict)


_DUCKDB_LOCK = threading.Lock()
_DUCKDB_HELD: dict[tuple[str, str | int], _DuckDBHeld] = {}


def _duckdb_database_key(cursor: Any, root: Any) -> tuple[str, str | int]:
    """Which DuckDB database ``cursor`` (a duplicate of the connection ``root``) is on: its file's path, or
    for an in-memory database the connection that opened it."""
    row = cursor.execute("SELECT path FROM duckdb_databases() WHERE database_name = current_database()").fetchone()
    path = row[0] if row else None
    return ("file", str(path)) if path else ("memory", id(root))


@contextmanager
def _duckdb_extensions_off(cursor: Any, key: tuple[str, str | int]) -> Iterator[None]:
    """Auto-install and auto-load off on the database ``key`` while the block runs (set and put back on
    ``cursor``), counted with every other question on it."""
    with _DUCKDB_LOCK:
        held = _DUCKDB_HELD.get(key) or _DuckDBHeld()
        if held.count == 0:
            held.saved = {name: str(cursor.execute(f"SELECT current_setting('{name}')").fetchone()[0]).lower()
                          for name in _DUCKDB_SETTINGS}
            for name in _DUCKDB_SETTINGS:
                cursor.execute(f"SET {name} = false")
        held.count += 1
        _DUCKDB_HELD[key] = held
    try:
        yield
    finally:
        with _DUCKDB_LOCK:
            held.count -= 1
            if held.count == 0:
                del _DUCKDB_HELD[key]
                for name, value in held.saved.items():
                    cursor.execute(f"SET {name} = {'true' if value == 'true' else 'false'}")


def _duckdb_tree_refusal(tree: Any, profile: DialectProfile, functions: FunctionPolicy | None = None) -> str | None:
    """The first refused function (by the database's policy, else by name) or file scan in DuckDB's
    serialized parse tree, if any."""
    policy = functions or name_policy(profile)
    if policy is not None and (hit := policy.first_refusal(calls.duckdb_tree(tree), written=True)):
        return f"{hit[0].lower()}()"
    for node in json_nodes(tree):
        if not isinstance(node, dict):
            continue
        function = node.get("function_name")
        if isinstance(function, str) and _denied(profile, function):
            return f"{function.lower()}()"
        if node.get("type") == "BASE_TABLE" and is_file_path(str(node.get("table_name", ""))):
            return "file table"
    return None


def _duckdb_connection(raw: Any) -> Any:
    """The DuckDBPyConnection behind duckdb-sqlalchemy's ConnectionWrapper (or ``raw`` itself)."""
    import duckdb as duckdb_module

    if isinstance(raw, duckdb_module.DuckDBPyConnection):
        return raw
    return raw._ConnectionWrapper__c  # duckdb-sqlalchemy offers no public accessor


@contextmanager
def duckdb(raw: Any, sql: str, profile: DialectProfile, timeout_s: float, *, plan: bool = False,
           functions: FunctionPolicy | None = None, schema: str | None = None,
           optimize: bool = True) -> Iterator[Cursor]:
    """DuckDB's parser says one SELECT, no denied function or file scan, no table named outside ``schema``
    (``Options.schema``; ``boundary``); rolled back; interrupted. ``plan=True`` runs ``EXPLAIN`` of the
    query instead of the query. ``optimize=False`` turns DuckDB's optimizer off on the duplicate
    (``PRAGMA disable_optimizer``, a setting of that connection alone), for verifiedsql's own sample reads:
    on small tables the optimizer turns each branch's ``LIMIT`` into a join on row ids, and a ``UNION ALL`` of
    50 of them ran 5 to 10 times slower than unoptimized.

    It runs on a duplicate connection (DuckDB's ``cursor()``: same database, own transaction), so a
    transaction the caller has open on the shared connection is neither joined nor touched.
    """
    import duckdb as duckdb_module

    own = _duckdb_connection(raw).cursor()
    try:
        try:
            statements = own.extract_statements(sql)
        except duckdb_module.Error as error:
            raise _query_error(error) from error
        if len(statements) != 1:
            raise _refuse(f"{len(statements)} statements", "DuckDB parsed more than one statement")
        kind = statements[0].type.name
        if kind != "SELECT":
            raise _refuse(kind, f"DuckDB classifies it as a {kind} statement")
        serialized = json.loads(own.execute("SELECT json_serialize_sql(?)", [sql]).fetchone()[0])
        if serialized.get("error"):
            raise _refuse(kind, serialized.get("error_message", "DuckDB cannot serialize it as a query"))
        if construct := _duckdb_tree_refusal(serialized, profile, functions):
            raise _refuse(construct, f"{construct}: file, network, extension or admin access, or a function outside "
                                     "the allowlist")
        if schema and (relation := duckdb_relation_refusal(
                serialized, schema, own.execute("SELECT current_database()").fetchone()[0])):
            raise _refuse(relation, "the query reads outside the schema boundary")
        with _duckdb_extensions_off(own, _duckdb_database_key(own, _duckdb_connection(raw))):
            own.execute(f"SET streaming_buffer_size = '{_DUCKDB_STREAM_BUFFER}'")  # this duplicate only
            if not optimize:
                own.execute("PRAGMA disable_optimizer")  # this duplicate only
            own.execute("BEGIN TRANSACTION")
            with _duckdb_run(own, sql, timeout_s, plan) as cursor:
                yield cursor
    finally:
        own.close()


@contextmanager
def _duckdb_run(own: Any, sql: str, timeout_s: float, plan: bool) -> Iterator[Cursor]:
    """Run ``sql`` (its ``EXPLAIN`` with ``plan``) on the duplicate ``own``, inside the transaction begun
    there, interrupted after ``timeout_s``; the transaction is rolled back after."""
    import duckdb as duckdb_module

    timer = threading.Timer(timeout_s, own.interrupt)
    wrapper = "EXPLAIN " if plan else ""
    try:
        timer.start()
        yield own.execute(wrapper + sql)
    except duckdb_module.InterruptException as error:
        raise _timeout_error(timeout_s) from error
    except duckdb_module.PermissionException as error:
        raise _refuse("permission", _engine_text(error, wrapper, sql)) from error
    except duckdb_module.Error as error:
        raise _query_error(error, wrapper, sql) from error
    finally:
        timer.cancel()
        own.execute("ROLLBACK")


# ----------------------------------------------------------------------------------------- postgresql

_EXPLAIN = "EXPLAIN (VERBOSE, FORMAT JSON) "
_QUERY_KEYWORDS = {"SELECT", "WITH", "VALUES", "TABLE"}


def _first_keyword(sql: str) -> str:
    match = re.match(r"(?:\s|\(|--[^\n]*+\n?|/\*.*?\*/)*+(\w+)", sql, re.DOTALL)  # possessive: linear
    return match.group(1).upper() if match else "?"


def _plan_refusal(plan: Any, profile: DialectProfile,
                  policy_for: Callable[[list[str]], FunctionPolicy] | None = None) -> str | None:
    """The first table modification or refused function call in a JSON plan, if any. The plan's
    expressions are scanned in linear time (``callscan``); ``policy_for(names)`` gives the policy for
    the names found (from ``pg_proc``), else only the rules that need no catalog apply."""
    for node in json_nodes(plan, strings=True):
        if isinstance(node, dict) and node.get("Node Type") == "ModifyTable":
            return str(node.get("Operation", "modify")).upper()
    found = list(calls.postgresql_plan(plan))
    names = sorted({name for name, _, _ in found})
    policy = policy_for(names) if policy_for and names else name_policy(profile)
    if policy is not None and (hit := policy.first_refusal(found, written=False)):
        return f"{hit[0]}()"
    return None


def _pg_proc_policy(cursor: Cursor, names: list[str], profile: DialectProfile,
                    known: FunctionPolicy | None = None) -> FunctionPolicy:
    """The function policy for ``names``, read from ``pg_proc`` now (functions created since the
    database's policy was cached are judged too); the functions ``known`` (the database's policy)
    refuses as secret views' sources stay refused."""
    cursor.execute(PG_CATALOG + " AND proname = ANY(%s)", [names])
    return postgresql_policy(cursor.fetchall(), profile, sources=known.sources if known else ())


@contextmanager
def postgresql(raw: Any, sql: str, profile: DialectProfile, timeout_s: float, *,
               plan: bool = False, functions: FunctionPolicy | None = None,
               role: str | None = None, schema: str | None = None) -> Iterator[Cursor]:
    """``READ ONLY`` transaction + ``statement_timeout`` + the planner's view checked; rolled back.
    ``plan=True`` stops after that ``EXPLAIN`` (its cursor, already read, is yielded). ``role``: run under
    ``SET LOCAL ROLE`` (``Options.question_role``). ``schema``: the plan may scan no relation outside it
    (``Options.schema``; ``boundary``). Session state the query leaves behind (advisory locks,
    backup mode, ...) is undone after the rollback (``session_state``)."""
    import psycopg
    from psycopg import sql as pgsql

    if raw.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
        raise OpenTransactionError(
            "the PostgreSQL connection is inside a transaction; commit or roll back before asking a question."
        )
    cursor = raw.cursor()
    before: session_state.SessionState | None = None
    explained: Any = None
    wrapper: str | None = None  # what the statement being sent puts before ``sql``; None: not the query
    try:
        cursor.execute("BEGIN READ ONLY" if raw.autocommit else "SET TRANSACTION READ ONLY")
        before = session_state.snapshot(cursor)
        cursor.execute(f"SET LOCAL statement_timeout = {max(1, math.ceil(timeout_s * 1000))}")
        if role is not None:
            cursor.execute(pgsql.SQL("SET LOCAL ROLE {}").format(pgsql.Identifier(role)))
        wrapper = _EXPLAIN
        try:
            cursor.execute(_EXPLAIN + sql, binary=True)  # extended protocol: one statement only
        except psycopg.errors.SyntaxError as error:
            if "multiple commands" in str(error):
                raise _refuse("several statements", _engine_text(error, wrapper, sql)) from error
            keyword = _first_keyword(sql)
            if keyword not in _QUERY_KEYWORDS:  # COPY, SET, CREATE, ...: EXPLAIN accepts queries only
                raise _refuse(keyword, f"PostgreSQL cannot plan it as a query: {_engine_text(error, wrapper, sql)}"
                              ) from error
            raise
        explained = cursor.fetchone()[0]
        wrapper = None  # next: the catalog lookup, then psycopg's own DECLARE ... CURSOR FOR around the query
        if construct := _plan_refusal(explained, profile,
                                      lambda names: _pg_proc_policy(cursor, names, profile, functions)):
            raise _refuse(construct, f"the query plan writes or calls a function that is not allowed: {construct}")
        if relation := plan_relation_refusal(explained, schema, functions.columns if functions else {}):
            raise _refuse(relation, "the query plan reads outside the schema boundary or a secret catalog column")
        if plan:
            yield cursor
        else:  # a server-side cursor: the client holds one batch of rows at a time, never the whole result
            with postgresql_stream(raw, cursor, sql, timeout_s) as rows:
                yield rows
    except psycopg.errors.QueryCanceled as error:
        raise _timeout_error(timeout_s) from error
    except (psycopg.errors.ReadOnlySqlTransaction, psycopg.errors.InsufficientPrivilege) as error:
        match = re.search(r"cannot execute (.+?) in a read-only transaction", clip(str(error)))
        raise _refuse(match.group(1) if match else type(error).__name__, _engine_text(error, wrapper, sql)) from error
    except (psycopg.errors.SyntaxError, psycopg.errors.FeatureNotSupported) as error:
        if explained is None:
            raise _query_error(error, wrapper, sql) from error
        if getattr(error.diag, "source_file", None) == "analyze.c":  # parse analysis of DECLARE ... CURSOR FOR
            # the server planned it but will not declare it as a cursor: no plain query (SELECT ... INTO)
            raise _refuse(_first_keyword(sql), "PostgreSQL will not run it as a plain query: "
                                               f"{_engine_text(error, wrapper, sql)}") from error
        # a stored value that does not parse as tsquery, jsonpath, regtype, ...: a data error, SQLSTATE 42601
        raise _query_error(error, wrapper, sql, ran=True) from error
    except psycopg.Error as error:
        raise _query_error(error, wrapper, sql, ran=explained is not None) from error
    finally:
        cursor.close()
        if not raw.broken:  # a lost connection has nothing to roll back (and would hide the error)
            if raw.autocommit:
                raw.execute("ROLLBACK")
            else:
                raw.rollback()
            if before is not None:
                failure = sys.exc_info()[1]
                text = None if failure is None else clip(f"{failure} {clip(str(failure.__cause__))}")
                session_state.settle(raw, before, plan=None if explained is None else json.dumps(explained),
                                     error=text)


# ------------------------------------------------------------------------------------------ snowflake

_SNOWFLAKE_TIMEOUT = "STATEMENT_TIMEOUT_IN_SECONDS"
_SNOWFLAKE_TIMEOUT_ERRNOS = {604, 630}


def _snowflake_statement_count(sql: str) -> int:
    from snowflake.connector.util_text import split_statements

    return sum(1 for statement, _ in split_statements(io.StringIO(sql)) if statement.strip().rstrip(";"))


@contextmanager
def _snowflake_session_timeout(cursor: Cursor, seconds: int) -> Iterator[None]:
    """Set ``STATEMENT_TIMEOUT_IN_SECONDS`` for the session and put the previous value back."""
    cursor.execute(f"SHOW PARAMETERS LIKE '{_SNOWFLAKE_TIMEOUT}' IN SESSION")
    rows = cursor.fetchall()
    if not rows:  # the engine does not report it (fakesnow): only the client-side timeout applies
        yield
        return
    _key, value, _default, level = rows[0][:4]
    cursor.execute(f"ALTER SESSION SET {_SNOWFLAKE_TIMEOUT} = {seconds}")
    try:
        yield
    finally:
        restore = f"SET {_SNOWFLAKE_TIMEOUT} = {int(value)}" if str(level).upper() == "SESSION" else (
            f"UNSET {_SNOWFLAKE_TIMEOUT}"
        )
        cursor.execute(f"ALTER SESSION {restore}")


@contextmanager
def snowflake(raw: Any, sql: str, profile: DialectProfile, timeout_s: float, *,
              plan: bool = False, functions: FunctionPolicy | None = None) -> Iterator[Cursor]:
    """Client-side statement check + a transaction always rolled back + server and client timeouts.
    ``plan=True`` runs ``EXPLAIN`` of the query instead of the query."""
    from snowflake.connector import Error as SnowflakeError

    try:
        check_query(sql, profile, functions)
    except UnsafeSQLError as error:
        raise _refuse(error.construct, str(error)) from error
    policy = functions or name_policy(profile)  # its own lexical scan, independent of sqlglot
    if policy is not None and (hit := policy.first_refusal(calls.statement_text(sql), written=False)):
        raise _refuse(f"{hit[0].lower()}()", refusal_message(hit[0], hit[1], profile.display_name))
    if (count := _snowflake_statement_count(sql)) != 1:
        raise _refuse(f"{count} statements", "the Snowflake connector splits it into several statements")
    seconds = max(1, math.ceil(timeout_s))
    cursor = raw.cursor()
    wrapper: str | None = None  # what the statement being sent puts before ``sql``; None: not the query
    try:
        with _snowflake_session_timeout(cursor, seconds):
            cursor.execute("BEGIN TRANSACTION")
            try:
                wrapper = "EXPLAIN " if plan else ""
                cursor.execute(wrapper + sql, timeout=seconds)
                yield cursor
            finally:
                cursor.execute("ROLLBACK")
    except SnowflakeError as error:
        if getattr(error, "errno", None) in _SNOWFLAKE_TIMEOUT_ERRNOS:
            raise _timeout_error(timeout_s) from error
        raise _query_error(error, wrapper, sql) from error
    except VerifiedSQLError:
        raise
    except Exception as error:  # a connector or emulator bug is still a failed query, not a crash
        raise _query_error(error, wrapper, sql) from error


# The engine guard of every registered engine, by name (``Backend.read_only``; a profile's
# ``read_only_strategy`` names one).
STRATEGIES: Mapping[str, Strategy] = backends.facts("read_only")
