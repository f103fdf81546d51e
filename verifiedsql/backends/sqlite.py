"""SQLite: the standard library's ``sqlite3`` driver; scratch databases are SQLite too."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from ..db import catalog_reflect
from ..guard import readonly, statements
from . import Backend, TestConfig


def in_transaction(raw: sqlite3.Connection) -> bool:
    """``Connection.in_transaction``."""
    return bool(raw.in_transaction)


def _make_engine(directory: Path, server_url: str | None) -> sa.Engine:
    return sa.create_engine(f"sqlite:///{directory / 'shop.sqlite'}")


def _raw_connection(engine: sa.Engine) -> Any:
    return sqlite3.connect(engine.url.database or ":memory:")


BACKEND = Backend(
    name="sqlite",
    drivers=("sqlite3",),
    dbapi_url="sqlite://",
    read_only=readonly.sqlite,
    in_transaction=in_transaction,
    statement_parser=statements.parse_sqlite,
    statement_keywords=statements.COMMON_STATEMENT_KEYWORDS | frozenset(
        "replace savepoint release pragma attach detach vacuum analyze reindex end".split()
    ),
    bulk_catalog=catalog_reflect.sqlite,
    scratch_dialect="sqlite",
    test=TestConfig(
        make_engine=_make_engine,
        raw_connection=_raw_connection,
        catalog_queries=("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY 1, 2",),
    ),
    spider_bench=True,
)
