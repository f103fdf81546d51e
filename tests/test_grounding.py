"""Value grounding: question literals found in text columns, on every engine, with dialect-aware SQL."""

from __future__ import annotations

import sqlalchemy as sa
from backends import checksum
from fakes import ask, context, fenced

from verifiedsql.config import LLMSettings, Options
from verifiedsql.db.database import Database
from verifiedsql.stages.common.catalog import Catalog
from verifiedsql.stages.pvsql.grounding import (
    ground_values,
    lookup_sql,
    match_kind,
    question_terms,
    render_matches,
)


def database(engine: sa.Engine) -> Database:
    return Database(engine, Options(llm=LLMSettings()))


def test_question_terms_pick_literals_not_sentence_starts():
    terms = question_terms("How many orders from Brazil are 'shipped' since 2020-02-07? List the top 3.")
    assert terms == ["shipped", "2020-02-07", "Brazil", "3"]
    assert question_terms("Which customers joined? Show them.") == []


def test_match_kinds():
    assert match_kind("Brazil", "Brazil") == "exact"
    assert match_kind("Brazil", "brazil") == "case-insensitive"
    assert match_kind("Brazilia", "brazil") == "prefix"
    assert match_kind("Customer 10", "tomer 1") == "contains"
    assert match_kind("USA 2", "us") is None  # short terms match whole values only


def test_grounding_on_every_engine(shop_engine):
    before = checksum(shop_engine)
    db = database(shop_engine)
    matches = ground_values(context(db, "How many customers in 'brazil' have Shipped orders?"))
    found = {(m.table.lower(), m.column.lower(), m.value, m.kind) for m in matches}
    assert ("customers", "country", "Brazil", "case-insensitive") in found
    assert ("orders", "status", "shipped", "case-insensitive") in found
    block = render_matches(matches)
    assert block.startswith("Values found in the database") and "= 'Brazil'" in block
    assert checksum(shop_engine) == before


def lookup(db: Database, table: str, column: str, terms: list[str]) -> str:
    """``lookup_sql`` for ``table.column`` of ``db``'s reflected schema."""
    schema = db.reflect()
    found = schema.table(table)
    assert found is not None
    return lookup_sql(Catalog(schema, db.profile.name), db.profile.sqlglot_dialect, found, column, terms)


def test_lookup_sql_follows_the_dialect(shop_engine):
    db = database(shop_engine)
    sql = lookup(db, "customers", "country", ["brazil", "US"])
    if shop_engine.dialect.name == "sqlite":
        assert "LOWER(v) LIKE LOWER('%brazil%') OR LOWER(v) LIKE LOWER('US')" in sql and "ILIKE" not in sql
    else:
        assert "v ILIKE '%brazil%' OR v ILIKE 'US'" in sql
    assert "LIMIT 10000) AS s" in sql and sql.endswith("LIMIT 20")
    assert db.run_query(sql).rows == (("Brazil",),)


def test_lookup_escapes_quotes_and_quotes_reserved_words(shop_engine):
    """A term's quote is escaped as the dialect writes it, and a column or table named by a reserved word is
    quoted, so the lookup runs on every engine and finds the stored value."""
    with shop_engine.begin() as conn:
        conn.execute(sa.text('CREATE TABLE "order" (id INTEGER PRIMARY KEY, "select" VARCHAR(20))'))
        conn.execute(sa.text('INSERT INTO "order" (id, "select") VALUES (1, \'O\'\'Brien\')'))
    db = database(shop_engine)
    sql = lookup(db, "order", "select", ["O'Brien"])
    assert '"select"' in sql and '"order"' in sql
    assert db.run_query(sql).rows == (("O'Brien",),)


def test_no_terms_means_no_queries(monkeypatch, tmp_path):
    from backends import load_shop
    db = database(load_shop(sa.create_engine(f"sqlite:///{tmp_path / 'g.db'}")))
    ctx = context(db, "how many customers are there?")
    monkeypatch.setattr(db, "run_query", lambda sql, **kw: (_ for _ in ()).throw(AssertionError(sql)))
    assert ground_values(ctx) == []


def test_pipeline_puts_matches_in_the_prompt(tmp_path):
    from backends import load_shop
    url = f"sqlite:///{tmp_path / 'shop.db'}"
    load_shop(sa.create_engine(url)).dispose()
    rows, report, fake = ask(url, "How many customers live in brazil or 'BRAZIL'?",
                             lambda r: fenced("SELECT COUNT(*) FROM customers WHERE country = 'Brazil'"),
                             candidates=1, ground_values=True)
    assert rows == [(2,)]
    assert [(m.table, m.column, m.value) for m in report.value_matches] == [("customers", "country", "Brazil")]
    user = fake.requests[0].messages[-1]["content"]
    assert "Values found in the database" in user and "customers.country = 'Brazil'" in user
    assert user.endswith("Question: How many customers live in brazil or 'BRAZIL'?")
    assert "ground" in report.timings and "value: customers.country = 'Brazil'" in report.summary()
