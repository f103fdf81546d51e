"""``verifiedsql bench scope-fit``: the share of a question's words that must name nothing in the database
before the scope check's NO ends the question (``Options.scope_unmatched_share``), fitted on one seeded half
of a Spider run and reported on the other, with what each share does on the out-of-scope set.

It reads the records of the strategy that lets the model's NO alone decide (``default+scope-alone``): every
question it ended on the model's NO carries the share of its words that named nothing (``scope``). A share
``t`` keeps those refusals whose share is at least ``t``. On Spider (questions the data answers) a refusal is
a loss where the same question's answer without the check (``default``) is right. The fit takes the lowest
share of ``SHARES`` at which the fit half loses no right answer; the out-of-scope set takes no part in it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .tiers import halves

SHARES = (0.0, 1 / 4, 1 / 3, 1 / 2, 2 / 3, 3 / 4, 1.0)  # the simple fractions of a question of 2 to 6 words
ALONE = "default+scope-alone"  # every NO ends the question; the share is recorded
WITHOUT = "default"  # the same answers without the check


@dataclass(frozen=True)
class ShareRow:
    """What one share does: Spider refusals on each half (and how many had a right answer), and the
    out-of-scope questions that end in ``NoDataError``."""

    share: float
    fit_refused: int
    fit_right_refused: int
    report_refused: int
    report_right_refused: int
    out_of_scope_no_data: int | None


def _model_refusal(record: dict[str, Any]) -> float | None:
    """The share of words that named nothing, where the model's NO ended the question; else None."""
    scope = record.get("scope") or {}
    return float(scope["unmatched_share"]) if scope.get("ended") else None


def _kept(record: dict[str, Any], share: float) -> bool:
    refused = _model_refusal(record)
    return refused is not None and refused >= share


Records = Mapping[str, Mapping[int, dict[str, Any]]]  # strategy -> question id -> record (stages.load_records)


def answered(spider: Records) -> dict[int, dict[str, Any]]:
    """The ``ALONE`` records of the questions that were answered from the model (a replay miss is left out)."""
    return {i: r for i, r in spider.get(ALONE, {}).items() if r.get("status") != "llm_error"}


def fit_share(spider: Records, out_of_scope: Records | None = None, seed: int = 0) -> tuple[float, list[ShareRow]]:
    """The fitted share and the row of every share of ``SHARES``."""
    alone = answered(spider)
    right = {i: bool(r.get("correct")) for i, r in spider.get(WITHOUT, {}).items()}
    fit_ids, report_ids = halves(alone, seed)
    scope_alone = list((out_of_scope or {}).get(ALONE, {}).values())
    rows: list[ShareRow] = []
    for share in SHARES:
        def refused(ids: set[int], *, right_only: bool = False) -> int:
            return sum(_kept(alone[i], share) and (not right_only or right.get(i, False)) for i in ids)

        no_data = sum(r["outcome"] == "no-data" and (_model_refusal(r) is None or _kept(r, share))
                      for r in scope_alone) if scope_alone else None
        rows.append(ShareRow(share, refused(fit_ids), refused(fit_ids, right_only=True), refused(report_ids),
                             refused(report_ids, right_only=True), no_data))
    fitted = next((row.share for row in rows if row.fit_right_refused == 0), 1.0)
    return fitted, rows


def render(fitted: float, rows: Sequence[ShareRow], questions: int, seed: int = 0) -> str:
    """The rows as a Markdown table, the fitted share marked."""
    lines = [f"{ALONE} on {questions} Spider questions, halves of seed {seed}; fitted share: {fitted:.2f} (the "
             "lowest at which the fit half refuses no right answer)", "",
             "| share | fit half: refused (right) | report half: refused (right) | out-of-scope: NoDataError |",
             "|---:|---:|---:|---:|"]
    for row in rows:
        mark = " (fitted)" if row.share == fitted else ""
        oos = "-" if row.out_of_scope_no_data is None else str(row.out_of_scope_no_data)
        lines.append(f"| {row.share:.2f}{mark} | {row.fit_refused} ({row.fit_right_refused}) | "
                     f"{row.report_refused} ({row.report_right_refused}) | {oos} |")
    return "\n".join(lines)
