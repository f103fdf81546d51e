"""Snowflake: ``snowflake.connector`` (fakesnow's emulation counts as it); scratch databases are DuckDB,
since Snowflake has no local engine."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ContextManager

import sqlalchemy as sa

from ..db import catalog_reflect
from ..guard import readonly, statements
from . import INFORMATION_SCHEMA_COLUMNS, INFORMATION_SCHEMA_TABLES, Backend, TestConfig
from .duckdb import in_transaction as duckdb_in_transaction

TEST_URL = "snowflake://user:pass@account/db1/schema1"  # fakesnow's database db1, schema schema1


def in_transaction(raw: Any) -> bool:
    """``CURRENT_TRANSACTION()`` (NULL outside a transaction) on a cursor of its own; under fakesnow
    (tests), the DuckDB connection underneath is asked as DuckDB's is."""
    duck = getattr(raw, "_duck_conn", None)
    if duck is not None:  # fakesnow: DuckDB underneath
        return duckdb_in_transaction(duck)
    cursor = raw.cursor()
    try:
        cursor.execute("SELECT CURRENT_TRANSACTION()")
        row = cursor.fetchone()
    finally:
        cursor.close()
    return bool(row and row[0] is not None)


def _make_engine(directory: Path, server_url: str | None) -> sa.Engine:
    """fakesnow's ``db1.schema1`` (the caller keeps ``fakesnow.patch()`` entered: ``TestConfig.emulator``)."""
    engine = sa.create_engine(TEST_URL)
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE DATABASE IF NOT EXISTS db1")
        conn.exec_driver_sql("CREATE SCHEMA IF NOT EXISTS db1.schema1")
    return engine


def _emulator() -> ContextManager[Any]:
    import fakesnow

    return fakesnow.patch()


BACKEND = Backend(
    name="snowflake",
    drivers=("snowflake", "fakesnow"),
    dbapi_url="snowflake://",
    read_only=readonly.snowflake,
    in_transaction=in_transaction,
    statement_parser=statements.parse_snowflake,
    statement_keywords=statements.COMMON_STATEMENT_KEYWORDS | frozenset(
        "use show describe desc put get list ls remove rm copy undrop grant revoke merge call execute set unset "
        "truncate start comment".split()
    ),
    bulk_catalog=catalog_reflect.snowflake,
    scratch_dialect="duckdb",
    test=TestConfig(
        make_engine=_make_engine,
        emulator=_emulator,
        catalog_queries=(INFORMATION_SCHEMA_TABLES, INFORMATION_SCHEMA_COLUMNS),
    ),
)
