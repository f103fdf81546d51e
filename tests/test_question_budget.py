"""The question's context caps every database query by the time left: value grounding, EXPLAIN, probes,
column exploration and DPC's search all stop within about a second of ``question_timeout_s``, on a
database whose every query takes as long as it is allowed to (up to 30 s)."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
import sqlalchemy as sa
from backends import load_shop
from fakes import ScriptedChatModel, fenced

import verifiedsql
from verifiedsql.db.database import Database
from verifiedsql.errors import QuestionTimeoutError
from verifiedsql.stages.dpc import mdd

BUDGET_S = 2.0
SLACK_S = 1.0  # "within about a second"
SLOW_S = 30.0  # what each slow query would take without a cap
COUNT = "SELECT COUNT(*) FROM customers"
OTHER = "SELECT COUNT(*) FROM orders"


@pytest.fixture
def shop_url(tmp_path) -> str:
    url = f"sqlite:///{tmp_path / 'shop.db'}"
    load_shop(sa.create_engine(url)).dispose()
    return url


def slow(method: Any, fast: tuple[str, ...] = ()) -> Any:
    """``method`` of ``Database``, but every statement not in ``fast`` sleeps for its whole timeout (or
    ``SLOW_S`` without one) and then fails as a timed-out query would."""

    def wrapper(self: Database, sql: str, *args: Any, timeout_s: float | None = None, **kwargs: Any) -> Any:
        if sql.strip() in fast:
            return method(self, sql, *args, timeout_s=timeout_s, **kwargs)
        time.sleep(min(SLOW_S, self.options.statement_timeout_s if timeout_s is None else timeout_s))
        raise verifiedsql.errors.QueryTimeoutError("the query ran past its timeout")

    return wrapper


def ask_within_budget(url: str, question: str, model: ScriptedChatModel, **options: Any) -> float:
    """Seconds the question took, whether it was answered or ended in ``QuestionTimeoutError``."""
    verified = verifiedsql.create_engine(url, llm=model, question_timeout_s=BUDGET_S, statement_timeout_s=SLOW_S,
                                         **options)
    start = time.monotonic()
    try:
        with verified.connect() as conn:
            try:
                conn.execute(verifiedsql.ask(question)).all()
            except QuestionTimeoutError:
                pass
    finally:
        verified.dispose()
    return time.monotonic() - start


def test_value_grounding_stops_at_the_budget(shop_url, monkeypatch):
    monkeypatch.setattr(Database, "run_query", slow(Database.run_query))
    model = ScriptedChatModel(lambda r: fenced(COUNT))
    took = ask_within_budget(shop_url, "How many customers live in 'Brazil' or 'France'?", model, ground_values=True)
    assert took < BUDGET_S + SLACK_S


def test_explain_stops_at_the_budget(shop_url, monkeypatch):
    monkeypatch.setattr(Database, "explain", slow(Database.explain))
    model = ScriptedChatModel(lambda r: fenced(COUNT))
    took = ask_within_budget(shop_url, "How many customers are there?", model, verify=True, candidates=3)
    assert took < BUDGET_S + SLACK_S


def test_probes_stop_at_the_budget(shop_url, monkeypatch):
    monkeypatch.setattr(Database, "run_query", slow(Database.run_query, fast=(COUNT,)))
    probes = iter(range(100))

    def script(request: Any) -> str:
        if request.purpose == "probe":
            return json.dumps({"action": "probe", "probe_sql": f"SELECT name FROM customers WHERE id > {next(probes)}"})
        return fenced(COUNT)

    took = ask_within_budget(shop_url, "How many customers are there?", ScriptedChatModel(script), probe=True,
                             max_probes=50, probe_timeout_s=SLOW_S)
    assert took < BUDGET_S + SLACK_S


def test_column_exploration_stops_at_the_budget(shop_url, monkeypatch):
    monkeypatch.setattr(Database, "run_query", slow(Database.run_query, fast=(COUNT, OTHER)))

    def script(request: Any) -> str:
        if request.purpose.startswith("explore"):
            return fenced("SELECT DISTINCT country FROM customers")
        return fenced(COUNT if (request.seed or 0) % 2 == 0 else OTHER)  # a 2-2 tie

    took = ask_within_budget(shop_url, "How many customers are there?", ScriptedChatModel(script), consensus=True,
                             candidates=4, max_explorations=50, probe_timeout_s=SLOW_S)
    assert took < BUDGET_S + SLACK_S


def test_the_distinguishing_database_search_stops_at_the_budget(shop_url, monkeypatch):
    calls: list[float] = []

    def slow_compare(*args: Any, **kwargs: Any) -> None:
        calls.append(time.monotonic())
        time.sleep(0.2)  # each try is slow and never tells the candidates apart
        return None

    monkeypatch.setattr(mdd, "_compare", slow_compare)

    def script(request: Any) -> str:
        if request.purpose == "generate":
            return fenced(COUNT if (request.seed or 0) < 2 else OTHER)
        raise verifiedsql.errors.LLMError("no model tester here")

    took = ask_within_budget(shop_url, "How many customers are there?", ScriptedChatModel(script), dpc=True,
                             candidates=3)
    assert calls, "the deterministic search never ran"
    assert took < BUDGET_S + SLACK_S
