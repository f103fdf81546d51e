"""Latency per question with the embedded model (issue 14): the shop demo's questions and Spider dev's easy
questions, answered live through the public engine with the default options, every call recorded into a
cache; the other configurations (adaptive sampling, greedy) are then replayed from that cache, so they
see the same candidates, and their latency is the library's own time plus the recorded model seconds.

For each live question the embedded server's log gives the time spent evaluating prompts (prompt
processing, before the first token) and generating; their ratio is the prompt-processing share.

    .venv/bin/python benchmarks/latency.py --model 1.5b --out benchmarks/results/latency-1.5b \\
        [--spider-easy 10] [--replay]

Writes ``latency.json`` and ``latency.md`` in ``--out`` (the cache is ``--out/llm-cache.sqlite``; a rerun
replays what is recorded and records the rest).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import verifiedsql
from verifiedsql.bench.data import DEFAULT_DATA_DIR, load_examples, sqlite_path, stratified_sample
from verifiedsql.bench.hardness import hardness
from verifiedsql.llm import MODELS, model_home

SHOP = Path(__file__).resolve().parent.parent / "examples" / "shop.db"
SHOP_QUESTIONS = (
    "How many customers are there in each country?",
    "How many orders are there?",
    "What is the most expensive product?",
    "List the names of customers from Brazil.",
    "What is the total amount of all orders?",
    "How many products are in each category?",
)
CONFIGS: dict[str, dict[str, Any]] = {  # name -> options; the first is answered live
    "default": {},
    "default+adaptive": {"adaptive": True},
    "greedy (candidates=1)": {"candidates": 1},
}
_PERF = re.compile(r"^llama_perf_context_print:\s+(prompt eval|eval) time =\s+([\d.]+) ms")


@dataclass(frozen=True)
class Question:
    source: str
    url: str
    text: str


def questions(data_dir: Path, easy: int) -> list[Question]:
    """The shop demo's questions, then the first ``easy`` easy questions of the harness's seeded order."""
    found = [Question("shop", f"sqlite:///{SHOP}", q) for q in SHOP_QUESTIONS]
    sample = stratified_sample(load_examples(data_dir), 200, 0)
    order = list(sample)
    random.Random(0).shuffle(order)
    for example in order:
        if len(found) >= len(SHOP_QUESTIONS) + easy:
            break
        if hardness(example.gold) == "easy":
            found.append(Question(f"spider {example.db_id} #{example.id}",
                                  f"sqlite:///{sqlite_path(data_dir, example.db_id)}", example.question))
    return found


def server_seconds(log: Path, offset: int) -> tuple[float, float]:
    """Seconds of prompt evaluation and of generation the embedded server logged after ``offset``."""
    prompt = generate = 0.0
    if not log.exists():
        return prompt, generate
    with log.open("rb") as handle:
        handle.seek(offset)
        for line in handle.read().decode("utf-8", "replace").splitlines():
            if match := _PERF.match(line):
                if match.group(1) == "prompt eval":
                    prompt += float(match.group(2)) / 1000
                else:
                    generate += float(match.group(2)) / 1000
    return prompt, generate


def answer(question: Question, options: dict[str, Any], log: Path) -> dict[str, Any]:
    """One question through the public engine; its wall time, cost and the server's prompt/generation split."""
    offset = log.stat().st_size if log.exists() else 0
    engine = verifiedsql.create_engine(question.url, **options)
    start = time.perf_counter()
    error = None
    try:
        with engine.connect() as conn:
            report = conn.execute(verifiedsql.ask(question.text)).verification
    except verifiedsql.errors.VerifiedSQLError as failure:
        report, error = getattr(failure, "report", None), type(failure).__name__
    wall = time.perf_counter() - start
    engine.dispose()
    calls = report.llm_calls if report is not None else []
    live = [c for c in calls if not c.cached]
    prompt_s, generate_s = server_seconds(log, offset) if live else (0.0, 0.0)
    model_s = sum(c.seconds for c in calls)
    own_s = wall - sum(c.seconds for c in live)
    return {"source": question.source, "question": question.text, "error": error,
            "confidence": report.confidence if report is not None else None,
            "calls": len(calls), "cached": len(calls) - len(live),
            "prompt_tokens": sum(c.prompt_tokens for c in calls),
            "completion_tokens": sum(c.completion_tokens for c in calls),
            "wall_s": round(wall, 3), "estimated_s": round(own_s + model_s, 3),
            "prompt_eval_s": round(prompt_s, 3), "generate_s": round(generate_s, 3)}


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    seconds = [r["estimated_s"] for r in rows]
    prompt = sum(r["prompt_eval_s"] for r in rows)
    server = prompt + sum(r["generate_s"] for r in rows)
    return {"questions": len(rows), "p50_s": round(statistics.median(seconds), 2),
            "p95_s": round(percentile(seconds, 0.95), 2), "max_s": round(max(seconds), 2),
            "calls_per_q": round(sum(r["calls"] for r in rows) / len(rows), 2),
            "tokens_per_q": round(sum(r["prompt_tokens"] + r["completion_tokens"] for r in rows) / len(rows)),
            "prompt_share": round(prompt / server, 3) if server else None}


def markdown(result: dict[str, Any]) -> str:
    lines = [f"Embedded {result['model']}, {result['threads']} threads; latency per question (p50 target "
             f"<= 10 s). Live: {result['live']}; the others replay its recorded calls.", "",
             "| configuration | questions | p50 | p95 | max | calls/q | tokens/q | prompt-processing share |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for row in result["table"]:
        share = "-" if row["prompt_share"] is None else f"{row['prompt_share']:.0%}"
        lines.append(f"| {row['config']}, {row['set']} | {row['questions']} | {row['p50_s']:.1f} s | "
                     f"{row['p95_s']:.1f} s | {row['max_s']:.1f} s | {row['calls_per_q']} | {row['tokens_per_q']:,} "
                     f"| {share} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", choices=sorted(MODELS), default="1.5b")
    parser.add_argument("--spider-easy", type=int, default=10)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--replay", action="store_true", help="replay the cache only (no model)")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    cache = args.out / "llm-cache.sqlite"
    log = model_home() / "logs" / f"server-{MODELS[args.model].alias}.log"
    base = {"local_model": args.model, "cache_path": cache, "question_timeout_s": 900.0}
    rows: dict[str, list[dict[str, Any]]] = {}
    for index, (config, options) in enumerate(CONFIGS.items()):
        mode = "replay" if args.replay or index else "readwrite"
        rows[config] = []
        for question in questions(args.data, args.spider_easy):
            row = answer(question, {**base, **options, "cache_mode": mode}, log)
            rows[config].append(row)
            print(f"{config:24} {question.source:32} {row['estimated_s']:7.1f} s  {row['calls']} calls "
                  f"({row['cached']} cached)  {row['confidence']}", file=sys.stderr)
    table = []
    for config, found in rows.items():
        for name, subset in (("shop", [r for r in found if r["source"] == "shop"]),
                             ("Spider easy", [r for r in found if r["source"] != "shop"])):
            if subset:
                table.append({"config": config, "set": name, **summary(subset)})
    result = {"model": MODELS[args.model].alias, "threads": verifiedsql.llm.local.default_threads(),
              "live": next(iter(CONFIGS)), "table": table, "rows": rows}
    (args.out / "latency.json").write_text(json.dumps(result, indent=1), "utf-8")
    (args.out / "latency.md").write_text(markdown(result), "utf-8")
    print(markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
