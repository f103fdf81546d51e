"""The schema's facts about a missing name in the refinement prompt (``schema_facts``): which tables hold a
column and how they join the query's tables, that no table has it, or which tables there are."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa
from fakes import ScriptedChatModel, ask, fenced

from verifiedsql.config import Options
from verifiedsql.db.database import Database
from verifiedsql.llm.prompts import REFINE_USER, refinement_messages
from verifiedsql.profiles import profile_for
from verifiedsql.stages.schema_facts import schema_facts

DDL = (
    "CREATE TABLE country (code TEXT PRIMARY KEY, name TEXT, surface REAL)",
    "CREATE TABLE city (id INTEGER PRIMARY KEY, name TEXT, country_code TEXT REFERENCES country(code))",
    "INSERT INTO country VALUES ('FR', 'France', 551695.0), ('DE', 'Germany', 357022.0)",
    "INSERT INTO city VALUES (1, 'Paris', 'FR'), (2, 'Lyon', 'FR'), (3, 'Berlin', 'DE')",
)


@pytest.fixture
def engine(tmp_path: Path) -> sa.Engine:
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'facts.db'}")
    with engine.begin() as conn:
        for statement in DDL:
            conn.exec_driver_sql(statement)
    return engine


def _facts(engine: sa.Engine, sql: str, error: str) -> str:
    schema = Database(engine, Options.build({})).reflect()
    return schema_facts(schema, "sqlite", "sqlite", sql, error)


def test_a_column_of_another_table_is_named_with_its_join(engine: sa.Engine) -> None:
    facts = _facts(engine, "SELECT surface FROM city", "no such column: surface")
    assert "Column surface is in table country." in facts
    assert "city.country_code = country.code" in facts


def test_a_column_no_table_has_lists_similar_names_and_the_query_tables(engine: sa.Engine) -> None:
    facts = _facts(engine, "SELECT surfaces FROM country", "no such column: surfaces")
    assert "No table has a column named surfaces." in facts
    assert "country.surface" in facts and "Columns of country: code, name, surface." in facts


def test_a_missing_table_lists_the_tables(engine: sa.Engine) -> None:
    facts = _facts(engine, "SELECT * FROM citys", "no such table: citys")
    assert "No table is named citys. The tables are: city, country." in facts
    assert "Closest names: city." in facts


def test_other_errors_have_no_facts_and_the_prompt_is_unchanged(engine: sa.Engine) -> None:
    assert _facts(engine, "SELEC 1", 'near "SELEC": syntax error') == ""
    profile = profile_for("sqlite")
    plain = refinement_messages(profile, "schema", "q", "SELEC 1", "syntax error")
    assert plain[-1]["content"] == REFINE_USER.format(dialect="SQLite", sql="SELEC 1", error="syntax error")


def test_the_refinement_shows_the_facts_and_fixes_the_candidate(engine: sa.Engine) -> None:
    def script(request):  # type: ignore[no-untyped-def]
        if request.purpose == "refine":
            assert "Column surface is in table country." in request.messages[-1]["content"]
            return fenced("SELECT country.surface FROM city JOIN country ON city.country_code = country.code "
                          "WHERE city.name = 'Paris'")
        return fenced("SELECT surface FROM city WHERE name = 'Paris'")

    model = ScriptedChatModel(script)
    rows, report, _ = ask(engine, "How large is the country of Paris?", model, schema_facts=True, candidates=1,
                          schema_repair=False)
    assert rows == [(551695.0,)]
    assert model.purposes() == ["generate", "refine"]


def test_off_sends_the_plain_refinement(engine: sa.Engine) -> None:
    model = ScriptedChatModel(lambda request: fenced("SELECT 1 FROM city" if request.purpose == "refine"
                                                     else "SELECT surface FROM city"))
    ask(engine, "How large is it?", model, schema_facts=False, schema_repair=False)
    refine = next(r for r in model.requests if r.purpose == "refine")
    assert "What the schema says" not in refine.messages[-1]["content"]
