"""Calibrated confidence for one question: the answer's probability and the tier it gives
(``apply_calibration``), and the stop rule that answers with the greedy candidate alone when the model is sure
enough of it (``StopWhenSure``, the ``sure_stop`` option). The numbers come from ``stages/calibration.py``."""

from __future__ import annotations

from collections.abc import Callable

from ..config import Options
from ..report import Cluster, Evidence
from .base import Pool
from .calibration import Calibration, answer_features, load, opposed, shipped
from .cluster import Selection
from .context import QuestionContext
from .evidence import DEFAULT_RULE, HARD, gather_evidence
from .generate import CandidateRun


def calibration_for(options: Options, model: str) -> Calibration | None:
    """The fit the ``calibration`` option names, else the one shipped for ``model``; None when turned off."""
    if options.calibration == "off":
        return None
    if options.calibration is not None:
        return load(options.calibration)
    return shipped(model)


# (question, SQL, dialect) -> the question's stated constraints checked on the SQL (PV-SQL's, given by the pipeline)
ConstraintCheck = Callable[[str, str, str], Evidence | None]


def _with_stated(ctx: QuestionContext, evidence: list[Evidence], sql: str,
                 stated: ConstraintCheck | None) -> list[Evidence]:
    """``evidence`` with the question's constraints checked on ``sql`` (no model call) where ``verify`` did not
    check them already. Beside the rules of ``constraint_repair`` they count once: against when either finds
    the SQL breaking one."""
    if stated is None or ctx.options.verify:
        return evidence
    checked = stated(ctx.question, sql, ctx.database.profile.name)
    if checked is None:
        return evidence
    ours = [e for e in evidence if e.check == "constraints"]
    if not ours:
        return [*evidence, checked]
    if checked.verdict == "against" and all(e.verdict != "against" for e in ours):
        return [e for e in evidence if e.check != "constraints"] + [checked]
    return evidence


def first_features(ctx: QuestionContext, run: CandidateRun, stated: ConstraintCheck | None) -> dict[str, float]:
    """The features of the greedy candidate as the answer on its own (empty where it did not run or has no
    token scores). Reads the database for its checks; changes nothing in the candidate."""
    if run.result is None or run.candidate.certainty is None:
        return {}
    index = run.candidate.index
    alone = Pool([run], [], Selection(Cluster(0, [index], run.result.row_count), run, "unverified", "alone"))
    evidence = _with_stated(ctx, gather_evidence(ctx, alone, timed_out=False), run.candidate.sql, stated)
    return answer_features([run.candidate], [index], run.candidate, evidence, DEFAULT_RULE.tier_of(evidence, 1.0, 1))


class StopWhenSure:
    """Stops after the greedy candidate when its calibrated probability reaches the fit's ``stop``; else every
    other candidate is drawn (so they may go out side by side)."""

    earliest = 1
    decides_once = True

    def __init__(self, ctx: QuestionContext, calibration: Calibration, stated: ConstraintCheck | None) -> None:
        self.ctx, self.calibration, self.stated = ctx, calibration, stated

    def __call__(self, runs: list[CandidateRun]) -> str | None:
        first, stop = self.calibration.first, self.calibration.stop
        if len(runs) != 1 or first is None or stop is None:
            return None
        features = first_features(self.ctx, runs[0], self.stated)
        if not features:
            return None
        probability = first.probability(features)
        if probability < stop:
            return None
        return (f"sure stop: the greedy candidate's calibrated probability {probability:.3f} reaches the stop "
                f"threshold {stop:.3f}, so no samples were drawn")


def apply_calibration(ctx: QuestionContext, pool: Pool, calibration: Calibration | None,
                      stated: ConstraintCheck | None) -> None:
    """Set the report's probability and, from it, its tier (never above what the hard checks allow: an answer
    that timed out or reads no table stays unverified). Without token scores or a fit the tier stays the
    vote-based rule's, and a note says so."""
    report = ctx.report
    assert pool.selection is not None
    runs = [run.candidate for run in pool.runs]
    scored = any(c.certainty is not None for c in runs)
    if not scored:
        report.notes.append("confidence from the vote alone: the model gave no token log-probabilities")
        return
    chosen = pool.selection.representative.candidate
    evidence = _with_stated(ctx, report.evidence, chosen.sql, stated)
    report.features = answer_features(runs, pool.selection.cluster.members, chosen, evidence, report.confidence)
    if pool.runs and pool.runs[0].candidate.index == 0:
        report.first_features = first_features(ctx, pool.runs[0], stated)
    if calibration is None:
        report.notes.append(f"confidence from the vote alone: there is no calibration for model {ctx.llm.name!r}")
        return
    report.evidence = evidence
    # the greedy candidate alone (the sure stop ended the drawing): its own fit, as the stop decided by
    alone = len(pool.runs) == 1 and pool.runs[0].candidate.index == 0
    if alone and calibration.first is not None:
        report.probability = round(calibration.first.probability(report.first_features), 4)
    else:
        report.probability = round(calibration.pool.probability(report.features), 4)
    tier = calibration.tier(report.probability, opposed(report.features))
    hard = any(e.check in HARD and e.verdict == "against" for e in evidence)
    report.confidence = "unverified" if hard or report.confidence == "unverified" else tier
    report.confidence_from = "calibration"
