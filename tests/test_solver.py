"""The pandas solver: code written from the tables and the question only, run in the sandbox, and
self-corrected from its traceback; never run at all without the sandbox."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from fakes import ScriptedChatModel

from verifiedsql.db.schema import Column, ForeignKey, Table
from verifiedsql.errors import LLMError, SandboxUnavailableError
from verifiedsql.guard.sandbox import Sandbox, SandboxResult
from verifiedsql.llm.base import ChatRequest
from verifiedsql.report import VerificationReport
from verifiedsql.stages.common.frames import slice_frames
from verifiedsql.stages.common.slices import SchemaSlice
from verifiedsql.stages.dpc.solver import NO_CODE, solve

CUSTOMERS = Table("customers", (Column("id", "INTEGER", primary_key=True), Column("name", "TEXT")))
ORDERS = Table(
    "orders",
    (Column("id", "INTEGER", primary_key=True), Column("customer_id", "INTEGER"), Column("amount", "REAL"),
     Column("placed", "DATE")),
    (ForeignKey(("customer_id",), "customers", ("id",)),),
)
SLICE = SchemaSlice((CUSTOMERS, ORDERS), source_dialect="sqlite", scratch_dialect="sqlite")
MDD_TABLES = {"customers": ((1, "Ann"), (2, "Bob")),
              "orders": ((10, 1, 120.0, "2024-01-05"), (11, 1, 80.0, dt.date(2024, 2, 1)), (12, None, 100.0, None))}
QUESTION = "What is the total amount per customer name?"
GOOD = ("Merge, then sum.\n```python\nmerged = orders.merge(customers, left_on='customer_id', right_on='id')\n"
        "result = merged.groupby('name', as_index=False)['amount'].sum()\n```")
BAD = "```python\nresult = orders.groupby('customer')['amount'].sum()\n```"

needs_sandbox = pytest.mark.skipif(not Sandbox().available(),
                                   reason="bubblewrap (bwrap) cannot run here, so no code can be run")


def run_solver(replies: list[str] | Any, sandbox: Sandbox | None = None, **kwargs: Any):
    llm, report = ScriptedChatModel(replies), VerificationReport(QUESTION, "sqlite")
    outcome = solve(llm, report, sandbox or Sandbox(wall_seconds=20.0), SLICE, MDD_TABLES, QUESTION, **kwargs)
    return outcome, llm, report


@needs_sandbox
def test_correct_code_first_time() -> None:
    outcome, llm, report = run_solver([GOOD])
    assert outcome.ok and outcome.attempts == 1 and outcome.errors == [] and outcome.skipped is None
    assert outcome.result is not None and outcome.result.columns == ("name", "amount")
    assert outcome.result.rows == (("Ann", 200.0),)
    assert outcome.code is not None and outcome.code.startswith("merged =")
    request = llm.requests[0]
    assert (request.purpose, request.temperature, request.seed, request.max_tokens) == ("solver", 0.0, 0, 768)
    prompt = request.messages[1]["content"]
    assert "DataFrame `orders`" in prompt and "customer_id: Int64 (INTEGER, references customers.id)" in prompt
    assert "10 | 1 | 120.0 | '2024-01-05'" in prompt and "12 | NULL | 100.0 | NULL" in prompt
    assert QUESTION in prompt and "SELECT" not in prompt
    assert [c.purpose for c in report.llm_calls] == ["solver"]


@needs_sandbox
def test_traceback_is_fed_back_then_success() -> None:
    outcome, llm, _ = run_solver([BAD, GOOD])
    assert outcome.ok and outcome.attempts == 2 and len(outcome.errors) == 1 and "KeyError" in outcome.errors[0]
    retry = llm.requests[1].messages
    assert [m["role"] for m in retry] == ["system", "user", "assistant", "user"]
    assert retry[2]["content"] == BAD and "KeyError: 'customer'" in retry[3]["content"]


@needs_sandbox
def test_gives_up_after_the_corrections() -> None:
    outcome, llm, _ = run_solver([BAD, "I am not sure.", BAD, GOOD], corrections=2)
    assert not outcome.ok and outcome.attempts == 3 and len(llm.requests) == 3
    assert outcome.errors[1] == NO_CODE and "KeyError" in outcome.errors[2]
    assert NO_CODE in llm.requests[2].messages[-1]["content"]


def test_skipped_without_a_sandbox_and_nothing_is_run(monkeypatch: pytest.MonkeyPatch) -> None:
    def never(*args: Any, **kwargs: Any) -> SandboxResult:
        raise AssertionError("the code must not be run")

    monkeypatch.setattr(Sandbox, "available", lambda self: False)
    monkeypatch.setattr(Sandbox, "run_pandas", never)
    monkeypatch.setattr("subprocess.Popen", never)
    outcome, llm, report = run_solver([GOOD])
    assert outcome.skipped is not None and outcome.skipped.startswith("no sandbox: ")
    assert outcome.result is None and outcome.attempts == 0 and llm.requests == [] and report.llm_calls == []


def test_sandbox_failing_at_run_time_skips_without_retrying(monkeypatch: pytest.MonkeyPatch) -> None:
    def unavailable(self: Sandbox, code: str, tables: dict[str, Any]) -> SandboxResult:
        raise SandboxUnavailableError("bwrap vanished")

    monkeypatch.setattr(Sandbox, "available", lambda self: True)
    monkeypatch.setattr(Sandbox, "run_pandas", unavailable)
    outcome, llm, _ = run_solver([GOOD, GOOD])
    assert outcome.skipped == "no sandbox: bwrap vanished" and outcome.attempts == 1 and len(llm.requests) == 1


def test_a_model_error_ends_the_attempts(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(request: ChatRequest) -> str:
        raise LLMError("the model server is down")

    monkeypatch.setattr(Sandbox, "available", lambda self: True)
    outcome, _, _ = run_solver(fail)
    assert not outcome.ok and outcome.attempts == 0 and "server is down" in outcome.errors[0]


def test_slice_frames_type_columns_and_keep_dates_as_iso_text() -> None:
    frames = slice_frames(SLICE, {"ORDERS": MDD_TABLES["orders"]})
    orders, rows = frames["orders"]
    assert [str(d) for d in orders.dtypes] == ["Int64", "Int64", "float64", "object"]
    assert orders["placed"].tolist()[:2] == ["2024-01-05", "2024-02-01"] and rows[1][3] == "2024-02-01"
    assert frames["customers"][0].empty and list(frames["customers"][0].columns) == ["id", "name"]
