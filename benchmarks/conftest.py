"""Fixtures of the performance suite (pytest-benchmark); outside the default test run.

    .venv/bin/pytest benchmarks -p no:cacheprovider --benchmark-only \
        --benchmark-json=benchmarks/results/perf.json

writes the JSON and, next to it, ``perf.md`` (see ``perf_report.py``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable, Iterator

import pytest

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent / "tests"))

from perf_report import markdown  # noqa: E402
from pg_server import throwaway_postgres  # noqa: E402
from synthetic import build_duckdb, build_postgresql, build_sqlite  # noqa: E402


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """A PostgreSQL 15 server on 127.0.0.1 for this run (skips where the server binaries are missing)."""
    with throwaway_postgres("verifiedsql-pg-bench-") as url:
        yield url


@pytest.fixture(scope="session")
def databases(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Callable[[str, int], str]:
    """``databases(engine, tables)``: the URL of a synthetic database of that many tables
    (``synthetic.py``), built once per run and shared by the modules that ask for it."""
    cache: dict[tuple[str, int], str] = {}

    def get(engine: str, tables: int) -> str:
        if (engine, tables) not in cache:
            folder = tmp_path_factory.mktemp(f"schema-{engine}")
            cache[engine, tables] = (
                build_sqlite(folder / f"s{tables}.db", tables) if engine == "sqlite" else
                build_duckdb(folder / f"s{tables}.duckdb", tables) if engine == "duckdb" else
                build_postgresql(request.getfixturevalue("postgres_server"), tables)
            )
        return cache[engine, tables]

    return get


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
