"""A calibrated chance that an answer is right (``report.probability``), from the model's own certainty, the
vote and the evidence.

An answer is described by a few numbers (``answer_features``): how many candidates agree and what share of
all they are, the probability mass of the answer's cluster among the candidates (from their sequence
log-probabilities), how sure the model was of the chosen SQL (mean, lowest, over schema names and
literals, entropy), whether the greedy candidate is in the cluster, and each check's verdict (the question's
own constraints, checked on the SQL's tree with no model call, among them). A logistic model over them
(``Calibration``), fitted on one seeded half of a recorded run and reported on the other
(``verifiedsql bench calibrate``), turns them into a probability; the tiers are thresholds on it, fitted for
the precision each tier promises. The fits for the embedded models ship in ``verifiedsql/data/calibration``.

Two fits per model: ``pool``, for an answer chosen among the candidates, and ``first``, for the greedy
candidate alone, which decides whether drawing the samples is worth it (``sure_stop``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import ConfigurationError
from ..report import Candidate, Confidence, Evidence

# The checks whose verdict is a feature (for +1, against -1, neither 0).
CHECKS = ("result", "ties", "tables", "wording", "refinement", "literals", "constraints", "dpc", "trace", "review",
          "consensus")
CERTAINTY = ("mean", "low", "names", "literals", "entropy")
RULE_RANK: dict[str, float] = {"unverified": 0.0, "doubtful": 1.0, "probable": 2.0, "verified": 3.0}
# What the fit reads, chosen before any fit (a few dozen answers per half cannot carry many more): the vote, the
# cluster's mass, the vote-based rule's tier, the model's certainty, and the checks that ever speak on Spider.
# ``answer_features`` also records the rest (agreement, candidates drawn, every check) for analysis.
FEATURES = ("share", "mass", "greedy_in", "rule", "sql_mean", "sql_low", "sql_names", "sql_entropy", "cluster_mean",
            "check_result", "check_ties", "check_wording", "check_literals", "check_constraints")
TIERS: tuple[Confidence, ...] = ("verified", "probable", "doubtful")


def verdict_value(evidence: Sequence[Evidence], check: str) -> float:
    """-1 when any evidence of ``check`` is against the answer, else +1 when any is for it, else 0."""
    verdicts = {e.verdict for e in evidence if e.check == check}
    return -1.0 if "against" in verdicts else 1.0 if "for" in verdicts else 0.0


def opposed(features: Mapping[str, float]) -> bool:
    """Whether any check in ``features`` is against the answer."""
    return any(features.get(f"check_{check}", 0.0) < 0 for check in CHECKS)


def answer_features(candidates: Sequence[Candidate], members: Sequence[int], chosen: Candidate,
                    evidence: Sequence[Evidence], rule: Confidence) -> dict[str, float]:
    """The features of the answer ``chosen`` from the cluster of candidate indexes ``members`` among all
    ``candidates`` (failed ones included), with its ``evidence`` and the tier the vote-based ``rule`` gives it."""
    drawn = max(1, len(candidates))
    inside = [c for c in candidates if c.index in set(members)]
    scored = all(c.certainty is not None for c in candidates if c.status == "ok") and chosen.certainty is not None
    features: dict[str, float] = {
        "share": len(inside) / drawn, "agree": float(len(inside)), "drawn": float(drawn),
        "greedy_in": float(any(c.index == 0 for c in inside)), "scored": float(scored), "rule": RULE_RANK[rule],
    }
    features["mass"] = _mass(candidates, inside) if scored else features["share"]
    sure = chosen.certainty
    for name in CERTAINTY:
        value = getattr(sure, name) if sure is not None else None
        fallback = getattr(sure, "mean") if sure is not None else 0.0
        features[f"sql_{name}"] = float(value if value is not None else fallback)
    means = [c.certainty.mean for c in inside if c.certainty is not None]
    features["cluster_mean"] = sum(means) / len(means) if means else 0.0
    for check in CHECKS:
        features[f"check_{check}"] = verdict_value(evidence, check)
    return features


def _mass(candidates: Sequence[Candidate], inside: Sequence[Candidate]) -> float:
    """The cluster's share of the candidates' probability, each weighted by its mean token probability."""
    weight = {c.index: math.exp(c.certainty.mean) for c in candidates if c.certainty is not None and c.status == "ok"}
    total = sum(weight.values())
    return sum(weight.get(c.index, 0.0) for c in inside) / total if total > 0 else 0.0


@dataclass(frozen=True)
class Logistic:
    """A logistic model over standardised features: P = 1 / (1 + exp(-(b + sum w_i (x_i - m_i) / s_i)))."""

    weights: dict[str, float]
    means: dict[str, float]
    scales: dict[str, float]
    bias: float

    def probability(self, features: Mapping[str, float]) -> float:
        z = self.bias + sum(w * (features.get(name, 0.0) - self.means[name]) / self.scales[name]
                            for name, w in self.weights.items())
        return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z))))

    def to_json(self) -> dict[str, Any]:
        return {"weights": self.weights, "means": self.means, "scales": self.scales, "bias": self.bias}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Logistic:
        names = list(data["weights"])
        return cls({n: float(data["weights"][n]) for n in names}, {n: float(data["means"][n]) for n in names},
                   {n: float(data["scales"][n]) or 1.0 for n in names}, float(data["bias"]))


@dataclass(frozen=True)
class Calibration:
    """A model's fits: ``pool`` for a chosen answer, ``first`` for the greedy candidate alone; the tiers'
    thresholds on the pool probability; ``stop``, the greedy probability at which no samples are drawn (None:
    always draw them); and what the fit measured (``figures``)."""

    model: str
    pool: Logistic
    first: Logistic | None
    thresholds: dict[str, float]
    stop: float | None = None
    figures: dict[str, Any] = field(default_factory=dict)

    def tier(self, probability: float, opposed: bool = False) -> Confidence:
        """The tier of an answer with this ``probability``; ``verified`` also needs no check against the answer
        (``opposed``: one is), as the vote-based rule does."""
        for tier in ("verified", "probable"):
            if probability >= self.thresholds.get(tier, math.inf) and not (opposed and tier == "verified"):
                return tier
        return "doubtful"

    def to_json(self) -> dict[str, Any]:
        return {"model": self.model, "pool": self.pool.to_json(),
                "first": self.first.to_json() if self.first else None, "thresholds": self.thresholds,
                "stop": self.stop, "figures": self.figures}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Calibration:
        first = data.get("first")
        return cls(str(data["model"]), Logistic.from_json(data["pool"]), Logistic.from_json(first) if first else None,
                   {str(k): float(v) for k, v in data["thresholds"].items()},
                   None if data.get("stop") is None else float(data["stop"]), dict(data.get("figures") or {}))


def shipped(model: str) -> Calibration | None:
    """The fit that ships with the library for ``model`` (an embedded model's alias), or None."""
    name = f"{model.replace('/', '_')}.json"
    try:
        text = resources.files("verifiedsql").joinpath("data", "calibration", name).read_text("utf-8")
    except (FileNotFoundError, OSError):
        return None
    return Calibration.from_json(json.loads(text))


def load(path: str | Path) -> Calibration:
    """A fit written by ``verifiedsql bench calibrate`` (the ``calibration`` option)."""
    try:
        return Calibration.from_json(json.loads(Path(path).read_text("utf-8")))
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ConfigurationError(f"cannot read the calibration {path}: {error}. Write one with "
                                 "`verifiedsql bench calibrate RECORDS --out FILE`.") from error
