"""PostgreSQL session state that a generated query must not leave behind on the connection.

The read-only transaction of each generated query is rolled back, which undoes table writes and ``SET``,
but not everything a function can do to the session: a session-level advisory lock
(``pg_advisory_lock*``) stays held and a backup started with ``pg_backup_start`` stays running after
``ROLLBACK``. So ``snapshot`` is taken in the transaction before the query runs and ``settle`` compares
after the rollback and undoes exactly what the query added:

* advisory locks (``pg_locks`` of this backend): each lock that appeared is released, as often as it was
  taken; never ``pg_advisory_unlock_all``, which would release the caller's own locks too;
* backup mode: PostgreSQL 15 offers no way to read a session's backup state, so a query whose plan calls
  ``pg_backup_start`` is followed by ``pg_backup_stop(false)`` (unless its error says a backup was already
  running, which would then be the caller's);
* ``LISTEN`` channels (``pg_listening_channels()``) and SQL-level prepared statements
  (``pg_prepared_statements``) are put back.

What cannot be undone (a temporary object that appeared) raises ``SessionStateError``: the query is
dropped and ``Database`` discards a pooled connection (the caller's own connection is left to the caller).
Settings are not compared: PostgreSQL reverts a ``SET`` or ``set_config(..., false)`` made in a transaction
that is rolled back (and reading ``pg_settings`` would cost more than the rest together). ``LISTEN`` and
temporary objects are transactional too; they are checked as a second net, for about a millisecond.
Not detectable: an advisory lock the session already held, taken once more (PostgreSQL shows no count),
and a ``pg_backup_start`` hidden inside another function.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from ..errors import SessionStateError

LOGGER = logging.getLogger("verifiedsql")
_MAX_UNLOCKS = 10_000  # a lock taken in a loop is released as often; this bounds a misbehaving server

_SNAPSHOT = r"""SELECT
  ARRAY(SELECT concat_ws('/', classid, objid, objsubid, mode) FROM pg_locks
        WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND granted ORDER BY 1),
  ARRAY(SELECT name FROM pg_prepared_statements WHERE from_sql ORDER BY 1),
  ARRAY(SELECT pg_listening_channels() ORDER BY 1),
  ARRAY(SELECT oid::regclass::text FROM pg_class WHERE relnamespace = pg_my_temp_schema() ORDER BY 1)"""
_BACKUP_START = ("pg_backup_start", "pg_start_backup")
_BACKUP_RUNNING = "already in progress"


@dataclass(frozen=True)
class SessionState:
    """What ``settle`` compares: each part as sorted text."""

    advisory_locks: tuple[str, ...]  # "classid/objid/objsubid/mode"
    prepared: tuple[str, ...]
    listening: tuple[str, ...]
    temp_objects: tuple[str, ...]


def snapshot(cursor: Any) -> SessionState:
    """The session state, read with ``cursor`` (a psycopg cursor) in one round trip."""
    cursor.execute(_SNAPSHOT)
    row = cursor.fetchone()
    return SessionState(*(tuple(part or ()) for part in row))


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _signed(value: int, bits: int) -> int:
    return value - (1 << bits) if value >= 1 << (bits - 1) else value


def _unlock_statement(lock: str) -> str:
    """The statement that releases one advisory lock row of ``pg_locks`` (see ``_SNAPSHOT``)."""
    classid, objid, objsubid, mode = lock.split("/")
    suffix = "_shared" if mode == "ShareLock" else ""
    if objsubid == "1":  # one bigint key: high half in classid, low half in objid
        return f"SELECT pg_advisory_unlock{suffix}({_signed((int(classid) << 32) | int(objid), 64)}::bigint)"
    return f"SELECT pg_advisory_unlock{suffix}({_signed(int(classid), 32)}, {_signed(int(objid), 32)})"


def _stop_backup(cursor: Any) -> bool:
    """``pg_backup_stop(false)``; False when no backup was running ("backup is not in progress")."""
    import psycopg

    in_transaction = not cursor.connection.autocommit
    if in_transaction:
        cursor.execute("SAVEPOINT verifiedsql_backup")
    try:
        cursor.execute("SELECT pg_backup_stop(false)")
    except psycopg.errors.ObjectNotInPrerequisiteState:
        if in_transaction:
            cursor.execute("ROLLBACK TO SAVEPOINT verifiedsql_backup")
        return False
    return True


def _undo(cursor: Any, before: SessionState, after: SessionState, plan: str | None, error: str | None) -> list[str]:
    """Undo what ``after`` has beyond ``before``; the list of what was undone."""
    undone: list[str] = []
    for lock in sorted(set(after.advisory_locks) - set(before.advisory_locks)):
        statement = _unlock_statement(lock)
        for _ in range(_MAX_UNLOCKS):
            cursor.execute(statement)
            if not cursor.fetchone()[0]:
                break
        undone.append(f"advisory lock {lock}")
    lowered = (plan or "").lower()
    if any(name in lowered for name in _BACKUP_START) and _BACKUP_RUNNING not in (error or "") and (
            _stop_backup(cursor)):
        undone.append("backup mode")
    for channel in sorted(set(after.listening) - set(before.listening)):
        cursor.execute(f"UNLISTEN {_quote(channel)}")
        undone.append(f"LISTEN {channel}")
    for name in sorted(set(after.prepared) - set(before.prepared)):
        cursor.execute(f"DEALLOCATE {_quote(name)}")
        undone.append(f"prepared statement {name}")
    return undone


def settle(raw: Any, before: SessionState, *, plan: str | None = None, error: str | None = None) -> list[str]:
    """After the query's transaction was rolled back: undo the session state it left on ``raw`` (an idle
    psycopg connection) and return what was undone (logged as a warning). ``plan``: the query's EXPLAIN
    output, when it got that far; ``error``: the query's error text, if it failed. Raises
    ``SessionStateError`` for what cannot be undone."""
    import psycopg

    cursor = raw.cursor()
    try:
        after = snapshot(cursor)
        undone = _undo(cursor, before, after, plan, error)
        left = sorted(set(after.temp_objects) - set(before.temp_objects))
        if not raw.autocommit:  # the undo ran in a transaction of its own (the connection was idle)
            raw.commit()
    except psycopg.Error as failure:
        raise SessionStateError(
            f"could not check the session state after a generated query ({failure}); the query was dropped "
            "(a pooled connection is discarded)."
        ) from failure
    finally:
        cursor.close()
    if undone:
        LOGGER.warning("verifiedsql: a generated query left session state behind; undone: %s", ", ".join(undone))
    if left:
        raise SessionStateError(
            f"a generated query left temporary objects on the session ({', '.join(left)}) that a read-only "
            "question cannot remove; the query was dropped (a pooled connection is discarded). Run questions "
            "under a role without TEMPORARY rights (question_role=)."
        )
    return undone
