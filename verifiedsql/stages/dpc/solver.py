"""The pandas solver (DPC appendix A.3): answer the question on the MDD in Python, independently of the
SQL candidates, as a reference result to compare them with.

The model sees every slice table as a DataFrame (columns, dtypes, keys and all rows: MDDs are tiny)
and the question, never the candidates. Its code runs only in the bubblewrap sandbox; a failing run's
traceback is fed back for at most ``corrections`` self-corrections. Without a working sandbox the
solver is skipped and the code is never run in any other way.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd  # type: ignore[import-untyped,unused-ignore]

from ...errors import LLMError, SandboxError, SandboxUnavailableError
from ...guard.deadline import Deadline
from ...guard.sandbox import INCIDENT, Sandbox
from ...llm.base import ChatModel, ChatRequest, Message
from ...llm.replies import extract_python, follow_up
from ...llm.rows import render_dataframe
from ...report import VerificationReport
from ...results import ResultSet
from ..calls import call_model
from ..common.frames import slice_frames
from ..common.slices import Rows, SchemaSlice
from .prompts import solver_messages, solver_retry_feedback

__all__ = ["SolverOutcome", "solve"]

NO_CODE = "the reply holds no ```python code block; reply with the complete code in one"
NO_SANDBOX = "no sandbox: "

@dataclass
class SolverOutcome:
    """The solver's last code and its result (None unless a run succeeded), how many replies it took,
    the error of every failed try, and why it was skipped, if it was."""

    code: str | None = None
    result: ResultSet | None = None
    attempts: int = 0
    errors: list[str] = field(default_factory=list)
    skipped: str | None = None

    @property
    def ok(self) -> bool:
        return self.result is not None


def _prompt(slice_: SchemaSlice, frames: dict[str, tuple[pd.DataFrame, Rows]], question: str) -> tuple[Message, ...]:
    parts = [render_dataframe(table, [str(d) for d in frames[table.name][0].dtypes], frames[table.name][1])
             for table in slice_.tables]
    return solver_messages("\n\n".join(parts), question)


def _no_sandbox(sandbox: Sandbox) -> str | None:
    if sandbox.available():
        return None
    return NO_SANDBOX + ("bubblewrap (bwrap) is missing or cannot create namespaces here, so model-written code "
                         "is not run")


def _run(sandbox: Sandbox, code: str, frames: dict[str, pd.DataFrame], outcome: SolverOutcome) -> str | None:
    """One sandboxed run: sets ``outcome.result`` (or ``skipped``); returns the error to feed back, if any,
    labelled with the incident when the jail stopped the code (time, CPU, memory, file size, output)."""
    try:
        run = sandbox.run_pandas(code, frames)
    except SandboxUnavailableError as error:
        outcome.skipped = NO_SANDBOX + str(error)
        return None
    except SandboxError as error:
        outcome.skipped = f"sandbox failed: {error}"
        return None
    if run.ok:
        outcome.result = ResultSet(tuple(run.columns), tuple(tuple(row) for row in run.rows))
        return None
    failure = run.error or "the code failed without an error message"
    return f"{INCIDENT} ({run.incident}): {failure}" if run.incident else failure


def _headline(error: str) -> str:
    """One line of a failed run for the report: the incident, else the traceback's last line."""
    lines = [line.strip() for line in error.splitlines() if line.strip()] or [error]
    return (lines[0] if error.startswith(INCIDENT) else lines[-1])[:300]


def solve(
    llm: ChatModel,
    report: VerificationReport,
    sandbox: Sandbox,
    slice_: SchemaSlice,
    mdd_tables: dict[str, Rows],
    question: str,
    *,
    corrections: int = 3,
    max_tokens: int = 768,
    seed: int = 0,
    deadline: Deadline | None = None,
) -> SolverOutcome:
    """Write pandas code that answers ``question`` on the MDD, run it in the sandbox, self-correct on
    errors (at most ``corrections + 1`` replies); the outcome's ``result`` is None when no run worked. Each
    sandboxed run ends by the ``deadline`` (none: the sandbox's own limits); with no time left,
    ``QuestionTimeoutError``."""
    deadline = deadline or Deadline()
    outcome = SolverOutcome()
    outcome.skipped = _no_sandbox(sandbox)
    if outcome.skipped:
        return outcome
    typed = slice_frames(slice_, mdd_tables)
    frames = {name: frame for name, (frame, _) in typed.items()}
    first = _prompt(slice_, typed, question)
    prompt: tuple[Message, ...] = first
    previous: str | None = None  # the code of the reply before
    for _ in range(corrections + 1):
        request = ChatRequest(messages=prompt, temperature=0.0, max_tokens=max_tokens, seed=seed, purpose="solver")
        try:
            reply = call_model(llm, request, report).text
        except LLMError as error:
            outcome.errors.append(f"model error: {error}")
            break
        outcome.attempts += 1
        code = extract_python(reply)
        if code is not None and code == previous:
            outcome.errors.append("the correction repeated the failing code")  # no progress: stop asking
            break
        previous = code
        outcome.code = code or outcome.code
        if code:
            deadline.check("running the dual-paradigm test's pandas solver in the sandbox")
        failure = _run(sandbox.within(deadline.remaining()), code, frames, outcome) if code else NO_CODE
        if failure is None:
            break
        outcome.errors.append(failure)
        if code:
            report.notes.append(f"dpc: solver try {outcome.attempts} failed in the sandbox: {_headline(failure)}")
        prompt = follow_up(first, reply, solver_retry_feedback(failure))
    return outcome
