"""A question through ``verifiedsql.create_engine`` on every engine: same answer, report, no change.

The model is scripted (this tests the plumbing per engine); the real model runs in test_e2e_*.
"""

import pandas as pd
import sqlalchemy as sa
from backends import COUNTRIES, checksum
from fakes import ScriptedChatModel, ask, by_seed

import verifiedsql

TOTALS = "SELECT country, COUNT(*) AS n FROM customers GROUP BY country"
WRONG = "SELECT country, COUNT(*) AS n FROM customers WHERE country <> 'USA' GROUP BY country"
BROKEN = "SELECT country, COUNT(*) FROM customer_table GROUP BY country"


def expected_counts() -> dict[str, int]:
    counts: dict[str, int] = {}
    for country in COUNTRIES:
        counts[country] = counts.get(country, 0) + 1
    return counts


def test_question_on_every_engine(shop_engine):
    before = checksum(shop_engine)
    script = by_seed({0: TOTALS, 1: TOTALS, 2: WRONG, 3: BROKEN}, refine=TOTALS)
    rows, report, fake = ask(shop_engine, "How many customers per country?", script, candidates=4)
    assert dict(rows) == expected_counts()
    assert report.dialect == shop_engine.dialect.name
    assert report.vote == "majority" and report.sql == TOTALS
    assert [c.status for c in report.candidates] == ["ok", "ok", "ok", "ok"]
    assert report.candidates[3].attempts == [BROKEN]
    assert "customer_table" in fake.requests[4].messages[-1]["content"]
    assert checksum(shop_engine) == before


def test_pandas_and_plain_sql_on_every_engine(shop_engine):
    engine = verifiedsql.create_engine(shop_engine.url, llm=ScriptedChatModel(lambda r: f"```sql\n{TOTALS}\n```"),
                                       candidates=1)
    frame = pd.read_sql(verifiedsql.ask("customers per country"), engine)
    assert dict(zip(frame.iloc[:, 0], frame.iloc[:, 1])) == expected_counts()
    with engine.connect() as conn, shop_engine.connect() as raw:
        query = sa.text("SELECT id, name FROM customers ORDER BY id")
        assert conn.execute(query).all() == raw.execute(query).all()
    engine.dispose()
