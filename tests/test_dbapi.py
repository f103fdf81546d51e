"""PEP 249 wrapper over raw sqlite3 and duckdb connections, with a scripted model."""

import shutil
import sqlite3
from pathlib import Path

import duckdb
import pytest
from fakes import ScriptedChatModel, fenced

import verifiedsql.dbapi as dbapi
from verifiedsql.profiles import profile_for

SHOP = Path(__file__).parents[1] / "examples" / "shop.db"


@pytest.fixture
def raw(tmp_path):
    path = tmp_path / "shop.db"
    shutil.copy(SHOP, path)
    connection = sqlite3.connect(path)
    yield connection
    connection.close()


def test_module_attributes():
    assert dbapi.apilevel == "2.0" and dbapi.threadsafety == 1 and dbapi.paramstyle
    assert issubclass(dbapi.ProgrammingError, dbapi.DatabaseError) and issubclass(dbapi.DatabaseError, dbapi.Error)


@pytest.mark.parametrize("text,is_sql", [
    ("SELECT 1", True), ("select * from t; select 2", True), ("WITH a AS (SELECT 1) SELECT * FROM a", True),
    ("How many customers are from Brazil?", False), ("Show me all singers", False),
    ("List the names of all products", False), ("PRAGMA table_info(t)", True),
])
def test_sql_or_question(text, is_sql):
    assert dbapi.looks_like_sql(text, profile_for("sqlite")) is is_sql


def test_sql_runs_unchanged_with_driver_parameters(raw):
    conn = dbapi.connect(raw, llm=ScriptedChatModel([]))
    cur = conn.cursor()
    cur.execute("SELECT name FROM customers WHERE country = ? ORDER BY name", ("Germany",))
    assert cur.fetchall() == [("Dieter Braun",), ("Eva Schmidt",)]
    assert cur.description[0][0] == "name" and conn.paramstyle == "qmark"
    cur.execute("INSERT INTO products VALUES (99, 'Cup', 'accessories', 3.0)")
    conn.commit()
    assert raw.execute("SELECT COUNT(*) FROM products").fetchone() == (9,)


def test_question_is_answered_with_a_report(raw):
    fake = ScriptedChatModel(lambda r: fenced("SELECT COUNT(*) AS n FROM customers WHERE country = 'Brazil'"))
    cur = dbapi.connect(raw, llm=fake, candidates=2).cursor()
    cur.execute("How many customers are from Brazil?")
    assert cur.description[0][0] == "n" and cur.rowcount == 1
    assert cur.fetchone() == (3,) and cur.fetchone() is None
    assert cur.verification.vote == "unanimous"


def test_keyword_forces_the_reading(raw):
    fake = ScriptedChatModel(lambda r: fenced("SELECT COUNT(*) FROM products"))
    cur = dbapi.connect(raw, llm=fake, candidates=1).cursor()
    cur.execute("SELECT 1", mode="question")
    assert cur.fetchall() == [(8,)]
    with pytest.raises(sqlite3.OperationalError):
        cur.execute("how many", mode="sql")


def test_question_inside_an_open_transaction_is_refused_and_work_is_kept(raw):
    conn = dbapi.connect(raw, llm=ScriptedChatModel(lambda r: fenced("SELECT 1")), candidates=1)
    cur = conn.cursor()
    cur.execute("DELETE FROM order_items")
    with pytest.raises(dbapi.InterfaceError, match="commit or roll back"):
        cur.execute("How many items?")
    conn.rollback()
    assert raw.execute("SELECT COUNT(*) FROM order_items").fetchone()[0] > 0


def test_duckdb_raw_connection():
    raw = duckdb.connect()
    raw.execute("CREATE TABLE t AS SELECT * FROM range(5) r(x)")
    cur = dbapi.connect(raw, llm=ScriptedChatModel(lambda r: fenced("SELECT SUM(x) FROM t")), candidates=1).cursor()
    cur.execute("SELECT COUNT(*) FROM t")
    assert cur.fetchone() == (5,)
    cur.execute("What is the total of x?")
    assert cur.fetchall() == [(10,)]


def test_closed_cursor_and_connection(raw):
    conn = dbapi.connect(raw, llm=ScriptedChatModel([]))
    cur = conn.cursor()
    cur.close()
    with pytest.raises(dbapi.InterfaceError):
        cur.execute("SELECT 1")
    conn.close()
    with pytest.raises(dbapi.InterfaceError):
        conn.cursor()
