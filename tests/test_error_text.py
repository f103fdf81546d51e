"""Engine errors as the model wrote its SQL (issue 18): the library's own wrappers (PostgreSQL's
``EXPLAIN (VERBOSE, FORMAT JSON)`` safety plan, the ``EXPLAIN`` of verify-and-repair's syntax check, the
transaction and timeout statements) never show in a candidate's error or in a refinement prompt, and a
position the engine gives (an echoed line with a caret, ``at character N``, ``line 1 at position N``)
points at the offending token of the candidate's own SQL, on every engine."""

from __future__ import annotations

import re

import pytest
from fakes import ScriptedChatModel, ask, context, fenced

from verifiedsql.config import LLMSettings, Options
from verifiedsql.db.database import Database
from verifiedsql.errors import NoAnswerError
from verifiedsql.guard.echo import unwrapped
from verifiedsql.llm.base import ChatRequest
from verifiedsql.stages.generate import execute_candidate

# Text of the statements the library sends around or beside a candidate; none of it is the model's.
WRAPPERS = ("EXPLAIN", "FORMAT JSON", "VERBOSE", "QUERY PLAN", "SET LOCAL", "statement_timeout", "BEGIN",
            "ROLLBACK", "READ ONLY", "DECLARE", "CURSOR FOR", "json_serialize_sql", "current_setting",
            "STATEMENT_TIMEOUT_IN_SECONDS", "pg_proc", "verifiedsql_")

UNKNOWN_COLUMN = ("SELECT name FROM customers WHERE country = 'USA' AND nmae > 1", "nmae")
# A syntax error the statement guard (sqlglot) lets through, so the engine itself rejects it.
SYNTAX_ERROR = {
    "sqlite": ("SELECT name FROM customers QUALIFY id > 1", "id"),
    "postgresql": ("SELECT name FROM customers QUALIFY id > 1", "id"),
    "duckdb": ("SELECT name FROM customers WHERE id IN ()", ")"),
    "snowflake": ("SELECT name FROM customers WHERE id IN ()", ")"),
}
# A long first line, so the engine cuts its echo: the cut must not show the wrapper either.
LONG_LINE = ("SELECT name, country, joined, id FROM customers WHERE country = 'USA' AND id > 0 AND country <> 'x' "
             "AND nmae > 1 ORDER BY name, country, joined", "nmae")
MULTI_LINE = ("SELECT name,\n       country\nFROM customers\nWHERE country = 'USA'\n  AND nmae > 1", "nmae")


def database(engine) -> Database:
    return Database(engine, Options(llm=LLMSettings(), statement_timeout_s=5.0))


def cases(dialect: str) -> list[tuple[str, str]]:
    return [UNKNOWN_COLUMN, SYNTAX_ERROR[dialect], LONG_LINE, MULTI_LINE]


def assert_no_wrapper(text: str) -> None:
    shown = [wrapper for wrapper in WRAPPERS if wrapper.lower() in text.lower()]
    assert not shown, f"library text {shown} in: {text}"


def pointed_at(error: str, sql: str) -> str | None:
    """The text of ``sql`` from the position ``error`` points at (None when it gives none). Echoed lines
    are compared case-blind: fakesnow echoes Snowflake SQL as it transpiled it, upper-cased."""
    lines = re.split(r"\r\n|\r|\n", sql)
    if echo := re.search(r"^LINE (\d+): (.*)\n( *)\^$", error, re.MULTILINE):
        line, body = lines[int(echo[1]) - 1], echo[2]
        column = len(echo[3]) - len(f"LINE {echo[1]}: ")
        shown = body[:-3] if body.endswith("...") and not line.upper().endswith(body.upper()) else body
        if shown.startswith("...") and not line.upper().startswith(shown.upper()):
            shown, column = shown[3:], column - 3
            start = line.upper().find(shown.upper())
        else:
            start = 0 if line.upper().startswith(shown.upper()) else -1
        assert start >= 0, f"the echoed line is not the candidate's: {body!r} / {line!r}"
        return line[start + column:]
    if found := re.search(r"\bline (\d+) at position (\d+)\b", error):  # Snowflake's own
        return lines[int(found[1]) - 1][int(found[2]):]
    if found := re.search(r"\bat character (\d+)\b", error):  # libpq without the statement
        return sql[int(found[1]) - 1:]
    return None


def assert_points_at(error: str, sql: str, token: str, dialect: str, wrapped: bool) -> None:
    if dialect == "snowflake" and not wrapped and "\n" in sql:
        return  # fakesnow runs the SQL as it transpiled it, on one line, and echoes that (no wrapper of ours)
    target = pointed_at(error, sql)
    if dialect == "sqlite":  # SQLite gives no position
        assert target is None
        return
    assert target is not None, f"no position in: {error}"
    assert target.upper().startswith(token.upper()), f"points at {target[:20]!r}, not {token!r}: {error}"


@pytest.mark.parametrize("explain", [False, True], ids=["run", "explain"])
def test_a_candidates_error_shows_its_own_sql(shop_engine, explain):
    dialect = shop_engine.dialect.name
    db = database(shop_engine)
    for sql, token in cases(dialect):
        failed = execute_candidate(context(db), sql, explain=explain)
        assert failed.status == "error" and failed.error, (sql, failed)
        assert_no_wrapper(failed.error)
        if (sql, token) == SYNTAX_ERROR[dialect] and dialect == "sqlite":
            assert token in failed.error  # near "id": syntax error
        assert_points_at(failed.error, sql, token, dialect, explain)


@pytest.mark.parametrize("verify", [False, True], ids=["plain", "verify"])
def test_the_refinement_prompt_and_the_report_show_the_candidates_own_sql(shop_engine, verify):
    dialect = shop_engine.dialect.name
    for sql, token in cases(dialect):

        def script(request: ChatRequest, sql: str = sql) -> str:
            return fenced(sql)  # every reply, refinements too, is the failing SQL

        model = ScriptedChatModel(script)
        with pytest.raises(NoAnswerError) as failed:
            ask(shop_engine, "Which customers are there?", model, candidates=1, max_refinements=1, verify=verify)
        report = failed.value.report
        refinements = [r for r in model.requests if r.purpose == "refine"]
        assert refinements, model.purposes()
        prompt = "\n".join(message["content"] for message in refinements[0].messages)
        assert_no_wrapper(prompt.replace(sql, ""))
        candidate = report.candidates[0]
        assert candidate.status == "error" and candidate.error
        assert_no_wrapper(candidate.error)
        assert_points_at(candidate.error, sql, token, dialect, verify)
        assert candidate.error[:600] in prompt  # the refinement shows the same relocated text


SQLITE_MESSAGES = ["no such column: nmae", 'near "id": syntax error', "no such table: customer",
                   "misuse of aggregate: COUNT()", "ambiguous column name: id", "incomplete input"]


@pytest.mark.parametrize("wrapper", ["", "EXPLAIN QUERY PLAN ", "EXPLAIN "])
def test_a_message_without_a_position_keeps_its_bytes(wrapper):
    """The recorded runs' replay caches hold SQLite's errors in their refinement prompts: unchanged."""
    for message in SQLITE_MESSAGES:
        assert unwrapped(message, wrapper, "SELECT nmae FROM customers") == message


def test_positions_move_by_the_wrappers_length_on_every_form():
    sql = "SELECT nme FROM customers"
    duckdb_style = 'Binder Error: Referenced column "nme" not found\n\nLINE 1: EXPLAIN SELECT nme FROM customers\n' \
                   + " " * 23 + "^"
    assert unwrapped(duckdb_style, "EXPLAIN ", sql).endswith("LINE 1: SELECT nme FROM customers\n" + " " * 15 + "^")
    snowflake = "SQL compilation error:\nerror line 1 at position 15\ninvalid identifier 'NME'"
    assert "error line 1 at position 7\n" in unwrapped(snowflake, "EXPLAIN ", sql)
    assert unwrapped("syntax error line 2 at position 3 unexpected 'X'.", "EXPLAIN ", sql).endswith(
        "line 2 at position 3 unexpected 'X'.")
    libpq_terse = 'column "nme" does not exist at character 39'
    assert unwrapped(libpq_terse, "EXPLAIN (VERBOSE, FORMAT JSON) ", sql, position=39).endswith("at character 8")
    # an echo of some other statement is dropped, never shown with a position that may be wrong
    other = 'syntax error\nLINE 1: SHOW PARAMETERS LIKE x\n' + " " * 29 + "^"
    assert unwrapped(other, "EXPLAIN ", sql) == "syntax error"
    assert unwrapped(duckdb_style, None, sql) == 'Binder Error: Referenced column "nme" not found'
