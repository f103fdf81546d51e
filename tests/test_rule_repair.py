"""Constraint repair (``constraint_repair``) end to end on real engines: a scripted model writes the mistakes
the embedded models make on analytics questions (benchmarks/analytics), and the repaired SQL must run and give
the gold answer on SQLite, PostgreSQL and DuckDB; without the repair the same SQL is wrong."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import sqlalchemy as sa
from fakes import ScriptedChatModel, fenced

from verifiedsql.bench.analytics import load_generator
from verifiedsql.bench.engines import open_target
from verifiedsql.config import LLMSettings, Options
from verifiedsql.db.database import Database
from verifiedsql.pipeline import Answer, Pipeline
from verifiedsql.results import ResultSet, results_equivalent

SET = Path(__file__).resolve().parents[1] / "benchmarks" / "analytics"
ENGINES = ("sqlite", "postgresql", "duckdb")
WEB = "SUM(CASE WHEN channel = 'web' THEN 1 ELSE 0 END)"
BUSINESS, CONSUMER = ("SUM(CASE WHEN segment = 'business' THEN 1 ELSE 0 END)",
                      "SUM(CASE WHEN segment = 'consumer' THEN 1 ELSE 0 END)")
DAY_OF_MONTH = {"sqlite": "CAST(STRFTIME('%d', {0}) AS INTEGER)", "postgresql": "EXTRACT(DAY FROM {0})",
                "duckdb": "EXTRACT(DAY FROM {0})"}
DAY_OF_YEAR = {"sqlite": "STRFTIME('%j', {0})", "postgresql": "EXTRACT(DOY FROM {0})",
               "duckdb": "EXTRACT(DOY FROM {0})"}
DAYS_TO_SHIP = {"sqlite": "JULIANDAY(ship_date) - JULIANDAY(order_date)", "postgresql": "ship_date - order_date",
                "duckdb": "DATE_DIFF('day', order_date, ship_date)"}
ORDERS_IN = "SUM(CASE WHEN order_date BETWEEN '{0}-01-01' AND '{0}-12-31' THEN 1 ELSE 0 END)"
YEAR_IS = {"sqlite": "STRFTIME('%Y', o.order_date) = '{0}'", "postgresql": "EXTRACT(YEAR FROM o.order_date) = {0}",
           "duckdb": "EXTRACT(YEAR FROM o.order_date) = {0}"}
ORDERS_YEAR = {engine: "SUM(CASE WHEN " + year.replace("o.", "") + " THEN 1 ELSE 0 END)"
               for engine, year in YEAR_IS.items()}  # the orders of one year, counted
REVENUE_IN = ("SUM(CASE WHEN o.order_date BETWEEN '{0}-01-01' AND '{0}-12-31' THEN oi.quantity * oi.unit_price "
              "ELSE 0 END)")
ITEMS = "FROM order_items AS oi JOIN orders AS o ON o.order_id = oi.order_id"

# (question, the mistaken SQL (by engine where it differs), the gold SQL (SQLite), the engines it is wrong on)
CASES = {
    "ratio times 100": (
        "What is the ratio of cancelled orders to delivered orders?",
        "SELECT SUM(CASE WHEN status = 'cancelled' THEN 1 ELSE 0 END) * 100.0 / "
        "SUM(CASE WHEN status = 'delivered' THEN 1 ELSE 0 END) FROM orders",
        "SELECT 1.0 * SUM(CASE WHEN status = 'cancelled' THEN 1 ELSE 0 END) / "
        "SUM(CASE WHEN status = 'delivered' THEN 1 ELSE 0 END) FROM orders", ENGINES),
    "ratio of A to B over A plus B": (
        "What is the ratio of business customers to consumer customers?",
        f"SELECT 1.0 * {BUSINESS} / ({BUSINESS} + {CONSUMER}) FROM customers",
        f"SELECT 1.0 * {BUSINESS} / {CONSUMER} FROM customers", ENGINES),
    "ratio of A to B over every row": (
        "What is the ratio of cancelled orders to delivered orders?",
        "SELECT CAST(COUNT(CASE WHEN status = 'cancelled' THEN 1 END) AS FLOAT) / COUNT(*) FROM orders",
        "SELECT 1.0 * SUM(CASE WHEN status = 'cancelled' THEN 1 ELSE 0 END) / "
        "SUM(CASE WHEN status = 'delivered' THEN 1 ELSE 0 END) FROM orders", ENGINES),
    "ratio of A to B with B in the WHERE": (
        "What is the ratio of business customers to consumer customers?",
        "SELECT CAST(SUM(CASE WHEN segment = 'business' THEN 1 ELSE 0 END) AS FLOAT) / COUNT(*) FROM customers "
        "WHERE segment = 'consumer'",
        f"SELECT 1.0 * {BUSINESS} / {CONSUMER} FROM customers", ENGINES),
    "percentage of the filtered rows": (
        "What percentage of orders were placed through the web channel?",
        "SELECT COUNT(*) * 100.0 / COUNT(order_id) FROM orders WHERE channel = 'web'",
        f"SELECT 100.0 * {WEB} / COUNT(*) FROM orders", ENGINES),
    "percentage counted and filtered": (
        "What percentage of orders were placed through the web channel?",
        f"SELECT {WEB} * 100.0 / COUNT(*) FROM orders WHERE channel = 'web'",
        f"SELECT 100.0 * {WEB} / COUNT(*) FROM orders", ENGINES),
    "each group's share of itself": (
        "What percentage of all orders does each channel have? Give the channel and the percentage.",
        "SELECT channel, COUNT(*) * 100.0 / COUNT(*) FROM orders GROUP BY channel",
        "SELECT channel, 100.0 * COUNT(*) / (SELECT COUNT(*) FROM orders) FROM orders GROUP BY channel", ENGINES),
    "a sum's share of itself": (
        "What fraction of all revenue (quantity times unit price) comes from order items with a quantity above 2?",
        "SELECT SUM(quantity * unit_price) * 1.0 / SUM(quantity * unit_price) FROM order_items WHERE quantity > 2",
        "SELECT SUM(CASE WHEN quantity > 2 THEN quantity * unit_price ELSE 0 END) * 1.0 / "
        "SUM(quantity * unit_price) FROM order_items", ENGINES),
    "month as numbers": (
        "How many orders were placed in each month of 2024? Give the month as YYYY-MM and the number of orders.",
        {"sqlite": "SELECT STRFTIME('%Y', order_date) AS year, STRFTIME('%m', order_date) AS month, COUNT(*) "
                   "FROM orders WHERE order_date BETWEEN '2024-01-01' AND '2024-12-31' "
                   "GROUP BY STRFTIME('%Y', order_date), STRFTIME('%m', order_date) ORDER BY year, month",
         **{engine: "SELECT EXTRACT(YEAR FROM order_date) AS year, EXTRACT(MONTH FROM order_date) AS month, "
                    "COUNT(*) FROM orders WHERE EXTRACT(YEAR FROM order_date) = 2024 "
                    "GROUP BY EXTRACT(YEAR FROM order_date), EXTRACT(MONTH FROM order_date) ORDER BY year, month"
            for engine in ("postgresql", "duckdb")}},
        "SELECT SUBSTR(order_date, 1, 7), COUNT(*) FROM orders WHERE order_date BETWEEN '2024-01-01' AND "
        "'2024-12-31' GROUP BY SUBSTR(order_date, 1, 7)", ENGINES),
    "percentage as a fraction": (
        "What percentage of orders were placed through the web channel?",
        f"SELECT CAST({WEB} AS FLOAT) / COUNT(*) FROM orders",
        f"SELECT 100.0 * {WEB} / COUNT(*) FROM orders", ENGINES),
    "integer division": (
        "On average, how many order items does an order have?",
        "SELECT COUNT(*) / COUNT(DISTINCT order_id) FROM order_items",
        "SELECT 1.0 * COUNT(*) / COUNT(DISTINCT order_id) FROM order_items", ("sqlite", "postgresql")),
    "days as days of the month": (
        "What is the average number of days between the order date and the ship date, over the orders that have "
        "a ship date?",
        {engine: f"SELECT AVG({part.format('ship_date')} - {part.format('order_date')}) FROM orders "
                 "WHERE ship_date IS NOT NULL" for engine, part in DAY_OF_MONTH.items()},
        "SELECT AVG(JULIANDAY(ship_date) - JULIANDAY(order_date)) FROM orders WHERE ship_date IS NOT NULL",
        ENGINES),
    "days as date text": (
        "How many days passed between the first and the last order of the customer named 'Customer 007'?",
        "SELECT MAX(o.order_date) - MIN(o.order_date) FROM orders AS o JOIN customers AS c "
        "ON c.customer_id = o.customer_id WHERE c.name = 'Customer 007'",
        "SELECT JULIANDAY(MAX(o.order_date)) - JULIANDAY(MIN(o.order_date)) FROM orders AS o JOIN customers AS c "
        "ON c.customer_id = o.customer_id WHERE c.name = 'Customer 007'", ("sqlite",)),
    "days as days of the year": (
        "How many days after the earliest order was the most recent order placed?",
        {engine: f"SELECT {part.format('MAX(order_date)')} - {part.format('MIN(order_date)')} FROM orders"
         for engine, part in DAY_OF_YEAR.items()},
        "SELECT JULIANDAY(MAX(order_date)) - JULIANDAY(MIN(order_date)) FROM orders", ENGINES),
    "days without both ends": (
        "On average, how many days does shipping take from the order date to the ship date, counting the first "
        "and the last day?",
        {engine: f"SELECT AVG({days}) FROM orders WHERE ship_date IS NOT NULL" for engine, days in
         DAYS_TO_SHIP.items()},
        "SELECT AVG(JULIANDAY(ship_date) - JULIANDAY(order_date) + 1) FROM orders WHERE ship_date IS NOT NULL",
        ENGINES),
    "days subtracted the wrong way round": (
        "On average, how many days after an order was placed was it shipped?",
        {"sqlite": "SELECT AVG(JULIANDAY(order_date) - JULIANDAY(ship_date)) FROM orders",
         **{engine: "SELECT AVG(order_date - ship_date) FROM orders" for engine in ("postgresql", "duckdb")}},
        "SELECT AVG(JULIANDAY(ship_date) - JULIANDAY(order_date)) FROM orders", ENGINES),
    "growth as new over base": (
        "By what percentage did the number of orders grow from 2022 to 2023?",
        f"SELECT {ORDERS_IN.format(2023)} * 100.0 / {ORDERS_IN.format(2022)} FROM orders",
        f"SELECT 100.0 * ({ORDERS_IN.format(2023)} - {ORDERS_IN.format(2022)}) / {ORDERS_IN.format(2022)} "
        "FROM orders", ENGINES),
    "growth of a count over every row": (
        "By what percentage did the number of orders grow from 2022 to 2023?",
        {engine: f"SELECT ({ORDERS_YEAR[engine].format(2023)} - COUNT(*)) * 100.0 / COUNT(*) FROM orders"
         for engine in ENGINES},
        f"SELECT 100.0 * ({ORDERS_IN.format(2023)} - {ORDERS_IN.format(2022)}) / {ORDERS_IN.format(2022)} "
        "FROM orders", ENGINES),
    "growth over every period": (
        "What was the percentage change in revenue (quantity times unit price) from 2023 to 2024?",
        {engine: f"SELECT SUM(CASE WHEN {year.format(2024)} THEN oi.quantity * oi.unit_price ELSE 0 END) * 100.0 / "
                 f"SUM(oi.quantity * oi.unit_price) - 100 {ITEMS}" for engine, year in YEAR_IS.items()},
        f"SELECT 100.0 * ({REVENUE_IN.format(2024)} - {REVENUE_IN.format(2023)}) / {REVENUE_IN.format(2023)} {ITEMS}",
        ENGINES),
    "items per order as a mean quantity": (
        "On average, how many order items does an order have?",
        "SELECT AVG(quantity) FROM order_items",
        "SELECT 1.0 * COUNT(*) / COUNT(DISTINCT order_id) FROM order_items", ENGINES),
    "days to every item, not the first": (
        "On average, how many days after a customer signed up did their first order come?",
        {"sqlite": "SELECT AVG(JULIANDAY(o.order_date) - JULIANDAY(c.signup_date)) FROM customers AS c "
                   "JOIN orders AS o ON o.customer_id = c.customer_id",
         **{engine: "SELECT AVG(o.order_date - c.signup_date) FROM customers AS c "
                    "JOIN orders AS o ON o.customer_id = c.customer_id" for engine in ("postgresql", "duckdb")}},
        "SELECT AVG(JULIANDAY(f.order_date) - JULIANDAY(c.signup_date)) FROM customers AS c JOIN (SELECT "
        "customer_id, MIN(order_date) AS order_date FROM orders GROUP BY customer_id) AS f "
        "ON f.customer_id = c.customer_id", ENGINES),
    "days to every item, the items in the FROM": (
        "On average, how many days after a customer signed up did their first order come?",
        {"sqlite": "SELECT AVG(JULIANDAY(orders.order_date) - JULIANDAY(customers.signup_date)) FROM orders "
                   "JOIN customers ON orders.customer_id = customers.customer_id",
         **{engine: "SELECT AVG(orders.order_date - customers.signup_date) FROM orders "
                    "JOIN customers ON orders.customer_id = customers.customer_id"
            for engine in ("postgresql", "duckdb")}},
        "SELECT AVG(JULIANDAY(f.order_date) - JULIANDAY(c.signup_date)) FROM customers AS c JOIN (SELECT "
        "customer_id, MIN(order_date) AS order_date FROM orders GROUP BY customer_id) AS f "
        "ON f.customer_id = c.customer_id", ENGINES),
    "rows counted for different things": (
        "How many different customers placed at least one order in 2024?",
        "SELECT COUNT(*) FROM orders WHERE order_date BETWEEN '2024-01-01' AND '2024-12-31'",
        "SELECT COUNT(DISTINCT customer_id) FROM orders WHERE order_date BETWEEN '2024-01-01' AND '2024-12-31'",
        ENGINES),
    "letter case heeded": (
        "How many customers live in Lyon? Match the city case-insensitively.",
        "SELECT COUNT(*) FROM customers WHERE city = 'Lyon'",
        "SELECT COUNT(*) FROM customers WHERE LOWER(city) = 'lyon'", ENGINES),
    "not rounded": (
        "What is the average quantity of an order item, rounded to two decimal places?",
        "SELECT AVG(quantity) FROM order_items",
        "SELECT ROUND(AVG(quantity), 2) FROM order_items", ENGINES),
}


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    """The analytics set's databases, built by its own generator."""
    return load_generator(SET).build(tmp_path_factory.mktemp("analytics"))


@pytest.fixture(params=ENGINES)
def retail(request, data, tmp_path):
    url = request.getfixturevalue("postgres_url") if request.param == "postgresql" else None
    engine = open_target(request.param, data, "retail", tmp_path, url)
    yield request.param, engine
    engine.dispose()


def answer(engine: sa.Engine, question: str, sql: str, **options: object) -> Answer:
    """One question, one candidate: the scripted model writes ``sql``."""
    values = Options.build({"llm": LLMSettings(), "candidates": 1, "scope_check": False, **options})
    database = Database(engine, values)
    return Pipeline(database, ScriptedChatModel(lambda request: fenced(sql)), values).answer(question)


def gold(data: Path, sql: str) -> ResultSet:
    with sqlite3.connect(data / "database" / "retail" / "retail.sqlite") as conn:
        cursor = conn.execute(sql)
        return ResultSet(tuple(d[0] for d in cursor.description), tuple(cursor.fetchall()))


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_repaired_sql_gives_the_gold_answer(retail, data, case):
    engine_name, engine = retail
    question, mistake, gold_sql, wrong_on = CASES[case]
    sql = mistake[engine_name] if isinstance(mistake, dict) else mistake
    expected = gold(data, gold_sql)
    plain = answer(engine, question, sql, constraint_repair=False)
    if engine_name in wrong_on:  # the mistake is a mistake here, so only the repair can make it right
        assert not results_equivalent(plain.result, expected)
    repaired = answer(engine, question, sql)  # the repair is on by default
    assert results_equivalent(repaired.result, expected), (repaired.sql, repaired.result.rows, expected.rows)
    candidate = repaired.report.candidates[0]
    if engine_name in wrong_on:
        assert candidate.fixes and candidate.attempts == [plain.sql] and repaired.sql != plain.sql
        assert "repair" in candidate.checks and "run" in candidate.checks
    assert candidate.violations == []
    assert ("constraints", "for") in [(e.check, e.verdict) for e in repaired.report.evidence]
    assert plain.report.candidates[0].fixes == []
    assert "constraints" not in [e.check for e in plain.report.evidence]


def test_a_rule_left_broken_is_evidence_against(data, tmp_path):
    """A count of rows where the question counts different things, and no column named for them: nothing to
    repair, so the answer stands with the broken rule as evidence against it (never verified)."""
    engine = open_target("sqlite", data, "retail", tmp_path, None)
    question = "How many different buyers placed an order in 2024?"
    sql = "SELECT COUNT(*) FROM orders WHERE order_date BETWEEN '2024-01-01' AND '2024-12-31'"
    result = answer(engine, question, sql, constraint_repair=True, candidates=5)
    assert result.sql == sql and result.report.candidates[0].fixes == []
    against = [e for e in result.report.evidence if e.check == "constraints"]
    assert against and against[0].verdict == "against" and "buyers" in against[0].detail
    assert result.report.confidence != "verified"
    assert answer(engine, question, sql, constraint_repair=False, candidates=5).report.confidence == "verified"
    engine.dispose()


def test_a_repair_the_engine_refuses_keeps_the_candidate(data, tmp_path, postgres_url):
    """Day parts of intervals, not of dates (right as written): the repair casts the intervals to dates, which
    PostgreSQL refuses, so the candidate stays as the model wrote it, with a note."""
    engine = open_target("postgresql", data, "retail", tmp_path, postgres_url)
    wait = "CAST(ship_date AS TIMESTAMP) - CAST(order_date AS TIMESTAMP)"
    sql = f"SELECT EXTRACT(DAY FROM MAX({wait})) - EXTRACT(DAY FROM MIN({wait})) FROM orders"
    result = answer(engine, "How many more days did the slowest shipment take than the fastest one?", sql,
                    constraint_repair=True)
    candidate = result.report.candidates[0]
    assert result.sql == sql and candidate.status == "ok" and candidate.fixes == [] and candidate.attempts == []
    assert result.result.rows == answer(engine, "How many more days?", sql).result.rows
    assert any("constraint repair did not run" in note for note in result.report.notes)
    assert candidate.violations and "not a number of days" in candidate.violations[0]
    engine.dispose()
