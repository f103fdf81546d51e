"""Verifiable execution tracing (after VET, section 3): the question is answered in small pandas steps, each
run in the sandbox on the candidate tables' real rows and checked before the next; SQL is then rebuilt
from the verified trace and kept only when its result equals the trace's last output and the question it
answers reads like the one asked.

1. Candidate column set and data (``vet_data``): bounded read-only fetches of the candidate tables.
2. Steps, at most ``vet_steps``: prints are dropped and an unnamed output becomes ``result``
   (``vet_steps.with_result``); a step is rejected before it runs when it reads a table or column outside
   the candidate set, and after it runs when it fails or breaks a sanity rule (``vet_steps``); each step
   gets at most ``vet_step_repairs`` repairs. After each accepted step a zero-temperature YES/NO check
   asks whether the last output already answers the question.
3. SQL reconstruction from the trace (at most ``SQL_ATTEMPTS`` tries), run through both safety layers. The
   comparison with the trace runs on the rows the trace saw: on the database itself, or, when a table was
   cut at ``vet_max_rows``, on a scratch copy of those rows.
4. Question reconstruction: the model states the question the SQL answers; its similarity to the asked
   question must reach ``vet_similarity`` (``verifiedsql.stages.vet.similarity``; reported as not run without it).

As a stage, an accepted SQL joins the pool as a ``vet`` candidate that votes like the others and wins the
ties it is part of. Model-written Python only ever runs in the bubblewrap sandbox: without one the stage
is skipped and says so."""

from __future__ import annotations

from dataclasses import dataclass, replace

from ...config import Options
from ...db.schema import render_table
from ...errors import LLMError, QueryError, QueryTimeoutError, SandboxError, SliceError
from ...guard.sandbox import INCIDENT
from ...llm.replies import error_tail, extract_python, follow_up, yes_no
from ...llm.rows import render_dataframe, render_rows
from ...report import Candidate, Cluster, Trace, TraceStep
from ...results import ResultSet, results_equivalent
from ..base import Pool, Stage
from ..cluster import Selection, join_pool
from ..common.scratch import TIMEOUT_S as SCRATCH_TIMEOUT_S
from ..common.scratch import open_scratch
from ..context import QuestionContext
from ..evidence import doubt_for
from ..generate import CandidateRun, Execution, execute_candidate, sql_of
from .data import TraceData, candidate_tables, load_trace_data
from .prompts import (
    question_messages,
    restated_question,
    sql_messages,
    sql_retry_feedback,
    step_messages,
    step_repair_feedback,
    stop_messages,
)
from .similarity import Similarity, offline_similarity, unavailable_reason
from .steps import outside_columns, outside_tables, rows_in, sanity_problem, step_shape, with_result

SQL_ATTEMPTS = 3
# after every step program (not shown to the model): an array or list output is one column, not one cell
AS_COLUMN = ("if isinstance(result, (np.ndarray, list, tuple, set, pd.Index)):\n"
             "    result = pd.DataFrame({'result': list(result)})")
PREVIEW_ROWS = 10
NO_CODE = "the reply holds no ```python code block"
REPEATED = "the repair repeated the code that was turned down"


@dataclass
class StepOutput:
    """An accepted step: its code and its output (the ``result`` it assigned)."""

    code: str
    result: ResultSet

    def preview(self) -> str:
        return f"{render_rows(self.result.columns, self.result.rows, PREVIEW_ROWS)}\n({self.result.row_count} rows)"


@dataclass
class Traced:
    """An accepted reconstruction: the SQL, its result on the database and whether it orders its rows."""

    sql: str
    result: ResultSet
    ordered: bool


class ExecutionTracing:
    """Pool stage (option ``vet``): the question is traced step by step in pandas and a trace-verified SQL
    joins the pool as a ``vet`` candidate; recorded in ``report.trace``."""

    name = "vet"

    def applies(self, options: Options, pool: Pool) -> bool:
        return options.vet

    def run(self, ctx: QuestionContext, pool: Pool) -> Pool:
        ctx.deadline.check("the start of the VET stage")
        runs, clusters, selection = trace_selection(ExecutionTracer(ctx), ctx.question, pool.runs, pool.clusters,
                                                    pool.selection)
        return replace(pool, runs=runs, clusters=clusters, selection=selection)


class ExecutionTracer(Stage):
    """Runs VET for one question within its time budget and records it in ``report.trace``."""

    def __init__(self, ctx: QuestionContext, similarity: Similarity | None = None,
                 use_similarity: bool = True) -> None:
        super().__init__(ctx)
        self.sandbox = ctx.sandbox
        self.similarity = similarity if similarity is not None or not use_similarity else offline_similarity()

    def trace(self, question: str) -> Traced | None:
        """The accepted SQL, or None (the report's trace says why)."""
        record = Trace()
        self.report.trace = record
        if not self.sandbox.available():
            record.outcome = "skipped"
            record.reason = ("no sandbox: bubblewrap (bwrap) is missing or cannot create namespaces here, so "
                             "model-written code is not run")
            return None
        try:
            data = load_trace_data(self.ctx, candidate_tables(self.ctx.schema, question), self.options.vet_max_rows)
        except (QueryError, QueryTimeoutError, SliceError) as error:
            record.reason = f"the candidate tables could not be read: {error}"
            return None
        record.columns, record.truncated = data.column_set(), list(data.truncated)
        try:
            steps = self._steps(question, data, record)
        except (LLMError, SandboxError) as error:
            record.reason = f"the trace stopped: {error}"
            return None
        if not steps:
            record.reason = "no step was accepted"
            return None
        try:
            return self._reconstruct(question, data, steps, record)
        except LLMError as error:
            record.reason = f"the SQL could not be reconstructed: {error}"
            return None

    # ---------------------------------------------------------------------------------------- steps

    def _steps(self, question: str, data: TraceData, record: Trace) -> list[StepOutput]:
        tables_text = "\n\n".join(render_dataframe(t, [str(d) for d in data.frames[t.name].dtypes],
                                                   data.rows[t.name][:3], count_note="; 3 shown")
                                  for t in data.tables)
        accepted: list[StepOutput] = []
        record.stop = f"stopped after vet_steps={self.options.vet_steps} steps"
        for number in range(1, self.options.vet_steps + 1):
            self.deadline.check(f"step {number} of the execution trace")
            step = TraceStep(number=number)
            record.steps.append(step)
            output = self._step(question, tables_text, data, accepted, step)
            if output is None:
                record.stop = f"step {number} was not accepted after {len(step.problems)} tries"
                break
            accepted.append(output)
            shown = [(s.code, s.preview()) for s in accepted]
            reply = self.ask(stop_messages(question, shown), "vet-stop", max_tokens=4)
            verdict = yes_no(reply.text)
            step.sufficient = "YES" if verdict else "NO" if verdict is False else "unclear"
            if verdict:
                record.stop = f"the stop check answered YES after step {number}"
                break
        return accepted

    def _step(self, question: str, tables_text: str, data: TraceData, accepted: list[StepOutput],
              step: TraceStep) -> StepOutput | None:
        first = step_messages(tables_text, question, [(s.code, s.preview()) for s in accepted])
        prompt, previous = first, None
        for _ in range(self.options.vet_step_repairs + 1):
            reply = self.ask(prompt, "vet-step")
            code = extract_python(reply.text)
            code = with_result(code) if code else code
            if code is not None and code == previous:
                step.problems.append(REPEATED)
                return None
            previous = code
            problem, result = self._try(code, data, accepted, step) if code else (NO_CODE, None)
            if result is not None:
                step.status = "accepted"
                return StepOutput(code or "", result)
            step.problems.append(problem or "")
            prompt = follow_up(first, reply.text, step_repair_feedback(step.number, problem or ""))
        return None

    def _try(self, code: str, data: TraceData, accepted: list[StepOutput],
             step: TraceStep) -> tuple[str | None, ResultSet | None]:
        """Check, run and check again one step; (problem, None) or (None, its output)."""
        step.code = code
        try:
            shape = step_shape(code)
        except SyntaxError as error:
            return f"SyntaxError: {error}", None
        step.kind = shape.kind
        schema = self.database.reflect()
        tables = outside_tables(shape, data.frames, [t.name for t in schema.tables])
        columns = outside_columns(shape, [c for cols in data.column_set().values() for c in cols],
                                  [c.name for t in schema.tables for c in t.columns])
        if tables or columns:
            names = ", ".join(tables + columns)
            return f"it uses {names}, outside the candidate tables and columns: use only the DataFrames listed", None
        program = "\n\n".join([*(s.code for s in accepted), code, AS_COLUMN])
        self.deadline.check(f"running step {step.number} of the execution trace in the sandbox")
        run = self.sandbox.within(self.deadline.remaining()).run_pandas(program, data.frames)
        if not run.ok:
            failure = run.error or "no error message"
            labelled = f"{INCIDENT} ({run.incident}): {failure}" if run.incident else failure
            return f"it failed: {error_tail(labelled)}", None
        result = ResultSet(tuple(run.columns), tuple(tuple(row) for row in run.rows))
        step.rows_in = rows_in(shape, accepted[-1].result.row_count if accepted else None, data.row_counts())
        step.rows_out = result.row_count
        problem = sanity_problem(shape, step.rows_in, result.row_count)
        return (problem, None) if problem else (None, result)

    # ------------------------------------------------------------------------------- reconstruction

    def _reconstruct(self, question: str, data: TraceData, steps: list[StepOutput], record: Trace) -> Traced | None:
        schema_text = "\n\n".join(render_table(t) for t in data.tables)
        shown = [(s.code, s.preview()) for s in steps]
        first = sql_messages(self.ctx.profile, schema_text, question, shown)
        prompt = first
        target = steps[-1].result
        for _ in range(SQL_ATTEMPTS):
            self.deadline.check("reconstructing SQL from the execution trace")
            reply = self.ask(prompt, "vet-sql")
            sql = sql_of(reply)
            record.sql = sql
            execution = execute_candidate(self.ctx, sql, explain=True)
            problem = self._compare(sql, execution, target, data)
            if problem is None:
                assert sql is not None and execution.result is not None
                record.consistent = True
                return self._check_question(question, schema_text, Traced(sql, execution.result, execution.ordered),
                                            record)
            record.sql_problems.append(problem)
            prompt = follow_up(first, reply.text, sql_retry_feedback(problem))
        record.outcome = "rejected"
        record.reason = f"no reconstructed SQL returned the trace's last output in {SQL_ATTEMPTS} tries"
        return None

    def _compare(self, sql: str | None, execution: Execution, target: ResultSet, data: TraceData) -> str | None:
        """Why the SQL does not match the trace's output, or None when it does (dual-track consistency)."""
        if execution.result is None:
            return f"The query did not run: {execution.error or execution.status}"
        seen = execution.result
        if data.truncated:  # the trace saw only part of these tables: compare on exactly those rows
            try:
                timeout_s = self.ctx.seconds_for(SCRATCH_TIMEOUT_S)
                with open_scratch(self.database, data.slice, timeout_s=timeout_s) as scratch:
                    scratch.load(data.rows)
                    seen = scratch.run(sql or "")
            except (QueryError, QueryTimeoutError, SliceError) as error:
                return f"The query could not be compared on the rows the trace saw: {error}"
        if results_equivalent(seen, target):
            return None
        return (f"The query returned\n{render_rows(seen.columns, seen.rows, PREVIEW_ROWS)}\n({seen.row_count} rows)"
                f"\nbut the last step's output is\n{render_rows(target.columns, target.rows, PREVIEW_ROWS)}"
                f"\n({target.row_count} rows).")

    def _check_question(self, question: str, schema_text: str, traced: Traced, record: Trace) -> Traced | None:
        """Semantic consistency: the question the SQL answers must be close enough to the one asked."""
        if self.similarity is None:
            record.similarity_check = unavailable_reason()
            return _accept(traced, record, "the SQL's result equals the trace's last output")
        result_text = render_rows(traced.result.columns, traced.result.rows, PREVIEW_ROWS)
        reply = self.ask(question_messages(schema_text, traced.sql, result_text), "vet-question", max_tokens=96)
        restated = restated_question(reply.text)
        record.reconstructed_question = restated
        record.similarity = round(self.similarity.similarity(question, restated), 4) if restated else 0.0
        if record.similarity < self.options.vet_similarity:
            record.similarity_check = "failed"
            record.outcome = "rejected"
            record.reason = (f"the SQL matches the trace, but the question it answers ({restated!r}) is too far "
                             f"from the one asked (similarity {record.similarity} < {self.options.vet_similarity})")
            return None
        record.similarity_check = "passed"
        return _accept(traced, record, f"the SQL's result equals the trace's last output and the question it "
                                       f"answers is similar to the one asked ({record.similarity})")


def _accept(traced: Traced, record: Trace, reason: str) -> Traced:
    record.outcome, record.reason = "accepted", reason
    return traced


def trace_selection(tracer: ExecutionTracer, question: str, runs: list[CandidateRun], clusters: list[Cluster],
                    selection: Selection | None) -> tuple[list[CandidateRun], list[Cluster], Selection | None]:
    """Trace the question; an accepted SQL joins the pool as a ``vet`` candidate (see the module docstring)."""
    traced = tracer.trace(question)
    if traced is None:
        return runs, clusters, selection
    index = max((run.candidate.index for run in runs), default=-1) + 1
    candidate = Candidate(index=index, origin="vet", sql=traced.sql, checks=["parse", "explain", "run", "trace"],
                          row_count=traced.result.row_count, truncated=traced.result.truncated)
    assert tracer.report.trace is not None
    tracer.report.trace.candidate = index
    return join_pool(runs, CandidateRun(candidate, traced.result, traced.ordered), "the verified execution trace",
                     doubt_for(tracer.ctx))
