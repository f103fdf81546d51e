"""Verify and repair with a scripted model on SQLite: violations listed, every repair run and re-checked."""

from __future__ import annotations

import fakes
import pytest
import sqlalchemy as sa
from backends import load_shop
from fakes import ScriptedChatModel, fenced

import verifiedsql
from verifiedsql.llm.base import ChatRequest
from verifiedsql.stages.pvsql.constraints import extract_constraints
from verifiedsql.stages.pvsql.verify_repair import EMPTY_PROBLEM, implies_rows

TOP3 = "What are the top 3 customers by total order amount?"
NO_LIMIT = "SELECT customer_id, SUM(amount) AS total FROM orders GROUP BY customer_id ORDER BY total DESC"
LIMIT_3 = NO_LIMIT + " LIMIT 3"
LIMIT_5 = NO_LIMIT + " LIMIT 5"
LIMIT_4 = NO_LIMIT + " LIMIT 4"


@pytest.fixture
def shop_url(tmp_path):
    url = f"sqlite:///{tmp_path / 'shop.db'}"
    load_shop(sa.create_engine(url)).dispose()
    return url


def ask(url, question, generated, repairs, **options):
    """Run one question with one candidate; repairs are answered in order from ``repairs``."""
    pending = list(repairs)

    def script(request: ChatRequest) -> str:
        return fenced(generated) if request.purpose == "generate" else fenced(pending.pop(0))

    return fakes.ask(url, question, script, candidates=1, verify=True, **options)


def test_repair_adds_the_missing_limit_and_is_verified_again(shop_url):
    rows, report, fake = ask(shop_url, TOP3, NO_LIMIT, [LIMIT_3])
    assert len(rows) == 3 and report.sql == LIMIT_3
    assert any("top 3" in c and "LIMIT 3" in c for c in report.constraints)
    candidate = report.candidates[0]
    assert [r.sql for r in candidate.repairs] == [LIMIT_3]
    assert candidate.repairs[0].violations == [] and candidate.repairs[0].row_count == 3
    assert candidate.violations == [] and candidate.attempts == [NO_LIMIT] and candidate.row_count == 3
    repair = fake.requests[1]
    assert repair.purpose == "repair" and "LIMIT 3" in repair.messages[-1]["content"]
    assert repair.messages[-2]["content"] == fenced(NO_LIMIT).split("\n", 1)[1]
    assert "repairs: 1" in report.summary()


def test_repair_loop_stops_when_the_sql_does_not_change(shop_url):
    rows, report, fake = ask(shop_url, TOP3, NO_LIMIT, [NO_LIMIT], max_repairs=3)
    assert [r.purpose for r in fake.requests] == ["generate", "repair"]
    candidate = report.candidates[0]
    assert candidate.repairs == [] and report.sql == NO_LIMIT and len(rows) == 10
    assert candidate.violations and "LIMIT 3" in candidate.violations[0]


def test_the_last_repair_is_run_and_verified_too(shop_url):
    rows, report, fake = ask(shop_url, TOP3, NO_LIMIT, [LIMIT_5, LIMIT_3], max_repairs=2)
    assert [r.purpose for r in fake.requests] == ["generate", "repair", "repair"]
    candidate = report.candidates[0]
    assert [(r.sql, r.row_count, bool(r.violations)) for r in candidate.repairs] == [
        (LIMIT_5, 5, True), (LIMIT_3, 3, False)]
    assert report.sql == LIMIT_3 and len(rows) == 3
    assert "LIMIT 5" in fake.requests[2].messages[-1]["content"]  # repaired from the latest version


def test_at_most_max_repairs_and_ties_keep_the_original(shop_url):
    _, report, fake = ask(shop_url, TOP3, NO_LIMIT, [LIMIT_5, LIMIT_4], max_repairs=2)
    candidate = report.candidates[0]
    assert len(candidate.repairs) == 2 and all(r.violations for r in candidate.repairs)
    assert candidate.repairs[1].row_count == 4  # the last repair ran
    assert report.sql == NO_LIMIT and candidate.attempts == []
    assert len(fake.requests) == 3


def test_a_repair_that_fails_is_recorded_and_fed_back(shop_url):
    _, report, fake = ask(shop_url, TOP3, NO_LIMIT, ["SELECT nope FROM orders", LIMIT_3])
    first, second = report.candidates[0].repairs
    assert first.status == "error" and first.error and "nope" in first.violations[0]
    assert "the query failed" in fake.requests[2].messages[-1]["content"]
    assert second.sql == LIMIT_3 and report.sql == LIMIT_3


def test_empty_result_is_a_violation_only_when_rows_are_expected(shop_url):
    atlantis = "SELECT name FROM customers WHERE country = 'Atlantis'"
    fixed = "SELECT name FROM customers WHERE country = 'Brazil'"
    rows, report, fake = ask(shop_url, "List the customers from atlantis", atlantis, [fixed])
    assert report.candidates[0].repairs[0].sql == fixed and len(rows) == 2
    assert EMPTY_PROBLEM in fake.requests[1].messages[-1]["content"]
    assert "candidate 0 returned no rows" in report.notes
    rows, report, fake = ask(shop_url, "Do customers from atlantis exist?", atlantis, [])
    assert rows == [] and len(fake.requests) == 1 and report.candidates[0].violations == []
    assert "candidate 0 returned no rows" in report.notes


def test_implies_rows():
    assert implies_rows("Which customers are from Brazil?", [])
    assert implies_rows("how much did the 2 biggest orders cost", extract_constraints("the top 2 orders"))
    assert not implies_rows("How many orders were cancelled?", extract_constraints("How many orders?"))


def test_failed_candidates_are_not_verified(shop_url):
    def script(request: ChatRequest) -> str:
        return fenced("SELECT nope FROM orders") if request.purpose != "repair" else pytest.fail("repaired")

    engine = verifiedsql.create_engine(shop_url, llm=ScriptedChatModel(script), candidates=1, verify=True,
                                       max_refinements=0)
    with pytest.raises(verifiedsql.errors.NoAnswerError) as caught, engine.connect() as conn:
        conn.execute(verifiedsql.ask(TOP3))
    assert caught.value.report.candidates[0].repairs == []
    engine.dispose()
