"""Fixtures of the performance suite (pytest-benchmark); outside the default test run.

    .venv/bin/pytest benchmarks -p no:cacheprovider --benchmark-only \
        --benchmark-json=benchmarks/results/perf.json

writes the JSON and, next to it, ``perf.md`` (see ``perf_report.py``).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from perf_report import markdown  # noqa: E402


def pytest_benchmark_update_json(config, benchmarks, output_json) -> None:
    """Write the Markdown table next to the JSON the run was asked for."""
    target = config.getoption("benchmark_json", None)
    if target is None:
        return
    path = Path(target if isinstance(target, (str, Path)) else target.name)
    try:
        path.with_suffix(".md").write_text(markdown(output_json), "utf-8")
    except Exception as error:  # noqa: BLE001 -- reporting must never fail the run
        print(f"perf_report: could not write {path.with_suffix('.md')}: {error}", file=sys.stderr)
