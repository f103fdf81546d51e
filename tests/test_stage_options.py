"""Grounding and verification are off by default, and then the model sees exactly today's requests."""

from __future__ import annotations

import dataclasses

import pytest
import sqlalchemy as sa
from backends import load_shop
from fakes import ask, by_seed, context

from verifiedsql.bench.strategies import LIBRARY_DEFAULT, STRATEGIES, strategy_options
from verifiedsql.config import LLMSettings, Options
from verifiedsql.db.database import Database
from verifiedsql.db.schema import render_schema
from verifiedsql.llm.models import MODELS
from verifiedsql.llm.prompts import (
    generation_messages,
    refinement_messages,
    with_context,
)
from verifiedsql.profiles import profile_for
from verifiedsql.report import Candidate, Repair, ValueMatch, VerificationReport
from verifiedsql.stages.generate import execute_candidate
from verifiedsql.stages.schema_facts import schema_facts

QUESTION = "What are the top 3 countries of customers named 'Customer 1'?"
GOOD = "SELECT country FROM customers GROUP BY country ORDER BY COUNT(*) DESC"
BROKEN = "SELECT nope FROM customers"


def test_new_stages_are_off_by_default():
    options = Options(llm=LLMSettings())
    assert (options.ground_values, options.verify, options.max_repairs) == (False, False, 3)


def test_default_requests_are_unchanged(tmp_path):
    url = f"sqlite:///{tmp_path / 'shop.db'}"
    load_shop(sa.create_engine(url)).dispose()
    _, report, fake = ask(url, QUESTION, by_seed({0: GOOD, 1: BROKEN}, refine=GOOD), candidates=2,
                          schema_facts=True)
    database = Database(sa.create_engine(url), Options(llm=LLMSettings()))
    schema_text = render_schema(database.reflect())
    error = execute_candidate(context(database), BROKEN).error
    profile = profile_for("sqlite")
    expected = generation_messages(profile, schema_text, QUESTION)
    assert expected[1]["content"] == f"Database schema:\n{schema_text}\n\nQuestion: {QUESTION}"
    assert [r.purpose for r in fake.requests] == ["generate", "generate", "refine"]
    assert fake.requests[0].messages == expected and fake.requests[1].messages == expected
    # With ``schema_facts`` the refinement also shows the schema's facts about the missing name.
    facts = schema_facts(database.reflect(), "sqlite", "sqlite", BROKEN, error or "")
    assert facts
    assert fake.requests[2].messages == refinement_messages(profile, schema_text, QUESTION, BROKEN, error or "",
                                                            facts)
    assert report.value_matches == [] and report.constraints == []
    assert all(c.violations == [] and c.repairs == [] for c in report.candidates)
    assert set(report.timings) == {"context", "literals", "constraints", "generate", "select"}


def test_with_context_is_the_identity_without_a_block():
    assert with_context("schema", "") == "schema"
    assert with_context("schema", "Values found") == "schema\n\nValues found"


def test_strategies_registered():
    base = {"llm": LLMSettings()}
    assert strategy_options("+verify", base).verify and not strategy_options("+verify", base).ground_values
    assert strategy_options("+ground", base).ground_values and not strategy_options("+ground", base).verify
    both = strategy_options("+ground+verify", base)
    assert both.ground_values and both.verify and both.candidates == 5
    for name in ("greedy", "self-consistency"):
        options = strategy_options(name, base)
        assert not options.verify and not options.ground_values
    assert set(STRATEGIES) >= {"greedy", "self-consistency", "+verify", "+ground", "+ground+verify"}


def test_report_fields_serialise():
    report = VerificationReport(question="q", dialect="sqlite")
    candidate = Candidate(index=0, origin="greedy", sql="SELECT 1", violations=["v"],
                          repairs=[Repair("SELECT 2", "ok", None, [], 1)])
    report.candidates.append(candidate)
    report.value_matches.append(ValueMatch("customers", "country", "Brazil", "exact", "Brazil"))
    report.constraints.append('"top 3" needs ...')
    data = report.to_dict()
    assert data["candidates"][0]["repairs"][0]["sql"] == "SELECT 2"
    assert data["value_matches"][0]["value"] == "Brazil" and data["constraints"] == ['"top 3" needs ...']
    old = {f.name for f in dataclasses.fields(VerificationReport)}
    assert {"question", "sql", "candidates", "clusters", "llm_calls", "timings", "notes"} <= old


@pytest.mark.parametrize("model", sorted(MODELS))
def test_the_default_strategy_is_the_library_default(model):
    base = {"llm": LLMSettings()}
    shipped = Options(llm=LLMSettings())
    name = MODELS[model].alias
    default = strategy_options(LIBRARY_DEFAULT, base)
    for option in ("schema_repair", "schema_hints", "schema_facts", "check_literals", "candidates", "verify",
                   "dpc", "vet", "review", "consensus", "probe", "ground_values", "compress_schema"):
        assert getattr(default, option) == getattr(shipped, option), option
    assert default.checks_scope(name) == shipped.checks_scope(name) is True
    assert default.scope_unmatched_share == shipped.scope_unmatched_share
    assert strategy_options("default-greedy", base).candidates == 1
    assert not strategy_options("self-consistency", base).schema_facts
