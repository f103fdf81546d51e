"""Candidate generation: one greedy and N-1 sampled SQL queries, each run read-only and
self-refined with the database's error message when it fails (at most ``max_refinements`` times).
No work is done twice for a question (``Tried``): the same SQL (``sql_key``) is run once and refined once,
and a refinement that gives back SQL that already failed ends that candidate's refinement."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Protocol

from sqlglot import Dialect, TokenType
from sqlglot.errors import SqlglotError

from ..errors import LLMError, QueryError, QueryTimeoutError, QuestionTimeoutError, UnsafeSQLError
from ..guard.functions import UNKNOWN as UNKNOWN_FUNCTION
from ..guard.safety import UNPARSEABLE, outermost_orders, parse_one_query
from ..llm.base import ChatRequest, ChatResponse, Message
from ..llm.prompts import generation_messages, refinement_messages
from ..llm.replies import extract_sql, has_closed_fence
from ..report import Candidate, CandidateStatus, VerificationReport
from ..results import ResultSet
from .calls import model_concurrency
from .certainty import certainty
from .context import QuestionContext
from .repair import repair_failure
from .schema_facts import schema_facts

# Tokens whose text is kept as written in ``sql_key``: names, literals, parameters (the rest are keywords,
# operators and punctuation, compared without case).
_AS_WRITTEN = {TokenType.VAR, TokenType.IDENTIFIER, TokenType.STRING, TokenType.NUMBER, TokenType.NATIONAL_STRING,
               TokenType.RAW_STRING, TokenType.BIT_STRING, TokenType.HEX_STRING, TokenType.BYTE_STRING,
               TokenType.HEREDOC_STRING, TokenType.UNICODE_STRING, TokenType.PARAMETER}
NO_SQL_ERROR = "the reply contained no SQL query"
CUT_OFF_ERROR = "the reply was cut off at max_tokens={max_tokens} before its SQL was complete"


@dataclass
class CandidateRun:
    """A candidate's report entry together with its result (kept out of the report itself)."""

    candidate: Candidate
    result: ResultSet | None = None
    ordered: bool = False


@dataclass
class Execution:
    result: ResultSet | None
    ordered: bool
    status: CandidateStatus
    error: str | None
    checks: tuple[str, ...] = ()  # the checks the SQL passed, in order


@dataclass
class Tried:
    """What the candidates of one question have tried, by SQL as ``sql_key`` normalizes it: the outcome of
    every statement run (failures too: the same SQL is never run twice), and where each candidate that
    ran a statement ended up after its refinements (the same SQL is never refined twice)."""

    dialect: str | None
    runs: dict[str, Execution] = field(default_factory=dict)
    ends: dict[str, CandidateRun] = field(default_factory=dict)

    def key(self, sql: str) -> str:
        return sql_key(sql, self.dialect)

    def ended(self, sql: str | None) -> CandidateRun | None:
        """The outcome of the candidate whose refinements went through ``sql``, if one did."""
        return None if sql is None else self.ends.get(self.key(sql))

    def failed(self, sql: str) -> bool:
        """Whether ``sql`` was run for this question and failed."""
        earlier = self.runs.get(self.key(sql))
        return earlier is not None and earlier.status != "ok"

    def end(self, run: CandidateRun) -> None:
        """``run`` is where its candidate ended: so it is for every SQL the candidate ran on the way."""
        snapshot = CandidateRun(replace(run.candidate, attempts=list(run.candidate.attempts),
                                        checks=list(run.candidate.checks), fixes=list(run.candidate.fixes)),
                                run.result, run.ordered)
        for sql in (*run.candidate.attempts, run.candidate.sql):
            if (key := self.key(sql)) in self.runs:
                self.ends.setdefault(key, snapshot)


def sql_of(reply: ChatResponse) -> str | None:
    """The SQL in a model reply; None when there is none, or when the reply was cut off at max_tokens
    before its code block closed (a cut query may still run, and answer another question)."""
    if reply.truncated and not has_closed_fence(reply.text):
        return None
    return extract_sql(reply.text)


def execute_candidate(ctx: QuestionContext, sql: str | None, *, explain: bool = False) -> Execution:
    """Run one candidate through both safety layers; failures become a status and an error text.

    With ``explain`` the engine first compiles and plans the SQL without running it (the syntax check
    of verify-and-repair), so SQL it rejects is never executed; the error text is the engine's own.
    The run's timeout is capped by the question's time left; with none left it does not start.
    """
    if sql is None:
        return Execution(None, False, "error", NO_SQL_ERROR)
    if ctx.deadline.expired:
        return Execution(None, False, "timeout", str(ctx.deadline.error("running a candidate query")))
    passed: list[str] = ["parse"]
    try:
        tree = parse_one_query(sql, ctx.database.profile)
        if explain:
            ctx.explain(sql)
            passed.append("explain")
        result = ctx.query(sql, doing="running a candidate query")
    except QuestionTimeoutError as error:
        return Execution(None, False, "timeout", str(error), tuple(passed))
    except UnsafeSQLError as error:
        return Execution(None, False, "unsafe", str(error), tuple(passed))
    except QueryTimeoutError as error:
        return Execution(None, False, "timeout", str(error), tuple(passed))
    except QueryError as error:
        return Execution(None, False, "error", str(error), tuple(passed))
    ordered = outermost_orders(tree)
    return Execution(result, ordered, "ok", None, (*passed, "run"))


class StopRule(Protocol):
    """Ends the drawing of candidates early (adaptive sampling, ``stages/sampling.py``)."""

    @property
    def earliest(self) -> int:
        """The fewest candidates after which it may stop."""

    def __call__(self, runs: list[CandidateRun]) -> str | None:
        """Why drawing stops after ``runs``, or None to draw another candidate."""


class CandidateGenerator:
    """Writes and runs the candidates of one question (``ctx``), within its time budget."""

    def __init__(self, ctx: QuestionContext) -> None:
        self.ctx = ctx
        self.database = ctx.database
        self.options = ctx.options

    def generate(self, schema_text: str | None = None, stop: StopRule | None = None) -> list[CandidateRun]:
        """Write, run and self-refine each candidate, the prompt showing ``schema_text`` (default: the
        context's); then each run goes through the context's candidate checks (e.g. verify-and-repair).

        The candidates' requests go out in waves (``_waves``), each wave's side by side up to the
        ``concurrency`` option; each reply is run and refined as soon as it and those before it are in, in
        candidate order, so the outcome does not depend on which call returned first. After each candidate,
        ``stop`` (adaptive sampling, ``stages/sampling.py``) may end the drawing: it returns why, which
        becomes a note. When the time budget runs out, the runs so far (maybe none) are returned and a note
        says where generation stopped."""
        ctx, report = self.ctx, self.ctx.report
        question, schema_text = ctx.question, ctx.schema_text if schema_text is None else schema_text
        prompt = generation_messages(self.ctx.profile, schema_text, question)
        runs: list[CandidateRun] = []
        seen = Tried(self.database.profile.sqlglot_dialect)
        for wave in self._waves(stop):
            pending = ctx.send_all([self._request(prompt, index) for index in wave])
            for index, outcome in zip(wave, pending):
                greedy = index == 0
                try:
                    reply = ctx.record(outcome())
                except QuestionTimeoutError as error:
                    report.notes.append(f"generation stopped before candidate {index}: {error}")
                    return runs
                except LLMError as error:
                    if greedy:
                        raise
                    report.notes.append(f"candidate {index} was not generated: {error}")
                    # Kept as a failed run, so the selection still counts it: agreement among the rest is no
                    # majority.
                    runs.append(CandidateRun(Candidate(index, "sample", "", "error", f"not generated: {error}")))
                    continue
                candidate = Candidate(index=index, origin="greedy" if greedy else "sample", sql=_shown(reply))
                run = self._run_with_refinement(candidate, reply, question, schema_text, report, seen)
                for check in ctx.candidate_checks:
                    run = check(run)
                runs.append(run)
                if stop is not None and index + 1 < self.options.candidates and (why := stop(runs)) is not None:
                    report.notes.append(why)
                    return runs
        return runs

    def _waves(self, stop: StopRule | None) -> Iterator[range]:
        """The candidate indexes, in the groups whose requests go out together: one at a time when
        ``concurrency`` is 1 or the model serves one request at a time (the embedded server); else all at
        once, or with adaptive sampling the fewest after which it may stop, then one at a time (so it draws
        exactly what one-at-a-time drawing would)."""
        total = self.options.candidates
        concurrency = min(self.options.concurrency, model_concurrency(self.ctx.llm) or self.options.concurrency)
        first = 1 if concurrency <= 1 else total if stop is None else max(1, stop.earliest)
        yield range(0, min(first, total))
        if concurrency > 1 and getattr(stop, "decides_once", False):  # no stop after the first wave: the rest together
            if first < total:
                yield range(first, total)
            return
        yield from (range(index, index + 1) for index in range(min(first, total), total))

    def _request(self, prompt: tuple[Message, ...], index: int) -> ChatRequest:
        """Candidate ``index``'s request: greedy (temperature 0) first, then samples; the seed is the index."""
        return ChatRequest(messages=prompt, temperature=0.0 if index == 0 else self.options.temperature,
                           max_tokens=self.options.max_tokens, seed=index, purpose="generate", logprobs=True)

    def _run_with_refinement(
        self,
        candidate: Candidate,
        reply: ChatResponse,
        question: str,
        schema_text: str,
        report: VerificationReport,
        seen: Tried,
    ) -> CandidateRun:
        candidate.certainty = certainty(reply, sql_of(reply), seen.dialect)
        if (shared := seen.ended(sql_of(reply))) is not None:  # the same SQL as an earlier candidate's
            report.notes.append(f"candidate {candidate.index}: the same SQL as candidate {shared.candidate.index}, "
                                "whose outcome it shares (not run or refined again)")
            return _adopted(candidate, shared, seen)
        first, source = reply, reply  # the reply that wrote the candidate's SQL (before any repair)
        for attempt in range(self.options.max_refinements + 1):
            execution = self._execute_once(reply, seen)
            if self.options.schema_repair and _repairable(execution):
                execution = self._repair(candidate, execution)
            candidate.status, candidate.error = execution.status, execution.error
            candidate.checks = list(execution.checks)
            if execution.status == "ok" or attempt == self.options.max_refinements:
                break
            candidate.attempts.append(candidate.sql)
            messages: tuple[Message, ...] = refinement_messages(
                self.ctx.profile, schema_text, question, candidate.sql, execution.error or "",
                self._facts(candidate.sql, execution.error or ""),
            )
            request = ChatRequest(messages=messages, temperature=0.0, max_tokens=self.options.max_tokens,
                                  seed=candidate.index, purpose="refine", logprobs=True)
            try:
                reply = self.ctx.call(request)
            except (LLMError, QuestionTimeoutError) as error:
                report.notes.append(f"candidate {candidate.index} could not be refined: {error}")
                break
            if _shown(reply) == candidate.sql or seen.failed(_shown(reply)):
                # The same request would get the same answer again: no progress, stop asking. SQL that
                # failed before (for any candidate) is neither run nor refined again.
                candidate.attempts.pop()
                report.notes.append(f"candidate {candidate.index}: the refinement repeated the failing SQL"
                                    if _shown(reply) == candidate.sql else
                                    f"candidate {candidate.index}: the refinement returned SQL that already failed")
                break
            candidate.sql, source = _shown(reply), reply
        if source is not first:  # a refinement wrote the SQL: the model's certainty is of that reply
            candidate.certainty = certainty(source, sql_of(source), seen.dialect)
        run = CandidateRun(candidate, execution.result, execution.ordered)
        if execution.result is not None:
            candidate.row_count = execution.result.row_count
            candidate.truncated = execution.result.truncated
        seen.end(run)
        return run

    def _facts(self, sql: str, error: str) -> str:
        """What the schema says about the name ``error`` reports missing (``schema_facts``), else ""."""
        if not self.options.schema_facts:
            return ""
        profile = self.database.profile
        return schema_facts(self.ctx.schema, profile.name, profile.sqlglot_dialect, sql, error)

    def _repair(self, candidate: Candidate, failed: Execution) -> Execution:
        """Deterministic schema-aware repair of the candidate's failing SQL (``schema_repair``), before any
        refinement: the first repair that runs through both safety layers becomes the candidate's SQL, the
        failing one goes to its attempts and what changed to its fixes. When none runs, ``failed`` stands
        and refinement goes on with the failing SQL and its error, as without repair."""
        profile = self.database.profile
        repaired = repair_failure(self.ctx.schema, profile.sqlglot_dialect, profile.name, candidate.sql,
                                  failed.error or "",
                                  lambda sql: execute_candidate(self.ctx, sql, explain=self.options.verify),
                                  lambda: self.ctx.deadline.expired)
        if repaired is None:
            return failed
        candidate.attempts.append(candidate.sql)
        candidate.sql = repaired.sql
        candidate.fixes.extend(repaired.fixes)
        return replace(repaired.execution, checks=(*repaired.execution.checks, "repair"))

    def _execute_once(self, reply: ChatResponse, seen: Tried) -> Execution:
        """Run the reply's SQL, or share the outcome of the same SQL run before for this question (failures
        too); a reply cut off inside its SQL is not run."""
        sql = sql_of(reply)
        if sql is None and reply.truncated:
            return Execution(None, False, "error", CUT_OFF_ERROR.format(max_tokens=self.options.max_tokens))
        if sql is None:
            return execute_candidate(self.ctx, sql, explain=self.options.verify)
        key = seen.key(sql)
        if key not in seen.runs:
            seen.runs[key] = execute_candidate(self.ctx, sql, explain=self.options.verify)
        return seen.runs[key]


def _repairable(execution: Execution) -> bool:
    """A failure the deterministic repair may fix: the engine's error, the function allowlist's refusal
    of a function the engine does not have, or the guard's refusal of SQL it cannot parse (mistakes, not
    dangers: a repair goes through both safety layers again); not a timeout, a reply without SQL, or any
    other refusal."""
    error = execution.error or ""
    if execution.status == "unsafe":
        return UNKNOWN_FUNCTION in error or error.startswith(UNPARSEABLE)
    return execution.status == "error" and error != NO_SQL_ERROR and not error.startswith(CUT_OFF_ERROR[:30])


def sql_key(sql: str, dialect: str | None) -> str:
    """``sql`` without what cannot change its result: whitespace, comments, trailing semicolons and the case
    of keywords (by sqlglot's tokenizer for ``dialect``); names, literals and function names are kept as
    written, since they name the result's columns."""
    try:
        tokens = Dialect.get_or_raise(dialect).tokenize(sql)
    except (SqlglotError, ValueError):
        return " ".join(sql.replace(";", " ; ").split()).rstrip("; ")
    while tokens and tokens[-1].token_type == TokenType.SEMICOLON:
        tokens.pop()
    return "\x00".join(f"{token.token_type.name}:{token.text}" if token.token_type in _AS_WRITTEN
                       else token.text.upper() for token in tokens)


def _adopted(candidate: Candidate, shared: CandidateRun, seen: Tried) -> CandidateRun:
    """``candidate`` given the outcome of ``shared``, an earlier candidate that ran the same SQL: its own
    text where that is where the earlier one ended, else the earlier one's way on from that SQL."""
    earlier, own = shared.candidate, seen.key(candidate.sql)
    keys = [seen.key(sql) for sql in earlier.attempts]
    if own in keys:  # the earlier candidate went on from this SQL: so does this one
        candidate.attempts = [candidate.sql, *earlier.attempts[keys.index(own) + 1:]]
        candidate.sql = earlier.sql
    candidate.status, candidate.error, candidate.checks = earlier.status, earlier.error, list(earlier.checks)
    candidate.fixes = list(earlier.fixes)
    candidate.row_count, candidate.truncated = earlier.row_count, earlier.truncated
    return CandidateRun(candidate, shared.result, shared.ordered)


def _shown(reply: ChatResponse) -> str:
    """What the report shows as a reply's SQL: the SQL found in it (even if cut off), else the whole text."""
    return extract_sql(reply.text) or reply.text.strip()
