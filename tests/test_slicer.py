"""The deterministic slicer: tables and columns two SQLs use, keys, the foreign-key closure, and typed
errors for names that do not resolve; on a hand-made schema and on the reflected ``shop`` dataset of
every engine."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from verifiedsql.config import LLMSettings, Options
from verifiedsql.db.database import Database
from verifiedsql.db.schema import Column, ForeignKey, Schema, Table
from verifiedsql.errors import SliceError, VerifiedSQLError
from verifiedsql.profiles import all_profiles
from verifiedsql.stages.common.slicer import (
    TableIndex,
    analyze_sql,
    scratch_dialect_for,
    slice_from_columns,
    slice_schema,
)

pytestmark = pytest.mark.filterwarnings("ignore:verifiedsql could not reflect foreign keys")
SQLITE = all_profiles()["sqlite"]


def _schema(prefix: str = "") -> Schema:
    """customers <- orders <- items -> products, plus an unrelated ``logs`` table."""
    def fk(column: str, table: str) -> ForeignKey:
        return ForeignKey((column,), prefix + table, ("id",))

    return Schema((
        Table(prefix + "customers", (Column("id", "INTEGER", False, True), Column("name", "TEXT"),
                                     Column("Country", "TEXT"), Column("joined", "DATE"))),
        Table(prefix + "orders", (Column("id", "INTEGER", False, True), Column("customer_id", "INTEGER"),
                                  Column("amount", "NUMERIC(10, 2)"), Column("status", "TEXT")),
              (fk("customer_id", "customers"),)),
        Table(prefix + "items", (Column("order_id", "INTEGER", False, True),
                                 Column("product_id", "INTEGER", False, True), Column("qty", "INTEGER")),
              (fk("order_id", "orders"), fk("product_id", "products"))),
        Table(prefix + "products", (Column("id", "INTEGER", False, True), Column("title", "TEXT"))),
        Table(prefix + "logs", (Column("line", "TEXT"),)),
    ), namespace=prefix.rstrip(".") or None)


def _columns(sqls: list[str], schema: Schema | None = None, profile=SQLITE) -> dict[str, list[str]]:
    found = slice_schema(sqls, schema or _schema(), profile, scratch_dialect_for(profile))
    return {t.name: [c.name for c in t.columns] for t in found.tables}


def test_used_columns_and_primary_keys() -> None:
    assert _columns(["SELECT name FROM customers WHERE country = 'Brazil'"]) == {
        "customers": ["id", "name", "Country"]}  # schema order and spelling, primary key added


def test_star_means_every_column() -> None:
    assert _columns(["SELECT * FROM products"]) == {"products": ["id", "title"]}
    assert _columns(["SELECT c.* FROM customers c JOIN orders o ON o.customer_id = c.id"])["customers"] == [
        "id", "name", "Country", "joined"]


def test_join_keys_and_foreign_key_closure() -> None:
    totals = "SELECT p.title, SUM(i.qty) FROM items i JOIN products p ON p.id = i.product_id GROUP BY p.title"
    found = slice_schema([totals, "SELECT COUNT(*) FROM orders"], _schema(), SQLITE, "sqlite")
    assert [t.name for t in found.tables] == ["orders", "items", "products"]  # schema order, no customers
    items = found.table("items")
    assert [c.name for c in items.columns] == ["order_id", "product_id", "qty"]
    assert {fk.referred_table for fk in items.foreign_keys} == {"orders", "products"}
    orders = found.table("orders")
    assert [c.name for c in orders.columns] == ["id"] and orders.foreign_keys == ()  # customers not included


def test_unqualified_columns_resolve_against_tables_in_scope() -> None:
    columns = _columns([("SELECT name, amount FROM customers JOIN orders ON customer_id = customers.id "
                         "WHERE status = 'shipped'")])
    assert columns == {"customers": ["id", "name"], "orders": ["id", "customer_id", "amount", "status"]}


def test_using_cte_derived_tables_and_correlated_subqueries() -> None:
    sql = ("WITH big AS (SELECT customer_id, SUM(amount) AS total FROM orders GROUP BY customer_id) "
           "SELECT c.name FROM customers c JOIN big USING (customer_id) "
           "WHERE EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = c.id AND o.status = 'x') "
           "AND c.joined > (SELECT MIN(j) FROM (SELECT joined AS j FROM customers) d)")
    with pytest.raises(SliceError):  # customers has no customer_id: USING cannot resolve
        _columns([sql])
    fixed = sql.replace("JOIN big USING (customer_id)", "JOIN big ON big.customer_id = c.id")
    assert _columns([fixed]) == {"customers": ["id", "name", "joined"],
                                 "orders": ["id", "customer_id", "amount", "status"]}


def test_case_insensitive_names_and_schema_qualified_tables() -> None:
    assert _columns(['SELECT "NAME" FROM CUSTOMERS WHERE COUNTRY IS NULL'], profile=all_profiles()["snowflake"]) == {
        "customers": ["id", "name", "Country"]}
    schema = _schema("shop.")
    assert _columns(["SELECT o.amount FROM shop.orders o", "SELECT title FROM products"], schema) == {
        "shop.orders": ["id", "amount"], "shop.products": ["id", "title"]}


@pytest.mark.parametrize("sql", [
    "SELECT * FROM nowhere",
    "SELECT nothing FROM customers",
    "SELECT c.nothing FROM customers c",
    "SELECT name FROM customers JOIN orders ON orders.customer_id = customers.id WHERE id = 1",  # ambiguous
    "SELECT FROM WHERE (",
    "SELECT 1; SELECT 2",
    "SELECT 1",
])
def test_unresolvable_names_raise_slice_error(sql: str) -> None:
    with pytest.raises(SliceError):
        _columns([sql])


def test_slice_error_is_a_verifiedsql_error() -> None:
    assert issubclass(SliceError, VerifiedSQLError) and SliceError.__doc__


def test_table_without_used_columns_keeps_one() -> None:
    assert _columns(["SELECT COUNT(*) FROM logs"]) == {"logs": ["line"]}


def test_scratch_dialects() -> None:
    expected = {"sqlite": "sqlite", "duckdb": "duckdb", "postgresql": "postgresql", "snowflake": "duckdb"}
    assert {name: scratch_dialect_for(p) for name, p in all_profiles().items()} == expected
    found = slice_schema(["SELECT id FROM products"], _schema(), all_profiles()["snowflake"], "duckdb")
    assert found.transpiled and found.source_dialect == "snowflake" and found.scratch_dialect == "duckdb"
    assert not slice_schema(["SELECT id FROM products"], _schema(), SQLITE, "sqlite").transpiled


def test_slice_from_columns_adds_keys_and_skips_unknown_tables() -> None:
    found = slice_from_columns({"items": {"qty"}, "Orders": set(), "ghost": {"x"}}, _schema(), SQLITE, "sqlite",
                               method="model")
    assert found.method == "model"
    assert {t.name: [c.name for c in t.columns] for t in found.tables} == {
        "orders": ["id"], "items": ["order_id", "product_id", "qty"]}
    with pytest.raises(SliceError):
        slice_from_columns({"ghost": {"x"}}, _schema(), SQLITE, "sqlite")


def test_analysis_maps_column_nodes_to_tables() -> None:
    analysis = analyze_sql("SELECT o.amount FROM orders o WHERE o.status = 'shipped'", TableIndex(_schema().tables),
                           SQLITE)
    resolved = {(t.name, c.name) for t, c in analysis.columns.values()}
    assert resolved == {("orders", "amount"), ("orders", "status")}


def test_slices_of_reflected_shop(shop_engine: sa.Engine) -> None:
    database = Database(shop_engine, Options(llm=LLMSettings()))
    sqls = [("SELECT c.name, SUM(o.amount) AS total FROM customers c JOIN orders o ON o.customer_id = c.id "
             "WHERE o.status = 'shipped' GROUP BY c.name"),
            "SELECT name FROM customers WHERE country = 'Brazil'"]
    found = slice_schema(sqls, database.reflect(), database.profile, scratch_dialect_for(database.profile))
    assert {t.name: [c.name for c in t.columns] for t in found.tables} == {
        "customers": ["id", "name", "country"], "orders": ["id", "customer_id", "amount", "status"]}
    assert found.table("customers").column("country").samples  # reflected samples travel with the slice
    if database.profile.name != "snowflake":  # fakesnow cannot reflect foreign keys
        assert found.table("orders").foreign_keys[0].referred_table == "customers"
