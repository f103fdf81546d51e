"""Consensus enforcement (ReFoRCE section 3.2.2): a vote whose largest clusters tie, or one where every
candidate failed, is not answered by a coin toss. The model explores the columns (stages/explore.py),
the candidates are generated again with the exploration results in the prompt, and voted again. A tie
that remains goes to the dual-paradigm test (stages/dpc.py), whether or not the ``dpc`` option is on;
when that cannot decide either, the answer stays ``unverified`` and its reason says so.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from ...errors import LLMError, QuestionTimeoutError
from ...llm.prompts import with_context
from ...report import Cluster, Consensus
from ..base import Stage
from ..cluster import Selection, cluster_runs, select_majority
from ..dpc.stage import DualParadigmSelector
from .explore import Explorer
from ..generate import CandidateGenerator, CandidateRun

SHOWN_CANDIDATES = 4  # tied or failed candidates shown to the model in the exploration request

Vote = tuple[list[CandidateRun], list[Cluster], Selection | None]


def is_tie(clusters: Sequence[Cluster]) -> bool:
    """Two or more largest clusters of the same size."""
    if len(clusters) < 2:
        return False
    largest = max(len(c.members) for c in clusters)
    return sum(len(c.members) == largest for c in clusters) > 1


def trigger_of(clusters: Sequence[Cluster], selection: Selection | None) -> str | None:
    """``all-failed`` when nothing ran, ``tie`` on a tied vote, else None (no enforcement needed)."""
    if selection is None or selection.representative.result is None:
        return "all-failed"
    return "tie" if is_tie(clusters) else None


def describe_candidates(runs: Sequence[CandidateRun], clusters: Sequence[Cluster], tie: bool) -> str:
    """The tied clusters' representatives (SQL and row count) or the failed candidates (SQL and error)."""
    by_index = {run.candidate.index: run for run in runs}
    if tie:
        largest = max(len(c.members) for c in clusters)
        shown = [min((by_index[i] for i in c.members), key=lambda r: (len(r.candidate.sql), r.candidate.index))
                 for c in clusters if len(c.members) == largest][:SHOWN_CANDIDATES]
        parts = [f"```sql\n{run.candidate.sql}\n```\n({run.candidate.row_count} rows)" for run in shown]
        return "These candidate queries return different results, with equal votes:\n" + "\n".join(parts)
    failed = [run for run in runs if run.candidate.sql][:SHOWN_CANDIDATES]
    parts = [f"```sql\n{run.candidate.sql}\n```\nError: {(run.candidate.error or '')[:300]}" for run in failed]
    return "Every candidate query failed:\n" + ("\n".join(parts) if parts else "(no SQL was written)")


class ConsensusEnforcer(Stage):
    """Runs consensus enforcement for one question within the ``deadline`` and records it in
    ``report.consensus`` (and the exploration queries in ``report.exploration``)."""

    def enforce(
        self,
        question: str,
        schema_text: str,
        runs: list[CandidateRun],
        clusters: list[Cluster],
        selection: Selection | None,
        after_run: Callable[[CandidateRun], CandidateRun] | None = None,
    ) -> Vote:
        """The vote to answer from: the first one when it needs no enforcement, else the re-vote after
        exploration (or the first vote again when regeneration ran nothing), a remaining tie settled by
        the dual-paradigm test where it can."""
        trigger = trigger_of(clusters, selection)
        if trigger is None:
            return runs, clusters, selection
        state = Consensus(trigger=trigger)
        self.report.consensus = state
        vote: Vote = (runs, clusters, selection)
        try:
            vote = self._explore_and_revote(question, schema_text, vote, state, after_run)
        except QuestionTimeoutError as error:
            self.report.notes.append(f"consensus enforcement stopped: {error}")
        runs, clusters, selection = vote
        if selection is None or selection.representative.result is None:
            state.outcome = "failed"
            state.reason = state.reason or "no candidate ran, before or after exploration"
            return vote
        if not is_tie(clusters):
            state.outcome = "resolved"
            state.reason = f"the re-vote has a unique largest cluster ({selection.reason})"
            return vote
        return runs, clusters, self._settle(question, runs, clusters, selection, state)

    def _explore_and_revote(self, question: str, schema_text: str, vote: Vote, state: Consensus,
                            after_run: Callable[[CandidateRun], CandidateRun] | None) -> Vote:
        runs, clusters, _ = vote
        explorer = Explorer(self.llm, self.database, self.options, self.report, self.deadline)
        block = explorer.explore(question, self.database.reflect(), schema_text,
                                 describe_candidates(runs, clusters, state.trigger == "tie"),
                                 tie=state.trigger == "tie")
        if not block:
            # The same prompt again would bring the same candidates: nothing to regenerate with.
            state.reason = "no exploration query ran, so the candidates were not generated again"
            return vote
        self.deadline.check("regenerating the candidates after column exploration")
        generator = CandidateGenerator(self.llm, self.database, self.options, self.deadline)
        first_round = [run.candidate for run in runs]
        try:
            new_runs = generator.generate(question, with_context(schema_text, block), self.report, after_run)
        except LLMError as error:
            self.report.notes.append(f"consensus: regeneration failed ({error}); the first vote stands")
            state.reason = "regeneration failed"
            return vote
        state.rounds = 1
        if not any(run.result is not None for run in new_runs):
            state.reason = "no regenerated candidate ran; the first vote stands"
            if vote[2] is None:
                state.first_round = first_round
                return new_runs, [], None
            return vote
        new_clusters = cluster_runs(new_runs)
        state.first_round = first_round
        return new_runs, new_clusters, select_majority(new_runs, new_clusters)

    def _settle(self, question: str, runs: list[CandidateRun], clusters: list[Cluster], selection: Selection,
                state: Consensus) -> Selection:
        """A remaining tie goes to the dual-paradigm test; undecided, the answer is unverified and says so."""
        selector = DualParadigmSelector(self.llm, self.database, self.options, self.report, deadline=self.deadline)
        settled = selector.select(question, runs, clusters, selection)
        earlier = f"{state.reason}; " if state.reason else ""
        test = self.report.dpc
        if test is not None and test.status == "decided":
            state.outcome = "dpc-decided"
            state.reason = f"{earlier}the tie remained; the dual-paradigm test decided it ({test.reason})"
            return settled
        state.outcome = "undecided"
        why = test.reason if test is not None else "it did not run"
        state.reason = f"{earlier}the tie remained and the dual-paradigm test could not decide ({why})"
        return replace(settled, confidence="unverified",
                       reason=f"{settled.reason}; consensus not reached: the tie remained after column "
                              f"exploration and the dual-paradigm test could not decide ({why})")
