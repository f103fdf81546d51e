"""DuckDB's extension auto-install and auto-load, held off while generated queries run, shared by every
question on the same database.

Both settings exist only database-wide (``SET SESSION`` is refused), so the engine guard cannot give its own
duplicate connection a value of its own. Instead the first question on a database reads the user's values
and turns both off, later questions that overlap it only count themselves in, and the last one to end puts
the user's values back: overlapping questions never put back each other's "off", and once none runs the
database holds the user's values again. A database is known by its file (every Python connection to the
same file shares one DuckDB instance), an in-memory one by the connection that opened it.

A value the user sets while a question runs is overwritten when the last question ends.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

SETTINGS = ("autoinstall_known_extensions", "autoload_known_extensions")


@dataclass
class _Held:
    """The questions running on one database, and the user's values to put back after the last."""

    count: int = 0
    saved: dict[str, str] = field(default_factory=dict)


_LOCK = threading.Lock()
_HELD: dict[tuple[str, str | int], _Held] = {}


def database_key(cursor: Any, root: Any) -> tuple[str, str | int]:
    """Which DuckDB database ``cursor`` (a duplicate of the connection ``root``) is on: its file's path, or
    for an in-memory database the connection that opened it."""
    row = cursor.execute("SELECT path FROM duckdb_databases() WHERE database_name = current_database()").fetchone()
    path = row[0] if row else None
    return ("file", str(path)) if path else ("memory", id(root))


@contextmanager
def held_off(cursor: Any, key: tuple[str, str | int]) -> Iterator[None]:
    """Auto-install and auto-load off on the database ``key`` while the block runs (set and put back on
    ``cursor``), counted with every other question on it."""
    with _LOCK:
        held = _HELD.get(key) or _Held()
        if held.count == 0:
            held.saved = {name: str(cursor.execute(f"SELECT current_setting('{name}')").fetchone()[0]).lower()
                          for name in SETTINGS}
            for name in SETTINGS:
                cursor.execute(f"SET {name} = false")
        held.count += 1
        _HELD[key] = held
    try:
        yield
    finally:
        with _LOCK:
            held.count -= 1
            if held.count == 0:
                del _HELD[key]
                for name, value in held.saved.items():
                    cursor.execute(f"SET {name} = {'true' if value == 'true' else 'false'}")
