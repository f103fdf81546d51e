"""Memory and time bounds against huge inputs (issue 33: findings 3 and 5).

* An engine error that quotes a 10 MB value is cut to ``redact.ENGINE_ERROR_CHARS`` before any regular
  expression reads it, and the scrubber's patterns cannot backtrack: the memory it takes is a few times the
  value's size (the driver's own copy of the message), not the 130 bytes per character of the old pattern,
  and the error that reaches the report and the model is a few KB with the value masked. On DuckDB,
  PostgreSQL and Snowflake (fakesnow), through ``run_query`` and through both public APIs.
* A long model reply: SQL that fails and is long (a 50 KB and a 105 KB ``OR`` chain over a misspelt column)
  keeps the question within its budget (the repairs were quadratic in its length and ignored the deadline:
  41.7 s on a 5 s budget), and a 10 MB reply is cut when it is recorded (a report note says so), so no
  stage parses or shows it whole: the memory the question takes stays a few times the reply's size.
* Sizes are asserted, never speed; the time bound asserted is the question's own budget plus slack.
"""

from __future__ import annotations

import json
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import pytest
from conftest import HostileModel, World, Worlds

from verifiedsql.config import LLMSettings, Options
from verifiedsql.db.database import Database
from verifiedsql.errors import QueryError, QuestionTimeoutError

pytestmark = pytest.mark.timeout(180)

QUESTION = "How many orders are there?"
VALUE_CHARS = 10_000_000
HUGE_CAST = {  # a cast the engine rejects with the value quoted in its error
    "duckdb": f"SELECT CAST(repeat('x', {VALUE_CHARS}) AS INTEGER) AS n",
    "postgresql": f"SELECT CAST(repeat('x', {VALUE_CHARS}) AS INTEGER) AS n",
    "snowflake": f"SELECT CAST(REPEAT('x', {VALUE_CHARS}) AS INTEGER) AS n",
}
RUN = "x" * 100  # a stretch of the value that must not survive


def peak_bytes(call: Callable[[], Any]) -> tuple[Any, int]:
    """What ``call`` returned (or raised) and the peak of Python's traced memory while it ran."""
    tracemalloc.start()
    try:
        try:
            outcome: Any = call()
        except Exception as error:  # noqa: BLE001 -- the error is the outcome measured
            outcome = error
        return outcome, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("dialect", list(HUGE_CAST))
def test_an_engine_error_quoting_a_huge_value_is_cut_before_scrubbing(dialect: str, worlds: Worlds) -> None:
    database = Database(worlds(dialect).engine, Options(llm=LLMSettings(), statement_timeout_s=30))
    database.functions()  # the catalog is read once per database: not part of what is measured
    error, peak = peak_bytes(lambda: database.run_query(HUGE_CAST[dialect]))
    assert isinstance(error, QueryError), error
    text = str(error)
    assert len(text) < 8_000 and RUN not in text, text[:300]  # a few KB (redact.ENGINE_ERROR_CHARS)
    assert "<value>" in text, text[:300]
    assert peak < 8 * VALUE_CHARS, f"{peak / VALUE_CHARS:.1f} bytes per character of the value"


@pytest.mark.parametrize("dialect", list(HUGE_CAST))
def test_a_huge_value_in_an_engine_error_never_reaches_the_model_whole(dialect: str, worlds: Worlds,
                                                                       hostile: HostileModel) -> None:
    world: World = worlds(dialect).variant(hostile.url, statement_timeout_s=30, probe=False, verify=False)
    try:
        for api in world.apis():
            hostile.serve(HUGE_CAST[dialect], refine=["SELECT COUNT(*) FROM orders"])
            outcome, peak = peak_bytes(lambda: world.ask(api, QUESTION))  # noqa: B023 -- called at once
            assert peak < 8 * VALUE_CHARS, f"{peak / VALUE_CHARS:.1f} bytes per character of the value"
            assert outcome.answered and outcome.report.candidates[0].attempts, outcome.report.candidates
            shown = hostile.prompt_text() + json.dumps(outcome.report.to_dict(), default=str)
            assert "<value>" in hostile.prompt_text() and RUN not in shown
            assert len(shown) < 200_000
    finally:
        world.close()


# ------------------------------------------------------------------------------ 5: long model replies

BUDGET_S, SLACK_S = 5.0, 2.0
COUNT_SQL = "SELECT COUNT(*) FROM orders"
ONE_SHOT: dict[str, Any] = {"candidates": 1, "max_refinements": 1, "probe": False, "verify": False,
                            "llm_max_retries": 0}


def or_chain(chars: int) -> str:
    """A failing query of about ``chars`` characters: a long OR chain over a misspelt column (``amont``), which
    the schema repairs try to fix."""
    terms = [f"amont = {i}" for i in range(chars // 14)]
    return "SELECT COUNT(*) FROM orders WHERE " + " OR ".join(terms)


@pytest.mark.parametrize("chars", [50_000, 105_000])
@pytest.mark.parametrize("dialect", ["sqlite", "duckdb", "postgresql"])
def test_a_long_failing_reply_keeps_the_question_budget(dialect: str, chars: int, worlds: Worlds,
                                                        hostile: HostileModel) -> None:
    world = worlds(dialect).variant(hostile.url, question_timeout_s=BUDGET_S, **ONE_SHOT)
    try:
        for api in world.apis():
            hostile.serve(COUNT_SQL, generate=[or_chain(chars)], refine=[COUNT_SQL])
            started = time.monotonic()
            try:
                outcome: Any = world.ask(api, QUESTION)
            except QuestionTimeoutError as error:
                outcome = error
            elapsed = time.monotonic() - started
            assert elapsed < BUDGET_S + SLACK_S, (api, elapsed)
            assert not isinstance(outcome, QuestionTimeoutError) and outcome.rows == [(25,)], outcome
    finally:
        world.close()


HUGE_REPLY_CHARS = 10_000_000


@pytest.mark.parametrize("dialect", ["sqlite", "postgresql"])
def test_a_huge_reply_is_cut_when_it_is_recorded(dialect: str, worlds: Worlds, hostile: HostileModel) -> None:
    world = worlds(dialect).variant(hostile.url, question_timeout_s=20, **ONE_SHOT)
    huge = "SELECT COUNT(*) FROM orders WHERE status IN (" + ", ".join(["'x'"] * (HUGE_REPLY_CHARS // 5)) + ")"
    try:
        for api in world.apis():
            hostile.serve(COUNT_SQL, generate=[huge], refine=[COUNT_SQL])
            outcome, peak = peak_bytes(lambda: world.ask(api, QUESTION))  # noqa: B023 -- called at once
            assert not isinstance(outcome, Exception), outcome
            assert outcome.rows == [(25,)], outcome.rows
            assert any("characters long; only its first" in note for note in outcome.report.notes), outcome.report
            shown = json.dumps(outcome.report.to_dict(), default=str)
            assert len(shown) < 1_000_000, len(shown)
            assert peak < 20 * HUGE_REPLY_CHARS, f"{peak / HUGE_REPLY_CHARS:.1f} bytes per character of the reply"
    finally:
        world.close()
