"""The hostile-world tally: run the suite in tests/hostile, then print which layer stopped each payload.

    .venv/bin/python benchmarks/hostile_report.py             # run pytest on tests/hostile, then print
    .venv/bin/python benchmarks/hostile_report.py tests/hostile/test_adversarial_model.py   # a part only
    .venv/bin/python benchmarks/hostile_report.py --no-run    # print the last tally only

The suite writes its tally to benchmarks/results/hostile-sql.json (git-ignored). A run is one payload
on one engine through one public API (``create_engine`` or ``dbapi``); its outcome is the layer that
stopped the greedy candidate, or how an answer was bounded (row cap) or why it was allowed (a payload
that is one harmless query on that engine). The exit status is pytest's.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TALLY = ROOT / "benchmarks" / "results" / "hostile-sql.json"
OUTCOMES = ("statement guard", "engine guard", "engine error", "timeout", "row cap", "harmless read", "crash")


def _table(title: str, key: str, runs: list[dict[str, Any]], order: list[str]) -> list[str]:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for run in runs:
        groups[run[key]].append(run)
    head = [title, "payloads", "runs", *OUTCOMES, "data changed", "files created"]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for name in [*order, "total"]:
        group = runs if name == "total" else groups.get(name, [])
        if not group:
            continue
        outcomes = Counter(run["outcome"] for run in group)
        cells = [
            f"**{name}**" if name == "total" else name,
            len({run["payload"] for run in group}),
            len(group),
            *(outcomes.get(outcome, 0) for outcome in OUTCOMES),
            sum(run["data_changed"] for run in group),
            sum(bool(run["files_created"]) for run in group),
        ]
        lines.append("| " + " | ".join(map(str, cells)) + " |")
    return lines


def render_markdown(tally: dict[str, Any]) -> str:
    """The tally as Markdown: by category, by engine, and what stopped the probes."""
    runs = tally["runs"]
    categories = list(dict.fromkeys(run["category"] for run in runs))
    engines = sorted({run["dialect"] for run in runs})  # as the registry (verifiedsql/backends/) orders them
    apis = Counter(run["api"] for run in runs)
    probes = Counter(run["layers"].get("probe", "not run") for run in runs)
    lines = [
        f"Catalogue: {tally.get('catalogue_size', '?')} payloads. {len(runs)} runs (a payload or scenario on one "
        "engine through one API): " + ", ".join(f"{n} through {api}" for api, n in sorted(apis.items())) + ".",
        "",
        *_table("category", "category", runs, categories),
        "",
        *_table("engine", "dialect", runs, engines),
        "",
        "Probes (the same payload as an exploratory query, LIMIT 20): "
        + ", ".join(f"{layer} {n}" for layer, n in probes.most_common()) + ".",
    ]
    crashes = [r for r in runs if r["outcome"] == "crash"]
    if crashes:
        lines += ["", "Crashes (an untyped exception out of the public API):"]
        lines += [f"- {r['payload']} on {r['dialect']} ({r['api']}): {r['error']}" for r in crashes]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no-run", action="store_true", help="print the last tally without running the suite")
    parser.add_argument("--tally", type=Path, default=TALLY, help=f"tally file (default {TALLY})")
    parser.add_argument("paths", nargs="*", default=["tests/hostile"], help="what pytest runs (default tests/hostile)")
    args = parser.parse_args(argv)
    status = 0
    if not args.no_run:
        env = dict(os.environ, HOSTILE_TALLY=str(args.tally))
        command = [sys.executable, "-m", "pytest", *args.paths, "-q", "-p", "no:cacheprovider"]
        status = subprocess.run(command, cwd=ROOT, env=env, check=False).returncode
    if not args.tally.exists():
        print(f"no tally at {args.tally}; run without --no-run first", file=sys.stderr)
        return status or 1
    print(render_markdown(json.loads(args.tally.read_text())))
    return status


if __name__ == "__main__":
    sys.exit(main())
