"""Aggregates over per-question records: accuracy, Pass@N, gap closed, cost and latency."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Sequence

from .strategies import REFERENCE

Record = dict[str, Any]


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0-100) with linear interpolation; None for no values."""
    data = sorted(values)
    if not data:
        return None
    rank = (len(data) - 1) * q / 100
    low, high = math.floor(rank), math.ceil(rank)
    return data[low] + (data[high] - data[low]) * (rank - low)


def mean(values: Iterable[float]) -> float | None:
    data = list(values)
    return sum(data) / len(data) if data else None


@dataclass(frozen=True)
class Spread:
    p50: float | None
    p95: float | None

    @classmethod
    def of(cls, values: Sequence[float]) -> Spread:
        return cls(percentile(values, 50), percentile(values, 95))


@dataclass
class Summary:
    """One strategy's figures over the questions it has records for."""

    strategy: str
    questions: int
    ex: float
    pass_at_n: float
    gap_closed: float | None
    llm_calls: float
    tokens: float
    prompt_tokens: float
    completion_tokens: float
    wall: Spread
    estimated: Spread
    own: Spread
    stages: dict[str, Spread] = field(default_factory=dict)
    no_answer: int = 0
    llm_errors: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def gap_closed(ex: float, reference_ex: float, reference_pass: float) -> float | None:
    """(EX - SC) / (Pass@N - SC): the share of self-consistency's selection gap a strategy closes."""
    gap = reference_pass - reference_ex
    return None if gap <= 0 else (ex - reference_ex) / gap


def _rate(records: list[Record], key: str) -> float:
    return sum(bool(r[key]) for r in records) / len(records) if records else 0.0


def summarize(records: list[Record], strategies: list[str]) -> dict[str, Summary]:
    """A Summary per strategy; gap closed is measured on the questions shared with the reference.
    Model failures (status ``llm_error``, retried on the next run) are counted but left out of every
    figure, so a crashed model server does not pass for wrong answers."""
    by_strategy: dict[str, list[Record]] = defaultdict(list)
    errors: Counter[str] = Counter()
    for record in records:
        if record["status"] == "llm_error":
            errors[record["strategy"]] += 1
        else:
            by_strategy[record["strategy"]].append(record)
    reference = {r["id"]: r for r in by_strategy.get(REFERENCE, [])}
    summaries = {}
    for name in strategies:
        rows = by_strategy.get(name, [])
        if not rows and not errors[name]:
            continue
        shared = [r for r in rows if r["id"] in reference]
        gap = None
        if reference and shared:
            refs = [reference[r["id"]] for r in shared]
            gap = gap_closed(_rate(shared, "correct"), _rate(refs, "correct"), _rate(refs, "pass_at_n"))
        stage_names = sorted({stage for r in rows for stage in r["timings"]})
        summaries[name] = Summary(
            strategy=name,
            questions=len(rows),
            ex=_rate(rows, "correct"),
            pass_at_n=_rate(rows, "pass_at_n"),
            gap_closed=gap,
            llm_calls=mean(r["llm_calls"] for r in rows) or 0.0,
            tokens=mean(r["total_tokens"] for r in rows) or 0.0,
            prompt_tokens=mean(r["prompt_tokens"] for r in rows) or 0.0,
            completion_tokens=mean(r["completion_tokens"] for r in rows) or 0.0,
            wall=Spread.of([r["wall_seconds"] for r in rows]),
            estimated=Spread.of([r["estimated_seconds"] for r in rows]),
            own=Spread.of([r["own_seconds"] for r in rows]),
            stages={s: Spread.of([r["timings"].get(s, 0.0) for r in rows]) for s in stage_names},
            no_answer=sum(r["status"] == "no_answer" for r in rows),
            llm_errors=errors[name],
        )
    return summaries


def breakdown(records: list[Record], key: str) -> dict[str, dict[str, tuple[int, int]]]:
    """group (``key`` of a record, e.g. ``db_id`` or ``hardness``) -> strategy -> (correct, total)."""
    table: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    for record in records:
        if record["status"] == "llm_error":
            continue
        cell = table[str(record[key])][record["strategy"]]
        cell[0] += bool(record["correct"])
        cell[1] += 1
    return {group: {s: (c[0], c[1]) for s, c in cells.items()} for group, cells in sorted(table.items())}


@dataclass
class VersusReference:
    """One strategy against the reference on the questions both answered: on the majority-incorrect
    subset (the reference is wrong though a correct candidate was in its pool) the share recovered; on
    the majority-correct subset the share lost; and the tokens and seconds it adds per question."""

    strategy: str
    questions: int
    majority_incorrect: int
    recovered: int
    majority_correct: int
    regressed: int
    added_tokens: float
    added_seconds: float
    stage_counts: dict[str, int]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _stage_counts(rows: list[Record]) -> dict[str, int]:
    """Counts of what the optional stages did: DPC outcomes and MDD methods, probes run, repairs, review,
    consensus, trace outcomes and schema linking."""
    counts: Counter[str] = Counter()
    for r in rows:
        dpc = r.get("dpc")
        if dpc:
            counts[f"dpc {dpc['status']}"] += 1
            if dpc.get("mdd_method"):
                counts[f"mdd {dpc['mdd_method']}"] += 1
            if dpc["status"] == "decided" and dpc.get("changed"):
                counts["dpc changed the answer"] += 1
        counts["probes run"] += sum(status == "ok" for status in r.get("probes", []))
        counts["probe replies not in the protocol"] += sum(status == "invalid" for status in r.get("probes", []))
        counts["repairs"] += r.get("repairs", 0)
        review, consensus, trace = r.get("review"), r.get("consensus"), r.get("trace")
        if review:
            counts["review revised the SQL"] += review["changed"]
            counts["review answer chosen"] += review["chosen"]
        if consensus:
            counts[f"consensus {consensus['trigger']} -> {consensus['outcome']}"] += 1
        if trace:
            counts[f"trace {trace['outcome']}"] += 1
            counts["trace answer chosen"] += trace["chosen"]
        compression = r.get("compression")
        if compression and compression["tables_kept"] < compression["tables_total"]:
            counts["schema linking dropped tables"] += 1
    return {k: v for k, v in sorted(counts.items()) if v}


def versus_reference(records: list[Record], strategy: str) -> VersusReference | None:
    """``strategy`` against REFERENCE; None when they share no question (model failures left out)."""
    usable = [r for r in records if r["status"] != "llm_error"]
    reference = {r["id"]: r for r in usable if r["strategy"] == REFERENCE}
    rows = [r for r in usable if r["strategy"] == strategy and r["id"] in reference]
    if not rows:
        return None
    wrong = [r for r in rows if not reference[r["id"]]["correct"] and reference[r["id"]]["pass_at_n"]]
    right = [r for r in rows if reference[r["id"]]["correct"]]
    return VersusReference(
        strategy=strategy,
        questions=len(rows),
        majority_incorrect=len(wrong),
        recovered=sum(r["correct"] for r in wrong),
        majority_correct=len(right),
        regressed=sum(not r["correct"] for r in right),
        added_tokens=mean(r["total_tokens"] - reference[r["id"]]["total_tokens"] for r in rows) or 0.0,
        added_seconds=mean(r["model_seconds"] + r["own_seconds"] - reference[r["id"]]["model_seconds"]
                           - reference[r["id"]]["own_seconds"] for r in rows) or 0.0,
        stage_counts=_stage_counts(rows),
    )
