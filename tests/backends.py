"""Engines with the small ``shop`` dataset on every supported backend, and a content checksum.

``DIALECTS`` are the registered engines (``verifiedsql.backends``); ``make_engine`` builds an empty engine
for one dialect from its backend's test configuration; ``load_shop`` loads the dataset with
SQLAlchemy Core; ``checksum`` hashes every table's schema and full contents, so a test can prove a
statement changed nothing.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from verifiedsql import backends
from verifiedsql.backends import backend_for

DIALECTS = backends.names()  # every registered engine (verifiedsql/backends/)

COUNTRIES = ("Brazil", "Germany", "USA", "France", "Brazil", "USA", "Japan", "Germany", "USA", "Canada")
STATUSES = ("shipped", "pending", "cancelled", "shipped", "returned")


def shop_metadata() -> sa.MetaData:
    """``customers`` (10 rows) and ``orders`` (25 rows, FK to customers)."""
    metadata = sa.MetaData()
    sa.Table(
        "customers", metadata,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("country", sa.Text),
        sa.Column("joined", sa.Date),
    )
    sa.Table(
        "orders", metadata,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("customer_id", sa.Integer, sa.ForeignKey("customers.id"), nullable=False),
        sa.Column("amount", sa.Numeric(10, 2)),
        sa.Column("status", sa.Text),
    )
    return metadata


def shop_rows() -> dict[str, list[dict]]:
    customers = [
        {"id": i + 1, "name": f"Customer {i + 1}", "country": country,
         "joined": dt.date(2020, 1, 1) + dt.timedelta(days=37 * i)}
        for i, country in enumerate(COUNTRIES)
    ]
    orders = [
        {"id": i + 1, "customer_id": i % 10 + 1, "amount": Decimal(f"{(i * 37) % 500 + 10}.{i % 100:02d}"),
         "status": STATUSES[i % len(STATUSES)]}
        for i in range(25)
    ]
    return {"customers": customers, "orders": orders}


def load_shop(engine: sa.Engine) -> sa.Engine:
    """Create and fill ``customers`` and ``orders`` on ``engine``; returns it."""
    metadata = shop_metadata()
    rows = shop_rows()
    with engine.begin() as conn:
        metadata.create_all(conn)
        for name in ("customers", "orders"):
            conn.execute(metadata.tables[name].insert(), rows[name])
    return engine


def make_engine(dialect: str, tmp_path: Path, postgres_url: str | None = None) -> sa.Engine:
    """An empty engine for ``dialect``, made by its backend's test configuration (``TestConfig.make_engine``):
    a file in ``tmp_path`` (SQLite, DuckDB), a fresh database on the test server (PostgreSQL), or fakesnow
    (Snowflake; the caller keeps its emulator entered: ``enter_emulator``)."""
    return backend_for(dialect).test.make_engine(tmp_path, postgres_url)


def server_url(dialect: str, request: pytest.FixtureRequest) -> str | None:
    """The server URL ``make_engine(dialect, ...)`` needs, from the fixture its test configuration names."""
    fixture = backend_for(dialect).test.server_fixture
    return request.getfixturevalue(fixture) if fixture else None


def enter_emulator(dialect: str) -> Any | None:
    """Enter the emulator of ``dialect`` (fakesnow for Snowflake) and return it, for the caller to exit with
    ``__exit__(None, None, None)``; None for an engine with none."""
    emulator = backend_for(dialect).test.emulator
    if emulator is None:
        return None
    patch = emulator()
    patch.__enter__()
    return patch


def _foreign_keys(inspector: sa.Inspector, table: str, schema: str | None) -> list[str]:
    try:
        return sorted(repr(fk) for fk in inspector.get_foreign_keys(table, schema=schema))
    except ValueError:  # fakesnow's SHOW IMPORTED KEYS does not match snowflake-sqlalchemy's reader
        return ["foreign keys not reflectable"]


def checksum(engine: sa.Engine, schema: str | None = None) -> str:
    """SHA-256 over every table's columns, keys and full (sorted) contents."""
    digest = hashlib.sha256()
    inspector = sa.inspect(engine)
    with engine.connect() as conn:
        for table_name in sorted(inspector.get_table_names(schema=schema)):
            columns = inspector.get_columns(table_name, schema=schema)
            digest.update(repr((
                table_name,
                [(c["name"], str(c["type"]), c["nullable"]) for c in columns],
                inspector.get_pk_constraint(table_name, schema=schema).get("constrained_columns"),
                _foreign_keys(inspector, table_name, schema),
            )).encode())
            table = sa.Table(table_name, sa.MetaData(), *(sa.Column(c["name"]) for c in columns), schema=schema)
            rows = conn.execute(sa.select(table)).all()
            digest.update(repr(sorted(map(repr, rows))).encode())
        digest.update(repr(sorted(inspector.get_view_names(schema=schema))).encode())
    return digest.hexdigest()
