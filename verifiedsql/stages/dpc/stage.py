"""Dual-paradigm consistency selection (DPC): when the candidates disagree, the representatives of the two
largest result clusters (champion and challenger) are run on a minimal distinguishing database (MDD) on
which their results differ, the model solves the question independently in pandas over the same tables
(in the sandbox), and the candidate whose result agrees better with that solution wins.

Order: slice (lineage, model fallback) -> scratch database + dry run -> MDD (deterministic search, model
tester fallback) -> solver (``dpc_votes`` attempts vote) -> decision. Any step that fails leaves the
champion in place, and the report says which step and why. The model's pandas code never runs outside
the sandbox; with no sandbox the test is skipped.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from ...config import Options
from ...db.schema import Schema
from ...errors import QuestionTimeoutError, VerifiedSQLError
from ...report import Cluster, DualParadigmTest
from ..base import Pool, Stage
from ..cluster import Selection
from ..common.scratch import TIMEOUT_S as SCRATCH_TIMEOUT_S
from ..common.scratch import open_scratch
from ..common.slicer import scratch_dialect_for, slice_schema
from ..common.slices import SchemaSlice
from ..context import QuestionContext
from ..generate import CandidateRun
from .data import MDD
from .mdd import find_mdd
from .mdd_model import synthesize_mdd
from .model_slicer import model_slice
from .softf1 import bipartite_soft_f1
from .solver import solve

SHOWN_ROWS = 30  # rows of each table or result copied into the report
MDD_SEARCH_S = 5.0  # the deterministic search's own time budget (shortened to the question's time left)


@dataclass(frozen=True)
class Contenders:
    champion: CandidateRun
    challenger: CandidateRun


def _representative(cluster: Cluster, by_index: dict[int, CandidateRun]) -> CandidateRun:
    members = [by_index[i] for i in cluster.members]
    return min(members, key=lambda r: (len(r.candidate.sql), r.candidate.index))


def contenders(runs: Sequence[CandidateRun], clusters: Sequence[Cluster], selection: Selection) -> Contenders | None:
    """The majority's pick and the shortest SQL of the largest other cluster; None with one cluster."""
    others = [c for c in clusters if c.index != selection.cluster.index]
    if not others:
        return None
    by_index = {run.candidate.index: run for run in runs}
    second = max(others, key=lambda c: (len(c.members), -c.index))
    return Contenders(selection.representative, _representative(second, by_index))


def _rows(rows: Sequence[Sequence[Any]]) -> list[list[Any]]:
    return [list(row) for row in rows[:SHOWN_ROWS]]


def _samples(schema: Schema, slice_: SchemaSlice) -> dict[str, dict[str, tuple[Any, ...]]]:
    """Real sample values per slice table and column (from reflection)."""
    found: dict[str, dict[str, tuple[Any, ...]]] = {}
    for table in slice_.tables:
        source = schema.table(table.name)
        if source is not None:
            found[table.name] = {c.name: c.samples for c in source.columns if c.samples}
    return found


class DualParadigmTesting:
    """Pool stage (option ``dpc``, or a tie that consensus enforcement left): the champion and the
    challenger are run on a minimal distinguishing database and compared with a pandas solution; recorded
    in ``report.dpc``. A tie left by consensus that the test cannot decide makes the answer unverified."""

    name = "dpc"

    def applies(self, options: Options, pool: Pool) -> bool:
        return (options.dpc or pool.tie_unresolved) and pool.selection is not None

    def run(self, ctx: QuestionContext, pool: Pool) -> Pool:
        assert pool.selection is not None
        selection = DualParadigmSelector(ctx).select(ctx.question, pool.runs, pool.clusters, pool.selection)
        test = ctx.report.dpc
        if pool.tie_unresolved and (test is None or test.status != "decided"):
            why = test.reason if test is not None else "it did not run"
            selection = replace(selection, vote="unverified",
                                reason=f"{selection.reason}; consensus not reached: the tie remained after column "
                                       f"exploration and the dual-paradigm test could not decide ({why})")
        return pool.with_selection(selection)


class DualParadigmSelector(Stage):
    """Runs the DPC test for one question, within its time budget, and records it in ``report.dpc``; when
    the time runs out the champion stands."""

    def __init__(self, ctx: QuestionContext) -> None:
        super().__init__(ctx)
        self.sandbox = ctx.sandbox

    def select(self, question: str, runs: Sequence[CandidateRun], clusters: Sequence[Cluster],
               selection: Selection) -> Selection:
        """The selection to answer with: ``selection`` unless the test chose the challenger."""
        pair = contenders(runs, clusters, selection)
        if pair is None:
            self.report.dpc = DualParadigmTest("unanimous", "one result cluster: nothing to tell apart")
            return selection
        test = DualParadigmTest("fallback", champion=pair.champion.candidate.index,
                                challenger=pair.challenger.candidate.index, winner=pair.champion.candidate.index)
        self.report.dpc = test
        calls_before, start = len(self.report.llm_calls), time.perf_counter()
        try:
            chose_challenger = self._test(question, pair, test)
        except QuestionTimeoutError as error:
            test.reason, chose_challenger = f"stopped: {error}", False
        finally:
            test.seconds = round(time.perf_counter() - start, 4)
            test.tokens = sum(c.prompt_tokens + c.completion_tokens for c in self.report.llm_calls[calls_before:])
        if not chose_challenger:
            if test.status == "decided":
                return replace(selection, vote="distinguished",
                               reason=f"{selection.reason}; the dual-paradigm test kept it ({test.reason})")
            return selection
        by_index = {run.candidate.index: run for run in runs}
        cluster = next(c for c in clusters if pair.challenger.candidate.index in c.members)
        return Selection(cluster, by_index[pair.challenger.candidate.index], "distinguished",
                         f"the dual-paradigm test chose a minority result over the majority ({test.reason})")

    def _test(self, question: str, pair: Contenders, test: DualParadigmTest) -> bool:
        """True when the challenger wins; ``test`` is filled in as the steps go."""
        sql_a, sql_b = pair.champion.candidate.sql, pair.challenger.candidate.sql
        schema = self.ctx.schema
        self.deadline.check("the dual-paradigm test's slice")
        slice_ = self._slice(question, [sql_a, sql_b], schema, test)
        if slice_ is None:
            return False
        test.slice_tables = {t.name: [c.name for c in t.columns] for t in slice_.tables}
        test.slice_method, test.transpiled = slice_.method, slice_.transpiled
        try:
            with open_scratch(self.database, slice_, timeout_s=self.ctx.seconds_for(SCRATCH_TIMEOUT_S)) as scratch:
                scratch.dry_run([sql_a, sql_b])
                self.deadline.check("the search for a distinguishing database")
                mdd = self._mdd(scratch, slice_, schema, question, sql_a, sql_b)
        except QuestionTimeoutError:
            raise
        except VerifiedSQLError as error:
            test.reason = f"the scratch database failed: {error}"
            return False
        if mdd is None:
            test.reason = "no distinguishing database was found"
            return False
        test.mdd_method, test.mdd_tries = mdd.method, mdd.tries
        test.mdd_tables = {name: _rows(rows) for name, rows in mdd.tables.items()}
        test.champion_result, test.challenger_result = _rows(mdd.result_a.rows), _rows(mdd.result_b.rows)
        return self._decide(question, slice_, mdd, test)

    def _slice(self, question: str, sqls: list[str], schema: Schema, test: DualParadigmTest) -> SchemaSlice | None:
        scratch_dialect = scratch_dialect_for(self.database.profile)
        try:
            return slice_schema(sqls, schema, self.database.profile, scratch_dialect)
        except VerifiedSQLError as error:
            self.report.notes.append(f"dpc: lineage slicing failed ({error}); asking the model")
        found = model_slice(self.llm, self.report, schema, self.database.profile, sqls, question, scratch_dialect)
        if found is None:
            test.reason = "neither lineage nor the model could slice the schema"
        return found

    def _mdd(self, scratch: Any, slice_: SchemaSlice, schema: Schema, question: str, sql_a: str,
             sql_b: str) -> MDD | None:
        found = find_mdd(scratch, slice_, sql_a, sql_b, samples=_samples(schema, slice_),
                         max_rows=self.options.mdd_max_rows, time_budget_s=self.ctx.seconds_for(MDD_SEARCH_S))
        if found is not None:
            return found
        return synthesize_mdd(self.llm, self.report, scratch, slice_, question, sql_a, sql_b,
                              dialect_name=self.database.profile.display_name, max_rows=self.options.mdd_max_rows)

    def _decide(self, question: str, slice_: SchemaSlice, mdd: MDD, test: DualParadigmTest) -> bool:
        votes = {"champion": 0, "challenger": 0, "tie": 0}
        margin = self.options.dpc_margin
        for attempt in range(self.options.dpc_votes):
            self.deadline.check("the dual-paradigm test's pandas solver")
            outcome = solve(self.llm, self.report, self.sandbox, slice_, mdd.tables, question, seed=attempt,
                            deadline=self.deadline)
            test.solver_attempts += outcome.attempts
            if outcome.skipped:
                test.reason = f"the solver was skipped: {outcome.skipped}"
                return False
            if outcome.result is None:
                continue
            test.solver_code, test.solver_result = outcome.code, _rows(outcome.result.rows)
            score_a = bipartite_soft_f1(mdd.result_a, outcome.result)
            score_b = bipartite_soft_f1(mdd.result_b, outcome.result)
            test.scores = {"champion": round(score_a, 4), "challenger": round(score_b, 4)}
            votes["challenger" if score_b > score_a + margin else "champion" if score_a > score_b else "tie"] += 1
        test.votes = {k: v for k, v in votes.items() if v}
        if not test.votes:
            test.reason = "the pandas solver produced no result"
            return False
        if not votes["champion"] and not votes["challenger"]:
            test.reason = f"the pandas solution does not tell them apart ({test.scores})"
            return False
        test.status = "decided"
        if votes["challenger"] > votes["champion"]:
            test.winner = test.challenger
            test.reason = f"the challenger's result agrees better with the pandas solution ({test.scores})"
            return True
        test.reason = f"the champion's result agrees at least as well with the pandas solution ({test.scores})"
        return False

