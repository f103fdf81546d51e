"""Result clustering and majority selection.

Candidates whose results are equivalent (results.equivalent) share a cluster. The largest cluster
wins; a tie goes to the cluster that holds the greedy candidate, then to the earliest cluster. With a
``doubt`` (``weigh_evidence``, see stages/evidence.py), a cluster whose result has evidence against it counts
``DOUBT_DISCOUNT`` candidates fewer: it wins only when it leads every cluster without such evidence by two
candidates or more.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from ..report import Cluster, Vote
from ..results import Fingerprint, equivalent
from .generate import CandidateRun

Doubt = Callable[[CandidateRun], bool]  # whether a run's result has evidence against it
DOUBT_DISCOUNT = 1.5  # a doubted cluster needs a lead of two candidates over an undoubted one


@dataclass(frozen=True)
class Selection:
    cluster: Cluster
    representative: CandidateRun
    vote: Vote
    reason: str


def cluster_runs(runs: list[CandidateRun]) -> list[Cluster]:
    """Group the runs that produced a result; sets each candidate's ``cluster`` index."""
    groups: list[tuple[Fingerprint, list[CandidateRun]]] = []
    for run in runs:
        if run.result is None:
            continue
        fingerprint = Fingerprint.of(run.result, ordered=run.ordered)
        for representative, members in groups:
            if equivalent(representative, fingerprint):
                members.append(run)
                break
        else:
            groups.append((fingerprint, [run]))
    clusters = []
    for index, (_, members) in enumerate(groups):
        for member in members:
            member.candidate.cluster = index
        clusters.append(Cluster(index=index, members=[m.candidate.index for m in members],
                                row_count=members[0].result.row_count if members[0].result else 0))
    return clusters


def select_majority(runs: list[CandidateRun], clusters: list[Cluster],
                    doubt: Doubt | None = None) -> Selection | None:
    """The winning cluster and its representative (the shortest SQL in it), or None if nothing ran. With
    ``doubt``, a cluster whose representative is doubted counts ``DOUBT_DISCOUNT`` candidates fewer."""
    if not clusters:
        return None
    by_index = {run.candidate.index: run for run in runs}
    representatives = {c.index: min((by_index[i] for i in c.members),
                                    key=lambda r: (len(r.candidate.sql), r.candidate.index)) for c in clusters}
    doubted = {c.index for c in clusters if doubt is not None and doubt(representatives[c.index])}

    def weight(cluster: Cluster) -> float:
        return len(cluster.members) - (DOUBT_DISCOUNT if cluster.index in doubted else 0.0)
    heaviest = max(weight(c) for c in clusters)
    tied = [c for c in clusters if weight(c) == heaviest]
    winner = next((c for c in tied if 0 in c.members and by_index[0].candidate.origin == "greedy"), tied[0])
    representative = representatives[winner.index]
    total = len(runs)
    largest = max(len(c.members) for c in clusters)
    if total == 1:
        return Selection(winner, representative, "unverified", "a single candidate: nothing to compare it with")
    if len(clusters) == 1 and len(winner.members) == total and total > 1:
        vote: Vote = "unanimous"
        reason = f"all {total} candidates agree"
    elif len(tied) == 1 and len(winner.members) == largest and len(winner.members) * 2 > total:
        vote = "majority"
        reason = f"{len(winner.members)} of {total} candidates agree"
    else:
        vote = "unverified"
        if len(winner.members) < largest:
            how = "a larger cluster's result has evidence against it"
        else:
            how = "a tie broken by the greedy candidate" if len(tied) > 1 else "no majority"
        reason = f"{len(winner.members)} of {total} candidates agree ({how})"
    return Selection(winner, representative, vote, reason)


def join_pool(runs: list[CandidateRun], new_run: CandidateRun, endorser: str,
              doubt: Doubt | None = None) -> tuple[list[CandidateRun], list[Cluster], Selection]:
    """Add ``new_run`` (which ran) to the pool, cluster and select again. It votes like any candidate; a tie
    among the largest clusters that its cluster is part of goes to it, since ``endorser`` (e.g. "the R3
    review") checked it. Returns the new runs, clusters and selection."""
    assert new_run.result is not None
    runs = [*runs, new_run]
    clusters = cluster_runs(runs)
    chosen = select_majority(runs, clusters, doubt)
    assert chosen is not None  # the new candidate ran
    own = next(c for c in clusters if new_run.candidate.index in c.members)
    largest = max(len(c.members) for c in clusters)
    trusted = doubt is None or not doubt(new_run)
    if chosen.cluster.index != own.index and len(own.members) == largest and trusted:
        reason = (chosen.reason.replace("broken by the greedy candidate", f"broken by {endorser}")
                  if "greedy" in chosen.reason else f"{chosen.reason} (a tie broken by {endorser})")
        chosen = replace(chosen, cluster=own, representative=new_run, reason=reason)
    return runs, clusters, chosen
