"""Model probes (PV-SQL) with a scripted model on every engine: bounded, guarded, fed back, grounded."""

from __future__ import annotations

import json

import fakes
import pytest
import sqlalchemy as sa
from backends import checksum, load_shop
from fakes import fenced

from verifiedsql.errors import UnsafeSQLError
from verifiedsql.llm.base import ChatRequest
from verifiedsql.profiles import profile_for
from verifiedsql.stages.common.probes import PROBE_LIMIT, bound_probe
from verifiedsql.stages.pvsql.probe import parse_decision

QUESTION = "How many customers come from 'brazil'?"
ANSWER = "SELECT COUNT(*) FROM customers WHERE country = 'Brazil'"


def decision(action: str, sql: str | None = None, **extra: object) -> str:
    return json.dumps({"action": action, "probe_sql": sql, **extra})


def ask(engine: sa.Engine, probe_replies: list[str], **options: object):
    """One candidate; probe requests answered in order, generation with ANSWER."""
    pending = list(probe_replies)

    def script(request: ChatRequest) -> str:
        return pending.pop(0) if request.purpose == "probe" else fenced(ANSWER)

    return fakes.ask(engine, QUESTION, script, candidates=1, probe=True, **options)


# ---------------------------------------------------------------------------------------- parsing


def test_parse_decision_reads_fenced_json_and_drops_junk():
    reply = "Sure.\n```json\n" + decision(
        "probe", "SELECT 1;", relevant_columns={"customers": ["country", 3]}, value_mappings={"x": True, "y": "Y"}
    ) + "\n```"
    parsed = parse_decision(reply)
    assert parsed is not None and parsed.sql == "SELECT 1"
    assert parsed.relevant_columns == {"customers": ["country"]} and parsed.value_mappings == {"y": "Y"}


@pytest.mark.parametrize("reply", ["SELECT 1", "{not json}", '{"action": "probe"}', '{"action": "maybe"}', ""])
def test_parse_decision_refuses_what_is_not_the_protocol(reply):
    assert parse_decision(reply) is None


@pytest.mark.parametrize(
    ("dialect", "sql", "expected"),
    [
        ("sqlite", "SELECT a FROM t", f"SELECT a FROM t LIMIT {PROBE_LIMIT}"),
        ("postgresql", "SELECT a FROM t LIMIT 500", f"SELECT a FROM t LIMIT {PROBE_LIMIT}"),
        ("duckdb", "SELECT a FROM t LIMIT 5", "SELECT a FROM t LIMIT 5"),
        ("snowflake", 'SELECT "Name" FROM t', f'SELECT "Name" FROM t LIMIT {PROBE_LIMIT}'),
        ("postgresql", "SELECT a FROM t UNION SELECT b FROM u",
         f"SELECT a FROM t UNION SELECT b FROM u LIMIT {PROBE_LIMIT}"),
    ],
)
def test_bound_probe_caps_the_outermost_limit_in_the_dialect(dialect, sql, expected):
    assert bound_probe(sql, profile_for(dialect)) == expected


def test_bound_probe_refuses_writes():
    with pytest.raises(UnsafeSQLError):
        bound_probe("DELETE FROM customers", profile_for("sqlite"))


# ------------------------------------------------------------------------------------ on engines


def test_probe_findings_reach_generation_on_every_engine(shop_engine):
    """The model probes with its dialect's case-insensitive match, finds 'Brazil', and says done."""
    profile = profile_for(shop_engine.dialect.name)
    match = "LOWER(country) LIKE '%braz%'" if not profile.has_ilike else "country ILIKE '%braz%'"
    probe_sql = f"SELECT DISTINCT country FROM customers WHERE {match}"
    before = checksum(shop_engine)
    rows, report, fake = ask(shop_engine, [
        decision("probe", probe_sql, relevant_columns={"customers": ["country", "nope"]},
                 value_mappings={"brazil": "Brazil", "mars": "Mars"}),
        decision("done"),
    ])
    assert rows == [(2,)]
    [probe] = report.probes
    assert probe.status == "ok" and probe.row_count == 1 and "Brazil" in probe.preview
    assert probe.sql.endswith(f"LIMIT {PROBE_LIMIT}")
    assert report.findings.value_mappings == {"brazil": "Brazil"}
    assert report.findings.dropped_mappings == {"mars": "Mars"}  # never seen in a probe result
    assert report.findings.relevant_columns == {"customers": ["country"]}
    probe_prompt = fake.requests[0].messages[0]["content"]
    assert profile.display_name in probe_prompt and ("ILIKE" in probe_prompt) == profile.has_ilike
    generation = next(r for r in fake.requests if r.purpose == "generate").messages[-1]["content"]
    assert "is stored as 'Brazil'" in generation and "Mars" not in generation and probe.sql in generation
    assert "probe" in report.timings and checksum(shop_engine) == before


def test_failed_probe_is_fed_back_and_unsafe_probe_never_runs(shop_engine):
    before = checksum(shop_engine)
    rows, report, fake = ask(shop_engine, [
        decision("probe", "SELECT nope FROM customers"),
        decision("probe", "DROP TABLE customers"),
        decision("probe", "SELECT DISTINCT country FROM customers"),
        decision("done"),
    ])
    assert rows == [(2,)]
    assert [p.status for p in report.probes] == ["error", "unsafe", "ok"]
    second = fake.requests[1].messages[-1]["content"]
    assert "SELECT nope FROM customers" in second and "Error:" in second
    assert checksum(shop_engine) == before


def test_probing_stops_at_max_probes_and_on_repeats(tmp_path):
    engine = load_shop(sa.create_engine(f"sqlite:///{tmp_path / 'shop.db'}"))
    many = [decision("probe", f"SELECT id FROM customers WHERE id = {i}") for i in range(10)]
    _, report, fake = ask(engine, many, max_probes=3)
    assert len(report.probes) == 3 and sum(r.purpose == "probe" for r in fake.requests) == 3
    repeated = [decision("probe", "SELECT id FROM customers")] * 3
    _, report, _ = ask(engine, repeated)
    assert len(report.probes) == 1 and any("repeated a probe" in n for n in report.notes)


def test_a_model_that_cannot_answer_in_json_is_not_asked_forever(tmp_path):
    engine = load_shop(sa.create_engine(f"sqlite:///{tmp_path / 'shop.db'}"))
    rows, report, fake = ask(engine, ["I would look at the country column."] * 5)
    assert rows == [(2,)] and [p.status for p in report.probes] == ["invalid", "invalid"]
    assert any("probe format" in n for n in report.notes)
    assert report.findings.value_mappings == {}
