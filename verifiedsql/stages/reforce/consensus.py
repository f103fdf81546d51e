"""Consensus enforcement (ReFoRCE section 3.2.2): a vote whose largest clusters tie, or one where every
candidate failed, is not answered by a coin toss. The model explores the columns (``explore.py``),
the candidates are generated again with the exploration results in the prompt, and voted again. A tie
that remains is marked on the pool: the dual-paradigm test (``stages/dpc``) settles it, whether or not the
``dpc`` option is on; when that cannot decide either, the answer stays ``unverified`` and its reason says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ...config import Options
from ...errors import LLMError, QuestionTimeoutError
from ...llm.prompts import with_context
from ...report import Cluster, Consensus, ConsensusTrigger
from ..base import Pool, Stage
from ..cluster import Selection, cluster_runs, select_majority
from ..context import QuestionContext
from ..evidence import doubt_for
from ..generate import CandidateGenerator
from .explore import Explorer
from .prompts import describe_candidates


def is_tie(clusters: Sequence[Cluster]) -> bool:
    """Two or more largest clusters of the same size."""
    if len(clusters) < 2:
        return False
    largest = max(len(c.members) for c in clusters)
    return sum(len(c.members) == largest for c in clusters) > 1


def trigger_of(clusters: Sequence[Cluster], selection: Selection | None) -> ConsensusTrigger | None:
    """``all-failed`` when nothing ran, ``tie`` on a tied vote, else None (no enforcement needed)."""
    if selection is None or selection.representative.result is None:
        return "all-failed"
    return "tie" if is_tie(clusters) else None


class ConsensusEnforcement:
    """Pool stage (option ``consensus``): a tied vote, or one where every candidate failed, is explored and
    voted again; recorded in ``report.consensus`` (and the exploration queries in ``report.exploration``).
    A tie that remains is marked on the pool, and the dual-paradigm test settles it."""

    name = "consensus"

    def applies(self, options: Options, pool: Pool) -> bool:
        return options.consensus and trigger_of(pool.clusters, pool.selection) is not None

    def run(self, ctx: QuestionContext, pool: Pool) -> Pool:
        return ConsensusEnforcer(ctx).enforce(pool)


class ConsensusEnforcer(Stage):
    """Runs consensus enforcement for one question within its time budget."""

    def enforce(self, pool: Pool) -> Pool:
        """The pool to answer from: the first vote when it needs no enforcement, else the re-vote after
        exploration (or the first vote again when regeneration ran nothing); a tie that remains is marked
        ``tie_unresolved``."""
        trigger = trigger_of(pool.clusters, pool.selection)
        if trigger is None:
            return pool
        state = Consensus(trigger=trigger)
        self.report.consensus = state
        try:
            pool = self._explore_and_revote(pool, state)
        except QuestionTimeoutError as error:
            self.report.notes.append(f"consensus enforcement stopped: {error}")
        if not pool.answered:
            state.outcome = "failed"
            state.reason = state.reason or "no candidate ran, before or after exploration"
            return pool
        assert pool.selection is not None
        if not is_tie(pool.clusters):
            state.outcome = "resolved"
            state.reason = f"the re-vote has a unique largest cluster ({pool.selection.reason})"
            return pool
        earlier = f"{state.reason}; " if state.reason else ""
        state.outcome = "undecided"
        state.reason = f"{earlier}the tie remained after column exploration; the dual-paradigm test is to settle it"
        return replace(pool, tie_unresolved=True)

    def _explore_and_revote(self, pool: Pool, state: Consensus) -> Pool:
        explorer = Explorer(self.ctx)
        block = explorer.explore(self.ctx.question, self.ctx.schema, self.ctx.schema_text,
                                 describe_candidates(pool.runs, pool.clusters, state.trigger == "tie"),
                                 tie=state.trigger == "tie")
        if not block:
            # The same prompt again would bring the same candidates: nothing to regenerate with.
            state.reason = "no exploration query ran, so the candidates were not generated again"
            return pool
        self.deadline.check("regenerating the candidates after column exploration")
        first_round = [run.candidate for run in pool.runs]
        try:
            new_runs = CandidateGenerator(self.ctx).generate(with_context(self.ctx.schema_text, block))
        except LLMError as error:
            self.report.notes.append(f"consensus: regeneration failed ({error}); the first vote stands")
            state.reason = "regeneration failed"
            return pool
        state.rounds = 1
        if not any(run.result is not None for run in new_runs):
            state.reason = "no regenerated candidate ran; the first vote stands"
            if pool.selection is None:
                state.first_round = first_round
                return Pool(new_runs, [], None)
            return pool
        new_clusters = cluster_runs(new_runs)
        state.first_round = first_round
        return Pool(new_runs, new_clusters, select_majority(new_runs, new_clusters, doubt_for(self.ctx)))
