"""Failure anatomy of a run: why each question ended as it did, and why each failing candidate failed.

Two classifications over the harness's per-question records, both computed from what the records
already hold (no model, no database):

* ``outcome_of``: a question is *right*; *majority wrong* (the answer is wrong although a correct
  candidate was in the pool: a selection failure); *pool all wrong* (candidates ran, none was right: a
  generation failure); or *no candidate ran* (every candidate failed on the database or a guard).
* ``error_class`` (``verifiedsql/stages/common/failures.py``, which the answer step reads errors with too): the
  kind of a failing candidate's error, read from the engine's own message on SQLite, DuckDB, PostgreSQL and
  Snowflake (fakesnow), so that the mechanical mistakes (a column on the wrong table, a function of
  another dialect) can be told from the rest.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any, Literal

from ..stages.common.failures import ERROR_CLASSES, error_class

Outcome = Literal["right", "majority wrong", "pool all wrong", "no candidate ran"]
OUTCOMES: tuple[Outcome, ...] = ("right", "majority wrong", "pool all wrong", "no candidate ran")


def outcome_of(record: dict[str, Any]) -> Outcome:
    """The outcome class of one question's record (``llm_error`` records have none: leave them out)."""
    if record["correct"]:
        return "right"
    candidates = record.get("candidates") or []
    if not any(c["status"] == "ok" for c in candidates):
        return "no candidate ran"
    if any(c.get("correct") for c in candidates):
        return "majority wrong"
    return "pool all wrong"


@dataclass
class Anatomy:
    """One strategy's outcome classes (questions) and error classes (failing candidates)."""

    strategy: str
    questions: int
    outcomes: dict[str, int]
    candidates: int
    failed_candidates: int
    errors: dict[str, int]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def anatomy(records: list[dict[str, Any]], strategy: str) -> Anatomy:
    """The anatomy of ``strategy`` over its records; model failures (``llm_error``) are left out."""
    rows = [r for r in records if r["strategy"] == strategy and r["status"] != "llm_error"]
    outcomes = Counter(outcome_of(r) for r in rows)
    candidates = [c for r in rows for c in r.get("candidates") or []]
    failed = [c for c in candidates if c["status"] != "ok"]
    errors = Counter(error_class(c["status"], c.get("error")) for c in failed)
    return Anatomy(
        strategy=strategy,
        questions=len(rows),
        outcomes={name: outcomes[name] for name in OUTCOMES},
        candidates=len(candidates),
        failed_candidates=len(failed),
        errors={name: errors[name] for name in ERROR_CLASSES if errors[name]},
    )
