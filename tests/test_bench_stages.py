"""``verifiedsql bench stages``: each optional stage's effect from pairs of strategies in one run's records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from verifiedsql.bench.stages import load_records, render, stage_rows
from verifiedsql.cli import main
from verifiedsql.errors import ConfigurationError


def record(strategy: str, qid: int, correct: bool, confidence: str, calls: int = 5, tokens: int = 1000,
           seconds: float = 10.0, status: str = "answered") -> dict:
    return {"strategy": strategy, "id": qid, "correct": correct, "confidence": confidence, "llm_calls": calls,
            "total_tokens": tokens, "model_seconds": seconds, "status": status}


@pytest.fixture
def records_file(tmp_path: Path) -> Path:
    rows = [
        # four questions; the stage (dpc) turns question 2 right, makes question 3 verified (wrongly) and adds
        # two calls where it runs; question 4 is a model error on one side and is left out of the pair
        record("self-consistency", 1, True, "verified"), record("+dpc", 1, True, "verified"),
        record("self-consistency", 2, False, "probable"), record("+dpc", 2, True, "probable", 7, 1600, 14.0),
        record("self-consistency", 3, False, "probable"), record("+dpc", 3, False, "verified", 7, 1600, 14.0),
        record("self-consistency", 4, True, "verified"), record("+dpc", 4, False, "none", status="llm_error"),
        record("default", 1, True, "verified"),  # no default-adaptive: that pair is left out
    ]
    path = tmp_path / "run.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", "utf-8")
    return path


def test_a_stage_is_measured_against_the_strategy_it_is_added_to(records_file: Path):
    rows = stage_rows(load_records(records_file))
    assert [(r.stage, r.strategy, r.base, r.questions) for r in rows] == [("dpc", "+dpc", "self-consistency", 3)]
    row = rows[0]
    assert (row.without.ex, row.with_stage.ex) == (1 / 3, 2 / 3)
    assert (row.without.verified, row.without.precision) == (1, 1.0)
    assert (row.with_stage.verified, row.with_stage.precision) == (2, 0.5)
    assert row.with_stage.calls - row.without.calls == pytest.approx(4 / 3)
    table = render(rows)
    assert "| dpc | self-consistency | 3 | +33.3 | 100.0% -> 50.0% | 33.3% -> 66.7% | +1.33 | +400 | +2.7 |" in table


def test_the_command_prints_the_table(records_file: Path, capsys):
    assert main(["bench", "stages", str(records_file)]) == 0
    assert "| dpc | self-consistency | 3 |" in capsys.readouterr().out


def test_missing_records_are_a_typed_error(tmp_path: Path):
    with pytest.raises(ConfigurationError):
        load_records(tmp_path / "none.jsonl")
