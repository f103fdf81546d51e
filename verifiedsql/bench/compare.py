"""Two runs side by side on the questions both answered: the same seeded Spider questions on two engines
(or two models), each with a strategy of its own. ``verifiedsql bench compare A.jsonl:STRATEGY B.jsonl:STRATEGY``
prints, per run, the shared questions, EX and the no-runnable rate (questions with no candidate that ran).
A record that ended in a model error (a replay miss) leaves its question out of both."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigurationError


@dataclass(frozen=True)
class Side:
    """One run's records of one strategy, by question id."""

    label: str
    records: dict[int, dict[str, Any]]


def load_side(spec: str) -> Side:
    """``path.jsonl:strategy`` -> that strategy's records (the last one of each question)."""
    path_text, _, strategy = spec.rpartition(":")
    if not path_text or not strategy:
        raise ConfigurationError(f"expected RECORDS.jsonl:STRATEGY, got {spec!r}.")
    path = Path(path_text)
    if not path.exists():
        raise ConfigurationError(f"no records at {path}.")
    records: dict[int, dict[str, Any]] = {}
    for line in path.read_text("utf-8").splitlines():
        if line.strip() and (record := json.loads(line)).get("strategy") == strategy:
            records[int(record["id"])] = record
    if not records:
        raise ConfigurationError(f"{path} has no records of strategy {strategy!r}.")
    engine = next(iter(records.values())).get("engine", "?")
    return Side(f"{engine}, {strategy}", records)


def compare(sides: list[Side]) -> list[dict[str, Any]]:
    """Per side: questions, EX and no-runnable rate on the questions every side answered without a model error."""
    shared = set.intersection(*(
        {qid for qid, r in side.records.items() if r.get("status") != "llm_error"} for side in sides))
    rows = []
    for side in sides:
        kept = [side.records[qid] for qid in sorted(shared)]
        total = len(kept) or 1
        rows.append({
            "run": side.label, "questions": len(kept),
            "ex": sum(bool(r.get("correct")) for r in kept) / total,
            "no_runnable": sum(r.get("status") == "no_answer" for r in kept) / total,
            "no_runnable_count": sum(r.get("status") == "no_answer" for r in kept),
        })
    return rows


def render(rows: list[dict[str, Any]]) -> str:
    lines = ["| run | questions | EX | no runnable answer |", "|---|---:|---:|---:|"]
    lines += [f"| {r['run']} | {r['questions']} | {100 * r['ex']:.1f}% | "
              f"{r['no_runnable_count']} ({100 * r['no_runnable']:.1f}%) |" for r in rows]
    return "\n".join(lines)
