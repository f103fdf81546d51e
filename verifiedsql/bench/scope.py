"""``verifiedsql bench scope``: questions the data cannot answer (``benchmarks/out_of_scope.json``: general
knowledge, tables or columns a Spider dev database does not have, other tasks), each answered on SQLite by
every strategy, with the outcome it ended in.

An outcome is ``no-data`` (``NoDataError``), ``no-answer`` (any other ``NoAnswerError``), or the answer's
confidence tier; ``timeout`` and ``model-error`` (a model failure or a replay miss, retried on the next
start) are kept apart. None of these questions should be answered at ``verified``. The run reuses the
Spider harness's run loop (``bench/loop.py``): the model, the record/replay cache shared by the strategies,
the databases and the resumable JSONL records (a finished (strategy, question) is skipped on the next
start); it writes a JSON and a Markdown summary beside the records.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import (
    ConfigurationError,
    LLMError,
    NoAnswerError,
    NoDataError,
    QuestionTimeoutError,
    ReplayMissError,
    UnverifiedAnswerError,
)
from ..llm.base import ChatModel
from ..pipeline import Pipeline
from ..report import CONFIDENCE_TIERS, VerificationReport
from .data import DEFAULT_DATA_DIR, sqlite_path
from .loop import Progress, answer_all, print_progress
from .report import machine
from .spider import RunSettings, SpiderConfig, file_name, report_fields

DEFAULT_QUESTIONS = Path("benchmarks/out_of_scope.json")
KINDS = ("general-knowledge", "missing-table", "missing-column", "other-task")
OUTCOMES = ("no-data", "no-answer", *CONFIDENCE_TIERS, "timeout", "model-error")
# the same candidates throughout; default+scope is the library's default with the embedded models, and
# default+scope-alone the same scope requests with the model's NO deciding alone (bench scope-fit reads it)
DEFAULT_STRATEGIES = ["greedy+repair", "self-consistency+repair", "self-consistency+repair+scope", "default",
                      "default+scope", "default+scope-alone"]


@dataclass(frozen=True)
class ScopeQuestion:
    """One question no table of its database answers; ``kind`` says why."""

    id: int
    db_id: str
    question: str
    kind: str


def load_questions(path: Path) -> list[ScopeQuestion]:
    """The question set: a JSON list of ``{id, db_id, question, kind}``; ``ConfigurationError`` when the file
    is missing or a row is malformed."""
    path = Path(path)
    if not path.exists():
        raise ConfigurationError(f"no question set at {path}; pass --questions FILE (benchmarks/out_of_scope.json).")
    rows = json.loads(path.read_text("utf-8"))
    questions = []
    for row in rows:
        if not isinstance(row, dict) or row.get("kind") not in KINDS or not {"id", "db_id", "question"} <= set(row):
            raise ConfigurationError(f"{path}: a question needs id, db_id, question and a kind of {KINDS}: {row!r}")
        questions.append(ScopeQuestion(int(row["id"]), str(row["db_id"]), str(row["question"]), row["kind"]))
    if len({q.id for q in questions}) != len(questions):
        raise ConfigurationError(f"{path}: question ids must be unique.")
    return questions


@dataclass
class ScopeConfig(RunSettings):
    """What to run: every question of the set (or the first ``n``) with each strategy, on SQLite."""

    strategies: list[str] = field(default_factory=lambda: list(DEFAULT_STRATEGIES))
    questions_path: Path = DEFAULT_QUESTIONS
    data_dir: Path = DEFAULT_DATA_DIR
    n: int | None = None

    def spider(self) -> SpiderConfig:
        """The Spider harness's configuration for the same model, cache, data and strategies (on SQLite)."""
        return self.spider_config(self.data_dir, n=None, engine="sqlite")

    def run_name(self, model_name: str) -> str:
        """e.g. ``scope-sqlite-qwen2.5-coder-0.5b``."""
        return file_name(f"scope-sqlite-{model_name}")


@dataclass
class ScopeRun:
    records: list[dict[str, Any]]
    summary: dict[str, Any]
    outputs: dict[str, Path]


def answer_scope(pipeline: Pipeline, question: ScopeQuestion) -> dict[str, Any]:
    """Ask one question with one pipeline: its outcome, the SQL, the model calls (without the strategy's name)."""
    status, outcome, error = "answered", "", None
    missing: tuple[str, ...] = ()
    report: VerificationReport | None = None
    start = time.perf_counter()
    try:
        answer = pipeline.answer(question.question)
        report, outcome = answer.report, answer.report.confidence
    except NoDataError as exc:
        status, outcome, error, report, missing = "no_data", "no-data", str(exc), exc.report, exc.missing
    except NoAnswerError as exc:
        status, outcome, error, report = "no_answer", "no-answer", str(exc), exc.report
    except UnverifiedAnswerError as exc:  # only with a require= option: the answer is still there
        status, error, report = "below_require", str(exc), exc.report
        outcome = exc.report.confidence
    except QuestionTimeoutError as exc:
        status, outcome, error, report = "timeout", "timeout", str(exc), exc.report
    except (LLMError, ReplayMissError) as exc:  # a replay miss: this question was never recorded
        status, outcome, error = "llm_error", "model-error", str(exc)
    fields = report_fields(report)
    return {
        "id": question.id, "db_id": question.db_id, "kind": question.kind, "question": question.question,
        "status": status, "outcome": outcome, "error": error, "missing": list(missing),
        "sql": report.sql if report else None,
        "purposes": [call.purpose for call in report.llm_calls] if report else [],
        "candidates": [{"sql": c.sql, "status": c.status, "error": (c.error or "")[:300] or None}
                       for c in (report.candidates if report else [])],
        "wall_seconds": round(time.perf_counter() - start, 4),
        **{key: fields[key] for key in ("llm_calls", "cached_calls", "total_tokens", "model_seconds", "confidence",
                                         "vote", "evidence", "scope") if key in fields},
    }


def summarize_scope(records: list[dict[str, Any]], strategies: list[str]) -> dict[str, Any]:
    """Per strategy: outcome counts, outcome counts per kind, answers at ``verified`` (and at ``probable`` or
    above, with their SQL), model calls."""
    summary: dict[str, Any] = {}
    for strategy in strategies:
        rows = [r for r in records if r["strategy"] == strategy]
        outcomes = Counter(r["outcome"] for r in rows)
        summary[strategy] = {
            "questions": len(rows),
            "outcomes": {name: outcomes[name] for name in OUTCOMES},
            "by_kind": {kind: {name: n for name in OUTCOMES
                               if (n := sum(r["outcome"] == name for r in rows if r["kind"] == kind))}
                        for kind in KINDS if any(r["kind"] == kind for r in rows)},
            "verified": outcomes["verified"],
            "answered_probable_or_above": [
                {"id": r["id"], "db_id": r["db_id"], "question": r["question"], "outcome": r["outcome"],
                 "sql": r["sql"]} for r in rows if r["outcome"] in ("probable", "verified")],
            "llm_calls": sum(r.get("llm_calls", 0) for r in rows),
            "scope_calls": sum(r.get("purposes", []).count("scope") for r in rows),
        }
    return summary


def render_scope(run_name: str, questions: list[ScopeQuestion], summary: dict[str, Any]) -> str:
    """The Markdown summary."""
    shown = [o for o in OUTCOMES if any(s["outcomes"][o] for s in summary.values())
             or o in ("no-data", "no-answer", "verified")]
    kinds = Counter(q.kind for q in questions)
    lines = [f"# Questions the data cannot answer: {run_name}", "",
             f"{len(questions)} questions ({', '.join(f'{kinds[k]} {k}' for k in KINDS)}) over "
             f"{len({q.db_id for q in questions})} Spider dev databases, on SQLite. None should be answered at "
             "`verified`; `no-data` is `NoDataError`, `no-answer` any other `NoAnswerError`, a tier an answer.", "",
             "| strategy | questions | " + " | ".join(shown) + " | model calls | scope calls |",
             "|---|---:|" + "---:|" * len(shown) + "---:|---:|"]
    for strategy, figures in summary.items():
        cells = " | ".join(str(figures["outcomes"][o]) for o in shown)
        lines.append(f"| {strategy} | {figures['questions']} | {cells} | {figures['llm_calls']} | "
                     f"{figures['scope_calls']} |")
    for strategy, figures in summary.items():
        lines += ["", f"## {strategy}", "", f"Answered at `verified`: {figures['verified']}.", "",
                  "| kind | " + " | ".join(shown) + " |", "|---|" + "---:|" * len(shown)]
        for kind, counts in figures["by_kind"].items():
            lines.append(f"| {kind} | " + " | ".join(str(counts.get(o, 0)) for o in shown) + " |")
        if figures["answered_probable_or_above"]:
            lines += ["", "Answered at `probable` or above:", ""]
            lines += [f"- #{a['id']} {a['db_id']} ({a['outcome']}): {a['question']} -> `{a['sql']}`"
                      for a in figures["answered_probable_or_above"]]
    return "\n".join(lines) + "\n"


def run_scope(config: ScopeConfig, llm: ChatModel | None = None, progress: Progress = print_progress) -> ScopeRun:
    """Run (or resume) the question set and write its JSON and Markdown summaries; returns the records."""
    questions = load_questions(config.questions_path)[: config.n]
    missing = sorted({q.db_id for q in questions if not sqlite_path(config.data_dir, q.db_id).exists()})
    if missing and not config.report_only:
        raise ConfigurationError(f"no SQLite database for {missing} under {config.data_dir}/database; pass --data DIR.")
    run = answer_all(config.spider(), questions, config.run_name,
                     lambda pipeline, question, _gold: answer_scope(pipeline, question), _progress_line, llm, progress)
    records = run.store.select(config.strategies, {q.id for q in questions})
    summary = summarize_scope(records, config.strategies)
    config.out_dir.mkdir(parents=True, exist_ok=True)
    payload = {"run": run.name, "model": run.model, "engine": "sqlite", "questions": len(questions),
               "questions_file": str(config.questions_path), "strategies": config.strategies,
               "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "machine": machine(),
               "summary": summary, "records": records}
    outputs = {"json": config.out_dir / f"{run.name}.json", "md": config.out_dir / f"{run.name}.md"}
    outputs["json"].write_text(json.dumps(payload, indent=2, default=str, ensure_ascii=False) + "\n", "utf-8")
    outputs["md"].write_text(render_scope(run.name, questions, summary), "utf-8")
    return ScopeRun(records, summary, outputs)


def _progress_line(record: dict[str, Any]) -> str:
    return (f"{record['outcome']:<11} {record['strategy']:<30} #{record['id']} {record['db_id']}: "
            f"{record['wall_seconds']:.1f}s")
