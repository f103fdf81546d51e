"""Deterministic schema-aware repair (``schema_repair``): a candidate the engine rejects is repaired from
schema facts before any refinement, on every engine, with a scripted model.

Each repair class: the model's broken SQL answers correctly with no refinement call, and the fix is
recorded. An error no rule can repair goes to refinement with the prompt it has without the option. The
type-aware classes run on PostgreSQL (and DuckDB, which refuses mixed types too) with tables added here.
"""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa
from fakes import ScriptedChatModel, ask, fenced

from verifiedsql.db.schema import Column, ForeignKey, Schema, Table
from verifiedsql.report import VerificationReport
from verifiedsql.stages.repair import proposals

QUESTION = "A question the model answers with broken SQL?"


def rows_of(engine: sa.Engine, sql: str) -> list[tuple[Any, ...]]:
    with engine.connect() as conn:
        return sorted(tuple(row) for row in conn.execute(sa.text(sql)))


def repaired(engine: sa.Engine, broken: str, **options: Any) -> tuple[list[tuple[Any, ...]], VerificationReport,
                                                                      ScriptedChatModel]:
    """Ask with one greedy candidate whose SQL is ``broken``; any refinement request fails the test."""
    model = ScriptedChatModel([fenced(broken)])
    rows, report, model = ask(engine, QUESTION, model, candidates=1, schema_repair=True, **options)
    return sorted(rows), report, model


def with_tables(engine: sa.Engine, *statements: str) -> sa.Engine:
    """``engine`` after running ``statements`` (tables and their rows) in one transaction."""
    with engine.begin() as conn:
        for statement in statements:
            conn.execute(sa.text(statement))
    return engine


def assert_repaired(report: VerificationReport, model: ScriptedChatModel, broken: str, *fragments: str) -> None:
    """One generation call and no refinement; the broken SQL is kept as an attempt, the fix is recorded."""
    assert model.purposes() == ["generate"]
    candidate = report.candidates[0]
    assert candidate.status == "ok", candidate.error
    assert candidate.attempts == [broken]
    assert candidate.checks[-1] == "repair" and "run" in candidate.checks
    assert candidate.fixes, "the repair says what it changed"
    text = " | ".join(candidate.fixes)
    for fragment in fragments:
        assert fragment in text, text
    assert report.sql == candidate.sql != broken


# ------------------------------------------------------------------------------------ the columns

def test_qualifier_moves_to_the_joined_table_that_has_the_column(shop_engine):
    broken = ("SELECT T2.country, COUNT(*) FROM orders AS T1 JOIN customers AS T2 ON T1.customer_id = T2.id "
              "WHERE T2.status = 'shipped' GROUP BY T2.country")
    rows, report, model = repaired(shop_engine, broken)
    assert rows == rows_of(shop_engine, broken.replace("T2.status", "T1.status"))
    assert_repaired(report, model, broken, "T2.status -> T1.status (column of orders)")
    assert "repair: candidate 0: T2.status -> T1.status (column of orders)" in report.summary()


def test_a_repaired_name_that_is_a_reserved_word_is_quoted(shop_engine):
    """A near miss of a column named ``select`` becomes ``"select"``, which runs on every engine."""
    engine = with_tables(shop_engine, 'CREATE TABLE "order" (id INTEGER PRIMARY KEY, "select" VARCHAR(20))',
                         'INSERT INTO "order" (id, "select") VALUES (1, \'first\')')
    broken = 'SELECT selct FROM "order" WHERE id = 1'
    rows, report, model = repaired(engine, broken)
    assert rows == [("first",)]
    assert_repaired(report, model, broken, '"select"')


def test_names_that_need_quotes_written_bare_are_quoted(shop_engine):
    """A model writes names with spaces as bare words; the guard cannot parse that, and the repair quotes them
    as the schema names them, on every engine."""
    engine = with_tables(shop_engine,
                         'CREATE TABLE "Customer Info" ("Customer ID" INTEGER PRIMARY KEY, "City Name" VARCHAR(20))',
                         "INSERT INTO \"Customer Info\" VALUES (1, 'Köln'), (2, 'Paris'), (3, 'Köln')")
    broken = "SELECT COUNT(Customer ID) FROM Customer Info WHERE City Name = 'Köln'"
    rows, report, model = repaired(engine, broken)
    assert rows == [(2,)]
    assert_repaired(report, model, broken, 'Customer Info -> "Customer Info"', 'City Name -> "City Name"')


def test_a_table_named_by_a_reserved_word_written_bare_is_quoted(shop_engine):
    engine = with_tables(shop_engine, 'CREATE TABLE "order" (id INTEGER PRIMARY KEY, "select" VARCHAR(20))',
                         'INSERT INTO "order" (id, "select") VALUES (1, \'first\'), (2, \'second\')')
    broken = "SELECT o.select FROM order AS o WHERE select = 'second' ORDER BY o.id"
    rows, report, model = repaired(engine, broken)
    assert rows == [("second",)]
    assert_repaired(report, model, broken, 'order -> "order"', 'select -> "select"')


def test_quoting_leaves_literals_quoted_names_and_function_calls_as_written():
    schema = Schema((Table("Customer Info", (Column("Customer ID", "INTEGER", primary_key=True),
                                             Column("City Name", "TEXT"), Column("COUNT(*)", "INTEGER"))),))
    sql = ("SELECT COUNT(*), \"City Name\" FROM Customer Info "
           "WHERE \"City Name\" = 'City Name' GROUP BY \"City Name\"")
    found = proposals(schema, "sqlite", "sqlite", sql, "the statement guard could not parse this SQL")
    assert found[0].sql == sql.replace("FROM Customer Info", 'FROM "Customer Info"')
    assert found[0].fixes == ("Customer Info -> \"Customer Info\" (the schema's name, quoted where it must be)",)


@pytest.mark.parametrize("dialect", ["postgresql", "duckdb"])
def test_names_in_mysql_backticks_are_quoted_where_the_engine_does_not_take_them(engine_factory, dialect):
    engine = with_tables(engine_factory(dialect), 'CREATE TABLE "Customer Info" ("City Name" TEXT, score INTEGER)',
                         "INSERT INTO \"Customer Info\" VALUES ('Oslo', 3), ('Bergen', 5)")
    broken = "SELECT `City Name` FROM `Customer Info` WHERE `score` > 4"
    rows, report, model = repaired(engine, broken)
    assert rows == [("Bergen",)]
    assert_repaired(report, model, broken, '`City Name` -> "City Name"', "`score` -> score")


def test_the_other_repairs_start_from_the_quoted_sql():
    schema = Schema((
        Table("orders", (Column("id", "INTEGER", primary_key=True), Column("cid", "INTEGER"))),
        Table("Customer Info", (Column("Customer ID", "INTEGER", primary_key=True), Column("City Name", "TEXT"))),
    ))
    sql = "SELECT T1.City Name FROM orders AS T1 JOIN Customer Info AS T2 ON T1.cid = T2.Customer ID"
    found = proposals(schema, "sqlite", "sqlite", sql, "the statement guard could not parse this SQL")
    assert found[0].sql == ('SELECT T1."City Name" FROM orders AS T1 JOIN "Customer Info" AS T2 '
                            'ON T1.cid = T2."Customer ID"')
    moved = [p for p in found if 'T2."City Name"' in p.sql]
    assert moved and moved[0].fixes[:3] == found[0].fixes and len(moved[0].fixes) > 3


def test_a_foreign_key_name_on_the_referenced_table_becomes_its_key(shop_engine):
    broken = "SELECT T1.customer_id, T1.name FROM customers AS T1 WHERE T1.country = 'Japan'"
    rows, report, model = repaired(shop_engine, broken)
    assert rows == [(7, "Customer 7")]
    assert_repaired(report, model, broken, "T1.customer_id -> T1.id")


def test_a_column_of_a_referenced_table_is_joined_through_the_foreign_key(shop_engine):
    broken = "SELECT COUNT(*) FROM orders WHERE country = 'USA'"
    rows, report, model = repaired(shop_engine, broken)
    expected = "SELECT COUNT(*) FROM orders JOIN customers ON orders.customer_id = customers.id WHERE country = 'USA'"
    assert rows == rows_of(shop_engine, expected) and rows[0][0] > 0
    assert_repaired(report, model, broken, "country -> customers.country", "orders.customer_id = customers.id")


def test_the_table_with_every_named_column_replaces_the_one_read(shop_engine):
    broken = "SELECT amount, status FROM customers WHERE id = 3"
    rows, report, model = repaired(shop_engine, broken)
    assert rows == rows_of(shop_engine, "SELECT amount, status FROM orders WHERE id = 3")
    assert_repaired(report, model, broken, "FROM customers -> FROM orders")


def test_an_ambiguous_column_takes_the_table_the_join_makes_equal(shop_engine):
    regions = sa.Table("regions", sa.MetaData(), sa.Column("country", sa.Text, primary_key=True),
                       sa.Column("region", sa.Text))
    with shop_engine.begin() as conn:
        regions.create(conn)
        conn.execute(regions.insert(), [{"country": c, "region": r} for c, r in
                                        [("Brazil", "South"), ("USA", "North"), ("Canada", "North")]])
    broken = ("SELECT country, COUNT(*) FROM customers JOIN regions ON customers.country = regions.country "
              "WHERE region = 'North' GROUP BY country")
    rows, report, model = repaired(shop_engine, broken)
    assert rows == [("Canada", 1), ("USA", 3)]
    assert_repaired(report, model, broken, "country -> customers.country (equal to the others by the join)")


# -------------------------------------------------------------------------------- the identifiers

def test_near_misses_of_a_table_and_a_column(shop_engine):
    broken = "SELECT name FROM customer WHERE countries = 'Japan'"
    rows, report, model = repaired(shop_engine, broken)
    assert rows == [("Customer 7",)]
    assert_repaired(report, model, broken, "table customer -> customers", "countries -> customer.country")


def test_case_and_quoting_on_postgresql(engine_factory):
    engine = with_tables(engine_factory("postgresql"), 'CREATE TABLE city ("Name" TEXT, "Population" BIGINT)',
                         "INSERT INTO city VALUES ('Oslo', 700000), ('Bergen', 290000)")
    broken = "SELECT Name FROM city WHERE Population > 500000"
    rows, report, model = repaired(engine, broken)
    assert rows == [("Oslo",)]
    assert_repaired(report, model, broken, 'Name -> city."Name"', 'Population -> city."Population"')


@pytest.mark.parametrize("dialect", ["sqlite", "postgresql", "duckdb"])
def test_an_abbreviated_column_name_is_a_near_miss(engine_factory, dialect):
    engine = with_tables(engine_factory(dialect), "CREATE TABLE nations (Name TEXT, IndepYear INTEGER)",
                         "INSERT INTO nations VALUES ('Norway', 1905), ('Iceland', 1944), ('Chile', 1818)")
    broken = "SELECT Name FROM nations ORDER BY independenceyear DESC LIMIT 1"
    rows, report, model = repaired(engine, broken)
    assert rows == [("Iceland",)]
    assert_repaired(report, model, broken, "independenceyear -> ")
    assert "indepyear" in report.sql.lower()


def test_a_name_with_a_word_left_out_is_another_column():
    # feature_name is in scope, but feature_type_name is another table's column: join it, do not rename
    schema = Schema((
        Table("features", (Column("feature_id", "INTEGER", primary_key=True), Column("feature_name", "TEXT"),
                           Column("feature_type_code", "TEXT")),
              (ForeignKey(("feature_type_code",), "feature_types", ("feature_type_code",)),)),
        Table("feature_types", (Column("feature_type_code", "TEXT", primary_key=True),
                                Column("feature_type_name", "TEXT"))),
    ))
    found = proposals(schema, "sqlite", "sqlite", "SELECT feature_type_name FROM features WHERE feature_name = 'AC'",
                      "no such column: feature_type_name")
    assert found and all("-> features.feature_name" not in fix for p in found for fix in p.fixes)
    assert "JOIN feature_types" in found[0].sql


# ---------------------------------------------------------------------------------- the functions

def test_a_mysql_function_is_written_in_the_engines_dialect(shop_engine):
    broken = "SELECT name FROM customers WHERE DATE_FORMAT(joined, '%Y') = '2020' AND country = 'USA'"
    rows, report, model = repaired(shop_engine, broken)
    assert rows == [("Customer 3",), ("Customer 6",), ("Customer 9",)]
    assert_repaired(report, model, broken, "DATE_FORMAT(joined, '%Y') -> ")


def test_a_function_the_dialect_cannot_write_leaves_no_warning_on_stderr(caplog):
    schema = Schema((Table("leaves", (Column("start_date", "DATE"), Column("end_date", "DATE"))),))
    sql = "SELECT AVG(DATEDIFF(DAY, start_date, end_date)) FROM leaves"
    with caplog.at_level("WARNING", logger="sqlglot"):
        proposals(schema, "sqlite", "sqlite", sql, "no such function: DATEDIFF")
    assert not [record for record in caplog.records if record.name.startswith("sqlglot")]


@pytest.mark.parametrize("dialect", ["sqlite", "postgresql"])
def test_year_becomes_the_engines_date_part(engine_factory, dialect):
    from backends import load_shop
    engine = load_shop(engine_factory(dialect))
    broken = "SELECT name FROM customers WHERE YEAR(joined) = 2020 AND country = 'USA'"
    rows, report, model = repaired(engine, broken)
    assert rows == [("Customer 3",), ("Customer 6",), ("Customer 9",)]
    assert_repaired(report, model, broken, "YEAR(joined) -> ")


def test_a_qualifier_moved_onto_the_other_side_of_a_difference_is_no_repair():
    # subscriptions has no created_on: moving the qualifier to accounts would subtract a column from itself
    schema = Schema((Table("accounts", (Column("account_id", "INTEGER"), Column("created_on", "DATE"))),
                     Table("subscriptions", (Column("account_id", "INTEGER"), Column("started_on", "DATE")))))
    sql = ("SELECT MIN(T1.created_on - T2.created_on) FROM accounts AS T1 JOIN subscriptions AS T2 "
           "ON T1.account_id = T2.account_id")
    found = proposals(schema, "postgres", "postgresql", sql, 'column t2.created_on does not exist')
    assert not [p for p in found if "T1.created_on - T1.created_on" in p.sql]


# -------------------------------------------------------------------------------- the date arithmetic

def test_a_date_shifted_by_an_interval_becomes_sqlites_date_modifier(engine_factory):
    from backends import load_shop
    engine = load_shop(engine_factory("sqlite"))  # customers join 37 days apart from 2020-01-01
    broken = "SELECT name FROM customers WHERE joined <= DATE('2020-01-01') + INTERVAL 80 DAY"
    rows, report, model = repaired(engine, broken)
    assert rows == [("Customer 1",), ("Customer 2",), ("Customer 3",)]
    assert_repaired(report, model, broken, "(SQLite has no intervals)")
    assert "DATE(DATE('2020-01-01'), '+80 days')" in report.sql


@pytest.mark.parametrize(("written", "modifier"), [
    ("joined + INTERVAL '60 days'", "'+60 days'"),
    ("joined - INTERVAL 2 WEEK", "'-14 days'"),
    ("INTERVAL '1' MONTH + joined", "'+1 months'"),
    ("DATE_ADD(joined, INTERVAL 3 YEAR)", "'+3 years'"),
    ("DATE_SUB(joined, INTERVAL 10 DAY)", "'-10 days'"),
])
def test_every_spelling_of_a_shift_by_whole_units_is_read(written, modifier):
    schema = Schema((Table("customers", (Column("name", "TEXT"), Column("joined", "DATE"))),))
    found = proposals(schema, "sqlite", "sqlite", f"SELECT name FROM customers WHERE {written} > '2021-01-01'",
                      "near \"'60 days'\": syntax error")
    assert found and f"WHERE DATE(joined, {modifier}) > '2021-01-01'" in found[0].sql


@pytest.mark.parametrize("written", ["joined + INTERVAL 1.5 DAY", "joined + INTERVAL 3 HOUR"])
def test_a_shift_sqlite_cannot_write_as_whole_days_months_or_years_is_left_alone(written):
    schema = Schema((Table("customers", (Column("name", "TEXT"), Column("joined", "DATE"))),))
    found = proposals(schema, "sqlite", "sqlite", f"SELECT name FROM customers WHERE {written} > '2021-01-01'",
                      "syntax error")
    assert not [p for p in found if "intervals" in " ".join(p.fixes)]


@pytest.mark.parametrize("dialect", ["sqlite", "postgresql", "duckdb"])
def test_a_unit_first_datediff_becomes_the_engines_days_between(engine_factory, dialect):
    from backends import load_shop
    engine = load_shop(engine_factory(dialect))
    broken = "SELECT name FROM customers WHERE DATEDIFF(day, '2020-01-01', joined) < 80"
    rows, report, model = repaired(engine, broken)
    assert rows == [("Customer 1",), ("Customer 2",), ("Customer 3",)]
    assert_repaired(report, model, broken, "(days from the second date to the third)")
    assert "DATEDIFF" not in report.sql
    assert report.candidates[0].fixes == ["DATEDIFF(day, '2020-01-01', joined) -> " + {
        "sqlite": "(JULIANDAY(joined) - JULIANDAY('2020-01-01'))",
        "postgresql": "(CAST(joined AS DATE) - CAST('2020-01-01' AS DATE))",
        "duckdb": "DATE_DIFF('DAY', CAST('2020-01-01' AS DATE), joined)"}[dialect]
        + " (days from the second date to the third)"]


def test_the_unit_of_a_datediff_is_not_taken_for_a_misspelt_column():
    # a table with a column the word "day" is near: the column repairs leave the unit alone
    schema = Schema((Table("shifts", (Column("days", "INTEGER"), Column("started", "DATE"),
                                      Column("ended", "DATE"))),))
    found = proposals(schema, "sqlite", "sqlite", "SELECT MAX(DATEDIFF(day, started, ended)) FROM shifts",
                      "no such column: day")
    assert found[0].sql == "SELECT MAX((JULIANDAY(ended) - JULIANDAY(started))) FROM shifts"
    assert len(found[0].fixes) == 1  # the DATEDIFF's, and no column repair


# ------------------------------------------------------------------------------------ the clauses

@pytest.mark.parametrize("dialect", ["sqlite", "postgresql", "duckdb"])
def test_an_aggregate_in_where_moves_to_having(engine_factory, dialect):
    from backends import load_shop
    engine = load_shop(engine_factory(dialect))
    broken = "SELECT customer_id FROM orders WHERE customer_id > 1 AND COUNT(*) >= 3"
    rows, report, model = repaired(engine, broken)
    assert rows == [(2,), (3,), (4,), (5,)]  # customers 1 to 5 have three orders each, 6 to 10 two
    assert_repaired(report, model, broken, "-> HAVING (an aggregate in WHERE)")
    assert "WHERE customer_id > 1 GROUP BY customer_id HAVING COUNT(*) >= 3" in report.sql


@pytest.mark.parametrize("dialect", ["postgresql", "duckdb"])
def test_a_selected_column_that_is_not_grouped_joins_the_group_by(engine_factory, dialect):
    # SQLite takes the name from any row of the group; PostgreSQL and DuckDB refuse it
    from backends import load_shop
    engine = load_shop(engine_factory(dialect))
    broken = ("SELECT o.customer_id, c.name, COUNT(*) FROM orders AS o JOIN customers AS c ON c.id = o.customer_id "
              "WHERE o.customer_id <= 2 GROUP BY o.customer_id ORDER BY c.name")
    rows, report, model = repaired(engine, broken)
    assert rows == [(1, "Customer 1", 3), (2, "Customer 2", 3)]
    assert_repaired(report, model, broken, "GROUP BY + c.name (selected but not grouped)")  # named once
    assert "GROUP BY o.customer_id, c.name" in report.sql


# -------------------------------------------------------------------------------------- the types

TYPED = [
    "CREATE TABLE films (id BIGINT PRIMARY KEY, title TEXT, year BIGINT, released TEXT, code TEXT, rating BIGINT)",
    "INSERT INTO films VALUES (1, 'Alpha', 2019, '2019-03-01', '1', 7), (2, 'Beta', 2020, '2020-05-17', '2', 8), "
    "(3, 'Gamma', 2020, '2020-11-02', '3', 6), (4, 'Delta', 2021, '2021-01-09', '1', 9)",
]


@pytest.fixture(params=["postgresql", "duckdb"])
def typed_engine(request, engine_factory) -> sa.Engine:
    """A ``films`` table with an integer year column, text holding dates and text holding numbers, on the
    engines that refuse mixed-type operations (and ``shop``'s customers, joined by ``films.code``)."""
    from backends import load_shop
    return with_tables(load_shop(engine_factory(request.param)), *TYPED)


def assert_repaired_unless_duckdb_casts(engine: sa.Engine, report: VerificationReport, model: ScriptedChatModel,
                                        broken: str, *fragments: str) -> None:
    """``assert_repaired``, except on DuckDB, which casts VARCHAR to BIGINT itself: the SQL runs as written."""
    if engine.dialect.name == "duckdb":
        assert report.candidates[0].attempts == [] and report.sql == broken
        return
    assert_repaired(report, model, broken, *fragments)


def test_a_date_part_of_an_integer_year_column_is_the_column(typed_engine):
    broken = "SELECT title FROM films WHERE EXTRACT(YEAR FROM year) = 2020"
    rows, report, model = repaired(typed_engine, broken)
    assert rows == [("Beta",), ("Gamma",)]
    assert_repaired(report, model, broken, "-> year (year holds years)")
    assert "EXTRACT" not in report.sql.upper()


def test_text_holding_dates_is_cast_to_a_date(typed_engine):
    broken = "SELECT title FROM films WHERE EXTRACT(YEAR FROM released) = 2020"
    rows, report, model = repaired(typed_engine, broken)
    assert rows == [("Beta",), ("Gamma",)]
    assert_repaired(report, model, broken, "released -> CAST(released AS DATE) (released text holding dates)")


STAYS = ("CREATE TABLE stays (id BIGINT, checkin DATE, checkout DATE, came TIMESTAMP, went TIMESTAMP)",
         "INSERT INTO stays VALUES (1, '2024-01-30', '2024-02-02', '2024-01-30 10:00', '2024-02-02 09:00'), "
         "(2, '2023-12-31', '2024-01-07', '2023-12-31 12:00', '2024-01-07 08:00')")


def test_the_day_of_a_difference_of_dates_is_the_difference(typed_engine):
    """Between DATEs, PostgreSQL's and DuckDB's ``a - b`` is a number of days, whose day they refuse to take."""
    engine = with_tables(typed_engine, *STAYS)
    broken = "SELECT id, EXTRACT(DAY FROM (checkout - checkin)) FROM stays"
    rows, report, model = repaired(engine, broken)
    assert rows == [(1, 3), (2, 7)]
    assert_repaired(report, model, broken, "(a difference of dates is a number of days on ")
    # today's date is a date too
    broken = "SELECT id FROM stays WHERE EXTRACT(DAY FROM (CURRENT_DATE - checkin)) > 30 ORDER BY id"
    rows, report, model = repaired(engine, broken)
    assert rows == [(1,), (2,)]
    assert_repaired(report, model, broken, "(a difference of dates is a number of days on ")
    # between timestamps the difference is an interval, whose day the engine takes: run as written
    written = "SELECT id, EXTRACT(DAY FROM (went - came)) FROM stays"
    rows, report, _ = repaired(engine, written)
    assert rows == [(1, 2), (2, 6)] and report.candidates[0].attempts == []


def test_rounding_a_double_to_places_is_rounding_a_numeric_on_postgresql(typed_engine):
    """PostgreSQL has no ROUND(double precision, integer); DuckDB rounds a DOUBLE as written."""
    engine = with_tables(typed_engine, "CREATE TABLE readings (id BIGINT, level FLOAT8)",
                         "INSERT INTO readings VALUES (1, 1.234), (2, 2.345), (3, 3.0)")
    broken = "SELECT ROUND(AVG(level), 2) FROM readings"
    rows, report, model = repaired(engine, broken)
    assert [float(value) for (value,) in rows] == [2.19]
    if engine.dialect.name == "duckdb":
        assert report.candidates[0].attempts == [] and report.sql == broken
        return
    assert_repaired(report, model, broken, "AVG(level) -> CAST(AVG(level) AS DECIMAL)",
                    "(PostgreSQL rounds to decimal places only a NUMERIC)")
    assert repaired(engine, "SELECT ROUND(CAST(AVG(level) AS NUMERIC), 2) FROM readings")[1].candidates[0] \
        .attempts == []


def test_a_join_of_text_with_a_number_casts_the_side_whose_values_convert(typed_engine):
    broken = "SELECT f.title, c.name FROM films AS f JOIN customers AS c ON f.code = c.id WHERE f.year = 2021"
    rows, report, model = repaired(typed_engine, broken)
    assert rows == [("Delta", "Customer 1")]
    assert_repaired_unless_duckdb_casts(typed_engine, report, model, broken, "f.code -> CAST(f.code AS ",
                                        "(its values are numbers)")


def test_text_compared_with_a_number_that_does_not_convert_casts_the_number(typed_engine):
    broken = "SELECT title FROM films WHERE title = rating"
    _, report, model = repaired(typed_engine, broken)
    assert_repaired(report, model, broken, "rating -> CAST(rating AS ", "(compared with text)")


def test_like_and_string_functions_on_a_number_cast_it_to_text(typed_engine):
    broken = "SELECT title FROM films WHERE rating LIKE '8%' OR LENGTH(year) = 3"
    rows, report, model = repaired(typed_engine, broken)
    assert rows == [("Beta",)]
    assert_repaired(report, model, broken, "rating -> CAST(rating AS ", "(LIKE on a int column)",
                    "year -> CAST(year AS ")


def test_an_average_of_text_holding_numbers_casts_it_to_a_number(typed_engine):
    broken = "SELECT AVG(code) FROM films"
    rows, report, model = repaired(typed_engine, broken)
    assert [float(v) for (v,) in rows] == [1.75]
    assert_repaired(report, model, broken, "code -> CAST(code AS ", "(AVG() of text holding numbers)")


def test_text_holding_numbers_compared_with_an_average_is_cast_in_a_second_round(typed_engine):
    # the AVG is repaired first; the comparison with the subquery's number then fails and is repaired too
    broken = "SELECT title FROM films WHERE code < (SELECT AVG(code) FROM films) ORDER BY title"
    rows, report, model = repaired(typed_engine, broken)
    assert rows == [("Alpha",), ("Delta",)]  # codes 1 and 1, below 1.75
    assert_repaired(report, model, broken, "(AVG() of text holding numbers)", "(its values are numbers)")


def test_text_holding_numbers_compared_with_a_subquerys_number_column_is_cast(typed_engine):
    # the subquery's output is a BIGINT column, read in the subquery's own scope
    broken = "SELECT title FROM films WHERE code = (SELECT id FROM customers ORDER BY id LIMIT 1) ORDER BY title"
    rows, report, model = repaired(typed_engine, broken)
    assert rows == [("Alpha",), ("Delta",)]
    assert_repaired_unless_duckdb_casts(typed_engine, report, model, broken, "code -> CAST(code AS ",
                                        "(its values are numbers)")


def test_text_in_a_subquery_of_numbers_casts_the_subquerys_output(typed_engine):
    # titles do not read as numbers, so the subquery's BIGINT output is cast to text instead
    broken = "SELECT title FROM films WHERE title IN (SELECT rating FROM films)"
    rows, report, model = repaired(typed_engine, broken)
    assert rows == []
    assert_repaired(report, model, broken, "rating -> CAST(rating AS ", "(compared with text)")


# ---------------------------------------------------------------------- refinement, as without it

def refine_script(broken: str, fixed: str):
    """Generation answers ``broken``, refinement ``fixed``."""
    def script(request):
        return fenced(fixed if request.purpose == "refine" else broken)
    return script


def test_an_unrepairable_error_goes_to_refinement_with_the_same_prompt(shop_engine):
    broken, fixed = "SELECT nothing_like_it FROM customers", "SELECT name FROM customers WHERE id = 1"
    with_repair = ScriptedChatModel(refine_script(broken, fixed))
    rows, report, _ = ask(shop_engine, QUESTION, with_repair, candidates=1, schema_repair=True)
    without = ScriptedChatModel(refine_script(broken, fixed))
    same_rows, _, _ = ask(shop_engine, QUESTION, without, candidates=1)
    assert rows == same_rows == [("Customer 1",)]
    assert with_repair.purposes() == without.purposes() == ["generate", "refine"]
    assert [r.messages for r in with_repair.requests] == [r.messages for r in without.requests]
    assert broken in with_repair.requests[1].messages[-1]["content"]
    candidate = report.candidates[0]
    assert candidate.fixes == [] and "repair" not in candidate.checks and candidate.attempts == [broken]


def test_a_refinement_that_fails_is_repaired_too(shop_engine):
    broken, refined = "SELECT nothing_like_it FROM customers", "SELECT name FROM customer WHERE id = 1"
    model = ScriptedChatModel(refine_script(broken, refined))
    rows, report, _ = ask(shop_engine, QUESTION, model, candidates=1, schema_repair=True)
    assert rows == [("Customer 1",)]
    assert model.purposes() == ["generate", "refine"]
    candidate = report.candidates[0]
    assert candidate.attempts == [broken, refined] and candidate.fixes == ["table customer -> customers "
                                                                          "(the closest table name)"]


def test_the_option_is_on_by_default_and_can_be_turned_off(shop_engine):
    broken = "SELECT T1.customer_id FROM customers AS T1 WHERE T1.id = 1"
    model = ScriptedChatModel(refine_script(broken, "SELECT T1.id FROM customers AS T1 WHERE T1.id = 1"))
    _, report, _ = ask(shop_engine, QUESTION, model, candidates=1)
    assert model.purposes() == ["generate"] and report.candidates[0].fixes
    model = ScriptedChatModel(refine_script(broken, "SELECT T1.id FROM customers AS T1 WHERE T1.id = 1"))
    _, report, _ = ask(shop_engine, QUESTION, model, candidates=1, schema_repair=False)
    assert model.purposes() == ["generate", "refine"] and report.candidates[0].fixes == []


# ------------------------------------------------------------------------------ the rules alone

SCHEMA = Schema((
    Table("country", (Column("Code", "TEXT", primary_key=True), Column("Name", "TEXT"),
                      Column("Population", "INTEGER"))),
    Table("city", (Column("ID", "INTEGER", primary_key=True), Column("Name", "TEXT"),
                   Column("CountryCode", "TEXT")), (ForeignKey(("CountryCode",), "country", ("Code",)),)),
))


def first(sql: str, error: str = "") -> tuple[str, tuple[str, ...]] | None:
    found = proposals(SCHEMA, "sqlite", "sqlite", sql, error)
    return (found[0].sql, found[0].fixes) if found else None


def test_rules_need_exactly_one_answer():
    # two tables have Name: an unknown qualifier could move to either, so no rule moves it
    assert first("SELECT T3.Name FROM country AS T1 JOIN city AS T2 ON T1.Code = T2.CountryCode") is None
    # a move that would compare a column with itself is no repair
    assert first("SELECT T1.Name FROM country AS T1 JOIN city AS T2 ON T1.Code = T2.Code") is None
    # nothing close: no near miss is guessed
    assert first("SELECT Area FROM country") is None
    # SQL that does not parse is left to the model
    assert first("SELECT FROM WHERE (") is None


def test_the_documented_example():
    sql = "SELECT T2.Population FROM country AS T1 JOIN city AS T2 ON T1.Code = T2.CountryCode"
    assert first(sql, "no such column: T2.Population") == (
        "SELECT T1.Population FROM country AS T1 JOIN city AS T2 ON T1.Code = T2.CountryCode",
        ("T2.Population -> T1.Population (column of country)",))
