"""The run's outputs: a JSON file with every record, a Markdown report and a PNG chart."""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .anatomy import ERROR_CLASSES, OUTCOMES, anatomy
from .hardness import LEVELS
from .metrics import Spread, Summary, breakdown, versus_reference
from .strategies import REFERENCE

if TYPE_CHECKING:
    from .spider import SpiderConfig


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    cpu = platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"platform": platform.platform(), "cpu": cpu, "cores": os.cpu_count(),
            "python": platform.python_version()}


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def _s(spread: Spread) -> str:
    if spread.p50 is None or spread.p95 is None:
        return "n/a"
    return f"{spread.p50:.2f} / {spread.p95:.2f}"


def _ms(spread: Spread) -> str:
    if spread.p50 is None or spread.p95 is None:
        return "n/a"
    return f"{1000 * spread.p50:.1f} / {1000 * spread.p95:.1f}"


def _group_order(key: str, group: str) -> tuple[int, str]:
    return (LEVELS.index(group) if key == "hardness" and group in LEVELS else len(LEVELS), group)


def _breakdown_table(title: str, records: list[dict[str, Any]], key: str, strategies: list[str]) -> list[str]:
    table = breakdown(records, key)
    lines = [f"### By {title}", "", f"| {title} | n | " + " | ".join(strategies) + " |",
             "|---|---:|" + "---:|" * len(strategies)]
    for group, cells in sorted(table.items(), key=lambda item: _group_order(key, item[0])):
        n = max(total for _, total in cells.values())
        row = [f"{100 * c / t:.0f}%" if (c, t) != (0, 0) and t else "n/a"
               for c, t in (cells.get(s, (0, 0)) for s in strategies)]
        lines.append(f"| {group} | {n} | " + " | ".join(row) + " |")
    return lines + [""]


def _versus_table(records: list[dict[str, Any]], strategies: list[str]) -> list[str]:
    """Each strategy against self-consistency: recovered and regressed questions, cost added, stages."""
    rows = [v for s in strategies if s != REFERENCE and (v := versus_reference(records, s)) is not None]
    if not rows:
        return []
    lines = [f"### Against {REFERENCE} (same questions)", "",
             "- majority-incorrect: the reference is wrong although its pool held a correct candidate; "
             "majority-correct: the reference is right. Added: mean per question, uncached model seconds "
             "plus own time.", "",
             "| strategy | recovered of majority-incorrect | regressed of majority-correct | added tokens/q "
             "| added s/q | what the stages did |", "|---|---:|---:|---:|---:|---|"]
    for v in rows:
        stages = ", ".join(f"{k}: {n}" for k, n in v.stage_counts.items()) or "-"
        lines.append(
            f"| {v.strategy} | {v.recovered}/{v.majority_incorrect} | {v.regressed}/{v.majority_correct} | "
            f"{v.added_tokens:+.0f} | {v.added_seconds:+.1f} | {stages} |")
    return lines + [""]


def _anatomy_tables(records: list[dict[str, Any]], strategies: list[str]) -> list[str]:
    """Why questions ended as they did (outcome classes) and why candidates failed (error classes)."""
    found = [anatomy(records, s) for s in strategies]
    found = [a for a in found if a.questions]
    if not found:
        return []
    lines = ["### Failure anatomy", "",
             "- Outcome of each question: right; majority wrong (a correct candidate was in the pool but "
             "not chosen); pool all wrong (candidates ran, none right); no candidate ran.", "",
             "| strategy | questions | " + " | ".join(OUTCOMES) + " |", "|---|---:|" + "---:|" * len(OUTCOMES)]
    for a in found:
        lines.append(f"| {a.strategy} | {a.questions} | " + " | ".join(str(a.outcomes[o]) for o in OUTCOMES) + " |")
    classes = [c for c in ERROR_CLASSES if any(c in a.errors for a in found)]
    if classes:
        lines += ["", "- Error class of each failing candidate (after its self-repairs), read from the engine's "
                  "message.", "",
                  "| strategy | candidates | failed | " + " | ".join(classes) + " |",
                  "|---|---:|---:|" + "---:|" * len(classes)]
        for a in found:
            lines.append(f"| {a.strategy} | {a.candidates} | {a.failed_candidates} | "
                         + " | ".join(str(a.errors.get(c, 0)) for c in classes) + " |")
    return lines + [""]


def markdown(config: SpiderConfig, records: list[dict[str, Any]], summaries: dict[str, Summary],
             chart: str | None) -> str:
    """The human-readable report."""
    strategies = [s for s in config.strategies if s in summaries]
    info = machine()
    model = records[0]["model"] if records else config.model
    questions = len({r["id"] for r in records})
    lines = [
        f"# Spider dev: {', '.join(strategies)}",
        "",
        f"- model: `{model}`; engine: {config.engine}; questions: {questions}"
        + ("" if config.n is None or questions >= config.n else
           f" finished of {config.n} (a partial run: questions run in seeded random order, so this is a "
           "uniform subsample)")
        + f" ({'all' if config.n is None else f'seeded sample, seed {config.seed}, stratified by database'})",
        f"- machine: {info['cpu']}, {info['cores']} cores, Python {info['python']}; "
        f"written {dt.datetime.now().isoformat(timespec='seconds')}",
        "- EX: execution accuracy (rows equal as multisets under a column permutation; in order only "
        "when the gold query's outermost SELECT orders). Pass@N: some candidate of the pool is correct. "
        "Gap closed: (EX - SC) / (Pass@N(SC) - SC) against self-consistency on the same questions.",
        "- Latency: *wall* is measured on this run (cached model calls take ~0 s); *est.* adds the model "
        "seconds recorded when the cache was filled, i.e. the latency without a cache; *own* is wall "
        "minus live model time: the library's own work. Schema reflection happens once per database "
        "before timing.",
        "",
        "| strategy | n | EX | Pass@N | gap closed | calls/q | tokens/q | wall p50/p95 s | est. p50/p95 s "
        "| own p50/p95 ms | no answer | LLM errors |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for s in strategies:
        m = summaries[s]
        lines.append(
            f"| {s} | {m.questions} | {_pct(m.ex)} | {_pct(m.pass_at_n)} | {_pct(m.gap_closed)} | "
            f"{m.llm_calls:.1f} | {m.tokens:.0f} | {_s(m.wall)} | {_s(m.estimated)} | {_ms(m.own)} | "
            f"{m.no_answer} | {m.llm_errors} |"
        )
    stages = sorted({stage for m in summaries.values() for stage in m.stages})
    lines += ["", "### Stage time, p50 / p95 seconds (wall, this run)", "",
              "| strategy | " + " | ".join(stages) + " |", "|---|" + "---:|" * len(stages)]
    for s in strategies:
        cells = [_s(summaries[s].stages[x]) if x in summaries[s].stages else "n/a" for x in stages]
        lines.append(f"| {s} | " + " | ".join(cells) + " |")
    lines.append("")
    lines += _versus_table(records, strategies)
    lines += _anatomy_tables(records, strategies)
    lines += _breakdown_table("hardness", records, "hardness", strategies)
    lines += _breakdown_table("database", records, "db_id", strategies)
    if chart:
        lines += [f"![accuracy against tokens]({chart})", ""]
    return "\n".join(lines)


def chart(summaries: dict[str, Summary], path: Path) -> Path | None:
    """Accuracy against tokens per question, one point per strategy; None without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, ax = plt.subplots(figsize=(6, 4), dpi=120)
    for s, m in summaries.items():
        ax.scatter(m.tokens, 100 * m.ex, s=45, label=f"{s} ({100 * m.ex:.1f}%)", zorder=3)
    reference = summaries.get("self-consistency")
    if reference is not None:
        ax.axhline(100 * reference.pass_at_n, linestyle="--", linewidth=0.8, color="grey",
                   label=f"Pass@N of the self-consistency pool ({100 * reference.pass_at_n:.1f}%)")
    ax.legend(fontsize=7, loc="lower right")
    ax.set_xlabel("tokens per question")
    ax.set_ylabel("execution accuracy (%)")
    ax.set_ylim(0, 100)
    ax.set_xlim(0, 1.1 * max([m.tokens for m in summaries.values()] + [1]))
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def risk_coverage_plot(figures: dict[str, Any], path: Path) -> Path | None:
    """The risk-coverage curves of ``bench calibrate``'s figures (calibrated against the vote-based rule); None
    without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, ax = plt.subplots(figsize=(6, 4), dpi=120)
    for key, label in (("risk_coverage", f"calibrated probability (AURC {figures['aurc']:.3f})"),
                       ("risk_coverage_vote", f"vote-based tiers (AURC {figures['aurc_vote']:.3f})")):
        points = figures.get(key) or []
        ax.step([c for c, _ in points], [100 * r for _, r in points], where="post", label=label)
    ax.set_xlabel("coverage (share of questions answered, most confident first)")
    ax.set_ylabel("risk (% of those answers wrong)")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 100)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    ax.set_title(f"{figures['strategy']}: {figures['report_questions']} held-out questions", fontsize=9)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def write_outputs(config: SpiderConfig, name: str, records: list[dict[str, Any]],
                  summaries: dict[str, Summary]) -> dict[str, Path]:
    """``<name>.json``, ``<name>.md`` and ``<name>.png`` in the output folder (``name`` may hold dots:
    it is never treated as a suffix)."""
    out = Path(config.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths: dict[str, Path] = {}
    png = chart(summaries, out / f"{name}.png") if summaries else None
    if png:
        paths["png"] = png
    payload = {
        "config": {k: str(v) if isinstance(v, Path) else v for k, v in vars(config).items()},
        "machine": machine(),
        "summaries": {s: m.to_dict() for s, m in summaries.items()},
        "by_hardness": breakdown(records, "hardness"),
        "by_database": breakdown(records, "db_id"),
        "versus_reference": {s: v.to_dict() for s in summaries
                             if s != REFERENCE and (v := versus_reference(records, s)) is not None},
        "anatomy": {s: anatomy(records, s).to_dict() for s in summaries},
        "records": records,
    }
    paths["json"] = out / f"{name}.json"
    paths["json"].write_text(json.dumps(payload, indent=1, default=str, ensure_ascii=False), "utf-8")
    paths["markdown"] = out / f"{name}.md"
    paths["markdown"].write_text(markdown(config, records, summaries, png.name if png else None), "utf-8")
    return paths
