"""Whether a user's driver connection is inside a transaction, by checks that never end or join it.

A question must not commit, roll back or join a transaction the caller has open on the connection it
would run on; it is refused with ``OpenTransactionError`` instead. Each driver is asked in its own way,
by ``in_transaction`` of its engine's backend (``verifiedsql.backends``); a driver no backend names is
refused with ``UnknownBackendError``, never taken for idle. sqlite3 reads ``Connection.in_transaction``,
psycopg ``info.transaction_status``; DuckDB reports no transaction state, so ``txid_current()`` is read
twice; Snowflake asks ``CURRENT_TRANSACTION()`` (see ``verifiedsql/backends/<engine>.py``).
"""

from __future__ import annotations

from typing import Any

from .. import backends
from ..errors import OpenTransactionError, UnknownBackendError


def module_root(raw: Any) -> str:
    """The top-level module of a raw connection's class (``sqlite3``, ``_duckdb``, ``psycopg``, ...)."""
    return type(raw).__module__.split(".")[0]


def driver_of(raw: Any) -> str | None:
    """The driver of a raw DB-API connection (``Backend.driver`` of the backend that takes it: fakesnow's
    connection counts as snowflake's), or None for one no backend takes."""
    try:
        return backends.backend_for_driver(module_root(raw)).driver
    except UnknownBackendError:
        return None


def in_transaction(raw: Any) -> bool:
    """True when ``raw`` is inside a transaction, asked by its engine's backend; ``UnknownBackendError``
    (naming the supported drivers) for a driver no backend takes."""
    return backends.backend_for_driver(module_root(raw)).in_transaction(raw)


TRANSACTION_OPEN = (
    "the connection is inside a transaction, and a question must neither join nor end it; commit or roll "
    "back first (plain SQL through the same connection still runs inside it)."
)


def require_idle(raw: Any, error: type[OpenTransactionError] = OpenTransactionError) -> None:
    """Raise ``error`` (an ``OpenTransactionError``) when ``raw`` is inside a transaction."""
    if in_transaction(raw):
        raise error(TRANSACTION_OPEN)
