"""Whether a user's driver connection is inside a transaction, by checks that never end or join it.

A question must not commit, roll back or join a transaction the caller has open on the connection it
would run on; it is refused with ``OpenTransactionError`` instead. Each driver is asked in its own way:

* **sqlite3**: ``Connection.in_transaction``.
* **psycopg**: ``info.transaction_status`` (idle, or inside/failed in a transaction).
* **duckdb**: DuckDB reports no transaction state, and a failed ``BEGIN`` would abort the caller's
  transaction, so ``txid_current()`` is read twice: in autocommit mode each statement is its own
  transaction (two ids), inside an explicit one both reads see the same id. A transaction that is already
  aborted refuses the read, which also means one is open. Like any DuckDB statement, the two reads end a
  result that the caller has only partly fetched on that same connection.
* **snowflake**: ``CURRENT_TRANSACTION()`` (NULL outside a transaction) on a cursor of its own; under
  fakesnow (tests), the DuckDB connection underneath is asked as above.
"""

from __future__ import annotations

from typing import Any

from .errors import OpenTransactionError

DRIVERS = ("sqlite3", "duckdb", "psycopg", "snowflake")


def driver_of(raw: Any) -> str | None:
    """The driver of a raw DB-API connection (one of ``DRIVERS``), or None for one not known here."""
    root = type(raw).__module__.split(".")[0]
    if root == "_duckdb":
        return "duckdb"
    if root == "fakesnow":
        return "snowflake"
    if root == "duckdb_sqlalchemy":  # duckdb-sqlalchemy's ConnectionWrapper
        return "duckdb"
    return root if root in DRIVERS else None


def _duckdb_in_transaction(raw: Any) -> bool:
    import duckdb

    connection = raw
    if not isinstance(connection, duckdb.DuckDBPyConnection):  # duckdb-sqlalchemy's wrapper
        connection = raw._ConnectionWrapper__c
    try:
        first = connection.sql("SELECT txid_current()").fetchone()[0]
        second = connection.sql("SELECT txid_current()").fetchone()[0]
    except duckdb.TransactionException:  # "Current transaction is aborted (please ROLLBACK)"
        return True
    return bool(first == second)


def _snowflake_in_transaction(raw: Any) -> bool:
    duck = getattr(raw, "_duck_conn", None)
    if duck is not None:  # fakesnow: DuckDB underneath
        return _duckdb_in_transaction(duck)
    cursor = raw.cursor()
    try:
        cursor.execute("SELECT CURRENT_TRANSACTION()")
        row = cursor.fetchone()
    finally:
        cursor.close()
    return bool(row and row[0] is not None)


def in_transaction(raw: Any) -> bool:
    """True when ``raw`` (a sqlite3, duckdb, psycopg or snowflake connection) is inside a transaction;
    False for a driver not known here."""
    driver = driver_of(raw)
    if driver == "sqlite3":
        return bool(raw.in_transaction)
    if driver == "psycopg":
        from psycopg.pq import TransactionStatus

        return raw.info.transaction_status != TransactionStatus.IDLE
    if driver == "duckdb":
        return _duckdb_in_transaction(raw)
    if driver == "snowflake":
        return _snowflake_in_transaction(raw)
    return False


TRANSACTION_OPEN = (
    "the connection is inside a transaction, and a question must neither join nor end it; commit or roll "
    "back first (plain SQL through the same connection still runs inside it)."
)


def require_idle(raw: Any, error: type[OpenTransactionError] = OpenTransactionError) -> None:
    """Raise ``error`` (an ``OpenTransactionError``) when ``raw`` is inside a transaction."""
    if in_transaction(raw):
        raise error(TRANSACTION_OPEN)
