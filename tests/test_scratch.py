"""Scratch databases on every engine: a slice loaded with made-up rows, candidates run on it guarded and
bounded, nothing read from or left in the user's database (PostgreSQL: temporary tables, rolled back;
Snowflake: DuckDB in memory with transpiled SQL)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
import sqlalchemy as sa
from backends import checksum, load_shop

from verifiedsql.config import LLMSettings, Options
from verifiedsql.db.database import Database
from verifiedsql.errors import QueryError, QueryTimeoutError, SliceError, UnsafeSQLError
from verifiedsql.profiles import all_profiles
from verifiedsql.stages.common.scratch import open_scratch, type_candidates
from verifiedsql.stages.common.slicer import scratch_dialect_for, slice_schema

pytestmark = pytest.mark.filterwarnings("ignore:verifiedsql could not reflect foreign keys")

JOIN = ("SELECT c.name, SUM(o.amount) AS total FROM customers c JOIN orders o ON o.customer_id = c.id "
        "GROUP BY c.name ORDER BY c.name")
BY_COUNTRY = "SELECT country, COUNT(*) AS n FROM customers GROUP BY country"
SLOW = {
    "sqlite": "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT COUNT(*) FROM r",
    "duckdb": "SELECT SUM(a.range * b.range) FROM range(1000000) a, range(1000000) b",
    "postgresql": "SELECT COUNT(*) FROM generate_series(1, 100000) a, generate_series(1, 100000) b",
}


def _database(engine: sa.Engine, **values) -> Database:
    return Database(engine, Options(llm=LLMSettings(), **values))


def _slice(database: Database, sqls: list[str]):
    return slice_schema(sqls, database.reflect(), database.profile, scratch_dialect_for(database.profile))


def _data() -> dict[str, list[tuple]]:
    """customers (id, name, country) and orders (id, customer_id, amount): dates and decimals as the
    model tester gives them (ISO text, floats) and as reflection gives them (objects, Decimals)."""
    return {
        "customers": [(1, "Ann", "Brazil"), (2, "Bob", None), (3, "Cy", "Brazil")],
        "orders": [(1, 1, Decimal("10.50")), (2, 1, 2.5), (3, 2, None)],
    }


def _temp_tables(database: Database) -> int:
    """Temporary tables in the sessions of all pooled connections (among them the one the scratch
    database used; tables of another session's open transaction would not be visible)."""
    connections = [database.engine.connect() for _ in range(database.engine.pool.checkedin())]
    try:
        return sum(conn.exec_driver_sql("SELECT COUNT(*) FROM pg_class WHERE relnamespace = pg_my_temp_schema()")
                   .scalar() for conn in connections)
    finally:
        for conn in connections:
            conn.close()


def test_load_and_run_on_every_engine(shop_engine: sa.Engine) -> None:
    database = _database(shop_engine)
    before = checksum(shop_engine)
    slice_ = _slice(database, [JOIN, BY_COUNTRY])
    with open_scratch(database, slice_) as scratch:
        scratch.dry_run([JOIN, BY_COUNTRY])
        scratch.load(_data())
        totals = scratch.run(JOIN)
        assert [(name, float(total) if total is not None else None) for name, total in totals.rows] == [
            ("Ann", 13.0), ("Bob", None)]
        assert sorted(scratch.run(BY_COUNTRY).rows, key=repr) == sorted([("Brazil", 2), (None, 1)], key=repr)
        scratch.load({"customers": [(7, "Zed", "Peru")]})  # replaces everything; orders emptied
        assert scratch.run(BY_COUNTRY).rows == (("Peru", 1),)
        assert scratch.run(JOIN).rows == ()
    assert checksum(shop_engine) == before
    assert database.run_query("SELECT COUNT(*) FROM customers").rows == ((10,),)
    if database.profile.name == "postgresql":
        assert _temp_tables(database) == 0


def test_dates_as_text_or_objects(shop_engine: sa.Engine) -> None:
    database = _database(shop_engine)
    sql = "SELECT name FROM customers WHERE joined >= '2020-02-01'"
    with open_scratch(database, _slice(database, [sql])) as scratch:
        scratch.load({"customers": [(1, "Ann", "2020-01-31"), (2, "Bob", dt.date(2020, 2, 1))]})
        assert scratch.run(sql).rows == (("Bob",),)


def test_only_sliced_tables_and_safe_statements_run(shop_engine: sa.Engine) -> None:
    database = _database(shop_engine)
    with open_scratch(database, _slice(database, [BY_COUNTRY])) as scratch:
        with pytest.raises(SliceError):
            scratch.run("SELECT COUNT(*) FROM orders")  # a real table outside the slice
        with pytest.raises(UnsafeSQLError):
            scratch.run("DELETE FROM customers")
        with pytest.raises(UnsafeSQLError):
            scratch.run("SELECT 1; SELECT 2")
        with pytest.raises(SliceError):  # the slice lacks orders.amount: the empty dry run fails
            scratch.dry_run([BY_COUNTRY, "SELECT joined FROM customers"])


def test_row_cap_and_bad_rows(engine_factory) -> None:
    database = _database(load_shop(engine_factory("duckdb")))
    with open_scratch(database, _slice(database, [BY_COUNTRY]), row_cap=5) as scratch:
        scratch.load({"customers": [(i, f"c{i}") for i in range(12)]})  # the slice: id, country
        capped = scratch.run(BY_COUNTRY)
        assert capped.row_count == 5 and capped.truncated
        with pytest.raises(QueryError):  # duplicate primary key: refused, the earlier rows stay
            scratch.load({"customers": [(1, "x"), (1, "y")]})
        assert scratch.run("SELECT COUNT(*) FROM customers").rows == ((12,),)
        with pytest.raises(SliceError):
            scratch.load({"customers": [(1, "a", "b")]})
        with pytest.raises(SliceError):
            scratch.load({"ghosts": []})


@pytest.mark.parametrize("dialect", sorted(SLOW))
def test_timeout(dialect: str, engine_factory) -> None:
    database = _database(load_shop(engine_factory(dialect)))
    with open_scratch(database, _slice(database, [BY_COUNTRY]), timeout_s=0.3) as scratch:
        with pytest.raises(QueryTimeoutError):
            scratch.run(SLOW[dialect])
        scratch.load({"customers": [(1, "x")]})  # still usable after the timeout
        assert scratch.run("SELECT COUNT(*) FROM customers").rows == ((1,),)
    if dialect == "postgresql":
        assert _temp_tables(database) == 0


def test_postgres_schema_qualified_names_read_the_scratch_tables(engine_factory) -> None:
    engine = engine_factory("postgresql")
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE SCHEMA spider")
    load_shop(engine.execution_options(schema_translate_map={None: "spider"}))
    database = _database(engine, schema="spider")
    before = checksum(engine, "spider")
    sql = "SELECT COUNT(*) FROM spider.customers c JOIN spider.orders o ON o.customer_id = c.id"
    slice_ = _slice(database, [sql])
    assert [t.name for t in slice_.tables] == ["spider.customers", "spider.orders"]
    with open_scratch(database, slice_) as scratch:
        scratch.load({"spider.customers": [(1,)], "orders": [(1, 1), (2, 1)]})
        assert scratch.run(sql).rows == ((2,),)
        assert "spider" not in scratch.prepare(sql)
        assert '"customers"' in scratch.prepare("SELECT COUNT(*) FROM Customers")  # spelled as the temp table
        assert scratch.run("SELECT COUNT(*) FROM Customers").rows == ((1,),)
    assert checksum(engine, "spider") == before and _temp_tables(database) == 0


def test_postgres_scratch_rolls_back_on_error(engine_factory) -> None:
    database = _database(load_shop(engine_factory("postgresql")))
    with pytest.raises(RuntimeError), open_scratch(database, _slice(database, [BY_COUNTRY])) as scratch:
        scratch.load({"customers": [(1, "x")]})
        with pytest.raises(QueryError):
            scratch.run("SELECT 1 / (COUNT(*) - 1) FROM customers")
        assert scratch.run("SELECT COUNT(*) FROM customers").rows == ((1,),)  # the transaction survives
        raise RuntimeError("caller failure")
    assert _temp_tables(database) == 0
    assert database.run_query("SELECT COUNT(*) FROM customers").rows == ((10,),)
    with database.engine.connect() as conn:  # the check sees a temporary table the session kept
        conn.exec_driver_sql("CREATE TEMPORARY TABLE kept (x INTEGER)")
        conn.commit()
    assert _temp_tables(database) == 1


def test_snowflake_sql_is_transpiled_to_duckdb(engine_factory) -> None:
    database = _database(load_shop(engine_factory("snowflake")))
    sql = "SELECT IFF(country IS NULL, 'none', country) AS c, ZEROIFNULL(NULL) AS z FROM customers"
    slice_ = _slice(database, [sql])
    assert slice_.transpiled and slice_.scratch_dialect == "duckdb"
    with open_scratch(database, slice_) as scratch:
        assert "IFF" not in scratch.prepare(sql).upper()
        scratch.load({"customers": [(1, "Brazil"), (2, None)]})
        assert sorted(scratch.run(sql).rows) == [("Brazil", 0), ("none", 0)]


def test_type_candidates() -> None:
    profiles = all_profiles()
    assert type_candidates("NUMERIC(10, 2)", profiles["postgresql"], profiles["postgresql"])[0] == "NUMERIC(10, 2)"
    assert type_candidates("TIMESTAMP_NTZ", profiles["snowflake"], profiles["duckdb"]) == ["TIMESTAMP", "TEXT"]
    assert type_candidates("no such type ((", profiles["snowflake"], profiles["duckdb"]) == ["TEXT"]
    assert type_candidates("NULLTYPE", profiles["sqlite"], profiles["sqlite"]) == [""]  # untyped SQLite column


def test_awkward_names_and_untyped_columns_on_sqlite(tmp_path) -> None:
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'awkward.sqlite'}")
    with engine.begin() as conn:
        conn.exec_driver_sql('CREATE TABLE "Order Items" ("Item Id" INTEGER PRIMARY KEY, "Unit Price", note TEXT)')
        conn.exec_driver_sql("""INSERT INTO "Order Items" VALUES (1, '5', 'x'), (2, 2, 'y')""")
    database = _database(engine)
    sql = 'SELECT "Item Id", typeof("Unit Price") FROM "order items" WHERE "Unit Price" > 3'
    slice_ = _slice(database, [sql])
    assert [c.name for c in slice_.tables[0].columns] == ["Item Id", "Unit Price"]
    with open_scratch(database, slice_) as scratch:
        scratch.load({"Order Items": [(1, "5"), (2, 2)]})
        assert scratch.run(sql).rows == database.run_query(sql).rows == ((1, "text"),)  # untyped: text stays text
