"""Question constraints: extraction rules, AST checks per type and dialect, and precision on Spider dev."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from verifiedsql.errors import UnparseableSQLError
from verifiedsql.stages.pvsql.constraints import Constraint, check_constraints, extract_constraints
from verifiedsql.stages.pvsql.constraints import ConstraintType as T

REPO = Path(__file__).resolve().parents[1]
SPIDER_DEV = Path("/work/shared/data/spider_dev/dev.json")


def types_of(question: str, hint: str | None = None) -> set[T]:
    return {c.type for c in extract_constraints(question, hint)}


def only(question: str, kind: T) -> Constraint:
    (constraint,) = [c for c in extract_constraints(question) if c.type == kind]
    return constraint


# ------------------------------------------------------------------------------------------------ extraction


@pytest.mark.parametrize(
    ("question", "k"),
    [
        ("List the top 5 products by revenue.", 5),
        ("Who are the three oldest singers?", 3),
        ("Show the top ten scorers.", 10),
        ("Name the 3 most expensive products.", 3),
        ("Which were the 2 latest releases?", 2),
        ("List the highest 4 ratings.", 4),
    ],
)
def test_top_k_with_its_k_and_no_extreme(question: str, k: int) -> None:
    assert only(question, T.TOP_K).k == k
    assert T.EXTREME not in types_of(question)


@pytest.mark.parametrize(
    "question",
    [
        "Show the first 3 letters of each name.",  # a string length, not a row count
        "How many orders were placed in the last 5 years?",  # a period
        "Which hotels have the highest 5-star rating?",
        "What is the highest one?",
    ],
)
def test_numbers_that_are_not_top_k(question: str) -> None:
    assert T.TOP_K not in types_of(question)


def test_at_least_is_a_comparison_not_an_extreme_or_top_k() -> None:
    assert types_of("Show names of students with at least 3 friends.") == {T.COMPARISON}
    assert types_of("Which airlines have at most two flights?") == {T.COMPARISON}
    assert types_of("Find students who have at least one pet.") == set()  # existence: a join, no comparison


def test_most_recent_is_temporal_and_most_is_extreme() -> None:
    assert types_of("What is the most recent order date?") == {T.TEMPORAL}
    assert types_of("Which teacher has the most students?") == {T.EXTREME}
    assert types_of("Which is the latest album?") == {T.TEMPORAL}


def test_count_sum_average_percentage_words() -> None:
    assert types_of("How many singers are there?") == {T.COUNT}
    assert types_of("What is the total number of singers?") == {T.COUNT}  # not a SUM
    assert types_of("What is the total revenue of each store?") == {T.SUM}
    assert types_of("What is the average age of all singers?") == {T.AVERAGE}
    assert types_of("What percentage of orders shipped late?") == {T.PERCENTAGE}
    assert types_of("What is the phone number of the manager?") == set()


def test_distinct_and_its_negatives() -> None:
    assert types_of("What are the different countries of singers?") == {T.DISTINCT}
    assert types_of("List the unique product categories.") == {T.DISTINCT}
    assert T.DISTINCT not in types_of("Which names are different from the owner's name?")


def test_ranking_with_direction() -> None:
    assert only("List names in descending order of age.", T.RANKING).descending is True
    assert only("List names in alphabetical order.", T.RANKING).descending is False
    assert only("List names in reverse alphabetical order.", T.RANKING).descending is True
    assert only("Sort the players from the highest to the lowest score.", T.RANKING).descending is True
    assert only("List names ordered by age.", T.RANKING).descending is None
    assert T.EXTREME not in types_of("Sort the players from the highest to the lowest score.")
    assert T.RANKING not in types_of("What products were ordered by customers in Paris?")


def test_temporal_year_and_numbers_that_are_not_years() -> None:
    assert only("How many orders were placed in 2023?", T.TEMPORAL).year == 2023
    assert only("Which singers were born before 1980?", T.TEMPORAL).year == 1980
    assert T.TEMPORAL not in types_of("Which stadiums hold more than 2000 people?")
    assert types_of("Which stadiums hold more than 2000 people?") == {T.COMPARISON}


def test_comparison_phrases() -> None:
    for question in (
        "Which singers are older than 30?",
        "Show stadiums with a capacity between 5000 and 10000.",
        "List songs by singers above the average age.",
        "Which products cost no more than 20 dollars?",
    ):
        assert T.COMPARISON in types_of(question), question


def test_quoted_values_are_not_read_as_instructions() -> None:
    assert types_of("Who sang 'The Best Song Ever'?") == set()
    assert types_of('Which bands played at "Top 10 Festival"?') == set()


def test_hint_text_adds_constraints_once() -> None:
    constraints = extract_constraints("Which state has the highest sales?", hint="highest refers to MAX(sales)")
    assert [c.type for c in constraints] == [T.EXTREME]


def test_pv_sql_figure_5_question() -> None:
    question = (
        "List the top 3 unique product categories by percentage of orders from California customers "
        "that were shipped late in 2023."
    )
    found = {c.type: c for c in extract_constraints(question)}
    assert set(found) == {T.TOP_K, T.DISTINCT, T.PERCENTAGE, T.TEMPORAL}
    assert found[T.TOP_K].k == 3 and found[T.TEMPORAL].year == 2023


# -------------------------------------------------------------------------------------------------- checking

C = {
    T.DISTINCT: Constraint(T.DISTINCT, "different"),
    T.TOP_K: Constraint(T.TOP_K, "top 3", k=3),
    T.RANKING: Constraint(T.RANKING, "ordered by"),
    T.COUNT: Constraint(T.COUNT, "how many"),
    T.PERCENTAGE: Constraint(T.PERCENTAGE, "percentage"),
    T.SUM: Constraint(T.SUM, "total"),
    T.AVERAGE: Constraint(T.AVERAGE, "average"),
    T.EXTREME: Constraint(T.EXTREME, "highest"),
    T.TEMPORAL: Constraint(T.TEMPORAL, "in 2023", year=2023),
    T.COMPARISON: Constraint(T.COMPARISON, "more than"),
}
LATE = "COUNT(CASE WHEN shipped > due THEN 1 END)"

CASES: list[tuple[T, str, str, bool]] = [
    (T.DISTINCT, "sqlite", "SELECT DISTINCT country FROM singer", True),
    (T.DISTINCT, "sqlite", "SELECT country FROM singer GROUP BY country", True),
    (T.DISTINCT, "postgresql", "SELECT COUNT(DISTINCT country) FROM singer", True),
    (T.DISTINCT, "sqlite", "SELECT country FROM singer UNION SELECT country FROM band", True),
    (T.DISTINCT, "sqlite", "SELECT country FROM singer", False),
    (T.DISTINCT, "sqlite", "SELECT COUNT(*) FROM singer GROUP BY country", False),
    (T.TOP_K, "sqlite", "SELECT name FROM singer ORDER BY age DESC LIMIT 3", True),
    (T.TOP_K, "postgresql", "SELECT name FROM singer ORDER BY age DESC FETCH FIRST 3 ROWS ONLY", True),
    (T.TOP_K, "snowflake", "SELECT TOP 3 name FROM singer ORDER BY age DESC", True),
    (T.TOP_K, "duckdb", "SELECT a FROM t UNION SELECT a FROM u ORDER BY a LIMIT 3", True),
    (T.TOP_K, "sqlite", "WITH s AS (SELECT * FROM singer) SELECT name FROM s ORDER BY age LIMIT 3", True),
    (T.TOP_K, "sqlite", "SELECT name FROM singer ORDER BY age DESC LIMIT 5", False),
    (T.TOP_K, "sqlite", "SELECT name FROM singer LIMIT 3", False),
    (T.TOP_K, "postgresql", "SELECT * FROM (SELECT name FROM singer ORDER BY age LIMIT 3) AS s", False),
    (T.RANKING, "sqlite", "SELECT name FROM singer ORDER BY age", True),
    (T.RANKING, "postgresql", "SELECT name, RANK() OVER (ORDER BY age) FROM singer", True),
    (T.RANKING, "sqlite", "SELECT name FROM singer", False),
    (T.RANKING, "sqlite", "SELECT name FROM (SELECT name FROM singer ORDER BY age)", False),
    (T.COUNT, "sqlite", "SELECT COUNT(*) FROM singer", True),
    (T.COUNT, "sqlite", "SELECT num_employees FROM department", True),  # the database stores the count
    (T.COUNT, "sqlite", "SELECT name FROM singer", False),
    (T.PERCENTAGE, "sqlite", f"SELECT CAST({LATE} AS REAL) * 100 / COUNT(*) FROM orders", True),
    (T.PERCENTAGE, "sqlite", f"SELECT 100.0 * {LATE} / COUNT(*) FROM orders", True),
    (T.PERCENTAGE, "sqlite", "SELECT SUM(late) / SUM(total) FROM stats", True),  # column types unknown
    (T.PERCENTAGE, "sqlite", f"SELECT {LATE} / COUNT(*) FROM orders", False),
    (T.PERCENTAGE, "sqlite", f"SELECT {LATE} * 100 / COUNT(*) FROM orders", False),
    (T.PERCENTAGE, "postgresql", f"SELECT {LATE}::numeric / COUNT(*) FROM orders", True),
    (T.PERCENTAGE, "postgresql", f"SELECT {LATE} / COUNT(*) FROM orders", False),
    (T.PERCENTAGE, "duckdb", f"SELECT {LATE} / COUNT(*) FROM orders", True),  # DuckDB's / is real division
    (T.PERCENTAGE, "duckdb", f"SELECT {LATE} // COUNT(*) FROM orders", False),
    (T.PERCENTAGE, "snowflake", f"SELECT {LATE} / COUNT(*) FROM orders", True),
    (T.PERCENTAGE, "sqlite", f"SELECT {LATE} FROM orders", False),
    (T.SUM, "sqlite", "SELECT SUM(amount) FROM payments", True),
    (T.SUM, "sqlite", "SELECT amount FROM payments", False),
    (T.AVERAGE, "postgresql", "SELECT AVG(age) FROM singer", True),
    (T.AVERAGE, "sqlite", "SELECT SUM(age) * 1.0 / COUNT(*) FROM singer", True),
    (T.AVERAGE, "sqlite", "SELECT name FROM singer WHERE age > 30", False),
    (T.EXTREME, "sqlite", "SELECT MAX(age) FROM singer", True),
    (T.EXTREME, "sqlite", "SELECT name FROM singer WHERE age = (SELECT MAX(age) FROM singer)", True),
    (T.EXTREME, "sqlite", "SELECT name FROM singer ORDER BY age DESC LIMIT 1", True),
    (T.EXTREME, "duckdb", "SELECT arg_max(name, age) FROM singer", True),
    (T.EXTREME, "sqlite", "SELECT name FROM singer ORDER BY age DESC", False),
    (T.TEMPORAL, "sqlite", "SELECT COUNT(*) FROM orders WHERE year = 2023", True),
    (T.TEMPORAL, "sqlite", "SELECT COUNT(*) FROM orders WHERE strftime('%Y', placed) = '2023'", True),
    (T.TEMPORAL, "postgresql", "SELECT COUNT(*) FROM orders WHERE EXTRACT(YEAR FROM placed) = 2023", True),
    (T.TEMPORAL, "postgresql", "SELECT COUNT(*) FROM orders WHERE order_date >= '2023-01-01'", True),
    (T.TEMPORAL, "sqlite", "SELECT COUNT(*) FROM orders WHERE state = 'CA'", False),
    (T.COMPARISON, "sqlite", "SELECT name FROM singer WHERE age > 20", True),
    (T.COMPARISON, "sqlite", "SELECT country FROM singer GROUP BY country HAVING COUNT(*) >= 2", True),
    (T.COMPARISON, "postgresql", "SELECT name FROM stadium WHERE capacity BETWEEN 5000 AND 10000", True),
    (T.COMPARISON, "sqlite", "SELECT name FROM singer WHERE age = 20", False),
    (T.COMPARISON, "sqlite", "SELECT age > 20 FROM singer", False),
]


@pytest.mark.parametrize(("kind", "dialect", "sql", "ok"), CASES)
def test_check(kind: T, dialect: str, sql: str, ok: bool) -> None:
    violations = check_constraints(sql, [C[kind]], dialect)
    assert (not violations) == ok, [v.message for v in violations]


def test_every_type_has_a_satisfying_and_a_violating_case() -> None:
    assert {(kind, ok) for kind, _, _, ok in CASES} == {(kind, ok) for kind in T for ok in (True, False)}


def test_recency_needs_a_date_column() -> None:
    latest = Constraint(T.TEMPORAL, "most recent")
    assert not check_constraints("SELECT id FROM orders ORDER BY order_date DESC LIMIT 1", [latest])
    assert not check_constraints("SELECT MAX(created_at) FROM orders", [latest], "postgresql")
    assert check_constraints("SELECT id FROM orders ORDER BY price DESC LIMIT 1", [latest])


def test_ranking_direction() -> None:
    descending = Constraint(T.RANKING, "in descending order", descending=True)
    assert not check_constraints("SELECT name FROM singer ORDER BY age DESC", [descending])
    (violation,) = check_constraints("SELECT name FROM singer ORDER BY age", [descending])
    assert "DESC" in violation.message


def test_messages_name_the_requirement_for_a_repair_prompt() -> None:
    (violation,) = check_constraints("SELECT name FROM singer ORDER BY age DESC LIMIT 5", [C[T.TOP_K]])
    assert violation.constraint == C[T.TOP_K]
    assert violation.message == 'the question says "top 3" but the outermost query has no LIMIT 3 (it has LIMIT 5)'
    (violation,) = check_constraints(f"SELECT {LATE} / COUNT(*) FROM orders", [C[T.PERCENTAGE]], "postgresql")
    assert "integer division in PostgreSQL" in violation.message and "CAST" in violation.message
    assert "LIMIT 3" in C[T.TOP_K].describe()


def test_checks_accept_a_parsed_tree_and_refuse_unparseable_sql() -> None:
    from sqlglot import parse_one

    assert not check_constraints(parse_one("SELECT COUNT(*) FROM t"), [C[T.COUNT]])
    with pytest.raises(UnparseableSQLError):
        check_constraints("SELECT FROM WHERE (", [C[T.COUNT]])


# ------------------------------------------------------------------------------------------------- precision


@pytest.mark.skipif(not SPIDER_DEV.exists(), reason=f"Spider dev not found at {SPIDER_DEV}")
def test_precision_on_spider_dev_is_at_least_99_percent(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = importlib.util.spec_from_file_location("constraint_precision", REPO / "benchmarks/constraint_precision.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # dataclasses look their module up there
    spec.loader.exec_module(module)
    report = module.measure(json.loads(SPIDER_DEV.read_text("utf-8")))
    assert report.questions == 1026
    assert report.precision >= 0.99, module.render(report)
    assert report.coverage >= 0.5  # precision is not bought by extracting nothing
