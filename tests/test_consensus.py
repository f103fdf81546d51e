"""Consensus enforcement with column exploration (ReFoRCE) through the public API, with a scripted model:
a tied or all-failed vote triggers bounded read-only exploration, regeneration with its results and a
re-vote; a tie that remains goes to the dual-paradigm test."""

from __future__ import annotations

import itertools
import json

import fakes
import pytest
import sqlalchemy as sa
from backends import checksum, load_shop
from fakes import fenced, purposes

import verifiedsql
from verifiedsql.bench.strategies import strategy_options
from verifiedsql.config import Options
from verifiedsql.guard.sandbox import Sandbox
from verifiedsql.llm.base import ChatRequest
from verifiedsql.profiles import profile_for
from verifiedsql.stages.common.probes import PROBE_LIMIT
from verifiedsql.stages.reforce.consensus import is_tie
from verifiedsql.stages.reforce.explore import (
    MAX_CORRECTIONS,
    MAX_ERRORS_IN_A_ROW,
    parse_explorations,
)

QUESTION = "How many different countries do our customers come from?"
ALL_ROWS = "SELECT COUNT(country) FROM customers"
DISTINCT = "SELECT COUNT(DISTINCT country) FROM customers"
TIE = {0: ALL_ROWS, 1: DISTINCT, 2: ALL_ROWS, 3: DISTINCT}  # 2 against 2
DISTINCT_CODE = "```python\nresult = pd.DataFrame({'n': [customers['country'].nunique()]})\n```"
EXPLORED = "Exploration results"

needs_sandbox = pytest.mark.skipif(not Sandbox().available(), reason="bubblewrap cannot run here")


def explored(request: ChatRequest) -> bool:
    return EXPLORED in request.messages[-1]["content"]


def ask(engine: sa.Engine, first: dict[int, str], second: dict[int, str] | None, proposals: list[str] | str,
        fix=None, solver: str | None = None, **options: object):
    """First-round generation by seed from ``first``, regeneration (prompt with exploration results) from
    ``second``, the exploration reply from ``proposals`` (a list becomes JSON), corrections from ``fix``."""
    reply = json.dumps(proposals) if isinstance(proposals, list) else proposals

    def script(request: ChatRequest) -> str:
        if request.purpose == "generate":
            table = second if explored(request) and second is not None else first
            return fenced(table[request.seed or 0])
        if request.purpose == "refine":
            return "I cannot fix it."
        if request.purpose == "explore":
            return reply
        if request.purpose == "explore-fix":
            return fix(request) if fix else "I cannot fix it."
        if request.purpose == "solver" and solver:
            return solver
        raise AssertionError(f"unexpected {request.purpose} call")

    return fakes.ask(engine, QUESTION, script, **{"candidates": len(first), "consensus": True,
                                                    "constraint_repair": False, **options})


@pytest.fixture
def shop(tmp_path) -> sa.Engine:
    return load_shop(sa.create_engine(f"sqlite:///{tmp_path / 'shop.db'}"))


# ---------------------------------------------------------------------------------------- on engines


def test_a_tie_explores_regenerates_and_revotes_on_every_engine(shop_engine):
    profile = profile_for(shop_engine.dialect.name)
    match = "country ILIKE '%braz%'" if profile.has_ilike else "LOWER(country) LIKE '%braz%'"
    exploration = ["SELECT country FROM customers", f"SELECT DISTINCT country FROM customers WHERE {match}"]
    before = checksum(shop_engine)
    rows, report, fake = ask(shop_engine, TIE, dict.fromkeys(range(4), DISTINCT), exploration)
    assert rows == [(6,)], report.summary()
    consensus = report.consensus
    assert consensus is not None and consensus.trigger == "tie" and consensus.outcome == "resolved"
    assert consensus.rounds == 1 and [c.sql for c in consensus.first_round] == list(TIE.values())
    assert report.vote == "unanimous" and report.sql == DISTINCT and report.dpc is None
    # the first vote was tied: the regenerated candidates' agreement does not make the answer verified
    assert {e.check: e.verdict for e in report.evidence}["consensus"] == "against"
    assert report.confidence == "probable"
    assert [e.status for e in report.exploration] == ["ok", "ok"]
    assert all(e.sql.endswith(f"LIMIT {PROBE_LIMIT}") for e in report.exploration)
    assert report.exploration[0].rows == 10 and report.exploration[1].rows == 1
    assert "Brazil" in report.exploration[1].preview
    assert purposes(fake) == ["generate"] * 4 + ["explore"] + ["generate"] * 4
    prompt = fake.requests[4].messages[0]["content"] + fake.requests[4].messages[-1]["content"]
    assert profile.display_name in prompt and ("ILIKE" in prompt) == profile.has_ilike
    assert ALL_ROWS in prompt and DISTINCT in prompt  # the tied candidates are shown
    regeneration = fake.requests[5].messages[-1]["content"]
    assert EXPLORED in regeneration and report.exploration[1].sql in regeneration and "Brazil" in regeneration
    assert "consensus: tie -> resolved" in report.summary() and "consensus" in report.timings
    assert checksum(shop_engine) == before


def test_unsafe_exploration_is_refused_and_never_runs(shop_engine):
    before = checksum(shop_engine)
    proposals = ["DROP TABLE customers", "DELETE FROM orders", "SELECT DISTINCT country FROM customers"]
    rows, report, fake = ask(shop_engine, TIE, dict.fromkeys(range(4), DISTINCT), proposals)
    assert [e.status for e in report.exploration] == ["unsafe", "unsafe", "ok"]
    assert rows == [(6,)] and report.consensus.outcome == "resolved"
    assert purposes(fake).count("explore-fix") == 2  # each refusal was shown to the model once
    assert checksum(shop_engine) == before


# ------------------------------------------------------------------------------------------ triggers


def test_every_candidate_failing_triggers_it(shop):
    failing = dict.fromkeys(range(3), "SELECT nope FROM customers")
    rows, report, fake = ask(shop, failing, dict.fromkeys(range(3), DISTINCT),
                             ["SELECT DISTINCT country FROM customers"], max_refinements=0)
    assert rows == [(6,)] and report.consensus.trigger == "all-failed"
    assert report.consensus.outcome == "resolved" and report.vote == "unanimous"
    assert [c.status for c in report.consensus.first_round] == ["error"] * 3
    explore_prompt = next(r for r in fake.requests if r.purpose == "explore").messages[-1]["content"]
    assert "SELECT nope FROM customers" in explore_prompt and "Error:" in explore_prompt


def test_still_failing_after_exploration_is_no_answer(shop):
    failing = dict.fromkeys(range(2), "SELECT nope FROM customers")
    with pytest.raises(verifiedsql.NoAnswerError) as caught:
        ask(shop, failing, failing, ["SELECT country FROM customers"], max_refinements=0)
    report = caught.value.report
    assert report.consensus.outcome == "failed" and report.consensus.rounds == 1
    assert len(report.consensus.first_round) == 2


def test_a_majority_or_a_single_cluster_costs_nothing(shop):
    rows, report, fake = ask(shop, {0: DISTINCT, 1: DISTINCT, 2: ALL_ROWS}, None, [])
    assert rows == [(6,)] and report.consensus is None and set(purposes(fake)) == {"generate"}


def test_is_tie():
    from verifiedsql.report import Cluster

    assert is_tie([Cluster(0, [0, 2], 1), Cluster(1, [1, 3], 1)])
    assert is_tie([Cluster(0, [0], 1), Cluster(1, [1], 1), Cluster(2, [2], 1)])
    assert not is_tie([Cluster(0, [0, 2], 1), Cluster(1, [1], 1)]) and not is_tie([Cluster(0, [0], 1)])


# ------------------------------------------------------------------------------------------- bounds


def test_exploration_is_bounded_to_max_explorations_and_limit_20(shop):
    many = [f"SELECT id FROM customers WHERE id > {i} LIMIT 500" for i in range(15)]
    _, report, _ = ask(shop, TIE, dict.fromkeys(range(4), DISTINCT), many)
    assert len(report.exploration) == 10 and Options().max_explorations == 10
    assert all(e.sql.endswith(f"LIMIT {PROBE_LIMIT}") and "500" not in e.sql for e in report.exploration)
    _, report, _ = ask(shop, TIE, dict.fromkeys(range(4), DISTINCT), many, max_explorations=3)
    assert len(report.exploration) == 3


def test_a_failing_query_gets_three_corrections_and_five_errors_in_a_row_stop(shop, monkeypatch):
    monkeypatch.setattr(Sandbox, "available", lambda self: False)
    counter = itertools.count()
    proposals = ["SELECT nope FROM customers", "SELECT nada FROM customers", "SELECT country FROM customers"]
    _, report, fake = ask(shop, TIE, dict.fromkeys(range(4), DISTINCT), proposals,
                          fix=lambda request: fenced(f"SELECT bad{next(counter)} FROM customers"))
    assert MAX_CORRECTIONS == 3 and MAX_ERRORS_IN_A_ROW == 5
    assert [e.correction for e in report.exploration] == [0, 1, 2, 3, 0]
    assert all(e.status == "error" for e in report.exploration)
    assert purposes(fake).count("explore-fix") == 3
    assert any("5 failed exploration queries in a row" in n for n in report.notes)
    # Nothing ran: the same prompt would bring the same candidates, so no regeneration; the tie goes on.
    assert report.consensus.rounds == 0 and purposes(fake).count("generate") == 4
    assert report.consensus.outcome == "undecided" and "no exploration query ran" in report.consensus.reason


def test_a_correction_that_runs_is_kept_and_fed_back(shop):
    proposals = ["SELECT nope FROM customers"]
    rows, report, fake = ask(shop, TIE, dict.fromkeys(range(4), DISTINCT), proposals,
                             fix=lambda request: fenced("SELECT DISTINCT country FROM customers"))
    assert [(e.status, e.correction) for e in report.exploration] == [("error", 0), ("ok", 1)]
    fix_prompt = next(r for r in fake.requests if r.purpose == "explore-fix").messages[-1]["content"]
    assert "SELECT nope FROM customers" in fix_prompt and "Error:" in fix_prompt
    assert rows == [(6,)] and report.consensus.outcome == "resolved"


# ----------------------------------------------------------------------------------- remaining tie


def test_a_remaining_tie_without_a_decision_stays_unverified_and_says_so(shop, monkeypatch):
    monkeypatch.setattr(Sandbox, "available", lambda self: False)
    rows, report, fake = ask(shop, TIE, {0: DISTINCT, 1: ALL_ROWS, 2: DISTINCT, 3: ALL_ROWS},
                             ["SELECT DISTINCT country FROM customers"])
    assert report.consensus.outcome == "undecided" and report.consensus.rounds == 1
    assert report.dpc is not None and report.dpc.status == "fallback"  # DPC ran although dpc is off
    assert report.vote == "unverified" and "consensus not reached" in report.reason
    assert rows in ([(6,)], [(10,)]) and "solver" not in purposes(fake)


@needs_sandbox
def test_a_remaining_tie_goes_to_the_dual_paradigm_test(shop):
    rows, report, fake = ask(shop, TIE, {0: ALL_ROWS, 1: DISTINCT, 2: ALL_ROWS, 3: DISTINCT},
                             ["SELECT DISTINCT country FROM customers"], solver=DISTINCT_CODE)
    assert rows == [(6,)], report.summary()
    assert report.consensus.outcome == "undecided" and report.dpc.status == "decided"
    assert report.vote == "distinguished"
    assert report.dpc.status == "decided" and purposes(fake).count("solver") == 1


@needs_sandbox
def test_with_dpc_on_the_test_runs_once(shop):
    _, report, fake = ask(shop, TIE, {0: ALL_ROWS, 1: DISTINCT, 2: ALL_ROWS, 3: DISTINCT},
                          ["SELECT DISTINCT country FROM customers"], solver=DISTINCT_CODE, dpc=True)
    assert report.consensus.outcome == "undecided" and report.dpc.status == "decided"
    assert purposes(fake).count("solver") == 1


# ------------------------------------------------------------------------------------ off by default


def test_off_by_default_leaves_the_requests_unchanged(shop):
    assert Options().consensus is False
    _, on, fake_on = ask(shop, TIE, dict.fromkeys(range(4), DISTINCT), ["SELECT country FROM customers"])
    _, off, fake_off = ask(shop, TIE, None, [], consensus=False)
    assert off.consensus is None and off.exploration == [] and off.vote == "unverified"
    assert set(purposes(fake_off)) == {"generate"}
    assert [r.messages for r in fake_off.requests] == [r.messages for r in fake_on.requests[:4]]
    assert on.consensus is not None


def test_parse_explorations_reads_json_or_fenced_sql():
    assert parse_explorations('Sure:\n["SELECT 1;", "SELECT 2", "SELECT 1", 3]', 10) == ["SELECT 1", "SELECT 2"]
    assert parse_explorations('{"queries": [{"sql": "SELECT a FROM t"}]}', 10) == ["SELECT a FROM t"]
    assert parse_explorations("```sql\nSELECT 1\n```\nthen\n```sql\nSELECT 2;\n```", 1) == ["SELECT 1"]
    assert parse_explorations("I would look at the data.", 10) == []


def test_the_consensus_strategy():
    options = strategy_options("+consensus", {})
    assert options.consensus and options.candidates == 5 and options.max_explorations == 10
