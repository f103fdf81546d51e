"""One question's working state, handed to every stage: the question, the database, the options, the model
(bound to the question's deadline), the report, the sandbox, the schema, the schema text the prompts show,
and the dialect profile whose rules they state. It is the one place where model calls and database queries
are capped by the time left: a stage asks the model through ``ask``/``call`` and the database through
``query``/``explain``, never directly. Each query and plan is logged at DEBUG on ``verifiedsql.sql``, and
each model call on ``verifiedsql.llm`` (``logs``)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .. import logs
from ..config import Options
from ..db.database import Database
from ..db.schema import Schema, render_table
from ..guard.deadline import Deadline
from ..guard.sandbox import Sandbox
from ..llm.base import ChatModel, ChatRequest, ChatResponse, Message
from ..llm.prompts import with_context
from ..profiles import DialectProfile
from ..report import LLMPurpose, VerificationReport
from ..results import ResultSet
from .calls import Sent, call_model, record, send_all
from .common.hints import prompt_profile

if TYPE_CHECKING:
    from .generate import CandidateRun

CandidateCheck = Callable[["CandidateRun"], "CandidateRun"]

# The longest context window models are served with (GPT-4.1, Gemini 2.5, Llama 4 Maverick: 1,048,576 tokens).
LARGEST_WINDOW_TOKENS = 1_048_576
SAMPLE_VALUE_CHARS = 11  # what one sample value adds to a column's line (Spider dev: 32.8 characters for 3)


def beyond_every_window(schema: Schema, sample_values: int) -> bool:
    """Whether a prompt showing all of ``schema`` fits no model's window: its text without samples, plus
    SAMPLE_VALUE_CHARS per sample value and column, at 2 characters a model token (``over_window``'s count),
    is over LARGEST_WINDOW_TOKENS. The tables are rendered only until the count is reached."""
    limit = 2 * LARGEST_WINDOW_TOKENS
    chars = 0
    for table in schema.tables:
        samples = len(table.columns) * sample_values * SAMPLE_VALUE_CHARS
        chars += len(render_table(table, with_samples=False)) + 2 + samples
        if chars > limit:
            return True
    return False


@dataclass
class QuestionContext:
    """Everything one question's stages share. ``llm`` is already bound to ``deadline``; ``schema_text``
    grows as context stages add blocks to it; ``candidate_checks`` run on every candidate once its
    self-refinement is over (PV-SQL's verify-and-repair registers one)."""

    question: str
    database: Database
    options: Options
    llm: ChatModel
    report: VerificationReport
    deadline: Deadline
    schema: Schema
    schema_text: str
    profile: DialectProfile  # the database's dialect profile, with the prompt rules for this schema
    candidate_checks: list[CandidateCheck] = field(default_factory=list)
    beyond_windows: bool = False  # the whole schema fits no model's window (``beyond_every_window``)
    _sandbox: Sandbox | None = None

    @classmethod
    def open(cls, question: str, database: Database, llm: ChatModel, options: Options,
             report: VerificationReport | None = None, deadline: Deadline | None = None,
             schema: Schema | None = None, sandbox: Sandbox | None = None) -> QuestionContext:
        """A context for ``question``: the model is bound to ``deadline`` (none: no limit), the schema is
        reflected unless given (its sample values read now for a schema too large to sample at reflection,
        unless compression will choose the tables to sample), and the schema text is its plain rendering
        until a stage changes it. A schema ``beyond_windows`` (with ``compress_schema`` off) gets no text and
        no samples here: the pipeline compresses it before any model call, and only the tables its text shows
        are sampled."""
        from ..db.schema import render_schema

        deadline = deadline or Deadline()
        report = report or VerificationReport(question=question, dialect=database.profile.name)
        schema = schema if schema is not None else database.reflect()
        beyond = not options.compress_schema and beyond_every_window(schema, options.sample_values)
        if not options.compress_schema and not beyond:  # the prompt shows every table: sample the bare ones
            schema = database.with_samples(schema, deadline=deadline)
        ctx = cls(question, database, options, deadline.bind(llm), report, deadline, schema,
                  "" if beyond else render_schema(schema), prompt_profile(database.profile, schema,
                                                                           options.schema_hints),
                  beyond_windows=beyond, _sandbox=sandbox)
        return ctx

    # ------------------------------------------------------------------------------------- the model

    def call(self, request: ChatRequest) -> ChatResponse:
        """Send one request (its timeout capped by the time left) and record it in the report."""
        return call_model(self.llm, request, self.report)

    def send_all(self, requests: Sequence[ChatRequest]) -> list[Callable[[], Sent]]:
        """Send independent requests side by side, up to the ``concurrency`` option, each capped by the time
        left: each item waits for its request's outcome, which ``record`` then records (in order)."""
        return send_all(self.llm, requests, self.options.concurrency)

    def record(self, sent: Sent) -> ChatResponse:
        """Record one outcome of ``send_all`` in the report; raises what the model raised."""
        return record(sent, self.report)

    def ask(self, messages: tuple[Message, ...], purpose: LLMPurpose, *, seed: int = 0,
            max_tokens: int | None = None) -> ChatResponse:
        """One zero-temperature call (``max_tokens`` defaults to the option); ``LLMError`` propagates."""
        return self.call(ChatRequest(messages=messages, temperature=0.0,
                                     max_tokens=max_tokens or self.options.max_tokens, seed=seed, purpose=purpose))

    # ---------------------------------------------------------------------------------- the database

    def query(self, sql: str, *, timeout_s: float | None = None, doing: str = "a query") -> ResultSet:
        """Run ``sql`` read-only behind both safety layers, its timeout (``timeout_s``, else the
        statement timeout) capped by the time left; ``QuestionTimeoutError`` when none is left."""
        self.deadline.check(doing)
        start = time.perf_counter()
        try:
            result = self.database.run_query(sql, timeout_s=self.deadline.cap(timeout_s))
        except Exception as error:
            logs.query_failed("query", sql, doing, start, error)
            raise
        logs.query_ran("query", sql, doing, start, result.row_count, result.truncated)
        return result

    def explain(self, sql: str, *, doing: str = "planning a query") -> None:
        """Have the engine plan ``sql`` without running it, within the time left."""
        self.deadline.check(doing)
        start = time.perf_counter()
        try:
            self.database.explain(sql, timeout_s=self.deadline.cap(None))
        except Exception as error:
            logs.query_failed("explain", sql, doing, start, error)
            raise
        logs.query_ran("explain", sql, doing, start)

    def seconds_for(self, seconds: float) -> float:
        """``seconds`` of work of the stage's own (a search, a loop), shortened to the time left."""
        return self.deadline.cap(seconds)

    # ------------------------------------------------------------------------------------ the rest

    @property
    def sandbox(self) -> Sandbox:
        """The jail model-written pandas runs in (DPC's solver, VET's steps), made on first use."""
        if self._sandbox is None:
            self._sandbox = Sandbox()
        return self._sandbox

    def add_context(self, block: str) -> None:
        """Add a block (value matches, probe findings, exploration results) to the prompts' schema text."""
        self.schema_text = with_context(self.schema_text, block)

    def note(self, text: str) -> None:
        self.report.notes.append(text)
