"""What each optional stage adds, from one run's records: ``verifiedsql bench stages RECORDS.jsonl``.

Each stage is measured as a pair of strategies that differ only by that stage (``STAGE_PAIRS``: the stage on
and the strategy it is added to), on the questions both answered without a model error. Per pair: the EX
change, the ``verified`` tier's precision and coverage without and with the stage (the tier each answer got
in the run, with the library's default rule), and the model calls, tokens and model seconds it adds per
question (model seconds as recorded when the requests were first answered, so a replay gives them too).
Pairs whose strategies the run lacks are left out."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigurationError

# (stage option, strategy with the stage, the strategy it is added to)
STAGE_PAIRS: tuple[tuple[str, str, str], ...] = (
    ("schema_repair", "self-consistency+repair", "self-consistency"),
    ("check_literals", "self-consistency+repair+literals", "self-consistency+repair"),
    ("weigh_evidence", "default", "self-consistency+repair+literals"),
    ("schema_facts", "self-consistency+repair+facts", "self-consistency+repair"),
    ("adaptive", "default-adaptive", "default"),
    ("constraint_repair", "default", "default-constraints"),
    ("scope_check", "default+scope", "default"),
    ("dpc", "+dpc", "self-consistency"),
    ("verify", "+verify", "self-consistency"),
    ("probe", "+probe", "self-consistency"),
    ("consensus", "+consensus", "self-consistency"),
    ("review", "+review", "self-consistency"),
    ("vet", "+vet", "self-consistency"),
    ("compress_schema", "+compress-250", "self-consistency"),
    # the same stages added to the default pipeline (runs recorded after the defaults were chosen)
    ("schema_facts", "default+facts", "default"),
    ("verify", "default+verify", "default"),
    ("dpc", "default+dpc", "default"),
    ("consensus", "default+consensus", "default"),
    ("probe", "default+probe", "default"),
    ("review", "default+review", "default"),
    ("vet", "default+vet", "default"),
    ("compress_schema", "default+compress", "default"),
)


@dataclass(frozen=True)
class Side:
    """One strategy's figures on the shared questions."""

    ex: float
    verified: int
    verified_right: int
    calls: float
    tokens: float
    seconds: float

    @property
    def precision(self) -> float | None:
        return self.verified_right / self.verified if self.verified else None


@dataclass(frozen=True)
class StageRow:
    stage: str
    strategy: str
    base: str
    questions: int
    without: Side
    with_stage: Side


def _side(records: list[dict[str, Any]]) -> Side:
    total = len(records) or 1
    verified = [r for r in records if r.get("confidence") == "verified"]
    return Side(
        ex=sum(bool(r.get("correct")) for r in records) / total,
        verified=len(verified), verified_right=sum(bool(r.get("correct")) for r in verified),
        calls=sum(r.get("llm_calls") or 0 for r in records) / total,
        tokens=sum(r.get("total_tokens") or 0 for r in records) / total,
        seconds=sum(r.get("model_seconds") or 0.0 for r in records) / total)


def load_records(path: Path) -> dict[str, dict[int, dict[str, Any]]]:
    """strategy -> question id -> its last record."""
    if not path.exists():
        raise ConfigurationError(f"no records at {path}.")
    found: dict[str, dict[int, dict[str, Any]]] = {}
    for line in path.read_text("utf-8").splitlines():
        if line.strip():
            record = json.loads(line)
            found.setdefault(record["strategy"], {})[int(record["id"])] = record
    return found


def stage_rows(records: dict[str, dict[int, dict[str, Any]]]) -> list[StageRow]:
    """One row per stage pair the run has both strategies of."""
    rows = []
    for stage, strategy, base in STAGE_PAIRS:
        if strategy not in records or base not in records:
            continue
        shared = sorted(qid for qid in records[strategy].keys() & records[base].keys()
                        if "llm_error" not in (records[strategy][qid].get("status"), records[base][qid].get("status")))
        if shared:
            rows.append(StageRow(stage, strategy, base, len(shared), _side([records[base][q] for q in shared]),
                                 _side([records[strategy][q] for q in shared])))
    return rows


def _share(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def render(rows: list[StageRow]) -> str:
    """The rows as a Markdown table, as the docs' stage tables show them."""
    lines = ["| stage | on top of | questions | EX change | verified precision | verified coverage | "
             "calls/q added | tokens/q added | model s/q added |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for row in rows:
        a, b, n = row.without, row.with_stage, row.questions
        lines.append(
            f"| {row.stage} | {row.base} | {n} | {100 * (b.ex - a.ex):+.1f} | {_share(a.precision)} -> "
            f"{_share(b.precision)} | {_share(a.verified / n)} -> {_share(b.verified / n)} | "
            f"{b.calls - a.calls:+.2f} | {b.tokens - a.tokens:+,.0f} | {b.seconds - a.seconds:+.1f} |")
    return "\n".join(lines)
