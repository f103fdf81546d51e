"""Adaptive sampling (``adaptive``): candidates are drawn one at a time, greedy first, and drawing stops as
soon as the vote is settled, up to ``candidates`` in all.

The stopping rule is the Beta-posterior rule of adaptive consistency (Aggarwal et al., 2023), with every
candidate outside the leading result counted against it, failed ones included. With ``a`` candidates in
the leading cluster and ``b`` others, the share ``p`` of candidates that would give the leading result has
the posterior Beta(a + 1, b + 1) under a uniform prior; drawing stops once P(p > 1/2) reaches
``adaptive_confidence``. For integer parameters that probability is a binomial tail,
P(Beta(a + 1, b + 1) > 1/2) = P(Binomial(a + b + 1, 1/2) <= a).

With the default 0.9 the rule stops after three agreeing candidates out of three (0.9375) and never after
two out of two (0.875); any disagreement in the first three runs the question to ``candidates``.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import comb

from .cluster import cluster_runs
from .generate import CandidateRun


def majority_probability(agree: int, other: int) -> float:
    """P(p > 1/2) for p ~ Beta(agree + 1, other + 1): how sure the vote is that its leader is the majority."""
    n = agree + other + 1
    return sum(comb(n, k) for k in range(agree + 1)) / 2 ** n


@dataclass(frozen=True)
class StopWhenSettled:
    """Stops drawing candidates once the leading result's majority probability reaches ``confidence``."""

    confidence: float

    @property
    def earliest(self) -> int:
        """The fewest candidates after which the rule may stop: that many in agreement, none against."""
        agree = 1
        while majority_probability(agree, 0) < self.confidence:
            agree += 1
        return agree

    def __call__(self, runs: list[CandidateRun]) -> str | None:
        """Why drawing stops after ``runs`` (a note for the report), or None to draw another candidate."""
        clusters = cluster_runs(runs)
        agree = max((len(cluster.members) for cluster in clusters), default=0)
        if agree == 0:
            return None
        probability = majority_probability(agree, len(runs) - agree)
        if probability < self.confidence:
            return None
        return (f"adaptive sampling stopped after {len(runs)} candidates: {agree} of {len(runs)} agree, "
                f"P(majority) = {probability:.3f} >= adaptive_confidence = {self.confidence:g}")
