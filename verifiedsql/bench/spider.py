"""The Spider accuracy run: sample questions, answer each with every strategy (``bench/loop.py``), grade,
report."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import LLMError, NoAnswerError, NoDataError, ReplayMissError
from ..llm.base import ChatModel
from ..pipeline import Pipeline
from ..report import VerificationReport
from .data import DEFAULT_DATA_DIR, Example, load_examples, stratified_sample
from .engines import has_database
from .hardness import hardness
from .loop import Progress, answer_all, print_progress
from .metrics import Summary, summarize
from .report import write_outputs
from .scoring import CandidateGrader, Gold, matches, run_gold

DEFAULT_OUT = Path("benchmarks/results")
DEFAULT_CACHE = DEFAULT_OUT / "llm-cache.sqlite"


@dataclass
class RunSettings:
    """What every harness (Spider, the out-of-scope set, the analytics set) is told alike: the strategies, the
    record/replay cache, the model and where the outputs go."""

    strategies: list[str] = field(default_factory=lambda: ["greedy", "self-consistency"])
    cache_path: Path | None = DEFAULT_CACHE
    replay: bool = False
    model: str = "1.5b"
    out_dir: Path = DEFAULT_OUT
    options: dict[str, Any] = field(default_factory=dict)  # further Options values for every strategy
    report_only: bool = False  # summarise the stored records; answer nothing

    def spider_config(self, data_dir: Path, **where: Any) -> SpiderConfig:
        """The Spider harness's configuration with these settings, over ``data_dir`` (``where``: its n, seed,
        engine, pg_url)."""
        return SpiderConfig(data_dir=data_dir, strategies=self.strategies, cache_path=self.cache_path,
                            replay=self.replay, model=self.model, out_dir=self.out_dir, options=self.options,
                            report_only=self.report_only, **where)


@dataclass
class SpiderConfig(RunSettings):
    """What to run; the defaults are the issue's: 200 questions, SQLite, greedy vs self-consistency."""

    data_dir: Path = DEFAULT_DATA_DIR
    n: int | None = 200  # None: every question
    seed: int = 0
    engine: str = "sqlite"
    pg_url: str | None = None

    def base_options(self) -> dict[str, Any]:
        values: dict[str, Any] = {"local_model": self.model, **self.options}
        if self.cache_path is not None:
            values.update(cache_path=self.cache_path, cache_mode="replay" if self.replay else "readwrite")
        return values

    def run_name(self, model_name: str) -> str:
        """Output files are named after the engine and the model that answered, e.g.
        ``spider-sqlite-qwen2.5-coder-1.5b``: runs of different models never mix."""
        return file_name(f"spider-{self.engine}-{model_name}")


def file_name(text: str) -> str:
    """``text`` with every character a file name should not hold replaced by ``_``."""
    return "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in text)


@dataclass
class SpiderRun:
    records: list[dict[str, Any]]
    summaries: dict[str, Summary]
    outputs: dict[str, Path]


def report_fields(report: VerificationReport | None) -> dict[str, Any]:
    """A record's fields from one answer's report: cost, time, tier, vote, evidence and what the optional
    stages did. Cached calls replay the seconds recorded when the cache was filled, so ``model_seconds`` is
    the uncached model time even on a replayed run."""
    calls = report.llm_calls if report else []
    return {
        "llm_calls": len(calls),
        "cached_calls": sum(c.cached for c in calls),
        "prompt_tokens": sum(c.prompt_tokens for c in calls),
        "completion_tokens": sum(c.completion_tokens for c in calls),
        "total_tokens": sum(c.prompt_tokens + c.completion_tokens for c in calls),
        "model_seconds": round(sum(c.seconds for c in calls), 4),
        "live_model_seconds": round(sum(c.seconds for c in calls if not c.cached), 4),
        "timings": dict(report.timings) if report else {},
        "confidence": report.confidence if report else None,
        "vote": report.vote if report else None,
        "vote_share": _vote_share(report),
        "evidence": [[e.check, e.verdict] for e in report.evidence] if report else [],
        "probability": report.probability if report else None,
        "confidence_from": report.confidence_from if report else None,
        "scored": bool(report and any(c.certainty is not None for c in report.candidates)),
        "features": dict(report.features) if report else {},
        "first_features": dict(report.first_features) if report else {},
        **_stage_fields(report),
    }


def _vote_share(report: VerificationReport | None) -> float | None:
    """The share of all candidates in the answer's cluster (None without an answer)."""
    if report is None or report.sql is None or not report.candidates:
        return None
    chosen = next((c for c in report.clusters if any(report.candidates[m].sql == report.sql for m in c.members
                                                     if m < len(report.candidates))), None)
    return round(len(chosen.members) / len(report.candidates), 4) if chosen else None


def _stage_fields(report: VerificationReport | None) -> dict[str, Any]:
    """What the optional stages did (probes, repairs, DPC, review, consensus, trace, compression, the scope check),
    for the stage breakdowns."""
    if report is None:
        return {}
    fields: dict[str, Any] = {
        "probes": [p.status for p in report.probes],
        "value_mappings": len(report.findings.value_mappings),
        "repairs": sum(len(c.repairs) for c in report.candidates),
    }
    if report.dpc is not None:
        test = report.dpc
        fields["dpc"] = {
            "status": test.status, "reason": test.reason[:300], "changed": test.winner != test.champion,
            "mdd_method": test.mdd_method, "mdd_tries": test.mdd_tries, "slice_method": test.slice_method,
            "solver_attempts": test.solver_attempts, "scores": test.scores, "tokens": test.tokens,
            "seconds": test.seconds,
        }
    if report.review is not None:
        review = report.review
        fields["review"] = {"rounds": len(review.rounds), "changed": review.changed, "stop": review.stop[:200],
                            "chosen": review.changed and report.sql == review.final_sql}
    if report.consensus is not None:
        consensus = report.consensus
        fields["consensus"] = {"trigger": consensus.trigger, "outcome": consensus.outcome,
                               "explorations": len(report.exploration),
                               "explorations_ran": sum(e.status == "ok" for e in report.exploration)}
    if report.trace is not None:
        trace = report.trace
        fields["trace"] = {
            "outcome": trace.outcome, "reason": trace.reason[:300], "stop": trace.stop,
            "steps": sum(step.status == "accepted" for step in trace.steps),
            "step_tries": sum(len(step.problems) + (step.status == "accepted") for step in trace.steps),
            "consistent": trace.consistent, "similarity": trace.similarity,
            "similarity_check": trace.similarity_check[:80],
            "chosen": trace.candidate is not None and report.sql == trace.sql,
        }
    if report.schema_compression is not None:
        fields["compression"] = dict(report.schema_compression)
    if report.scope is not None:
        scope = report.scope
        fields["scope"] = {"said": scope.said, "unmatched": list(scope.unmatched), "words": len(scope.words),
                           "unmatched_share": round(scope.unmatched_share, 4), "complete": scope.complete,
                           "ended": scope.ended}
    return fields


def answer_one(pipeline: Pipeline, example: Example, gold: Gold, grader: CandidateGrader) -> dict[str, Any]:
    """Answer one question with one pipeline and grade it (not including the strategy's name)."""
    status, error, sql, result, no_data = "answered", None, None, None, False
    report: VerificationReport | None = None
    start = time.perf_counter()
    try:
        answer = pipeline.answer(example.question)
        report, sql, result = answer.report, answer.sql, answer.result
    except NoAnswerError as exc:  # NoDataError too: still no answer, marked "no_data"
        status, error, report = "no_answer", str(exc), exc.report
        no_data = isinstance(exc, NoDataError)
    except (LLMError, ReplayMissError) as exc:  # a replay miss: this question was never recorded
        status, error = "llm_error", str(exc)
    wall = time.perf_counter() - start
    fields = report_fields(report)
    candidates = [
        {"index": c.index, "origin": c.origin, "sql": c.sql, "status": c.status, "cluster": c.cluster,
         "error": (c.error or "")[:300] or None, "correct": c.status == "ok" and grader.correct(c.sql),
         "attempts": len(c.attempts),
         **({"fixes": list(c.fixes)} if c.fixes else {})}
        for c in (report.candidates if report else [])
    ]
    own = max(wall - fields["live_model_seconds"], 0.0)
    return {
        "id": example.id, "db_id": example.db_id, "question": example.question, "gold": example.gold,
        "hardness": hardness(example.gold), "status": status, "error": error or gold.error,
        "no_data": no_data,
        "sql": sql, "correct": matches(result, gold),
        "pass_at_n": any(c["correct"] for c in candidates),
        "candidates": candidates,
        "wall_seconds": round(wall, 4), "own_seconds": round(own, 4),
        "estimated_seconds": round(own + fields["model_seconds"], 4),
        **fields,
    }


def shared_questions(records: list[dict[str, Any]], strategies: list[str]) -> list[dict[str, Any]]:
    """The records of the questions every strategy has a record for, so that a partial run (a prefix of
    the seeded order) compares the strategies on the same questions. Where a strategy failed on the
    model (status ``llm_error``, e.g. a replay miss), only the failures are kept: they are counted as
    errors, and no strategy's figures include that question."""
    by_question: dict[int, list[dict[str, Any]]] = {}
    for record in records:
        by_question.setdefault(record["id"], []).append(record)
    kept: list[dict[str, Any]] = []
    for rows in by_question.values():
        if {r["strategy"] for r in rows} >= set(strategies):
            failed = [r for r in rows if r["status"] == "llm_error"]
            kept.extend(failed or rows)
    return kept


def run_spider(config: SpiderConfig, llm: ChatModel | None = None,
               progress: Progress = print_progress) -> SpiderRun:
    """Run (or resume) the benchmark and write its JSON, Markdown and PNG; returns the records."""
    examples = load_examples(config.data_dir)
    sample = examples if config.n is None else stratified_sample(examples, config.n, config.seed)
    # The same seeded questions on every engine, less those whose database this engine cannot load.
    missing = [e for e in sample if not has_database(config.engine, config.data_dir, e.db_id)]
    if missing:
        progress(f"{len(missing)} of {len(sample)} questions skipped: no {config.engine} copy of "
                 f"{', '.join(sorted({e.db_id for e in missing}))}")
        sample = [e for e in sample if has_database(config.engine, config.data_dir, e.db_id)]
    # A seeded shuffle: every prefix of the run is a uniform subsample, so a partial run is unbiased.
    order = list(sample)
    random.Random(config.seed).shuffle(order)
    golds: dict[int, Gold] = {}

    def answer(pipeline: Pipeline, example: Example, gold_conn: Any) -> dict[str, Any]:
        if example.id not in golds:
            golds[example.id] = run_gold(gold_conn, example.gold)
        gold = golds[example.id]
        return answer_one(pipeline, example, gold, CandidateGrader(pipeline.database, gold))

    run = answer_all(config, order, config.run_name, answer, _progress_line, llm, progress, count_done=True)
    records = shared_questions(run.store.select(config.strategies, {e.id for e in sample}), config.strategies)
    summaries = summarize(records, config.strategies)
    outputs = write_outputs(config, run.name, records, summaries)
    return SpiderRun(records, summaries, outputs)


def _progress_line(record: dict[str, Any]) -> str:
    mark = "ok " if record["correct"] else ("ERR" if record["status"] == "llm_error" else "-- ")
    return (f"{mark} {record['strategy']:<18} #{record['id']} {record['db_id']}: {record['wall_seconds']:.1f}s, "
            f"{record['total_tokens']} tokens")
