"""PostgreSQL: the ``psycopg`` (3) driver; scratch databases are PostgreSQL's dialect (sqlglot)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from ..db import catalog_reflect
from ..guard import readonly, statements
from . import INFORMATION_SCHEMA_COLUMNS, Backend, TestConfig

_database_counter = itertools.count()


def in_transaction(raw: Any) -> bool:
    """``info.transaction_status``: idle, or inside (or failed in) a transaction."""
    from psycopg.pq import TransactionStatus

    return raw.info.transaction_status != TransactionStatus.IDLE


def _make_engine(directory: Path, server_url: str | None) -> sa.Engine:
    """A fresh database on the test server (``server_url``: the ``postgres_url`` fixture)."""
    if not server_url:
        raise ValueError("a PostgreSQL test database needs the server URL of the postgres_url fixture.")
    name = f"shop_{next(_database_counter)}_{directory.name[-20:].lower()}"
    name = "".join(ch if ch.isalnum() else "_" for ch in name)
    admin = sa.create_engine(server_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    admin.dispose()
    return sa.create_engine(sa.make_url(server_url).set(database=name))


def _raw_connection(engine: sa.Engine) -> Any:
    import psycopg

    return psycopg.connect(engine.url.set(drivername="postgresql").render_as_string(False), autocommit=True)


BACKEND = Backend(
    name="postgresql",
    drivers=("psycopg",),
    dbapi_url="postgresql+psycopg://",
    read_only=readonly.postgresql,
    in_transaction=in_transaction,
    statement_parser=statements.parse_postgresql,
    statement_keywords=statements.COMMON_STATEMENT_KEYWORDS | frozenset(
        "table truncate grant revoke lock savepoint release start end abort set reset show copy vacuum analyze "
        "cluster reindex checkpoint listen notify unlisten prepare execute deallocate do discard comment "
        "security refresh call merge declare fetch move close reassign import load".split()
    ),
    bulk_catalog=catalog_reflect.postgresql,
    scratch_dialect="postgresql",
    test=TestConfig(
        make_engine=_make_engine,
        server_fixture="postgres_url",
        raw_connection=_raw_connection,
        catalog_queries=(
            INFORMATION_SCHEMA_COLUMNS,
            "SELECT relname, relkind FROM pg_class WHERE relnamespace = 'public'::regnamespace ORDER BY 1",
            "SELECT count(*) FROM pg_largeobject_metadata",
            "SELECT extname FROM pg_extension ORDER BY 1",
            "SELECT proname FROM pg_proc WHERE pronamespace = 'public'::regnamespace ORDER BY 1",
            "SELECT nspname FROM pg_namespace ORDER BY 1",
            "SELECT name, setting FROM pg_file_settings ORDER BY 1, 2",
        ),
    ),
    spider_bench=True,
)
