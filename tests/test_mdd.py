"""The deterministic MDD search: SQL pairs that differ only on boundary data are told apart on every
engine, equivalent pairs are not (within the budget), and the search is seeded, bounded and keeps keys."""

from __future__ import annotations

import math
import random
import time
from collections import Counter
from collections.abc import Callable, Iterator

import pytest
from backends import DIALECTS, load_shop, make_engine

from verifiedsql.config import LLMSettings, Options
from verifiedsql.db.database import Database
from verifiedsql.stages.common.scratch import open_scratch
from verifiedsql.stages.common.slicer import scratch_dialect_for, slice_schema
from verifiedsql.stages.common.slices import SchemaSlice
from verifiedsql.stages.dpc import mdd as mdd_module
from verifiedsql.stages.dpc.data import DISTINGUISHED_BELOW, MDD
from verifiedsql.stages.dpc.mdd import _Builder, _column_values, _literals, find_mdd
from verifiedsql.stages.dpc.softf1 import bipartite_soft_f1, normalize_cell

pytestmark = pytest.mark.filterwarnings("ignore:verifiedsql could not reflect foreign keys")


def _column(mdd: MDD, slice_: SchemaSlice, table: str, column: str) -> list:
    at = [c.name for c in slice_.table(table).columns].index(column)
    return [row[at] for row in mdd.tables[table]]


def _tie_at_max(mdd: MDD, slice_: SchemaSlice) -> bool:
    amounts = [normalize_cell(a) for a in _column(mdd, slice_, "orders", "amount") if a is not None]
    return Counter(amounts)[max(amounts)] >= 2


# name: (sql_a, sql_b, what the MDD must show)
DIFFERING: dict[str, tuple[str, str, Callable[[MDD, SchemaSlice], bool]]] = {
    "count-distinct": ("SELECT COUNT(*) FROM customers", "SELECT COUNT(DISTINCT country) FROM customers",
                       lambda m, s: True),
    "strict-bound": ("SELECT id FROM orders WHERE amount > 100", "SELECT id FROM orders WHERE amount >= 100",
                     lambda m, s: 100 in [normalize_cell(a) for a in _column(m, s, "orders", "amount")]),
    "left-join": ("SELECT c.name, o.id FROM customers c JOIN orders o ON o.customer_id = c.id",
                  "SELECT c.name, o.id FROM customers c LEFT JOIN orders o ON o.customer_id = c.id",
                  lambda m, s: set(_column(m, s, "customers", "id")) - set(_column(m, s, "orders", "customer_id"))),
    "equals-vs-like": ("SELECT name FROM customers WHERE country = 'Brazil'",
                       "SELECT name FROM customers WHERE country LIKE 'brazil'",
                       lambda m, s: m.row_count == 1),
    "max-vs-limit-ties": ("SELECT id FROM orders WHERE amount = (SELECT MAX(amount) FROM orders)",
                          "SELECT id FROM orders WHERE amount IS NOT NULL ORDER BY amount DESC LIMIT 1",
                          _tie_at_max),
    "avg-nulls": ("SELECT AVG(amount) FROM orders", "SELECT SUM(amount) * 1.0 / COUNT(*) FROM orders",
                  lambda m, s: None in _column(m, s, "orders", "amount")),
}
EQUIVALENT = [
    ("SELECT name FROM customers WHERE id > 5", "SELECT name FROM customers WHERE NOT id <= 5"),
    ("SELECT COUNT(*) FROM orders", "SELECT COUNT(id) FROM orders"),
    ("SELECT c.name FROM customers c JOIN orders o ON o.customer_id = c.id WHERE o.amount > 50",
     "SELECT c.name FROM orders o JOIN customers c ON c.id = o.customer_id WHERE 50 < o.amount"),
]


@pytest.fixture(scope="module")
def shop(request: pytest.FixtureRequest,
         tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[str], Database]]:
    """``shop(dialect)``: a Database over the shop dataset, one per dialect for the whole module."""
    databases: dict[str, Database] = {}
    patches = []

    def get(dialect: str) -> Database:
        if dialect not in databases:
            url = request.getfixturevalue("postgres_url") if dialect == "postgresql" else None
            if dialect == "snowflake" and not patches:
                import fakesnow

                patches.append(fakesnow.patch())
                patches[-1].__enter__()
            engine = make_engine(dialect, tmp_path_factory.mktemp(dialect), url)
            databases[dialect] = Database(load_shop(engine), Options(llm=LLMSettings()))
        return databases[dialect]

    yield get
    for database in databases.values():
        database.engine.dispose()
    for patch in patches:
        patch.__exit__(None, None, None)


def _search(database: Database, sql_a: str, sql_b: str, **options) -> tuple[SchemaSlice, MDD | None]:
    slice_ = slice_schema([sql_a, sql_b], database.reflect(), database.profile, scratch_dialect_for(database.profile))
    with open_scratch(database, slice_) as scratch:
        scratch.dry_run([sql_a, sql_b])
        return slice_, find_mdd(scratch, slice_, sql_a, sql_b, **options)


def _check_keys(mdd: MDD, slice_: SchemaSlice) -> None:
    for table in slice_.tables:
        rows = mdd.tables[table.name]
        key_at = [i for i, c in enumerate(table.columns) if c.primary_key]
        keys = [tuple(normalize_cell(row[i]) for i in key_at) for row in rows]
        assert len(set(keys)) == len(keys) and all(None not in key for key in keys)
        for i, column in enumerate(table.columns):
            assert column.nullable or all(row[i] is not None for row in rows)


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("name", sorted(DIFFERING))
def test_boundary_pairs_are_told_apart(name: str, dialect: str, shop) -> None:
    sql_a, sql_b, shows = DIFFERING[name]
    database = shop(dialect)
    slice_, mdd = _search(database, sql_a, sql_b)
    assert mdd is not None, f"{name} on {dialect}: no MDD"
    assert mdd.method == "deterministic" and 1 <= mdd.tries <= 200 and mdd.score < DISTINGUISHED_BELOW
    assert set(mdd.tables) == {t.name for t in slice_.tables}
    assert all(len(rows) <= 30 for rows in mdd.tables.values())
    _check_keys(mdd, slice_)
    assert shows(mdd, slice_), f"{name} on {dialect}: {mdd.tables}"
    with open_scratch(database, slice_) as fresh:  # the MDD stands on its own
        fresh.load(mdd.tables)
        assert bipartite_soft_f1(fresh.run(sql_a), fresh.run(sql_b)) == pytest.approx(mdd.score)


@pytest.mark.parametrize("dialect", ["sqlite", "duckdb", "postgresql"])
@pytest.mark.parametrize("pair", range(len(EQUIVALENT)))
def test_equivalent_pairs_give_none(pair: int, dialect: str, shop, monkeypatch: pytest.MonkeyPatch) -> None:
    """No time budget: every one of the ``tries`` databases is run, and none tells the SQLs apart."""
    tries = 200 if dialect == "sqlite" else 40
    compare, compared = mdd_module._compare, []

    def counted(*args):
        compared.append(args)
        return compare(*args)

    monkeypatch.setattr(mdd_module, "_compare", counted)
    _, mdd = _search(shop(dialect), *EQUIVALENT[pair], max_tries=tries, time_budget_s=math.inf)
    assert mdd is None and len(compared) == tries


def test_time_budget_is_respected(shop) -> None:
    started = time.monotonic()
    _, mdd = _search(shop("duckdb"), *EQUIVALENT[0], max_tries=10**6, time_budget_s=0.5)
    assert mdd is None and time.monotonic() - started < 2


def test_same_seed_same_mdd(shop) -> None:
    sql_a, sql_b, _ = DIFFERING["left-join"]
    first = _search(shop("sqlite"), sql_a, sql_b, seed=7)[1]
    again = _search(shop("sqlite"), sql_a, sql_b, seed=7)[1]
    assert first is not None and again is not None
    assert (first.tables, first.tries, first.notes) == (again.tables, again.tries, again.notes)


def test_real_samples_seed_the_data(shop) -> None:
    sql_a, sql_b, _ = DIFFERING["count-distinct"]
    slice_, mdd = _search(shop("sqlite"), sql_a, sql_b, samples={"Customers": {"COUNTRY": ["Atlantis"]}})
    assert mdd is not None
    assert set(_column(mdd, slice_, "customers", "country")) <= {"Atlantis", None}


def test_max_rows_is_respected(shop) -> None:
    sql_a, sql_b, _ = DIFFERING["count-distinct"]
    _, mdd = _search(shop("sqlite"), sql_a, sql_b, max_rows=1)
    assert mdd is not None and all(len(rows) <= 1 for rows in mdd.tables.values())


def test_a_failing_sql_never_distinguishes(shop) -> None:
    database = shop("sqlite")
    good, failing = "SELECT country FROM customers", "SELECT no_such_fn(country) FROM customers"
    slice_ = slice_schema([good], database.reflect(), database.profile, "sqlite")
    with open_scratch(database, slice_) as scratch:
        assert find_mdd(scratch, slice_, good, failing, max_tries=30) is None


def test_generated_rows_keep_keys_and_mostly_keep_foreign_keys(shop) -> None:
    sql_a, sql_b, _ = DIFFERING["left-join"]
    database = shop("sqlite")
    slice_ = slice_schema([sql_a, sql_b], database.reflect(), database.profile, "sqlite")
    builder = _Builder(slice_, _column_values(slice_, None, _literals(slice_, [sql_a, sql_b])), random.Random(0))
    linked = orphans = 0
    for _ in range(100):
        tables = builder.build(8)
        _check_keys(MDD(tables, None, None, 0.0, "deterministic"), slice_)  # type: ignore[arg-type]
        parents = {row[0] for row in tables["customers"]}
        for row in tables["orders"]:
            linked, orphans = linked + (row[1] in parents), orphans + (row[1] not in parents)
    assert orphans > 0 and linked > 3 * orphans
