"""``verifiedsql bench verify``'s reading of the docs, checked without replaying: every committed run has its
replay command on a page, each page states the figures ``EXPECTED`` holds, and every table the replays are held
against is where the checks look for it. The replays themselves run in ``verifiedsql bench verify`` (``.ci/run``
runs it after the tests), not here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from verifiedsql.bench import verify
from verifiedsql.bench.verify import EXPECTED, Docs, Mismatch

ROOT = Path(__file__).parents[1]
DOCS = Docs(ROOT)


def test_every_committed_run_has_a_replay_on_a_page():
    verify.replayed_runs_match(DOCS, ROOT / "benchmarks" / "runs")


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_page_states_its_replayed_figures(name):
    verify.docs_state(DOCS, name)


def test_a_figure_the_page_does_not_state_is_caught(monkeypatch):
    name = "spider-sqlite-0.5b-n200"
    questions, ex, pass_at_n, tokens = EXPECTED[name]["greedy"]
    monkeypatch.setitem(EXPECTED, name, {**EXPECTED[name], "greedy": (questions, "47.6", pass_at_n, tokens)})
    with pytest.raises(Mismatch, match="greedy"):
        verify.docs_state(DOCS, name)
    monkeypatch.setitem(EXPECTED, name, {**EXPECTED[name], "greedy": (questions, ex, pass_at_n, tokens + 1)})
    with pytest.raises(Mismatch, match="tokens/q"):
        verify.docs_state(DOCS, name)


def test_the_printed_figures_are_read_as_bench_spider_prints_them():
    line = ("self-consistency   n=200  EX= 51.0%  Pass@N= 55.5%  gap closed=n/a  tokens/q=6906  own p50=25 ms\n"
            "+dpc               n=63   EX= 5.0%  Pass@N=100.0%  gap closed=12.0%  tokens/q=7163  own p50=1 ms\n")
    assert verify.printed_figures(line) == {"self-consistency": (200, "51.0", "55.5", 6906),
                                            "+dpc": (63, "5.0", "100.0", 7163)}


def test_every_replay_command_names_a_committed_cache_and_a_scratch_output():
    for name, (page, args) in DOCS.replay_commands().items():
        assert (ROOT / args[args.index("--cache") + 1]).exists(), (page, name)
        assert "--out" in args and args[0] == "bench", (page, args)


@pytest.mark.parametrize("run", sorted(verify.STAGES_RUNS))
def test_the_stages_tables_are_where_the_check_reads_them(run):
    page, lead_in = verify.STAGES_RUNS[run][3:5]
    table = verify.table_after(DOCS.page(page), lead_in).splitlines()
    assert table[0].startswith("| stage |") and len(table) >= 3, table


@pytest.mark.parametrize(("page", "lead_in"), [
    *((verify.REPAIR_PAGE, lead_in) for _, lead_in in verify.TIER_TABLES.values()),
    *((f"{name}.md", lead_in) for name, (_, lead_in) in verify.OTHER_ENGINE_TIERS.items()),
    *((f"{name}.md", lead_in) for name, (_, lead_in) in verify.LIBRARY_RULE_TIERS.items()),
])
def test_the_tier_tables_are_where_the_check_reads_them(page, lead_in):
    rows = verify.tier_rows_after(DOCS.page(page), lead_in)
    assert [row.split("|")[1].strip() for row in rows] == ["verified", "probable", "doubtful", "unverified"]


def test_the_other_tables_are_where_the_checks_read_them():
    facts = DOCS.after("spider-sqlite-0.5b-n200.md", "## Schema facts in the refinement prompt", "```")
    assert len(re.findall(r"^\| [\w+-]+ \| 200 \|", facts, re.MULTILINE)) == 4
    adaptive = DOCS.after(verify.SPEED_PAGE, "## Adaptive sampling (`adaptive`)", "```")
    assert len(re.findall(r"^\| [\w+-]+ \| (0\.5B, 200|1\.5B, 120) \|", adaptive, re.MULTILINE)) == 8
    repair = DOCS.page(verify.REPAIR_PAGE)
    assert len(re.findall(r"^\| (0\.5B, 200|1\.5B, 120) \| [\w+-]+ \|", repair, re.MULTILINE)) == 12
    scope = DOCS.page(verify.SCOPE_PAGE)
    for _, label in verify.SCOPE_RUNS.values():
        assert len(re.findall(rf"^\| {label} \| [\w+-]+ \| 48 \|", scope, re.MULTILINE)) == 6
    assert "`awkward`: 6 of 7 right" in DOCS.page("unlike-spider-0.5b.md")


def test_every_check_has_a_distinct_name():
    names = [check.name for check in verify.checks()]
    assert len(names) == len(set(names)) and len(names) >= 25
