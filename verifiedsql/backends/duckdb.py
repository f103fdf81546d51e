"""DuckDB: the ``duckdb`` driver (and duckdb-sqlalchemy's connection wrapper); scratch databases are DuckDB."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import sqlalchemy as sa

from ..db import catalog_reflect
from ..guard import readonly, statements
from . import INFORMATION_SCHEMA_COLUMNS, INFORMATION_SCHEMA_TABLES, Backend, TestConfig


def in_transaction(raw: Any) -> bool:
    """DuckDB reports no transaction state, and a failed ``BEGIN`` would abort the caller's transaction, so
    ``txid_current()`` is read twice: in autocommit mode each statement is its own transaction (two ids),
    inside an explicit one both reads see the same id. A transaction that is already aborted refuses the
    read, which also means one is open. Like any DuckDB statement, the two reads end a result that the
    caller has only partly fetched on that same connection."""
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


def _make_engine(directory: Path, server_url: str | None) -> sa.Engine:
    return sa.create_engine(f"duckdb:///{directory / 'shop.duckdb'}")


def _raw_connection(engine: sa.Engine) -> Any:
    import duckdb

    with engine.connect() as conn:  # same configuration as the engine's, or DuckDB refuses a second one
        agent = conn.exec_driver_sql("SELECT current_setting('custom_user_agent')").scalar()
    return duckdb.connect(engine.url.database or ":memory:", config={"custom_user_agent": str(agent)})


BACKEND = Backend(
    name="duckdb",
    drivers=("duckdb", "_duckdb", "duckdb_sqlalchemy"),
    dbapi_url="duckdb:///:memory:",
    read_only=readonly.duckdb,
    in_transaction=in_transaction,
    statement_parser=statements.parse_duckdb,
    statement_keywords=statements.COMMON_STATEMENT_KEYWORDS | frozenset(
        "from pivot unpivot install load force attach detach use pragma set reset show describe desc summarize "
        "copy export import checkpoint vacuum analyze call truncate prepare execute deallocate merge start end "
        "abort comment table".split()
    ),
    bulk_catalog=catalog_reflect.duckdb,
    scratch_dialect="duckdb",
    test=TestConfig(
        make_engine=_make_engine,
        raw_connection=_raw_connection,
        catalog_queries=(
            INFORMATION_SCHEMA_TABLES, INFORMATION_SCHEMA_COLUMNS,
            "SELECT database_name, path FROM duckdb_databases() ORDER BY 1",
            "SELECT schema_name, index_name FROM duckdb_indexes() ORDER BY 1, 2",
            "SELECT name FROM duckdb_secrets() ORDER BY 1",
            "SELECT extension_name FROM duckdb_extensions() WHERE loaded OR installed ORDER BY 1",
        ),
    ),
    spider_bench=True,
)
