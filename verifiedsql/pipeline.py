"""The stage order for one question. This is the only module that knows the whole pipeline."""

from __future__ import annotations

import time
import unicodedata
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

from .config import Options
from .database import Database
from .deadline import Deadline
from .errors import EmptySchemaError, NoAnswerError, QuestionError, QuestionTimeoutError
from .llm.base import ChatModel
from .llm.prompts import with_context
from .report import VerificationReport
from .results import ResultSet
from .schema import render_schema
from .stages.cluster import Selection, cluster_runs, select_majority
from .stages.reforce.compress import compress_schema
from .stages.reforce.consensus import ConsensusEnforcer
from .stages.pvsql.constraints import extract_constraints
from .stages.dpc.stage import DualParadigmSelector
from .stages.generate import CandidateGenerator
from .stages.pvsql.grounding import ground_values, render_matches
from .stages.pvsql.probe import Prober
from .stages.r3.review import PeerReview, review_selection
from .stages.pvsql.verify import Verifier
from .stages.vet.stage import ExecutionTracer, trace_selection


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
    """Add the block's time to ``report.timings[stage]``; with a ``deadline``, the stage must have time left."""
    if deadline is not None:
        deadline.check(f"the start of the {stage} stage")
    start = time.perf_counter()
    try:
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


def _time_left(deadline: Deadline) -> bool:
    """True when there is time for another stage; else the deadline is marked exhausted (work is skipped)."""
    if deadline.expired:
        deadline.exhausted = True
        return False
    return True


def _nothing_ran(report: VerificationReport) -> str:
    """Where the time ran out when no candidate ran: what the report's candidates say, truthfully."""
    if not report.candidates:
        return "the end of generation, before any candidate could be run"
    statuses: dict[str, int] = {}
    for candidate in report.candidates:
        statuses[candidate.status] = statuses.get(candidate.status, 0) + 1
    counts = ", ".join(f"{n} {status}" for status, n in statuses.items())
    return f"the end of the question, with no candidate that ran successfully ({counts}; see the report)"


class Pipeline:
    """Context [compressed] -> [ground values] -> [probe] -> generate (self-refinement, [verify and repair])
    -> cluster and select -> [consensus: explore, regenerate, re-vote] -> [VET execution trace] -> [R3 review]
    -> [dual-paradigm test] -> answer. Bracketed stages run only when their option is on.

    The whole question runs within ``question_timeout_s``: every model call's timeout is capped by the time
    left, and the stages stop when it is gone. The answer is then the best candidate that ran, reported
    ``unverified``; with none, ``QuestionTimeoutError``."""

    def __init__(self, database: Database, llm: ChatModel, options: Options) -> None:
        self.database = database
        self.llm = llm
        self.options = options

    def answer(self, question: object) -> Answer:
        text = clean_question(question, self.options.max_question_chars)
        report = VerificationReport(question=text, dialect=self.database.profile.name)
        try:
            return self._answer(text, report, Deadline(self.options.question_timeout_s))
        except QuestionTimeoutError as error:
            report.timed_out = True
            error.report = report
            raise

    def _answer(self, text: str, report: VerificationReport, deadline: Deadline) -> Answer:
        llm = deadline.bind(self.llm)
        with _timed(report, "context", deadline):
            schema = self.database.reflect()
            report.warnings.extend(self.database.warnings)
            if not schema.tables:
                where = f"schema {schema.namespace!r}" if schema.namespace else "the default schema"
                raise EmptySchemaError(
                    f"found no tables in {where} of {self.database.engine.url.render_as_string()}; check "
                    "the URL (a new SQLite path is an empty database) or pass schema=<name>."
                )
            if self.options.compress_schema:
                compressed = compress_schema(schema, text, self.options.prompt_budget_tokens, llm, report)
                schema_text, report.schema_compression = compressed.text, compressed.figures()
            else:
                schema_text = render_schema(schema)
        if self.options.ground_values:
            with _timed(report, "ground", deadline):
                report.value_matches = ground_values(self.database, schema, text)
                schema_text = with_context(schema_text, render_matches(report.value_matches))
        if self.options.probe:
            with _timed(report, "probe", deadline):
                prober = Prober(llm, self.database, self.options, report, deadline)
                schema_text = with_context(schema_text, prober.explore(text, schema, schema_text))
        verifier = None
        if self.options.verify:
            constraints = extract_constraints(text)
            report.constraints = [c.describe() for c in constraints]
            verifier = Verifier(llm, self.database, self.options, text, schema_text, constraints, report, deadline)
        with _timed(report, "generate", deadline):
            generator = CandidateGenerator(llm, self.database, self.options, deadline)
            runs = generator.generate(text, schema_text, report, verifier.verify if verifier else None)
        with _timed(report, "select"):
            clusters = cluster_runs(runs)
            selection = select_majority(runs, clusters)
        if self.options.consensus:  # a tie or no candidate that ran: explore, regenerate, re-vote, then DPC
            with _timed(report, "consensus"), _keeping(deadline):
                enforcer = ConsensusEnforcer(llm, self.database, self.options, report, deadline)
                runs, clusters, selection = enforcer.enforce(text, schema_text, runs, clusters, selection,
                                                             verifier.verify if verifier else None)
        if self.options.vet and _time_left(deadline):  # VET: a trace-verified SQL may join the pool as "vet"
            with _timed(report, "vet"), _keeping(deadline):
                tracer = ExecutionTracer(llm, self.database, self.options, report, deadline)
                runs, clusters, selection = trace_selection(tracer, text, runs, clusters, selection)
        if self.options.review and selection is not None and _time_left(deadline):
            # R3: the reviewed SQL may join the pool as a "review" candidate
            with _timed(report, "review"), _keeping(deadline):
                reviewer = PeerReview(llm, self.database, self.options, text, schema_text, report, deadline)
                runs, clusters, selection = review_selection(reviewer, runs, clusters, selection)
        if self.options.dpc and selection is not None and report.dpc is None:
            with _timed(report, "dpc"), _keeping(deadline):
                selector = DualParadigmSelector(llm, self.database, self.options, report, deadline=deadline)
                selection = selector.select(text, runs, clusters, selection)
        report.candidates = [run.candidate for run in runs]
        report.clusters = clusters
        if selection is None or selection.representative.result is None:
            report.reason = "no candidate could be run"
            if deadline.exhausted or deadline.expired:
                raise deadline.error(_nothing_ran(report))
            raise NoAnswerError(
                "none of the generated queries ran successfully; see the report's candidates for the "
                "errors, rephrase the question, or use a larger model.",
                report,
            )
        return self._finish(report, selection, deadline)

    def _finish(self, report: VerificationReport, selection: Selection, deadline: Deadline) -> Answer:
        """The answer from the selected candidate; unverified when the time budget cut any work short."""
        result = selection.representative.result
        assert result is not None
        report.sql = selection.representative.candidate.sql
        report.confidence = selection.confidence
        report.reason = selection.reason
        report.truncated = result.truncated
        if result.truncated:
            cap = (f"row_cap={self.options.row_cap} rows" if result.row_count >= self.options.row_cap
                   else f"max_result_bytes={self.options.max_result_bytes} bytes")
            report.notes.append(f"the answer was cut at {cap}")
        if deadline.exhausted:  # the lowest tier: a timed-out answer never claims a vote it may not have had
            report.timed_out = True
            report.confidence = "unverified"
            report.reason += "; the time budget ran out, so not every check was done"
            report.notes.append(
                f"time budget exhausted after {deadline.elapsed():.1f} s (question_timeout_s="
                f"{deadline.budget_s:g}): answered with a candidate that ran; the work still to do was skipped"
            )
        return Answer(sql=report.sql, result=result, report=report)
