"""``bench compare``: runs side by side on the questions both answered without a model error."""

from __future__ import annotations

import json

import pytest

from verifiedsql.bench.compare import compare, load_side, render
from verifiedsql.errors import ConfigurationError


def _write(path, engine, rows):
    path.write_text("".join(json.dumps({"engine": engine, "strategy": "s", "id": i, "status": status,
                                        "correct": correct}) + "\n" for i, status, correct in rows))
    return f"{path}:s"


def test_only_questions_both_runs_answered_count(tmp_path):
    a = _write(tmp_path / "a.jsonl", "sqlite", [(1, "answered", True), (2, "no_answer", False),
                                                 (3, "answered", True), (4, "answered", True)])
    b = _write(tmp_path / "b.jsonl", "postgresql", [(1, "answered", False), (2, "answered", True),
                                                     (3, "llm_error", False)])
    rows = compare([load_side(a), load_side(b)])
    assert [(r["questions"], r["ex"], r["no_runnable_count"]) for r in rows] == [(2, 0.5, 1), (2, 0.5, 0)]
    assert "| postgresql, s | 2 | 50.0% | 0 (0.0%) |" in render(rows)


def test_a_strategy_with_no_records_is_a_typed_error(tmp_path):
    spec = _write(tmp_path / "a.jsonl", "sqlite", [(1, "answered", True)])
    with pytest.raises(ConfigurationError, match="no records of strategy"):
        load_side(spec.replace(":s", ":other"))
