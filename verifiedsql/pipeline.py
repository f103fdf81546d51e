"""The stage order for one question: the two ordered tuples of stages and the loop over them. This is the
only module that knows the whole pipeline, and the only one that imports more than one method package."""

from __future__ import annotations

import time
import unicodedata
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

from . import logs
from .config import Options
from .db.database import Database
from .errors import (
    EmptySchemaError,
    NoAnswerError,
    PromptTooLongError,
    QuestionError,
    QuestionTimeoutError,
    UnverifiedAnswerError,
)
from .guard.deadline import Deadline
from .llm.base import ChatModel
from .report import VerificationReport
from .results import ResultSet
from .stages import scope
from .stages.base import ContextStage, Pool, PoolStage
from .stages.calls import context_window
from .stages.cluster import cluster_runs, select_majority
from .stages.confidence import StopWhenSure, apply_calibration, calibration_for
from .stages.context import QuestionContext
from .stages.dpc import DualParadigmTesting
from .stages.evidence import DEFAULT_RULE as TIER_RULE
from .stages.evidence import doubt_for, gather_evidence, vote_count, vote_share
from .stages.generate import CandidateGenerator, CandidateRun, StopRule
from .stages.literals import LiteralChecks
from .stages.pvsql import ConstraintRepair, ModelProbing, ValueGrounding, VerifyAndRepair
from .stages.pvsql.stated import stated_constraints
from .stages.r3 import PeerReviewStage
from .stages.reforce import ConsensusEnforcement, SchemaCompression
from .stages.reforce.compress import over_window, prompt_chars
from .stages.sampling import StopWhenSettled
from .stages.vet import ExecutionTracing


@dataclass(frozen=True)
class Answer:
    """The chosen SQL, its rows (from the read-only run) and the report that explains the choice."""

    sql: str
    result: ResultSet
    report: VerificationReport


def clean_question(question: object, max_chars: int) -> str:
    """Validate a question: text, not empty, not longer than ``max_chars``; control characters dropped."""
    if isinstance(question, bytes):
        try:
            question = question.decode("utf-8")
        except UnicodeDecodeError as error:
            raise QuestionError("the question is not valid UTF-8 text; decode it before asking.") from error
    if not isinstance(question, str):
        raise QuestionError(f"a question must be text, not {type(question).__name__}.")
    cleaned = "".join(
        ch if ch in "\n\t" or unicodedata.category(ch)[0] != "C" else " " for ch in question
    ).strip()
    if not cleaned:
        raise QuestionError("the question is empty; ask something about the data.")
    if len(cleaned) > max_chars:
        raise QuestionError(
            f"the question has {len(cleaned)} characters, more than max_question_chars={max_chars}; "
            "shorten it or raise the option."
        )
    return cleaned


@contextmanager
def _timed(report: VerificationReport, stage: str, deadline: Deadline | None = None) -> Iterator[None]:
    """Add the block's time to ``report.timings[stage]``, and log its start and end on the stage's logger
    (``logs.stage``); with a ``deadline``, the stage must have time left."""
    if deadline is not None:
        deadline.check(f"the start of the {stage} stage")
    start = time.perf_counter()
    try:
        with logs.stage(stage):
            yield
    finally:
        report.timings[stage] = round(report.timings.get(stage, 0.0) + time.perf_counter() - start, 4)


@contextmanager
def _keeping(deadline: Deadline) -> Iterator[None]:
    """Within this block (a stage after the vote), running out of time ends the stage, not the question:
    the answer is then the best candidate that ran, marked timed out, or, with none, the
    ``QuestionTimeoutError`` that says what became of the candidates."""
    try:
        yield
    except QuestionTimeoutError:
        deadline.exhausted = True


def _nothing_ran(report: VerificationReport) -> str:
    """Where the time ran out when no candidate ran: what the report's candidates say, truthfully."""
    if not report.candidates:
        return "the end of generation, before any candidate could be run"
    statuses: dict[str, int] = {}
    for candidate in report.candidates:
        statuses[candidate.status] = statuses.get(candidate.status, 0) + 1
    counts = ", ".join(f"{n} {status}" for status, n in statuses.items())
    return f"the end of the question, with no candidate that ran successfully ({counts}; see the report)"


CONTEXT_STAGES: tuple[ContextStage, ...] = (SchemaCompression(), ValueGrounding(), ModelProbing(), LiteralChecks(),
                                          ConstraintRepair(), VerifyAndRepair())
"""Before generation, in this order; each adds prompt context or a candidate check when its option is on."""

POOL_STAGES: tuple[PoolStage, ...] = (ConsensusEnforcement(), ExecutionTracing(), PeerReviewStage(),
                                      DualParadigmTesting())
"""After the vote, in this order; each takes the candidate pool and returns it, when it applies."""


class Pipeline:
    """Reflect the schema -> context stages (compress, ground values, probe, literal checks, constraint repair,
    verify and repair)
    -> generate (self-refinement, candidate checks) -> cluster and vote -> pool stages (consensus, VET, review, DPC)
    -> answer (or ``NoDataError`` when the data cannot answer it: ``stages/scope.py``). A stage runs only
    when its option is on (DPC also on a tie that consensus left).

    The whole question runs within ``question_timeout_s``: the question's context caps every model call
    and query by the time left, and the stages stop when it is gone. The answer is then the best candidate
    that ran, reported ``unverified``; with none, ``QuestionTimeoutError``."""

    def __init__(self, database: Database, llm: ChatModel, options: Options,
                 context_stages: tuple[ContextStage, ...] = CONTEXT_STAGES,
                 pool_stages: tuple[PoolStage, ...] = POOL_STAGES) -> None:
        self.database = database
        self.llm = llm
        self.options = options
        self.context_stages = context_stages
        self.pool_stages = pool_stages
        self.calibration = calibration_for(options, llm.name)

    def answer(self, question: object) -> Answer:
        text = clean_question(question, self.options.max_question_chars)
        report = VerificationReport(question=text, dialect=self.database.profile.name)
        deadline = Deadline(self.options.question_timeout_s)
        try:
            with self.database.statements():  # the question's statements share their read-only connections
                answer = self._answer(text, report, deadline)
        except BaseException as error:
            if isinstance(error, QuestionTimeoutError):
                report.timed_out = True
                error.report = report
            logs.question(report, deadline.elapsed(), error)  # the question's one INFO line, however it ends
            raise
        logs.question(report, deadline.elapsed())
        return answer

    def _open(self, text: str, report: VerificationReport, deadline: Deadline) -> QuestionContext:
        """The question's context, on a reflected schema that has tables."""
        schema = self.database.reflect()
        report.warnings.extend(self.database.warnings)
        if not schema.tables:
            where = f"schema {schema.namespace!r}" if schema.namespace else "the default schema"
            raise EmptySchemaError(
                f"found no tables in {where} of {self.database.engine.url.render_as_string()}; check "
                "the URL (a new SQLite path is an empty database) or pass schema=<name>."
            )
        ctx = QuestionContext.open(text, self.database, self.llm, self.options, report, deadline, schema)
        if ctx.beyond_windows:  # far larger than any model's window: compressed to the known window, else the budget
            SchemaCompression().fit_window(ctx, context_window(self.llm), "the schema is far larger than any model's "
                                                                          f"window: {len(schema.tables):,} tables")
        return ctx

    def _answer(self, text: str, report: VerificationReport, deadline: Deadline) -> Answer:
        with _timed(report, "context", deadline):
            ctx = self._open(text, report, deadline)
        for stage in self.context_stages:  # the context stops each one's model calls and queries in time
            if stage.enabled(self.options):
                with _timed(report, stage.name):
                    stage.run(ctx)
        with _timed(report, "generate", deadline):
            runs = self._generate(ctx)
        with _timed(report, "select"):
            clusters = cluster_runs(runs)
            pool = Pool(runs, clusters, select_majority(runs, clusters, doubt_for(ctx)))
        for pool_stage in self.pool_stages:  # out of time, a stage ends and the pool so far stands
            if pool_stage.applies(self.options, pool):
                with _timed(report, pool_stage.name), _keeping(deadline):
                    pool = pool_stage.run(ctx, pool)
        report.candidates = [run.candidate for run in pool.runs]
        report.clusters = pool.clusters
        if pool.selection is None or not pool.answered:
            report.reason = "no candidate could be run"
            if deadline.exhausted or deadline.expired:
                raise deadline.error(_nothing_ran(report))
            scope.check_unanswered(ctx)  # NoDataError when no table or column could answer it
            raise NoAnswerError(
                "none of the generated queries ran successfully; see the report's candidates for the "
                "errors, rephrase the question, or use a larger model.",
                report,
            )
        answer = self._finish(ctx, pool, deadline)
        scope.check_answer(ctx)  # NoDataError when the answer reads no table (or the model says no data)
        self._require(answer)
        return answer

    def _generate(self, ctx: QuestionContext) -> list[CandidateRun]:
        """The candidates. With ``compress_schema`` off, a prompt longer than the model's context window gets
        the schema compressed to fit it: before the first call where the window is known (the embedded model's),
        else after the model refuses the prompt (``PromptTooLongError``), and the candidates are then written
        once more. A prompt that still does not fit raises ``PromptTooLongError``."""
        stop = self._stop_rule(ctx)
        compression, window = SchemaCompression(), context_window(self.llm)
        if not self.options.compress_schema and window is not None and over_window(ctx, window):
            with _timed(ctx.report, compression.name):
                compression.fit_window(ctx, window, f"the prompt is about {prompt_chars(ctx) // 2:,} tokens, over "
                                                    f"the window of {window:,} less the answer's "
                                                    f"{self.options.max_tokens}")
        try:
            return CandidateGenerator(ctx).generate(stop=stop)
        except PromptTooLongError as error:
            if self.options.compress_schema or ctx.report.schema_compression is not None:
                raise
            with _timed(ctx.report, compression.name):
                compression.fit_window(ctx, error.context_tokens, f"the model refused the prompt: {error}")
            return CandidateGenerator(ctx).generate(stop=stop)

    def _stop_rule(self, ctx: QuestionContext) -> StopRule | None:
        """What may end the drawing of candidates early: the calibrated greedy probability (``sure_stop``, where
        the model's fit has a stop threshold), else the settled vote (``adaptive``), else nothing."""
        if self.options.sure_stop and self.calibration is not None and self.calibration.stop is not None:
            return StopWhenSure(ctx, self.calibration, stated_constraints)
        return StopWhenSettled(self.options.adaptive_confidence) if self.options.adaptive else None

    def _require(self, answer: Answer) -> None:
        """``UnverifiedAnswerError`` when the answer's tier is below the ``require`` option."""
        required = self.options.require
        if required is not None and not answer.report.at_least(required):
            raise UnverifiedAnswerError(
                f"the answer is {answer.report.confidence!r}, below require={required!r} ({answer.report.reason}); "
                "see the error's report for the evidence, or lower the requirement.",
                answer.result, answer.report)

    def _finish(self, ctx: QuestionContext, pool: Pool, deadline: Deadline) -> Answer:
        """The answer from the selected candidate, with its evidence and tier; unverified when the time budget
        cut any work short."""
        report, selection = ctx.report, pool.selection
        assert selection is not None
        result = selection.representative.result
        assert result is not None
        report.sql = selection.representative.candidate.sql
        report.vote = selection.vote
        report.reason = selection.reason
        report.truncated = result.truncated
        if result.truncated:
            cap = (f"row_cap={self.options.row_cap} rows" if result.row_count >= self.options.row_cap
                   else f"max_result_bytes={self.options.max_result_bytes} bytes")
            report.notes.append(f"the answer was cut at {cap}")
        if deadline.exhausted:  # the lowest tier: a timed-out answer never claims a vote it may not have had
            report.timed_out = True
            report.vote = "unverified"
            report.reason += "; the time budget ran out, so not every check was done"
            report.notes.append(
                f"time budget exhausted after {deadline.elapsed():.1f} s (question_timeout_s="
                f"{deadline.budget_s:g}): answered with a candidate that ran; the work still to do was skipped"
            )
        report.evidence = gather_evidence(ctx, pool, timed_out=report.timed_out)
        report.confidence = TIER_RULE.tier_of(report.evidence, vote_share(pool), vote_count(pool))
        apply_calibration(ctx, pool, self.calibration, stated_constraints)
        return Answer(sql=report.sql, result=result, report=report)
