"""The caller's SQLite authorizer and progress handler, kept so that a question never removes them.

Python's ``sqlite3`` cannot read an authorizer or progress handler back, so a statement guard that has to
install its own on the caller's connection cannot put the caller's back by itself. Most questions never
touch the caller's connection: ``verifiedsql.guard.bounded`` runs them on a read-only connection of their own
to the same files (or on a copy of a small in-memory database). Where it cannot (a large in-memory
database), the guard runs on the caller's connection and afterwards re-installs the hooks remembered
here: those set through ``verifiedsql.dbapi``'s ``Connection.set_authorizer`` /
``Connection.set_progress_handler``. Hooks set directly on such a connection are cleared.
"""

from __future__ import annotations

import sqlite3
import threading
from dataclasses import dataclass
from typing import Any, Callable

Authorizer = Callable[..., int]
ProgressHandler = Callable[[], int]


@dataclass
class Hooks:
    """The hooks remembered for one connection (None: none installed)."""

    authorizer: Authorizer | None = None
    progress: tuple[ProgressHandler, int] | None = None


# id(connection) -> (connection, hooks); the connection is held so that its id cannot be reused meanwhile
_REMEMBERED: dict[int, tuple[sqlite3.Connection, Hooks]] = {}
_LOCK = threading.Lock()


def _hooks(raw: sqlite3.Connection) -> Hooks:
    with _LOCK:
        entry = _REMEMBERED.setdefault(id(raw), (raw, Hooks()))
    return entry[1]


def set_authorizer(raw: sqlite3.Connection, authorizer: Authorizer | None) -> None:
    """Install ``authorizer`` on ``raw`` and remember it for ``restore``."""
    raw.set_authorizer(authorizer)
    _hooks(raw).authorizer = authorizer


def set_progress_handler(raw: sqlite3.Connection, handler: ProgressHandler | None, n: int) -> None:
    """Install the progress ``handler`` (every ``n`` VM instructions) on ``raw`` and remember it."""
    raw.set_progress_handler(handler, n)
    _hooks(raw).progress = (handler, n) if handler is not None else None


def restore(raw: sqlite3.Connection) -> None:
    """Put ``raw``'s remembered hooks back (or clear them when none were set through this module)."""
    with _LOCK:
        entry = _REMEMBERED.get(id(raw))
    hooks = entry[1] if entry is not None and entry[0] is raw else Hooks()
    raw.set_authorizer(hooks.authorizer)
    handler, n = hooks.progress or (None, 0)
    raw.set_progress_handler(handler, n)


def forget(raw: Any) -> None:
    """Drop what is remembered for ``raw`` (its wrapper was closed)."""
    with _LOCK:
        entry = _REMEMBERED.get(id(raw))
        if entry is not None and entry[0] is raw:
            del _REMEMBERED[id(raw)]
