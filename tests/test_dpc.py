"""Dual-paradigm selection through the public API, with a scripted model, on every engine: a minority
candidate wins when an independent pandas solution on a distinguishing database agrees with it."""

from __future__ import annotations

import fakes
import pytest
import sqlalchemy as sa
from backends import checksum, load_shop
from fakes import fenced

from verifiedsql.guard.sandbox import Sandbox
from verifiedsql.llm.base import ChatRequest
from verifiedsql.stages.dpc.stage import contenders

QUESTION = "How many different countries do our customers come from?"
ALL_ROWS = "SELECT COUNT(country) FROM customers"  # the majority's (wrong) reading
DISTINCT = "SELECT COUNT(DISTINCT country) FROM customers"
DISTINCT_CODE = "```python\nresult = pd.DataFrame({'n': [customers['country'].nunique()]})\n```"
ALL_ROWS_CODE = "```python\nresult = pd.DataFrame({'n': [int(customers['country'].notna().sum())]})\n```"

needs_sandbox = pytest.mark.skipif(not Sandbox().available(), reason="bubblewrap cannot run here")


def ask(engine: sa.Engine, sqls: dict[int, str], solver_code: str, **options: object):
    def script(request: ChatRequest) -> str:
        if request.purpose == "generate":
            return fenced(sqls[request.seed or 0])
        if request.purpose == "solver":
            return solver_code
        raise AssertionError(f"unexpected {request.purpose} call")

    # the constraint repair would count distinct countries itself: the majority must stay wrong for DPC to decide
    return fakes.ask(engine, QUESTION, script, **{"candidates": len(sqls), "dpc": True, "constraint_repair": False,
                                                  **options})


SPLIT = {0: ALL_ROWS, 1: DISTINCT, 2: ALL_ROWS, 3: DISTINCT, 4: ALL_ROWS}


@needs_sandbox
def test_the_challenger_wins_when_the_solution_agrees_with_it(shop_engine):
    before = checksum(shop_engine)
    rows, report, fake = ask(shop_engine, SPLIT, DISTINCT_CODE)
    assert rows == [(6,)], report.summary()
    dpc = report.dpc
    assert dpc is not None and dpc.status == "decided" and dpc.winner == dpc.challenger == 1
    assert report.sql == DISTINCT and report.vote == "distinguished"
    assert dpc.mdd_method == "deterministic" and dpc.scores["challenger"] > dpc.scores["champion"]
    assert dpc.slice_method == "lineage" and "customers" in dpc.slice_tables
    assert dpc.transpiled == (shop_engine.dialect.name == "snowflake")
    assert dpc.champion_result != dpc.challenger_result and dpc.solver_code and dpc.tokens > 0
    assert [r.purpose for r in fake.requests].count("solver") == 1
    assert checksum(shop_engine) == before


@needs_sandbox
def test_the_champion_stays_when_the_solution_agrees_with_it(tmp_path):
    engine = load_shop(sa.create_engine(f"sqlite:///{tmp_path / 'shop.db'}"))
    rows, report, _ = ask(engine, SPLIT, ALL_ROWS_CODE)
    assert rows == [(10,)] and report.sql == ALL_ROWS
    assert report.dpc.status == "decided" and report.dpc.winner == report.dpc.champion == 0
    assert report.vote == "distinguished"


def test_unanimous_candidates_cost_nothing(tmp_path):
    engine = load_shop(sa.create_engine(f"sqlite:///{tmp_path / 'shop.db'}"))
    rows, report, fake = ask(engine, {0: DISTINCT, 1: DISTINCT, 2: DISTINCT}, DISTINCT_CODE)
    assert rows == [(6,)] and report.dpc.status == "unanimous"
    assert {r.purpose for r in fake.requests} == {"generate"} and report.vote == "unanimous"


def test_without_a_sandbox_the_solver_never_runs_and_the_champion_stands(tmp_path, monkeypatch):
    engine = load_shop(sa.create_engine(f"sqlite:///{tmp_path / 'shop.db'}"))
    monkeypatch.setattr(Sandbox, "available", lambda self: False)
    monkeypatch.setattr(Sandbox, "run_pandas", lambda *a, **k: pytest.fail("code ran without a sandbox"))
    rows, report, fake = ask(engine, SPLIT, DISTINCT_CODE)
    assert rows == [(10,)] and report.dpc.status == "fallback" and "sandbox" in report.dpc.reason
    assert report.vote == "majority" and "solver" not in {r.purpose for r in fake.requests}


@needs_sandbox
def test_a_failing_solver_falls_back_to_the_champion(tmp_path):
    engine = load_shop(sa.create_engine(f"sqlite:///{tmp_path / 'shop.db'}"))
    rows, report, fake = ask(engine, SPLIT, "```python\nresult = customers['no_such_column']\n```")
    assert rows == [(10,)] and report.dpc.status == "fallback" and "no result" in report.dpc.reason
    assert [r.purpose for r in fake.requests].count("solver") == 2  # a correction that repeats the code ends it


def test_contenders_are_the_two_largest_clusters():
    from verifiedsql.report import Candidate, Cluster
    from verifiedsql.stages.cluster import Selection
    from verifiedsql.stages.generate import CandidateRun

    runs = [CandidateRun(Candidate(i, "sample", sql)) for i, sql in enumerate(["a", "bb", "b", "c", "a"])]
    clusters = [Cluster(0, [0, 4], 1), Cluster(1, [1, 2], 1), Cluster(2, [3], 1)]
    selection = Selection(clusters[0], runs[0], "unverified", "")
    pair = contenders(runs, clusters, selection)
    assert pair is not None and pair.champion is runs[0] and pair.challenger is runs[2]  # shortest SQL
    assert contenders(runs, clusters[:1], selection) is None
