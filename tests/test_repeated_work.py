"""No repeated work (issue 18): identical candidates of a question (after normalization: whitespace,
comments, trailing semicolons, the case of keywords) are run once and share the outcome, failures
included; a refinement that returns SQL that already failed, for any candidate, is a failed refinement
and is neither run nor refined again. Shown by counting the statements run and the model calls."""

from __future__ import annotations

from collections import Counter

import pytest
from fakes import ScriptedChatModel, ask, fenced

from verifiedsql.db.database import Database
from verifiedsql.errors import NoAnswerError
from verifiedsql.llm.base import ChatRequest
from verifiedsql.stages.generate import sql_key

QUESTION = "What are the customers' names?"
# One failing query, five ways: the same statement for every engine.
FAILING = ["SELECT nmae FROM customers", "select nmae from customers;", "SELECT  nmae\nFROM   customers",
           "SELECT nmae FROM customers -- the names\n;", "Select nmae From customers"]
GOOD = "SELECT name FROM customers"


@pytest.fixture
def statements(monkeypatch) -> Counter:
    """Every statement a candidate runs (``Database.run_query`` and ``Database.explain``), counted by the SQL
    as normalized for the engine."""
    counted: Counter = Counter()
    run_query, explain = Database.run_query, Database.explain

    def counting_run(self, sql, **kwargs):
        counted[sql_key(sql, self.profile.sqlglot_dialect)] += 1
        return run_query(self, sql, **kwargs)

    def counting_explain(self, sql, **kwargs):
        counted["explain", sql_key(sql, self.profile.sqlglot_dialect)] += 1
        return explain(self, sql, **kwargs)

    monkeypatch.setattr(Database, "run_query", counting_run)
    monkeypatch.setattr(Database, "explain", counting_explain)
    return counted


def key(engine, sql: str) -> str:
    from verifiedsql.profiles import profile_for

    return sql_key(sql, profile_for(engine.dialect.name).sqlglot_dialect)


@pytest.mark.parametrize("verify", [False, True], ids=["plain", "verify"])
def test_five_identical_failing_candidates_run_once_and_are_refined_once(shop_engine, statements, verify):
    def script(request: ChatRequest) -> str:
        if request.purpose == "generate":
            return fenced(FAILING[request.seed or 0])
        return fenced(FAILING[0])  # the refinement gives the failing SQL back

    model = ScriptedChatModel(script)
    with pytest.raises(NoAnswerError) as failed:
        ask(shop_engine, QUESTION, model, candidates=5, max_refinements=2, verify=verify)
    report = failed.value.report
    assert Counter(model.purposes()) == {"generate": 5, "refine": 1}
    assert statements[key(shop_engine, FAILING[0])] == (0 if verify else 1)  # the engine rejects it at EXPLAIN
    assert statements["explain", key(shop_engine, FAILING[0])] == (1 if verify else 0)
    candidates = report.candidates
    assert [c.index for c in candidates] == [0, 1, 2, 3, 4]
    assert {c.status for c in candidates} == {"error"}
    assert len({c.error for c in candidates}) == 1 and "nmae" in (candidates[0].error or "").lower()
    assert sum("whose outcome it shares" in note for note in report.notes) == 4


def test_a_refinement_that_returns_sql_that_already_failed_is_not_run_or_refined_again(shop_engine, statements):
    other = "SELECT nmae, country FROM customers"

    def script(request: ChatRequest) -> str:
        prompt = request.messages[-1]["content"]
        if request.purpose == "generate":
            return fenced(FAILING[0] if request.seed == 0 else other)
        if request.seed == 0:  # candidate 0's refinements: another failing query, then a good one
            return fenced(GOOD if other in prompt else other)
        return fenced(other.lower())  # candidate 1 is given what candidate 0 already tried and saw fail

    model = ScriptedChatModel(script)
    rows, report, _ = ask(shop_engine, QUESTION, model, candidates=2, max_refinements=2, concurrency=1)
    assert len(rows) == 10
    purposes = [(r.purpose, r.seed) for r in model.requests]
    # candidate 1's initial SQL is one candidate 0 tried (and that failed): it shares where candidate 0 ended
    assert purposes == [("generate", 0), ("refine", 0), ("refine", 0), ("generate", 1)]
    assert statements[key(shop_engine, other)] == 1 and statements[key(shop_engine, GOOD)] == 1
    assert [(c.status, c.sql) for c in report.candidates] == [("ok", GOOD), ("ok", GOOD)]


def test_a_refinement_that_repeats_another_candidates_failure_stops(shop_engine, statements):
    other = "SELECT nmae, country FROM customers"

    def script(request: ChatRequest) -> str:
        if request.purpose == "generate":
            return fenced(FAILING[0] if request.seed == 0 else other)
        return fenced(other if request.seed == 0 else FAILING[0].lower())

    model = ScriptedChatModel(script)
    with pytest.raises(NoAnswerError) as failed:
        ask(shop_engine, QUESTION, model, candidates=2, max_refinements=3, concurrency=1)
    report = failed.value.report
    # candidate 0: FAILING -> other (fails) -> other again: stop; candidate 1 starts from "other", which
    # candidate 0 tried: it shares candidate 0's outcome without a call or a run
    assert [(r.purpose, r.seed) for r in model.requests] == [("generate", 0), ("refine", 0), ("refine", 0),
                                                              ("generate", 1)]
    assert statements[key(shop_engine, FAILING[0])] == 1 and statements[key(shop_engine, other)] == 1
    assert [c.status for c in report.candidates] == ["error", "error"]


def test_a_refinement_that_returns_another_candidates_failure_is_a_failed_refinement(shop_engine, statements):
    second, third = "SELECT nmae, country FROM customers", "SELECT nmae, country, joined FROM customers"

    def script(request: ChatRequest) -> str:
        if request.purpose == "generate":
            return fenced(FAILING[0] if request.seed == 0 else third)
        return fenced(second if request.seed == 0 else FAILING[2])  # candidate 1 is given candidate 0's first

    model = ScriptedChatModel(script)
    with pytest.raises(NoAnswerError) as failed:
        ask(shop_engine, QUESTION, model, candidates=2, max_refinements=1, concurrency=1)
    report = failed.value.report
    assert [(r.purpose, r.seed) for r in model.requests] == [("generate", 0), ("refine", 0), ("generate", 1),
                                                              ("refine", 1)]
    assert [statements[key(shop_engine, sql)] for sql in (FAILING[0], second, third)] == [1, 1, 1]
    assert [(c.status, c.sql) for c in report.candidates] == [("error", second), ("error", third)]
    assert report.candidates[1].attempts == []  # the SQL it was given back was not tried again
    assert any("candidate 1: the refinement returned SQL that already failed" in note for note in report.notes)


def test_a_refinement_that_returns_sql_that_ran_shares_its_result(shop_engine, statements):
    def script(request: ChatRequest) -> str:
        if request.purpose == "generate":
            return fenced(GOOD if request.seed == 0 else FAILING[0])
        return fenced(GOOD.lower() + ";")

    model = ScriptedChatModel(script)
    rows, report, _ = ask(shop_engine, QUESTION, model, candidates=2, max_refinements=2)
    assert len(rows) == 10
    assert Counter(model.purposes()) == {"generate": 2, "refine": 1}
    assert statements[key(shop_engine, GOOD)] == 1
    assert [c.status for c in report.candidates] == ["ok", "ok"]
    assert report.candidates[1].row_count == 10


def test_the_key_ignores_only_what_cannot_change_the_result():
    same = ["SELECT name FROM customers WHERE id > 1", "select name from customers where id > 1;",
            "SELECT name\n  FROM customers /* c */ WHERE id > 1 ;;", "Select name From customers Where id>1"]
    assert len({sql_key(sql, "sqlite") for sql in same}) == 1
    different = ["SELECT name FROM customers", "SELECT NAME FROM customers", 'SELECT "name" FROM customers',
                 "SELECT 'name' FROM customers", "SELECT name FROM customers WHERE name = 'a'",
                 "SELECT name FROM customers WHERE name = 'A'", "SELECT COUNT(*) FROM customers",
                 "SELECT count(*) FROM customers"]
    assert len({sql_key(sql, "sqlite") for sql in different}) == len(different)
    assert sql_key("not SQL at all ' unclosed", "sqlite")  # text the tokenizer rejects still has a key
