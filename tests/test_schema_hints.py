"""Prompt rules from the schema (``schema_hints``): date rules only where the schema has date columns,
naming them; number columns holding years named; SQLite's fixed rules unchanged either way."""

from __future__ import annotations

import sqlalchemy as sa
from fakes import context

from verifiedsql.config import Options
from verifiedsql.db.database import Database
from verifiedsql.db.schema import Column, Schema, Table
from verifiedsql.llm.prompts import generation_messages
from verifiedsql.profiles import profile_for
from verifiedsql.stages.common.hints import prompt_profile, schema_hints

POSTGRES = profile_for("postgresql")


def _schema(*columns: Column) -> Schema:
    return Schema(tables=(Table(name="events", columns=columns),))


def test_date_rule_only_with_date_columns() -> None:
    plain = schema_hints(POSTGRES, _schema(Column("name", "TEXT", samples=("a", "b"))))
    assert not any("EXTRACT" in hint for hint in plain)
    dated = schema_hints(POSTGRES, _schema(Column("held_on", "DATE"),
                                           Column("logged", "TEXT", samples=("2020-01-02",))))
    rule = next(hint for hint in dated if "EXTRACT" in hint)
    assert "events.held_on," in rule and "events.logged (text)" in rule


def test_year_columns_are_named_and_never_given_a_date_rule() -> None:
    hints = schema_hints(POSTGRES, _schema(Column("year", "BIGINT", samples=(1999, 2004)),
                                           Column("count", "BIGINT", samples=(3, 40))))
    year_rule = next(hint for hint in hints if "hold years" in hint)
    assert "events.year" in year_rule and "events.count" not in year_rule
    assert not any("EXTRACT" in hint for hint in hints)


def test_ratio_rule_leaves_percentages_to_the_question() -> None:
    hints = schema_hints(POSTGRES, _schema(Column("n", "BIGINT")))
    assert not any("* 100.0" in hint for hint in hints)
    assert any("only when the question asks for a percentage" in hint for hint in hints)


def test_off_keeps_the_dialect_rules_and_sqlite_never_changes() -> None:
    schema = _schema(Column("year", "BIGINT", samples=(2001,)), Column("held_on", "DATE"))
    assert prompt_profile(POSTGRES, schema, enabled=False) is POSTGRES
    sqlite = profile_for("sqlite")
    assert prompt_profile(sqlite, schema, enabled=True) is sqlite


def test_the_generation_prompt_states_the_schema_rules(tmp_path) -> None:
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'h.db'}")
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE cars (id INTEGER PRIMARY KEY, year INTEGER)")
        conn.exec_driver_sql("INSERT INTO cars VALUES (1, 1999), (2, 2004)")
    database = Database(engine, Options.build({}))
    ctx = context(database)
    hinted = prompt_profile(POSTGRES, ctx.schema, enabled=True)
    system = generation_messages(hinted, ctx.schema_text, "q")[0]["content"]
    assert "cars.year" in system and "EXTRACT" not in system
    # On SQLite itself the context's profile is the engine's own, so SQLite prompts stay byte-stable.
    assert ctx.profile == database.profile
