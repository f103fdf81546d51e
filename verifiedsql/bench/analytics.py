"""``verifiedsql bench analytics``: the project's own analytics questions (``benchmarks/analytics``), unlike
Spider's: ratios and percentages, shares of a total, growth between periods, differences of dates, per-period
aggregates, the top N and their share, and instructions in the question ("match case-insensitively").

The set is a folder holding ``questions.json`` (each question's id, database, class and gold SQL; the gold runs
on SQLite and PostgreSQL alike, or has a ``gold_postgresql`` where the two spell date arithmetic differently)
and ``generate.py``, whose ``build(folder)`` writes the databases from a fixed seed in the Spider layout. The
run builds them under the output folder (again only when the generator changed), then reuses the Spider
harness: its run loop, engines, record/replay cache, grading and records (``bench/loop.py``, ``bench/spider.py``),
so ``bench stages`` and ``bench compare`` read its records too. Each record also carries the question's
``class`` and its ``split``: a seeded half of each class is ``fit`` (for choosing defaults), the other half
``reported`` (for the figures). It writes a JSON and a Markdown summary beside the records.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import importlib.util
import json
import random
import sys
from collections import defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import Any

from ..errors import ConfigurationError
from ..llm.base import ChatModel
from ..pipeline import Pipeline
from .data import Example
from .loop import Progress, answer_all, print_progress
from .metrics import summarize
from .report import machine
from .scoring import CandidateGrader, Gold, run_gold
from .spider import RunSettings, SpiderConfig, answer_one, file_name, shared_questions

DEFAULT_SET = Path("benchmarks/analytics")
CLASSES = ("ratio", "percentage", "share", "growth", "date", "period", "top_share", "instruction", "distinct")
SPLITS = ("fit", "reported")
# the default pipeline without its deterministic constraint repair, and the default (the repair asks nothing)
DEFAULT_STRATEGIES = ["default-constraints", "default"]
_STAMP = ".generator-sha256"


@dataclass(frozen=True)
class AnalyticsQuestion:
    """One question of the set; ``gold`` runs on SQLite (and PostgreSQL unless ``gold_postgresql`` is given)."""

    id: int
    db_id: str
    question: str
    gold: str
    kind: str  # the class: one of CLASSES
    gold_postgresql: str | None = None

    def example(self) -> Example:
        return Example(self.id, self.db_id, self.question, self.gold)

    def gold_for(self, engine: str) -> str:
        """The gold SQL in ``engine``'s spelling."""
        return self.gold_postgresql if engine == "postgresql" and self.gold_postgresql else self.gold


def load_set(folder: Path) -> list[AnalyticsQuestion]:
    """The questions of ``folder/questions.json``; ``ConfigurationError`` when the file is missing or a row is
    malformed (a missing field, an unknown class, a repeated id)."""
    path = Path(folder) / "questions.json"
    if not path.exists():
        raise ConfigurationError(f"no question set at {path}; pass --set FOLDER (default {DEFAULT_SET}).")
    questions = []
    for row in json.loads(path.read_text("utf-8")):
        if not isinstance(row, dict) or not {"id", "db_id", "question", "gold", "class"} <= set(row) \
                or row["class"] not in CLASSES:
            raise ConfigurationError(f"{path}: a question needs id, db_id, question, gold and a class of "
                                     f"{CLASSES}: {row!r}")
        questions.append(AnalyticsQuestion(int(row["id"]), str(row["db_id"]), str(row["question"]), str(row["gold"]),
                                           row["class"], row.get("gold_postgresql")))
    if len({q.id for q in questions}) != len(questions):
        raise ConfigurationError(f"{path}: question ids must be unique.")
    return questions


def split(questions: list[AnalyticsQuestion], seed: int = 0) -> dict[int, str]:
    """Question id -> ``fit`` or ``reported``: within each class, a ``random.Random(seed)`` shuffle of the ids
    in order, its first half (rounded down) ``fit`` and the rest ``reported``."""
    rng = random.Random(seed)
    halves: dict[int, str] = {}
    for kind in CLASSES:
        ids = sorted(q.id for q in questions if q.kind == kind)
        rng.shuffle(ids)
        for position, question_id in enumerate(ids):
            halves[question_id] = SPLITS[position >= len(ids) // 2]
    return halves


def build_data(set_dir: Path, target: Path) -> Path:
    """The set's databases under ``target``, written by ``set_dir/generate.py``'s ``build`` unless the files
    there were written by the same generator."""
    generator = Path(set_dir) / "generate.py"
    if not generator.exists():
        raise ConfigurationError(f"no generator at {generator}; the question set's folder needs generate.py.")
    digest = hashlib.sha256(generator.read_bytes()).hexdigest()
    stamp = Path(target) / _STAMP
    if stamp.exists() and stamp.read_text().strip() == digest:
        return Path(target)
    load_generator(set_dir).build(Path(target))
    stamp.write_text(digest + "\n")
    return Path(target)


def load_generator(set_dir: Path) -> ModuleType:
    """The set's ``generate.py`` as a module (its ``build(folder)`` writes the databases)."""
    generator = Path(set_dir) / "generate.py"
    name = f"verifiedsql_analytics_generator_{hashlib.sha256(str(generator.resolve()).encode()).hexdigest()[:12]}"
    spec = importlib.util.spec_from_file_location(name, generator)
    if spec is None or spec.loader is None:
        raise ConfigurationError(f"cannot load {generator} as a Python module.")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # its dataclasses look their module up there
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


@dataclass
class AnalyticsConfig(RunSettings):
    """What to run: the set's questions (or the first ``n`` of their seeded order) with each strategy."""

    strategies: list[str] = field(default_factory=lambda: list(DEFAULT_STRATEGIES))
    set_dir: Path = DEFAULT_SET
    engine: str = "sqlite"
    pg_url: str | None = None
    seed: int = 0  # the split's seed, and the order's
    n: int | None = None

    def spider(self, data_dir: Path) -> SpiderConfig:
        """The Spider harness's configuration for the same engine, model, cache and strategies."""
        return self.spider_config(data_dir, n=self.n, seed=self.seed, engine=self.engine, pg_url=self.pg_url)

    def run_name(self, model_name: str) -> str:
        """e.g. ``analytics-postgresql-qwen2.5-coder-1.5b``."""
        return file_name(f"analytics-{self.engine}-{model_name}")


@dataclass
class AnalyticsRun:
    records: list[dict[str, Any]]
    summary: dict[str, Any]
    outputs: dict[str, Path]


def _tally(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Right answers, questions, and the ``verified`` tier's size and precision, over ``rows``."""
    verified = [r for r in rows if r.get("confidence") == "verified"]
    return {"correct": sum(bool(r["correct"]) for r in rows), "questions": len(rows),
            "ex": sum(bool(r["correct"]) for r in rows) / len(rows) if rows else None,
            "verified": len(verified),
            "verified_precision": sum(bool(r["correct"]) for r in verified) / len(verified) if verified else None}


def summarize_analytics(records: list[dict[str, Any]], strategies: list[str]) -> dict[str, Any]:
    """Per strategy (model failures left out): the tally over all questions, per split, and per class on each
    split."""
    summary: dict[str, Any] = {}
    for strategy in strategies:
        rows = [r for r in records if r["strategy"] == strategy and r["status"] != "llm_error"]
        by: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
        for row in rows:
            by[(row["split"], row["class"])].append(row)
            by[("all", row["class"])].append(row)
        summary[strategy] = {
            "all": _tally(rows),
            "splits": {half: _tally([r for r in rows if r["split"] == half]) for half in SPLITS},
            "classes": {half: {kind: _tally(by[(half, kind)]) for kind in CLASSES if by[(half, kind)]}
                        for half in ("all", *SPLITS)},
            "no_answer": sum(r["status"] == "no_answer" for r in rows),
            "llm_errors": sum(r["status"] == "llm_error" for r in records if r["strategy"] == strategy),
        }
    return summary


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def render(run_name: str, questions: list[AnalyticsQuestion], summary: dict[str, Any], seed: int,
           set_name: str = "benchmarks/analytics") -> str:
    """The Markdown summary: EX and the verified tier per strategy and split, then EX per class."""
    lines = [f"# Analytics questions: {run_name}", "",
             f"{len(questions)} questions over {len({q.db_id for q in questions})} databases "
             f"({set_name}); split seed {seed}: a seeded half of each class is `fit`, the rest `reported`. EX: the "
             "result equals the gold's (Spider's grading, but a text that spells an integer is that integer: the "
             "golds run on SQLite, where a year is text); verified: answers at the `verified` tier, and the share "
             "of them that are right.", "",
             "| strategy | half | n | EX | verified | verified precision | no answer |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for strategy, figures in summary.items():
        for half, tally in (("all", figures["all"]), *figures["splits"].items()):
            lines.append(f"| {strategy} | {half} | {tally['questions']} | {_pct(tally['ex'])} | {tally['verified']} | "
                         f"{_pct(tally['verified_precision'])} | {figures['no_answer'] if half == 'all' else ''} |")
    for half in ("reported", "all"):
        lines += ["", f"## EX per class ({half})", "", "| class | " + " | ".join(summary) + " |",
                  "|---|" + "---:|" * len(summary)]
        for kind in CLASSES:
            cells = [summary[s]["classes"][half].get(kind) for s in summary]
            if any(cells):
                lines.append(f"| {kind} | " + " | ".join(
                    f"{c['correct']}/{c['questions']}" if c else "" for c in cells) + " |")
    return "\n".join(lines) + "\n"


def run_analytics(config: AnalyticsConfig, llm: ChatModel | None = None,
                  progress: Progress = print_progress) -> AnalyticsRun:
    """Run (or resume) the question set and write its JSON and Markdown summaries; returns the records."""
    questions = load_set(config.set_dir)
    halves = split(questions, config.seed)
    order = sorted(questions, key=lambda q: q.id)
    random.Random(config.seed).shuffle(order)  # every prefix is a uniform subsample, as in bench spider
    order = order[: config.n]
    by_id = {q.id: q for q in order}
    data_dir = build_data(config.set_dir, config.out_dir / "analytics-data")
    golds: dict[int, Gold] = {}

    def answer(pipeline: Pipeline, question: AnalyticsQuestion, gold_conn: Any) -> dict[str, Any]:
        if question.id not in golds:
            # the gold runs on SQLite, where a date's year is text: a year as a number is the same answer
            golds[question.id] = replace(run_gold(gold_conn, question.gold), text_integers=True)
        gold = golds[question.id]
        record = answer_one(pipeline, question.example(), gold, CandidateGrader(pipeline.database, gold))
        return {**record, "class": question.kind, "split": halves[question.id]}

    run = answer_all(config.spider(data_dir), order, config.run_name, answer, _progress_line, llm, progress,
                     count_done=True)
    records = shared_questions(run.store.select(config.strategies, set(by_id)), config.strategies)
    for record in records:  # records written before a class was renamed, or with another seed, follow the set
        record["class"], record["split"] = by_id[record["id"]].kind, halves[record["id"]]
    summary = summarize_analytics(records, config.strategies)
    config.out_dir.mkdir(parents=True, exist_ok=True)
    payload = {"run": run.name, "model": run.model, "engine": config.engine, "questions": len(order),
               "set": str(config.set_dir), "seed": config.seed, "strategies": config.strategies,
               "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "machine": machine(),
               "summary": summary,
               "summaries": {s: m.to_dict() for s, m in summarize(records, config.strategies).items()},
               "records": records}
    outputs = {"json": config.out_dir / f"{run.name}.json", "md": config.out_dir / f"{run.name}.md"}
    outputs["json"].write_text(json.dumps(payload, indent=1, default=str, ensure_ascii=False) + "\n", "utf-8")
    outputs["md"].write_text(render(run.name, order, summary, config.seed, _shown(config.set_dir)), "utf-8")
    return AnalyticsRun(records, summary, outputs)


def _shown(folder: Path) -> str:
    """``folder`` relative to the working directory where it lies under it, else as given."""
    try:
        return str(Path(folder).resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(folder)


def _progress_line(record: dict[str, Any]) -> str:
    mark = "ok " if record["correct"] else ("ERR" if record["status"] == "llm_error" else "-- ")
    return (f"{mark} {record['strategy']:<20} #{record['id']} {record['db_id']} ({record['class']}): "
            f"{record['wall_seconds']:.1f}s, {record['confidence']}")
