"""SQL is never a question: what ``verifiedsql.dbapi`` cursors are handed is read by the engine's own parser.

The corpus (``data/statements.toml``): valid statements per engine, statements that start like SQL but do
not parse, and plain questions, many of them beginning with a statement keyword (Show, Select, List,
Describe, Explain, Update me, Delete). Checked three ways:

* the classifier, ``verifiedsql.guard.statements.classify``, on the whole corpus for every engine;
* the whole corpus through ``Cursor.execute`` of a real wrapper on every engine, with the driver's cursor
  and the question path replaced by recorders (nothing runs, nothing is asked): every statement reaches
  the driver, every question the question path, every malformed statement raises ``ProgrammingError``;
* a sample end to end against the shop, with the hostile model server recording every request: the
  trial's statements (SAVEPOINT/RELEASE and REPLACE INTO on SQLite, CREATE SECRET on DuckDB, LOCK TABLE
  and ALTER ROLE ... PASSWORD on PostgreSQL, Snowflake's own commands on fakesnow) run as SQL with no
  model request, questions that begin like statements are answered by the model, and malformed statements
  raise ``verifiedsql.dbapi.ProgrammingError`` with no model request.

``benchmarks/sql_or_question.py`` prints the confusion matrix of the same corpus.
"""

from __future__ import annotations

import sqlite3
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import HOSTILE_OPTIONS, HostileModel, Worlds

import verifiedsql.dbapi as dbapi
from verifiedsql import backends

CORPUS_PATH = Path(__file__).parent / "data" / "statements.toml"
CORPUS: dict[str, Any] = tomllib.loads(CORPUS_PATH.read_text("utf-8"))
ENGINES = backends.names()  # every registered engine (verifiedsql/backends/)
QUESTIONS: list[str] = CORPUS["questions"]
ANSWER_SQL = "SELECT COUNT(*) FROM orders"


def corpus_for(section: str, engine: str) -> list[str]:
    """The statements of ``section`` ("statements" or "malformed") that apply to ``engine``."""
    return [sql for group in CORPUS[section] if engine in group["engines"] for sql in group["sql"]]


def all_statements() -> set[str]:
    return {sql for group in CORPUS["statements"] for sql in group["sql"]}


def test_the_corpus_holds_what_the_trial_found() -> None:
    statements = all_statements()
    assert len(statements) >= 160 and len(set(QUESTIONS)) >= 200
    for engine in ENGINES:
        assert len(corpus_for("statements", engine)) >= 60 and corpus_for("malformed", engine)
    found = " | ".join(statements).upper()
    for trial in ("REPLACE INTO", "SAVEPOINT", "RELEASE", "PASSWORD '", "LOCK TABLE", "CREATE SECRET", "PRAGMA",
                  "ATTACH", "VACUUM", "COPY", "SET ", "SHOW", "DESCRIBE", "EXPLAIN", "GRANT", "MERGE", "CALL",
                  "INSTALL", "LOAD", "USE ", "BEGIN", "-- ", "/*"):
        assert trial in found, trial
    starts = {q.split()[0].rstrip("?!:,").lower() for q in QUESTIONS}
    assert {"show", "select", "list", "describe", "explain", "update", "delete"} <= starts


# -------------------------------------------------------------------------------- the classifier


@pytest.mark.parametrize("engine", ENGINES)
def test_the_engine_parser_reads_the_whole_corpus(engine: str) -> None:
    from verifiedsql.guard.statements import classify

    wrong = [(kind, text, reading) for kind, texts in (
        ("sql", corpus_for("statements", engine)),
        ("malformed", corpus_for("malformed", engine)),
        ("question", QUESTIONS),
    ) for text in texts if (reading := classify(text, engine)).kind != kind]
    assert not wrong, "\n".join(f"expected {kind}: {text!r} -> {reading}" for kind, text, reading in wrong)


HELD_OUT: dict[str, Any] = tomllib.loads((CORPUS_PATH.parent / "statements_heldout.toml").read_text("utf-8"))


@pytest.mark.parametrize("engine", ENGINES)
def test_no_held_out_statement_reaches_the_model(engine: str) -> None:
    """On texts written after the rule was fixed, the safety half holds exactly: no statement and no
    malformed statement is read as a question. (Questions that are also valid SQL, such as "Select
    customers from Canada", may run as SQL: the README gives the held-out matrix.)"""
    from verifiedsql.guard.statements import classify

    statements = [sql for group in HELD_OUT["statements"] if engine in group["engines"] for sql in group["sql"]]
    malformed = [sql for group in HELD_OUT["malformed"] if engine in group["engines"] for sql in group["sql"]]
    asked = [text for text in statements + malformed if classify(text, engine).kind == "question"]
    assert statements and malformed and not asked
    questions = HELD_OUT["questions"]
    assert sum(classify(q, engine).kind == "question" for q in questions) >= 0.9 * len(questions)


def test_english_words_are_no_keyword_of_the_engines() -> None:
    """The English marks never include a keyword, by the engines' own lists (DuckDB's duckdb_keywords(),
    PostgreSQL's keyword list in pglast) and sqlglot's tokenizers for the other two."""
    import duckdb
    import pglast.keywords
    from sqlglot.dialects import Dialect

    from verifiedsql.guard.sqlshape import ENGLISH_WORDS

    rows = duckdb.connect().sql("SELECT keyword_name FROM duckdb_keywords()").fetchall()
    keywords = {row[0].lower() for row in rows}
    for name in ("RESERVED_KEYWORDS", "UNRESERVED_KEYWORDS", "COL_NAME_KEYWORDS", "TYPE_FUNC_NAME_KEYWORDS"):
        keywords |= {word.lower() for word in getattr(pglast.keywords, name)}
    for dialect in ("sqlite", "snowflake"):
        keywords |= {word.lower() for word in Dialect.get_or_raise(dialect).tokenizer_class.KEYWORDS}
    assert not ENGLISH_WORDS & keywords


def test_reading_never_runs_anything(tmp_path: Path) -> None:
    """Compiling on SQLite's scratch database runs nothing: a pragma that acts while it compiles is
    refused unrun (``EXPLAIN PRAGMA soft_heap_limit = N`` would set the process-wide limit), and ATTACH or
    VACUUM INTO create no file; DuckDB's IMPORT DATABASE (which reads files while it parses) reads none."""
    from verifiedsql.guard.statements import classify

    probe = sqlite3.connect(":memory:")
    before = probe.execute("PRAGMA soft_heap_limit").fetchone()
    assert classify("PRAGMA soft_heap_limit = 7654321", "sqlite").kind == "sql"
    assert probe.execute("PRAGMA soft_heap_limit").fetchone() == before
    target = tmp_path / "never-created.db"
    for sql in (f"ATTACH '{target}' AS x", f"VACUUM INTO '{target}'"):
        assert classify(sql, "sqlite").kind == "sql" and not target.exists()
    assert classify(f"IMPORT DATABASE '{CORPUS_PATH.parent}'", "duckdb").kind == "sql"


# --------------------------------------------------------------- the whole corpus through the wrapper


class Recorded(Exception):
    """Raised by the recording question path, so the cursor stops there."""


class RecordingCursor:
    """Stands in for the driver's cursor: records what would run, runs nothing."""

    description = None
    rowcount = -1

    def __init__(self, ran: list[str]) -> None:
        self.ran = ran

    def execute(self, operation: str, parameters: Any = None) -> None:
        self.ran.append(operation)

    def close(self) -> None:
        pass


class Wrapped:
    """``wrapped(engine)``: a ``verifiedsql.dbapi`` connection to the shop on that engine, built on first use
    and kept for the module (Snowflake: fakesnow's connection, wrapped here)."""

    def __init__(self, worlds: Worlds, hostile: HostileModel) -> None:
        self.worlds, self.hostile = worlds, hostile
        self.snowflake: dbapi.Connection | None = None

    def __call__(self, engine: str) -> dbapi.Connection:
        world = self.worlds(engine)  # for Snowflake: loads the shop and keeps fakesnow patched
        if world.dbapi is not None:
            return world.dbapi
        if self.snowflake is None:
            import snowflake.connector

            raw = snowflake.connector.connect(user="user", password="pass", account="account", database="db1",
                                              schema="schema1")
            self.snowflake = dbapi.connect(raw, **dict(HOSTILE_OPTIONS, llm_base_url=self.hostile.url))
        return self.snowflake


@pytest.fixture(scope="module")
def wrapped(worlds: Worlds, hostile: HostileModel) -> Iterator[Wrapped]:
    factory = Wrapped(worlds, hostile)
    yield factory
    if factory.snowflake is not None:
        factory.snowflake.close()


@pytest.fixture
def connection(engine: str, wrapped: Wrapped) -> dbapi.Connection:
    """The test's engine, wrapped (built in setup, so a test's own time is its own)."""
    return wrapped(engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_the_wrapper_runs_every_statement_and_asks_every_question(
    engine: str, connection: dbapi.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran: list[str] = []
    asked: list[str] = []

    def record_question(question: str) -> None:
        asked.append(question)
        raise Recorded

    monkeypatch.setattr(connection, "answer", record_question)
    cursor = connection.cursor()
    cursor._raw_cursor = RecordingCursor(ran)
    refused: list[str] = []
    for text in (*corpus_for("statements", engine), *corpus_for("malformed", engine), *QUESTIONS):
        try:
            cursor.execute(text)
        except Recorded:
            pass
        except dbapi.ProgrammingError:
            refused.append(text)
    statements = corpus_for("statements", engine)
    asked_sql = [s for s in statements if s in asked]
    ran_questions = [q for q in QUESTIONS if q in ran]
    assert not asked_sql, f"{len(asked_sql)} statements went to the model: {asked_sql}"
    assert not ran_questions, f"{len(ran_questions)} questions ran as SQL: {ran_questions}"
    assert ran == statements and asked == QUESTIONS and refused == corpus_for("malformed", engine)


# ----------------------------------------------------------------------------------- end to end

SAMPLES: dict[str, list[tuple[str, Any]]] = {
    # (statement, expected rows or None: the statement ran and returned no rows worth checking)
    "sqlite": [
        ("BEGIN", None),
        ("SAVEPOINT sp1", None),
        ("REPLACE INTO customers (id, name, country, joined) VALUES (1, 'Zed', 'Peru', '2020-01-01')", None),
        ("SELECT name FROM customers WHERE id = 1", [("Zed",)]),
        ("RELEASE sp1", None),
        ("ROLLBACK", None),
        ("SELECT name FROM customers WHERE id = 1", [("Customer 1",)]),
    ],
    "duckdb": [
        ("CREATE SECRET vsql_probe (TYPE http, BEARER_TOKEN 'tok-never-sent-1')", None),
        ("SELECT name FROM duckdb_secrets() WHERE name = 'vsql_probe'", [("vsql_probe",)]),
        ("DROP SECRET vsql_probe", None),
        ("SELECT COUNT(*) FROM duckdb_secrets() WHERE name = 'vsql_probe'", [(0,)]),
    ],
    "postgresql": [
        ("BEGIN", None),
        ("LOCK TABLE customers IN ACCESS EXCLUSIVE MODE", None),
        ("SELECT mode FROM pg_locks WHERE relation = 'customers'::regclass AND pid = pg_backend_pid() "
         "AND mode = 'AccessExclusiveLock'", [("AccessExclusiveLock",)]),
        ("ROLLBACK", None),
        ("CREATE ROLE vsql_throwaway NOLOGIN", None),
        ("ALTER ROLE vsql_throwaway PASSWORD 'pw-never-sent-2'", None),
        ("SELECT rolpassword IS NOT NULL FROM pg_authid WHERE rolname = 'vsql_throwaway'", [(True,)]),
        ("DROP ROLE vsql_throwaway", None),
    ],
    "snowflake": [
        ("USE SCHEMA db1.schema1", None),
        ("SET cutoff = 100", None),
        ("show tables", None),
        ("DESCRIBE TABLE customers", None),
        ("SELECT COUNT(*) FROM customers", [(10,)]),
    ],
}
TRICKY_QUESTIONS = ("Select the customers from Brazil", "Show me the total revenue",
                    "Delete? No, just tell me how many orders were cancelled")
MALFORMED = ("SELEC * FROM orders", "UPDATE orders SET", "SELECT * FRM orders WHERE")


@pytest.mark.parametrize("engine", ENGINES)
def test_statements_run_as_sql_with_no_model_call(engine: str, connection: dbapi.Connection,
                                                  hostile: HostileModel) -> None:
    hostile.serve(ANSWER_SQL)
    cursor = connection.cursor()
    for sql, rows in SAMPLES[engine]:
        cursor.execute(sql)
        assert cursor.verification is None, f"{sql!r} was answered as a question"
        if rows is not None:
            assert [tuple(r) for r in cursor.fetchall()] == rows, sql
    assert not hostile.server.requests, f"{len(hostile.server.requests)} model requests for SQL"


@pytest.mark.parametrize("engine", ENGINES)
def test_questions_that_begin_like_statements_reach_the_model(
    engine: str, connection: dbapi.Connection, hostile: HostileModel
) -> None:
    cursor = connection.cursor()
    for question in TRICKY_QUESTIONS:
        hostile.serve(ANSWER_SQL)
        cursor.execute(question)
        assert cursor.verification is not None and cursor.fetchall() == [(25,)], question
        assert hostile.server.requests and question in hostile.prompt_text()


@pytest.mark.parametrize("engine", ENGINES)
def test_malformed_statements_raise_programming_error_with_no_model_call(
    engine: str, connection: dbapi.Connection, hostile: HostileModel
) -> None:
    hostile.serve(ANSWER_SQL)
    cursor = connection.cursor()
    for sql in MALFORMED:
        with pytest.raises(dbapi.ProgrammingError, match="mode='question'"):
            cursor.execute(sql)
    assert not hostile.server.requests
    cursor.execute(MALFORMED[0], mode="question")  # the reading can always be forced
    assert cursor.fetchall() == [(25,)] and hostile.server.requests
