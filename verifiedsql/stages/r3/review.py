"""R3 review (review, rebuttal, revision): reviewers whose professions the model derives from the schema and
the SQL review the selected answer's SQL and its result; the writer rebuts and revises; every revision is
run read-only and its result shown in the next round.

The loop stops when all reviewers approve, when the writer returns the SQL unchanged (the paper's
consensus test), after ``review_rounds`` rounds, or when the time budget runs out. A revision that fails to
run (error, unsafe, timeout) is set aside: the SQL reverts to the last one that ran, the next round reviews
that again and the writer is shown the failed revision and its error. The final SQL is therefore always
one that ran.

As a stage: the selected cluster's representative is reviewed; when the review ends on different SQL, that
SQL joins the pool as an extra candidate (origin ``review``) and the candidates are clustered and selected
again. The review candidate votes like any other; a tie among the largest clusters that the review
candidate's cluster is part of goes to it (the reviewers endorsed it), which is what lets a single-candidate
``review-only`` run answer with the reviewed SQL."""

from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import cycle, islice

from ...config import Options
from ...errors import LLMError, QuestionTimeoutError
from ...llm.base import ChatResponse
from ...report import (
    Candidate,
    Cluster,
    ProfessionsSource,
    Review,
    ReviewRound,
    ReviewVerdict,
)
from ...results import ResultSet
from ..base import Pool, Stage
from ..cluster import Selection, join_pool
from ..context import QuestionContext
from ..evidence import doubt_for
from ..generate import CandidateRun, execute_candidate, sql_of
from .prompts import (
    FALLBACK_PROFESSIONS,
    parse_professions,
    parse_verdict,
    profession_messages,
    rebuttal_of,
    reviewer_messages,
    writer_messages,
)

STOP_APPROVED = "all reviewers approved"
STOP_UNCHANGED = "the writer kept the SQL unchanged (consensus)"
STOP_ROUNDS = "stopped after review_rounds={rounds} rounds"
STOP_NO_SQL = "the writer's reply held no complete SQL; the SQL is kept"
STOP_TIME = "the time budget ran out"
STOP_WRITER = "the writer could not be reached: {error}"


@dataclass
class Reviewed:
    """The SQL the review ended on (always one that ran), its result and the review record."""

    sql: str
    result: ResultSet
    ordered: bool
    record: Review


class PeerReviewStage:
    """Pool stage (option ``review``): the selected SQL is reviewed by the R3 agents, and a revision that
    runs joins the pool as a ``review`` candidate; recorded in ``report.review``."""

    name = "review"

    def applies(self, options: Options, pool: Pool) -> bool:
        return options.review and pool.selection is not None

    def run(self, ctx: QuestionContext, pool: Pool) -> Pool:
        assert pool.selection is not None
        ctx.deadline.check("the start of the review stage")
        runs, clusters, selection = review_selection(PeerReview(ctx), pool.runs, pool.clusters, pool.selection)
        return replace(pool, runs=runs, clusters=clusters, selection=selection)


class PeerReview(Stage):
    """Runs the R3 review of one SQL for one question, within its time budget."""

    def __init__(self, ctx: QuestionContext) -> None:
        super().__init__(ctx)
        self.question = ctx.question
        self.schema_text = ctx.schema_text
        self.profile = ctx.profile

    def review(self, run: CandidateRun) -> Reviewed:
        """Review ``run`` (which ran) for up to ``review_rounds`` rounds."""
        assert run.result is not None
        sql, result, ordered = run.candidate.sql, run.result, run.ordered
        record = Review(reviewed=run.candidate.index, initial_sql=sql, final_sql=sql)
        try:
            record.professions, record.professions_source = self._professions(sql)
        except QuestionTimeoutError:
            record.stop = STOP_TIME
            return Reviewed(sql, result, ordered, record)
        failed: tuple[str, str] | None = None
        record.stop = STOP_ROUNDS.format(rounds=self.options.review_rounds)
        for number in range(1, self.options.review_rounds + 1):
            if self.deadline.expired:
                self.deadline.exhausted = True
                record.stop = STOP_TIME
                break
            current = ReviewRound(number=number, sql=sql)
            record.rounds.append(current)
            try:
                current.verdicts = [self._verdict(i, p, sql, result) for i, p in enumerate(record.professions)]
            except QuestionTimeoutError:
                record.stop = STOP_TIME
                break
            if all(v.verdict == "approve" for v in current.verdicts):
                record.stop = STOP_APPROVED
                break
            try:
                reply = self._write(sql, result, current.verdicts, failed)
            except QuestionTimeoutError:
                record.stop = STOP_TIME
                break
            except LLMError as error:
                record.stop = STOP_WRITER.format(error=error)
                break
            current.rebuttal = rebuttal_of(reply.text)
            revised = sql_of(reply)
            if revised is None:
                record.stop = STOP_NO_SQL
                break
            if revised == sql:
                record.stop = STOP_UNCHANGED
                break
            current.revision = revised
            execution = execute_candidate(self.ctx, revised, explain=True)
            current.status, current.error = execution.status, execution.error
            if execution.result is None:
                failed = (revised, execution.error or execution.status)
                continue
            current.row_count = execution.result.row_count
            sql, result, ordered, failed = revised, execution.result, execution.ordered, None
        record.final_sql = sql
        return Reviewed(sql, result, ordered, record)

    def _professions(self, sql: str) -> tuple[list[str], ProfessionsSource]:
        """``reviewers`` professions from the model, or the fallback list when its reply is unusable."""
        n = self.options.reviewers
        messages = profession_messages(self.profile, self.schema_text, self.question, sql, n)
        try:
            names = parse_professions(self.ask(messages, "review-professions").text, n)
        except LLMError as error:
            self.report.notes.append(f"review: no reviewer professions from the model ({error}); using the fallback")
            names = None
        if names is None:
            return list(islice(cycle(FALLBACK_PROFESSIONS), n)), "fallback"
        return names, "model"

    def _verdict(self, index: int, profession: str, sql: str, result: ResultSet) -> ReviewVerdict:
        messages = reviewer_messages(self.profile, profession, self.schema_text, self.question, sql, result)
        try:
            reply = self.ask(messages, "review", seed=index)
        except LLMError as error:
            return ReviewVerdict(index, profession, "unavailable", str(error)[:300])
        verdict, explanation = parse_verdict(reply.text)
        return ReviewVerdict(index, profession, verdict, explanation)  # type: ignore[arg-type]

    def _write(self, sql: str, result: ResultSet, verdicts: list[ReviewVerdict],
               failed: tuple[str, str] | None) -> ChatResponse:
        reviews = [(v.profession, v.verdict, v.explanation) for v in verdicts if v.verdict != "unavailable"]
        messages = writer_messages(self.profile, self.schema_text, self.question, sql, result, reviews, failed)
        return self.ask(messages, "review-revise")


def review_selection(
    reviewer: PeerReview, runs: list[CandidateRun], clusters: list[Cluster], selection: Selection
) -> tuple[list[CandidateRun], list[Cluster], Selection]:
    """Review the selection's representative; when the review ends on other SQL (which ran), add it as a
    ``review`` candidate and cluster and select again. Returns the (maybe) new runs, clusters, selection."""
    if selection.representative.result is None:
        return runs, clusters, selection
    reviewed = reviewer.review(selection.representative)
    reviewer.report.review = reviewed.record
    if not reviewed.record.changed:
        return runs, clusters, selection
    index = max(run.candidate.index for run in runs) + 1
    candidate = Candidate(index=index, origin="review", sql=reviewed.sql, checks=["parse", "explain", "run"],
                          row_count=reviewed.result.row_count, truncated=reviewed.result.truncated)
    candidate.attempts.append(reviewed.record.initial_sql)
    reviewed.record.candidate = index
    return join_pool(runs, CandidateRun(candidate, reviewed.result, reviewed.ordered), "the R3 review",
                     doubt_for(reviewer.ctx))
