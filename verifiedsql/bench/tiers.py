"""The tier rule fitted on one seeded half of a run's questions and reported on the other.

From a run's records (one strategy), each answered question has its evidence (``[check, verdict]``), its
vote share, its candidates and whether it was right. ``fit`` picks ``TierRule.verified_share`` and
``verified_agree`` on the *fit* half: the pair with the most ``verified`` answers whose precision is at least
``target``, or, when none reaches it, the most precise (ties go to the stricter rule).
``tier_table`` then gives each tier's precision and coverage on the *report* half, with the fitted rule.
Questions with no answer count in the coverage denominators as ``none``.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..report import CONFIDENCE_TIERS, Evidence
from ..stages.evidence import TierRule

SHARES = (0.4, 0.6, 0.8, 1.0)  # the verified_share values the fit chooses among
AGREES = (2, 3, 4, 5)  # the verified_agree values the fit chooses among
TARGET = 0.95


@dataclass(frozen=True)
class TierRow:
    tier: str
    answers: int
    right: int
    coverage: float  # share of all questions of the half at this tier
    at_least_coverage: float  # share at this tier or above
    at_least_precision: float | None

    @property
    def precision(self) -> float | None:
        return self.right / self.answers if self.answers else None


def halves(ids: Iterable[int], seed: int = 0) -> tuple[set[int], set[int]]:
    """The question ids split in two seeded halves: (fit, report)."""
    ordered = sorted(set(ids))
    random.Random(seed).shuffle(ordered)
    middle = len(ordered) // 2
    return set(ordered[:middle]), set(ordered[middle:])


def _tier(record: dict[str, Any], rule: TierRule) -> str:
    if record.get("status") != "answered" or record.get("vote_share") is None:
        return "none"
    evidence = [Evidence(check, verdict, "") for check, verdict in record.get("evidence", [])]
    return rule.tier_of(evidence, float(record["vote_share"]), agreeing(record))


def agreeing(record: dict[str, Any]) -> int:
    """The number of candidates in the answer's cluster (the share times the candidates drawn)."""
    return round(float(record.get("vote_share") or 0) * len(record.get("candidates") or ()))


def tier_table(records: Sequence[dict[str, Any]], rule: TierRule) -> list[TierRow]:
    """Per tier, top first: answers, right ones, coverage, and precision and coverage of that tier or above."""
    total = len(records) or 1
    tiers = [(_tier(r, rule), bool(r.get("correct"))) for r in records]
    rows: list[TierRow] = []
    above_answers = above_right = 0
    for tier in reversed(CONFIDENCE_TIERS):
        answers = sum(t == tier for t, _ in tiers)
        right = sum(t == tier and ok for t, ok in tiers)
        above_answers, above_right = above_answers + answers, above_right + right
        rows.append(TierRow(tier, answers, right, answers / total, above_answers / total,
                            above_right / above_answers if above_answers else None))
    return rows


def fit(records: Sequence[dict[str, Any]], target: float = TARGET) -> TierRule:
    """The rule whose ``verified`` tier covers most of ``records`` at ``target`` precision or better."""
    scored = []
    for share in SHARES:
        for agree in AGREES:
            top = tier_table(records, TierRule(verified_share=share, verified_agree=agree))[0]
            reached = top.precision is not None and top.precision >= target
            scored.append((reached, top.answers if reached else 0, top.precision or 0.0, share, agree))
    best = max(scored)
    return TierRule(verified_share=best[3], verified_agree=best[4])


def _by_agreement(records: Iterable[dict[str, Any]]) -> dict[int, tuple[int, int]]:
    """``records`` by how many candidates agreed: {agreeing: (answers, right)}."""
    found: dict[int, tuple[int, int]] = {}
    for record in records:
        answers, right = found.get(agreeing(record), (0, 0))
        found[agreeing(record)] = (answers + 1, right + bool(record.get("correct")))
    return dict(sorted(found.items()))


def verified_by_agreement(records: Sequence[dict[str, Any]], rule: TierRule) -> dict[int, tuple[int, int]]:
    """The ``verified`` answers by how many candidates agreed: {agreeing: (answers, right)}."""
    return _by_agreement(r for r in records if _tier(r, rule) == "verified")


def unopposed_by_agreement(records: Sequence[dict[str, Any]]) -> dict[int, tuple[int, int]]:
    """The answers that ran and that no check is against, by how many candidates agreed: {agreeing: (answers,
    right)}. Every ``verified`` answer of any rule over ``TierRule``'s thresholds is among these, so this bounds
    what such a rule can reach: ``verified`` at k agreeing covers the rows from k up, at their joint precision."""
    return _by_agreement(r for r in records if _tier(r, TierRule(verified_share=0.0, verified_agree=0)) == "verified")


def _json(by_agreement: dict[int, tuple[int, int]]) -> dict[str, dict[str, int]]:
    return {str(agree): {"answers": answers, "right": right} for agree, (answers, right) in by_agreement.items()}


def agreement_text(by_agreement: dict[str, dict[str, int]], descending: bool = False) -> str:
    """``fit_and_report``'s answers by agreement as text: "5 agreeing: 24 of 26 right, ..."."""
    ordered = sorted(by_agreement.items(), key=lambda item: int(item[0]), reverse=descending)
    return ", ".join(f"{agree} agreeing: {v['right']} of {v['answers']} right" for agree, v in ordered)


def fit_and_report(records: Sequence[dict[str, Any]], strategy: str, seed: int = 0) -> dict[str, Any]:
    """Fit on one seeded half of ``strategy``'s records, report on the other: the JSON-ready figures."""
    chosen = [r for r in records if r.get("strategy") == strategy and r.get("status") != "llm_error"]
    fit_ids, report_ids = halves((r["id"] for r in chosen), seed)
    rule = fit([r for r in chosen if r["id"] in fit_ids])
    reported = [r for r in chosen if r["id"] in report_ids]
    table = tier_table(reported, rule)
    return {
        "strategy": strategy, "seed": seed, "fit_questions": len(fit_ids), "report_questions": len(report_ids),
        "verified_share": rule.verified_share, "verified_agree": rule.verified_agree,
        "verified_by_agreement": _json(verified_by_agreement(reported, rule)),
        "unopposed_by_agreement": _json(unopposed_by_agreement(reported)),
        "tiers": [{"tier": row.tier, "answers": row.answers, "right": row.right, "precision": row.precision,
                   "coverage": round(row.coverage, 4), "at_least_coverage": round(row.at_least_coverage, 4),
                   "at_least_precision": row.at_least_precision} for row in table],
    }


def render(figures: dict[str, Any]) -> str:
    """The figures as a Markdown table."""
    lines = [f"{figures['strategy']}: fitted on {figures['fit_questions']} questions (seed {figures['seed']}), "
             f"reported on the other {figures['report_questions']}; verified_share = {figures['verified_share']}, "
             f"verified_agree = {figures['verified_agree']}",
             "", "| tier | answers | right | precision | coverage | this tier or above: precision / coverage |",
             "|---|---:|---:|---:|---:|---:|"]
    for row in figures["tiers"]:
        precision = "-" if row["precision"] is None else f"{row['precision']:.1%}"
        above = "-" if row["at_least_precision"] is None else f"{row['at_least_precision']:.1%}"
        lines.append(f"| {row['tier']} | {row['answers']} | {row['right']} | {precision} | {row['coverage']:.1%} | "
                     f"{above} / {row['at_least_coverage']:.1%} |")
    by_agreement = agreement_text(figures["verified_by_agreement"])
    if by_agreement:
        lines += ["", f"verified, by candidates in agreement: {by_agreement}"]
    unopposed = agreement_text(figures["unopposed_by_agreement"], descending=True)
    if unopposed:
        lines += ["", f"answers no check is against, by candidates in agreement (what any threshold on the vote "
                      f"can make verified): {unopposed}"]
    return "\n".join(lines)
