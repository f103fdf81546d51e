"""Candidate generation: one greedy and N-1 sampled SQL queries, each run read-only and
self-refined with the database's error message when it fails (at most ``max_refinements`` times)."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import LLMError, QueryError, QueryTimeoutError, QuestionTimeoutError, UnsafeSQLError
from ..llm.base import ChatRequest, ChatResponse, Message
from ..llm.prompts import generation_messages, refinement_messages
from ..llm.replies import extract_sql, has_closed_fence
from ..report import Candidate, CandidateStatus, VerificationReport
from ..results import ResultSet
from ..safety import outermost_orders, parse_one_query
from .context import QuestionContext

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


class CandidateGenerator:
    """Writes and runs the candidates of one question (``ctx``), within its time budget."""

    def __init__(self, ctx: QuestionContext) -> None:
        self.ctx = ctx
        self.database = ctx.database
        self.options = ctx.options

    def generate(self, schema_text: str | None = None) -> list[CandidateRun]:
        """Write, run and self-refine each candidate, the prompt showing ``schema_text`` (default: the
        context's); then each run goes through the context's candidate checks (e.g. verify-and-repair).
        When the time budget runs out, the runs so far (maybe none) are returned and a note says where
        generation stopped."""
        ctx, report = self.ctx, self.ctx.report
        question, schema_text = ctx.question, ctx.schema_text if schema_text is None else schema_text
        prompt = generation_messages(self.database.profile, schema_text, question)
        runs: list[CandidateRun] = []
        seen: dict[str, CandidateRun] = {}
        for index in range(self.options.candidates):
            greedy = index == 0
            request = ChatRequest(
                messages=prompt,
                temperature=0.0 if greedy else self.options.temperature,
                max_tokens=self.options.max_tokens,
                seed=index,
                purpose="generate",
            )
            try:
                reply = ctx.call(request)
            except QuestionTimeoutError as error:
                report.notes.append(f"generation stopped before candidate {index}: {error}")
                break
            except LLMError as error:
                if greedy:
                    raise
                report.notes.append(f"candidate {index} was not generated: {error}")
                # Kept as a failed run, so the selection still counts it: agreement among the rest is no majority.
                runs.append(CandidateRun(Candidate(index, "sample", "", "error", f"not generated: {error}")))
                continue
            candidate = Candidate(index=index, origin="greedy" if greedy else "sample", sql=_shown(reply))
            run = self._run_with_refinement(candidate, reply, question, schema_text, report, seen)
            for check in ctx.candidate_checks:
                run = check(run)
            runs.append(run)
        return runs

    def _run_with_refinement(
        self,
        candidate: Candidate,
        reply: ChatResponse,
        question: str,
        schema_text: str,
        report: VerificationReport,
        seen: dict[str, CandidateRun],
    ) -> CandidateRun:
        for attempt in range(self.options.max_refinements + 1):
            execution = self._execute_once(reply, seen)
            candidate.status, candidate.error = execution.status, execution.error
            candidate.checks = list(execution.checks)
            if execution.status == "ok" or attempt == self.options.max_refinements:
                break
            candidate.attempts.append(candidate.sql)
            messages: tuple[Message, ...] = refinement_messages(
                self.database.profile, schema_text, question, candidate.sql, execution.error or ""
            )
            request = ChatRequest(messages=messages, temperature=0.0, max_tokens=self.options.max_tokens,
                                  seed=candidate.index, purpose="refine")
            try:
                reply = self.ctx.call(request)
            except (LLMError, QuestionTimeoutError) as error:
                report.notes.append(f"candidate {candidate.index} could not be refined: {error}")
                break
            if _shown(reply) == candidate.sql:
                # The same request would get the same answer again: no progress, stop asking.
                candidate.attempts.pop()
                report.notes.append(f"candidate {candidate.index}: the refinement repeated the failing SQL")
                break
            candidate.sql = _shown(reply)
        run = CandidateRun(candidate, execution.result, execution.ordered)
        if execution.result is not None:
            candidate.row_count = execution.result.row_count
            candidate.truncated = execution.result.truncated
            seen[candidate.sql] = run
        return run

    def _execute_once(self, reply: ChatResponse, seen: dict[str, CandidateRun]) -> Execution:
        """Run the reply's SQL, reusing the result of an identical candidate that already ran; a reply cut
        off inside its SQL is not run."""
        sql = sql_of(reply)
        if sql is None and reply.truncated:
            return Execution(None, False, "error", CUT_OFF_ERROR.format(max_tokens=self.options.max_tokens))
        if sql is not None and sql in seen:
            earlier = seen[sql]
            return Execution(earlier.result, earlier.ordered, "ok", None, tuple(earlier.candidate.checks))
        return execute_candidate(self.ctx, sql, explain=self.options.verify)


def _shown(reply: ChatResponse) -> str:
    """What the report shows as a reply's SQL: the SQL found in it (even if cut off), else the whole text."""
    return extract_sql(reply.text) or reply.text.strip()
