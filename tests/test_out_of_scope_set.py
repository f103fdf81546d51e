"""The out-of-scope question set (issue 13): questions over Spider dev databases that no table answers."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from verifiedsql.bench.data import DEFAULT_DATA_DIR

SET = Path(__file__).resolve().parents[1] / "benchmarks" / "data" / "out_of_scope.jsonl"
KINDS = {"general knowledge", "missing table", "missing column", "other task"}


def test_out_of_scope_set_is_well_formed() -> None:
    rows = [json.loads(line) for line in SET.read_text("utf-8").splitlines() if line.strip()]
    assert len(rows) >= 40
    assert {row["kind"] for row in rows} == KINDS
    assert len({row["question"] for row in rows}) == len(rows)
    databases = Path(__file__).resolve().parents[1] / DEFAULT_DATA_DIR / "database"
    if databases.is_dir():
        assert {row["db_id"] for row in rows} <= {p.name for p in databases.iterdir()}
    assert min(Counter(row["kind"] for row in rows).values()) >= 8
