"""Engines with the small ``shop`` dataset on every supported backend, and a content checksum.

``make_engine`` builds an empty engine for one dialect; ``load_shop`` loads the dataset with
SQLAlchemy Core; ``checksum`` hashes every table's schema and full contents, so a test can prove a
statement changed nothing.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import itertools
from decimal import Decimal
from pathlib import Path

import sqlalchemy as sa

DIALECTS = ("sqlite", "duckdb", "postgresql", "snowflake")
SNOWFLAKE_URL = "snowflake://user:pass@account/db1/schema1"

COUNTRIES = ("Brazil", "Germany", "USA", "France", "Brazil", "USA", "Japan", "Germany", "USA", "Canada")
STATUSES = ("shipped", "pending", "cancelled", "shipped", "returned")
_database_counter = itertools.count()


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
    """An empty engine for ``dialect``: a file in ``tmp_path`` (SQLite, DuckDB), a fresh database on
    the test server (PostgreSQL), or fakesnow (Snowflake; the caller keeps ``fakesnow.patch()`` active)."""
    if dialect == "sqlite":
        return sa.create_engine(f"sqlite:///{tmp_path / 'shop.sqlite'}")
    if dialect == "duckdb":
        return sa.create_engine(f"duckdb:///{tmp_path / 'shop.duckdb'}")
    if dialect == "postgresql":
        assert postgres_url, "make_engine('postgresql') needs the postgres_url fixture"
        name = f"shop_{next(_database_counter)}_{tmp_path.name[-20:].lower()}"
        name = "".join(ch if ch.isalnum() else "_" for ch in name)
        admin = sa.create_engine(postgres_url, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
        admin.dispose()
        return sa.create_engine(sa.make_url(postgres_url).set(database=name))
    if dialect == "snowflake":
        engine = sa.create_engine(SNOWFLAKE_URL)
        with engine.begin() as conn:
            conn.exec_driver_sql("CREATE DATABASE IF NOT EXISTS db1")
            conn.exec_driver_sql("CREATE SCHEMA IF NOT EXISTS db1.schema1")
        return engine
    raise ValueError(f"unknown dialect {dialect!r}; choose one of {DIALECTS}")


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
