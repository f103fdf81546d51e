"""A hostile model endpoint: faults injected at the HTTP level by ``FakeServer`` and driven through the public
API. Every fault ends in retries and a typed error, or in a result whose report shows the refinement that
fixed it or says ``unverified``; never an untyped crash, a hang or a silent guess. The per-question time
budget (``question_timeout_s``) is measured against a slow server."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
import sqlalchemy as sa
from backends import load_shop
from fake_openai import FakeServer, Reply, completion
from fakes import ScriptedChatModel, fenced

import verifiedsql
from verifiedsql.errors import ConfigurationError, LLMError, NoAnswerError, QuestionTimeoutError
from verifiedsql.report import VerificationReport
from verifiedsql.stages.generate import NO_SQL_ERROR

QUESTION = "Which customers are from Brazil?"
BRAZIL_SQL = "SELECT name FROM customers WHERE country = 'Brazil' ORDER BY name"
BRAZIL_ROWS = [("Customer 1",), ("Customer 5",)]
SLACK_S = 1.5  # how far past its budget a question may end (2 shared cores, a loaded machine)
HANG_S = 20.0  # a server delay no test may wait out


@pytest.fixture(scope="module")
def shop_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("faults") / "shop.sqlite"
    load_shop(sa.create_engine(f"sqlite:///{path}")).dispose()
    return f"sqlite:///{path}"


def engine_for(url: str, server: FakeServer, **options: Any) -> sa.Engine:
    """A verified engine whose model is ``server``; one greedy candidate and one refinement by default."""
    settings: dict[str, Any] = {"llm_base_url": server.url, "llm_api_key": "x", "llm_model": "fake-model",
                                "llm_max_retries": 1, "llm_timeout_s": 10, "candidates": 1, "max_refinements": 1,
                                "concurrency": 1}  # the scripts answer by arrival order: one request at a time
    return verifiedsql.create_engine(url, **{**settings, **options})


def ask(engine: sa.Engine, question: str = QUESTION) -> tuple[list[tuple[Any, ...]], VerificationReport]:
    """Ask on a fresh connection; the connection must still run plain SQL afterwards, even after an error."""
    with engine.connect() as conn:
        try:
            result = conn.execute(verifiedsql.ask(question))
            return [tuple(row) for row in result.all()], result.verification
        finally:
            assert conn.execute(sa.text("SELECT COUNT(*) FROM customers")).scalar() == 10


def sql_reply(sql: str, **reply: Any) -> Reply:
    return Reply(body=completion(fenced(sql)), **reply)


def cut_off(text: str) -> Reply:
    """A reply the server cut at max_tokens."""
    body = completion(text)
    body["choices"][0]["finish_reason"] = "length"
    return Reply(body=body)


def by_turn(first: Reply, follow_up: Reply) -> Callable[[dict[str, Any]], Reply]:
    """A responder: ``first`` for a generation request, ``follow_up`` for a refinement (a later turn)."""
    return lambda payload: follow_up if len(payload["messages"]) > 2 else first


def timed(call: Callable[[], Any]) -> tuple[Any, float]:
    started = time.monotonic()
    return call(), time.monotonic() - started


# ------------------------------------------------------------------------------------ transport faults


def test_a_model_slower_than_llm_timeout_gives_llm_error(shop_url: str, server: FakeServer) -> None:
    server.script = [Reply(delay_s=HANG_S)]
    engine = engine_for(shop_url, server, llm_timeout_s=0.5, llm_max_retries=3)
    started = time.monotonic()
    with pytest.raises(LLMError, match="timed out|budget") as info:
        ask(engine)
    assert time.monotonic() - started <= 0.5 + SLACK_S  # the whole call, retries included, fits in llm_timeout_s
    assert "llm_timeout_s" in str(info.value)  # says what to do


def test_429_with_retry_after_is_waited_out(shop_url: str, server: FakeServer) -> None:
    server.script = [Reply(429, {"error": {"message": "slow down"}}, {"retry-after": "0.4"}), sql_reply(BRAZIL_SQL)]
    (rows, report), seconds = timed(lambda: ask(engine_for(shop_url, server)))
    assert rows == BRAZIL_ROWS and report.sql == BRAZIL_SQL
    assert len(server.requests) == 2 and seconds >= 0.4


@pytest.mark.parametrize("reply, says", [
    (Reply(429, {"error": {"message": "slow down"}}, {"retry-after": "0.1"}), "HTTP 429"),
    (Reply(500, {"error": {"message": "boom"}}), "HTTP 500"),
    (Reply(503, "<html>upstream down</html>"), "HTTP 503"),
    (Reply(200, '{"choices": [ not json'), "OpenAI-compatible"),
    (Reply(200, {"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": []}),
     "no choices"),
    (Reply(200, '{"choices": ' + "[" * 200_000 + "]" * 200_000 + "}"), "nested too deeply"),
], ids=["429", "500", "503-html", "malformed-json", "empty-choices", "deeply-nested-json"])
def test_a_failing_model_is_retried_then_gives_llm_error(shop_url: str, server: FakeServer, reply: Reply,
                                                         says: str) -> None:
    server.script = [reply]
    with pytest.raises(LLMError, match=says):
        ask(engine_for(shop_url, server, llm_max_retries=2))
    assert len(server.requests) == 3


def test_a_deeply_nested_refusal_is_an_llm_error(shop_url: str, server: FakeServer) -> None:
    server.script = [Reply(400, '{"error": ' + "[" * 200_000 + "]" * 200_000 + "}")]
    with pytest.raises(LLMError, match="HTTP 400"):
        ask(engine_for(shop_url, server, llm_max_retries=2))


def test_a_failing_sample_leaves_the_greedy_answer_unverified(shop_url: str, server: FakeServer) -> None:
    server.script = [sql_reply(BRAZIL_SQL), Reply(200, {"choices": []})]
    rows, report = ask(engine_for(shop_url, server, candidates=2, llm_max_retries=0))
    assert rows == BRAZIL_ROWS and report.vote == "unverified"
    assert any(note.startswith("candidate 1 was not generated") for note in report.notes)


# ------------------------------------------------------------------------------------- content faults


def test_sql_cut_off_at_max_tokens_is_not_run_but_refined(shop_url: str, server: FakeServer) -> None:
    # Cut before its WHERE, the SQL would still run and list every customer: a silent wrong answer.
    server.responder = by_turn(cut_off("```sql\nSELECT name FROM customers"), sql_reply(BRAZIL_SQL))
    rows, report = ask(engine_for(shop_url, server))
    assert rows == BRAZIL_ROWS
    assert report.candidates[0].attempts == ["SELECT name FROM customers"]
    assert "cut off at max_tokens" in server.requests[1]["messages"][-1]["content"]


def test_sql_always_cut_off_gives_no_answer(shop_url: str, server: FakeServer) -> None:
    server.script = [cut_off("```sql\nSELECT name FROM customers WHE")]
    with pytest.raises(NoAnswerError) as info:
        ask(engine_for(shop_url, server))
    assert "cut off at max_tokens" in (info.value.report.candidates[0].error or "")


def test_a_complete_sql_block_before_the_cut_is_used(shop_url: str, server: FakeServer) -> None:
    server.script = [cut_off(f"```sql\n{BRAZIL_SQL}\n```\nThis query selects the names of every cust")]
    rows, _ = ask(engine_for(shop_url, server))
    assert rows == BRAZIL_ROWS and len(server.requests) == 1


def test_prose_instead_of_sql_is_refined(shop_url: str, server: FakeServer) -> None:
    server.responder = by_turn(Reply(body=completion("Sure! Brazil has two customers.")), sql_reply(BRAZIL_SQL))
    rows, report = ask(engine_for(shop_url, server))
    assert rows == BRAZIL_ROWS
    assert report.candidates[0].attempts == ["Sure! Brazil has two customers."]
    assert NO_SQL_ERROR in server.requests[1]["messages"][-1]["content"]


def test_prose_only_gives_no_answer(shop_url: str, server: FakeServer) -> None:
    server.script = [Reply(body=completion("I'm sorry, I can't help with that."))]
    with pytest.raises(NoAnswerError) as info:
        ask(engine_for(shop_url, server, max_refinements=2))
    assert info.value.report.candidates[0].error == NO_SQL_ERROR
    assert len(server.requests) == 2  # the repeated refusal stops the refinements


@pytest.mark.parametrize("foreign", [
    "SELECT TOP 2 name FROM customers WHERE country = 'Brazil' ORDER BY name",  # T-SQL
    "SELECT name FROM customers WHERE country ILIKE 'brazil' ORDER BY name",  # PostgreSQL
    "SELECT DISTINCT ON (name) name FROM customers WHERE country = 'Brazil' ORDER BY name",  # PostgreSQL
    "SELECT name::text FROM customers WHERE country = 'Brazil' ORDER BY name",  # PostgreSQL
], ids=["tsql-top", "pg-ilike", "pg-distinct-on", "pg-cast"])
def test_another_dialects_sql_fails_and_is_refined(shop_url: str, server: FakeServer, foreign: str) -> None:
    server.responder = by_turn(sql_reply(foreign), sql_reply(BRAZIL_SQL))
    rows, report = ask(engine_for(shop_url, server))
    candidate = report.candidates[0]
    assert rows == BRAZIL_ROWS and candidate.attempts == [foreign]
    assert "SQLite" in server.requests[1]["messages"][-1]["content"]  # the refinement names the dialect


def test_another_dialects_sql_to_the_end_gives_no_answer(shop_url: str, server: FakeServer) -> None:
    server.script = [sql_reply("SELECT TOP 2 name FROM customers")]
    with pytest.raises(NoAnswerError) as info:
        ask(engine_for(shop_url, server))
    assert info.value.report.candidates[0].status == "unsafe"  # the guard cannot parse it as SQLite


# ------------------------------------------------------------------------------- the question's budget


def test_the_budget_caps_a_slow_model(shop_url: str, server: FakeServer) -> None:
    server.script = [Reply(delay_s=HANG_S)]
    engine = engine_for(shop_url, server, question_timeout_s=2, llm_timeout_s=60, llm_max_retries=3)
    with pytest.raises(QuestionTimeoutError, match="question_timeout_s=2") as info:
        ask(engine)
    assert info.value.report is not None and info.value.report.question == QUESTION
    assert len(server.requests) == 1


@pytest.mark.parametrize("budget_s", [1.0, 2.5])
def test_wall_time_stays_within_the_budget(shop_url: str, server: FakeServer, budget_s: float) -> None:
    server.script = [Reply(delay_s=HANG_S)]
    engine = engine_for(shop_url, server, question_timeout_s=budget_s, llm_timeout_s=60)
    started = time.monotonic()
    with pytest.raises(QuestionTimeoutError):
        ask(engine)
    assert budget_s - 0.2 <= time.monotonic() - started <= budget_s + SLACK_S


def test_out_of_time_after_a_candidate_ran_answers_unverified(shop_url: str, server: FakeServer) -> None:
    server.script = [sql_reply(BRAZIL_SQL), Reply(delay_s=HANG_S)]
    engine = engine_for(shop_url, server, candidates=5, question_timeout_s=2, llm_timeout_s=60)
    (rows, report), seconds = timed(lambda: ask(engine))
    assert rows == BRAZIL_ROWS and report.vote == "unverified"
    assert any(note.startswith("time budget exhausted after") for note in report.notes)
    assert len(report.candidates) == 1 and seconds <= 2 + SLACK_S


def test_out_of_time_during_a_repair_answers_unverified(shop_url: str, server: FakeServer) -> None:
    unlimited = "SELECT name FROM customers ORDER BY name"  # no LIMIT: violates "top 2"
    server.responder = by_turn(sql_reply(unlimited), Reply(delay_s=HANG_S))
    engine = engine_for(shop_url, server, verify=True, question_timeout_s=2, llm_timeout_s=60)
    (rows, report), seconds = timed(lambda: ask(engine, "Show the top 2 customers by name"))
    assert len(rows) == 10 and report.vote == "unverified" and seconds <= 2 + SLACK_S
    assert report.candidates[0].violations and not report.candidates[0].repairs
    assert any(note.startswith("candidate 0 could not be repaired") for note in report.notes)


def test_out_of_time_before_the_dual_paradigm_test_keeps_the_champion(shop_url: str, server: FakeServer) -> None:
    server.script = [sql_reply(BRAZIL_SQL), sql_reply("SELECT name FROM customers ORDER BY name"),
                     Reply(delay_s=HANG_S)]
    engine = engine_for(shop_url, server, candidates=3, dpc=True, question_timeout_s=2, llm_timeout_s=60)
    (rows, report), seconds = timed(lambda: ask(engine))
    assert rows == BRAZIL_ROWS and report.vote == "unverified" and seconds <= 2 + SLACK_S
    assert report.dpc is not None and report.dpc.reason.startswith("stopped: the question's time budget")
    assert any(note.startswith("time budget exhausted after") for note in report.notes)


def test_out_of_time_during_refinement_gives_question_timeout(shop_url: str, server: FakeServer) -> None:
    server.responder = by_turn(sql_reply("SELECT nme FROM customers"), Reply(delay_s=HANG_S))
    engine = engine_for(shop_url, server, question_timeout_s=1.5, llm_timeout_s=60)
    with pytest.raises(QuestionTimeoutError) as info:
        ask(engine)
    candidate = info.value.report.candidates[0]
    assert candidate.status == "error" and "nme" in (candidate.error or "")


def test_the_budget_caps_a_slow_query(shop_url: str, server: FakeServer) -> None:
    endless = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT COUNT(*) FROM c"
    server.script = [sql_reply(endless)]
    engine = engine_for(shop_url, server, question_timeout_s=1.5, statement_timeout_s=60)
    started = time.monotonic()
    with pytest.raises(QuestionTimeoutError) as info:
        ask(engine)
    assert time.monotonic() - started <= 1.5 + SLACK_S
    assert info.value.report.candidates[0].status == "timeout"


def test_a_slow_probe_leaves_no_time_to_generate(shop_url: str, server: FakeServer) -> None:
    server.script = [Reply(delay_s=HANG_S)]
    engine = engine_for(shop_url, server, question_timeout_s=1.5, llm_timeout_s=60, probe=True, verify=True)
    started = time.monotonic()
    with pytest.raises(QuestionTimeoutError, match="generate stage"):
        ask(engine)
    assert time.monotonic() - started <= 1.5 + SLACK_S
    assert len(server.requests) == 1


def test_retry_after_beyond_the_budget_fails_at_once(shop_url: str, server: FakeServer) -> None:
    server.script = [Reply(429, {"error": {"message": "later"}}, {"retry-after": "10"})]
    engine = engine_for(shop_url, server, question_timeout_s=3, llm_max_retries=3)
    started = time.monotonic()
    with pytest.raises(LLMError, match="HTTP 429"):
        ask(engine)
    assert time.monotonic() - started < 1.5 and len(server.requests) == 1


def test_each_model_call_gets_the_time_left_as_its_timeout(shop_url: str) -> None:
    model = ScriptedChatModel(lambda request: fenced(BRAZIL_SQL))
    engine = verifiedsql.create_engine(shop_url, llm=model, candidates=2, question_timeout_s=50, concurrency=1)
    ask(engine)
    first, second = (request.timeout_s for request in model.requests)
    assert first is not None and second is not None and 49 < second <= first <= 50


def test_the_budget_must_be_positive() -> None:
    with pytest.raises(ConfigurationError, match="question_timeout_s"):
        verifiedsql.create_engine("sqlite://", question_timeout_s=0)
