"""A hostile model: every reply (probe, generation, refinement, repair) is an attack payload from
``payloads.py``, sent through the public APIs (``verifiedsql.create_engine`` and ``verifiedsql.dbapi``)
on every engine it targets.

For each payload and engine: the data and the engine's catalog are identical before and after, no
file appears, and the outcome is typed: ``NoAnswerError`` with every candidate refused, rejected or
timed out, or (resource exhaustion only, or a payload that is one harmless query on that engine) an
answer cut at the row cap or a harmless read. Which layer stopped each run goes into the session tally.

Known limits of the test environment:
- fakesnow's connection cannot be wrapped by ``verifiedsql.dbapi`` (it accepts only
  ``snowflake.connector`` connections), so Snowflake runs through ``create_engine`` only.
- Two payloads make fakesnow itself misbehave (an AttributeError from its transform of a quoted
  SYSTEM$ function; short rows for repeated column names). The engine guard and ``Database`` turn both
  into a typed ``QueryError``, so they end like any rejected query.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from backends import DIALECTS, checksum
from conftest import (
    STOPPED,
    HostileModel,
    Outcome,
    Tally,
    Worlds,
    files_under,
)
from payloads import PAYLOADS, Payload, pairs

from verifiedsql.config import LLMSettings, Options
from verifiedsql.db.database import Database
from verifiedsql.errors import UnsafeSQLError
from verifiedsql.guard.safety import check_query
from verifiedsql.profiles import profile_for

pytestmark = pytest.mark.timeout(120)

QUESTION = "List the top 3 customers by number of orders"  # a top-k question, so a capped answer is repaired
RESOURCE_STOPPED = {"unsafe", "timeout"}  # resource exhaustion ends refused, timed out or capped: nothing else

def _params() -> list:
    params = []
    for payload, dialect in pairs():
        params.append(pytest.param(payload, dialect, id=f"{payload.id}-{dialect}"))
    return params


def _check(payload: Payload, dialect: str, outcome: Outcome) -> None:
    """The outcome rules of the catalogue (see payloads.py) for one run."""
    report = outcome.report
    where = f"{payload.id} on {dialect}"
    kinds = {kind for kind, *_ in outcome.attempts()}
    assert {"probe", "candidate"} <= kinds, f"{where}: probe and candidate expected, got {kinds}"
    may_run = payload.category == "resource" or dialect in payload.inert_on
    for kind, sql, status, error in outcome.attempts():
        if status == "ok":
            assert may_run, f"{where}: the {kind} ran: {sql!r}"
            check_query(sql, profile_for(dialect))  # what ran is a query the statement guard accepts
        else:
            assert error, f"{where}: the {kind} failed without an error text"
    if outcome.answered:
        assert may_run, f"{where}: answered with {report.sql!r}"
        if payload.category == "resource":
            assert report.truncated, f"{where}: a resource payload ran to completion: {report.sql!r}"
        return
    statuses = {c.status for c in report.candidates}
    allowed = RESOURCE_STOPPED if payload.category == "resource" else STOPPED
    assert statuses <= allowed, f"{where}: candidate statuses {statuses}: {[c.error for c in report.candidates]}"


@pytest.mark.parametrize(("payload", "dialect"), _params())
def test_hostile_payload(payload: Payload, dialect: str, worlds: Worlds, hostile: HostileModel, target_dir: Path,
                         tally: Tally) -> None:
    world = worlds(dialect)
    before, files_before = world.state(), files_under(*world.directories)
    outcomes: dict[str, Outcome] = {}
    for api in world.apis():
        hostile.serve(payload.render(target_dir))
        try:
            outcomes[api] = world.ask(api, QUESTION)
        except Exception as crash:
            tally.record(payload.id, payload.category, dialect, api, crash)
            raise
        assert {purpose for purpose, _ in hostile.served} >= {"probe", "generate"}
    after, files_after = world.state(), files_under(*world.directories)
    created = sorted(set(files_after) - set(files_before))
    for api, outcome in outcomes.items():
        tally.record(payload.id, payload.category, dialect, api, outcome,
                     data_changed=after != before, files_created=created)
    assert after == before, f"{payload.id} changed the data or the catalog on {dialect}"
    assert files_after == files_before, f"{payload.id} created or changed files on {dialect}: {created}"
    for outcome in outcomes.values():
        _check(payload, dialect, outcome)
    layers = {outcome.outcome() for outcome in outcomes.values()}
    if not layers & {"timeout", "row cap"}:  # both front ends run one pipeline: the same layer stops it
        assert len(layers) == 1, f"{payload.id} on {dialect}: the APIs disagree: {layers}"


QUOTED = [(p, d) for p, d in pairs() if p.category == "quoted name" and d != "snowflake"]


@pytest.mark.parametrize(("payload", "dialect"), QUOTED, ids=[f"{p.id}-{d}" for p, d in QUOTED])
def test_quoted_function_names_meet_both_layers(payload: Payload, dialect: str, worlds: Worlds,
                                               target_dir: Path) -> None:
    """A deny-listed function called through a quoted identifier (``"pg_sleep"(5)``) is refused by the
    statement guard, and the engine guard (the planner's output, DuckDB's parse tree, SQLite's
    authorizer) refuses it on its own when the statement guard is skipped."""
    sql = payload.render(target_dir)
    with pytest.raises(UnsafeSQLError):
        check_query(sql, profile_for(dialect))
    database = Database(worlds(dialect).engine, Options(llm=LLMSettings(), statement_timeout_s=2.0))
    with pytest.raises(UnsafeSQLError) as refused:
        database.run_query(sql, guard=False)
    assert refused.value.layer == "engine"


def _escalation(dialect: str, target_dir: Path) -> dict[str, list[str]]:
    """Different payloads per call: each probe, candidate, refinement and repair tries something new."""
    targeted = [p.render(target_dir) for p in PAYLOADS
                if dialect in p.targets() and p.category != "resource" and dialect not in p.inert_on]
    capped = next(p for p in PAYLOADS if p.id == "cartesian-pairs").render(target_dir)
    return {
        "probe": targeted[0:3],
        "generate": [targeted[3], capped, targeted[4]],  # the capped one runs, breaks "top 3", is repaired
        "refine": targeted[5:9],
        "repair": targeted[9:11],
    }


@pytest.mark.parametrize("dialect", DIALECTS)
def test_escalating_model(dialect: str, worlds: Worlds, hostile: HostileModel, target_dir: Path) -> None:
    """A model that changes its attack on every call, refinements and repairs included. The only SQL
    that runs is the capped cartesian product, and the report claims no more than was done."""
    script = _escalation(dialect, target_dir)
    world = worlds(dialect).variant(hostile.url, candidates=3, max_refinements=2, max_probes=3, max_repairs=2,
                                    statement_timeout_s=10)  # the capped product must run, even on a busy machine
    try:
        before, files_before = world.state(), files_under(*world.directories)
        for api in world.apis():
            hostile.serve("SELECT 1", **script)
            outcome = world.ask(api, QUESTION)
            assert {purpose for purpose, _ in hostile.served} == {"probe", "generate", "refine", "repair"}
            assert len({sql for _, sql in hostile.served}) >= 10
            report = outcome.report
            assert outcome.answered and report.truncated and report.sql == script["generate"][1]
            assert report.vote == "unverified", report.vote  # 1 of 3 ran: no majority is claimed
            greedy, capped, last = report.candidates
            assert greedy.status in STOPPED and last.status in STOPPED and capped.status == "ok"
            assert len(greedy.attempts) == 2 and "run" not in greedy.checks
            assert capped.violations and "constraints" not in capped.checks
            assert capped.repairs and all(r.status in STOPPED for r in capped.repairs)
            assert len(report.probes) == 3 and all(p.status in STOPPED for p in report.probes)
        assert world.state() == before and files_under(*world.directories) == files_before
    finally:
        world.close()


def test_checksums_unchanged(worlds: Worlds) -> None:
    """``backends.checksum`` of every world built in this module, against the one taken when it was built."""
    if not worlds.built:
        pytest.skip("no world was built (every payload test was deselected)")
    for dialect, world in worlds.built.items():
        assert checksum(world.engine) == world.initial_checksum, dialect
