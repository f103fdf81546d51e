"""SQL or question? The engine's own parser decides what ``cursor.execute(text)`` is handed.

The rule, in order (``sqlshape`` defines the SQL structure and the English marks it uses):

1. The engine's parser reads the text: PostgreSQL's own parser (pglast); DuckDB's ``extract_statements``
   on a private in-memory connection; SQLite's ``complete_statement`` to split statements, then a
   compile of each (``EXPLAIN <statement>``, never run) on a private in-memory database, where a compile
   that fails only because a table, column or function is missing still means the text is SQL; for
   Snowflake, which has no offline parser, sqlglot's Snowflake dialect, with the first word a Snowflake
   statement keyword and no statement cut short. Nothing touches the user's connection.
2. Text the parser accepts is SQL, unless it reads like a query (``SELECT``, ``SHOW``, ``DESCRIBE``,
   ``EXPLAIN``, ...; see ``READING_KEYWORDS``), is made of words only (no SQL structure at all) and
   carries an English mark: ``Select the customers from Brazil`` is valid SQL to PostgreSQL, but it is
   a sentence. Anything with SQL structure, and any command (``GRANT ... TO me``), runs as SQL.
3. Text the parser refuses is malformed SQL when it starts like a statement: its first word is a
   statement keyword of the engine (or that keyword with one typo, for keywords of five letters or
   more: ``SELEC``, ``UPDTE``), it carries no English mark, and it has SQL structure or the parser ran
   out of input in mid-statement (``UPDATE t SET``). The wrapper raises ``ProgrammingError`` for it.
4. Everything else is a question.

A question therefore never needs to avoid SQL words: ending it with ``?`` or using ordinary English
(``me``, ``the``, ``which``) keeps it a question. ``mode="sql"`` and ``mode="question"`` override the rule.
"""

from __future__ import annotations

import logging
import re
import sqlite3
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Iterator, Literal

from .. import backends
from ..errors import ConfigurationError
from .sqlshape import Shape, one_typo_apart, shape_of, with_placeholders

Kind = Literal["sql", "question", "malformed"]

# Words that begin a statement on every engine; each backend adds its own (``Backend.statement_keywords``).
COMMON_STATEMENT_KEYWORDS = frozenset(
    "select with insert update delete create drop alter values explain begin commit rollback".split()
)
# Words that can begin a statement, per engine (a refused text starting with one may be malformed SQL).
STATEMENT_KEYWORDS: Mapping[str, frozenset[str]] = backends.facts("statement_keywords")
# Statements that only read or describe: a sentence the parser happens to accept as one of these
# ("Select the customers from Brazil", "Show me") is a question. A command (GRANT, ALTER, DELETE, ...)
# that the parser accepts always runs as SQL, English words or not.
READING_KEYWORDS = frozenset("select with values table from show describe desc explain summarize list ls".split())
_STAGE_COMMANDS = frozenset("put get list ls remove rm".split())  # Snowflake file commands name a @stage
# A statement may not end on these (only checked for Snowflake, where sqlglot stands in for the engine).
_DANGLING = frozenset("set where from and or by on join into values select table as not in like between "
                      "then else when having limit order group update delete insert drop create alter add "
                      "column using , ( =".split())
_STRUCTURED_COMMANDS = frozenset("call explain execute".split()) | _STAGE_COMMANDS
# The second word of a Snowflake command that sqlglot keeps opaque: an object type (ALTER WAREHOUSE ...).
SNOWFLAKE_OBJECTS = frozenset(
    "account accounts alert alerts api application database databases dynamic event external file function "
    "functions grants immediate integration integrations masking materialized network notification object "
    "objects parameters pipe pipes policy procedure procedures replication resource role roles row schema "
    "schemas secret secrets security sequence sequences session share shares stage stages stream streams "
    "table tables tag tags task tasks temporary temp transient transactions locks user users variables view "
    "views warehouse warehouses columns or if".split()
)


@dataclass(frozen=True)
class Reading:
    """How ``cursor.execute`` reads a text: ``kind``, and ``reason`` in words."""

    kind: Kind
    reason: str


@dataclass(frozen=True)
class Parse:
    """What the engine's parser said: ``accepted`` (one or more statements), or refused, with the
    parser's ``message`` and whether it ran out of input in mid-statement (``incomplete``)."""

    accepted: bool
    incomplete: bool = False
    message: str = ""


def classify(text: str, dialect: str) -> Reading:
    """Read ``text`` as SQL, a question or malformed SQL for the engine ``dialect`` (a profile name)."""
    shape = shape_of(text)
    parse = parse_with_engine(text, dialect, shape)
    if parse.accepted:
        if shape.is_english and not shape.has_structure and shape.first_word in READING_KEYWORDS:
            return Reading("question", f"words only, with English ({shape.english[0]})")
        return Reading("sql", f"the {dialect} parser accepts it")
    if _starts_like_statement(shape, dialect) and not shape.is_english and (
        shape.has_structure or parse.incomplete
    ):
        return Reading("malformed", parse.message or "the statement is incomplete")
    return Reading("question", "not a statement")


def parse_with_engine(text: str, dialect: str, shape: Shape | None = None) -> Parse:
    """Ask the engine's own parser (see the module docstring) whether ``text`` is SQL."""
    shape = shape or shape_of(text)
    backend = backends.registry().get(dialect)
    if backend is None:
        raise ConfigurationError(
            f"no SQL parser for the {dialect!r} engine; use mode='sql' or mode='question' explicitly."
        )
    try:
        return backend.statement_parser(text, shape)
    except ConfigurationError:
        raise
    except (UnicodeError, ValueError, TypeError) as error:  # lone surrogates, NUL characters: no SQL
        return Parse(False, message=f"the parser cannot take this text ({type(error).__name__})")


def _starts_like_statement(shape: Shape, dialect: str) -> bool:
    word = shape.first_word
    if word is None:
        return False
    keywords = STATEMENT_KEYWORDS[dialect]
    return word in keywords or (
        len(word) >= 4 and any(len(k) >= 5 and one_typo_apart(word, k) for k in keywords)
    )


# ------------------------------------------------------------------------------------------ SQLite

_SQLITE_SYNTAX = ("syntax error", "unrecognized token", "incomplete input")
_MISSING_TABLE = re.compile(r"no such table: (?:(?P<schema>main|temp)\.)?(?P<name>[^.]+)$")
_MAX_MISSING_TABLES = 8


def parse_sqlite(text: str, shape: Shape) -> Parse:
    scratch = sqlite3.connect(":memory:")  # a private in-memory database, never the user's
    scratch.set_authorizer(_no_pragmas)  # some pragmas act while they compile: refuse them, unrun
    found = False
    try:
        for statement in _sqlite_statements(text, shape):
            refusal = _compile_sqlite(scratch, statement)
            if refusal is not None:
                return refusal
            found = True
    finally:
        scratch.close()
    return Parse(True) if found else Parse(False, message="no statement")


def _compile_sqlite(scratch: sqlite3.Connection, statement: str) -> Parse | None:
    """Compile one statement on the scratch database (``EXPLAIN`` lists opcodes; nothing runs): None
    when it compiles, or fails only on a missing object. SQLite stops at the first missing table, which
    can come before a syntax error (``ALTER TABLE t ADD``), so a missing table is created and the
    compile tried again."""
    prefix = "" if shape_of(statement).first_word == "explain" else "EXPLAIN "
    for _ in range(_MAX_MISSING_TABLES):
        try:
            scratch.execute(prefix + statement).fetchall()
            return None
        except (sqlite3.Error, sqlite3.Warning) as error:
            message = str(error)
            if any(mark in message for mark in _SQLITE_SYNTAX) or isinstance(error, (sqlite3.ProgrammingError,
                                                                                     sqlite3.Warning)):
                return Parse(False, incomplete="incomplete input" in message, message=message)
            missing = _MISSING_TABLE.match(message)
            if missing is None:
                return None  # no such column / function, not authorized (a pragma), ...: it parsed
            scratch.execute(f'CREATE {"TEMP " if missing["schema"] == "temp" else ""}TABLE '
                            f'"{missing["name"].replace(chr(34), chr(34) * 2)}" (c)')
    return None


def _no_pragmas(action: int, *_: Any) -> int:
    return sqlite3.SQLITE_DENY if action == sqlite3.SQLITE_PRAGMA else sqlite3.SQLITE_OK


def _sqlite_statements(text: str, shape: Shape) -> Iterator[str]:
    """Split ``text`` where SQLite's ``complete_statement`` says a statement ends (tried at each semicolon
    outside literals and comments, so a literal full of semicolons costs no quadratic time); a tail
    without a semicolon is a statement too. Statements of comments only are dropped."""
    start = 0
    for position in [*shape.semicolons, len(text)]:
        if position == len(text) or sqlite3.complete_statement(text[start:position + 1]):
            if shape_of(text[start:position]).tokens:
                yield text[start:position]
            start = position + 1


# ------------------------------------------------------------------------------------------ DuckDB

_local = threading.local()  # a scratch DuckDB parser per thread (its connections are not shared)


def parse_duckdb(text: str, shape: Shape) -> Parse:
    import duckdb

    parser = getattr(_local, "duckdb", None)
    if parser is None:  # a private in-memory database per thread: parsing never touches the user's
        parser = _local.duckdb = duckdb.connect(":memory:", config={
            "enable_external_access": False, "autoinstall_known_extensions": False,
            "autoload_known_extensions": False,
        })
    try:
        statements = parser.extract_statements(text)
    except duckdb.ParserException as error:
        message = str(error).split("\n")[0]
        return Parse(False, incomplete="at end of input" in message, message=message)
    except duckdb.Error:  # IMPORT DATABASE reads files while parsing (refused here): it parsed
        return Parse(True)
    return Parse(bool(statements), message="" if statements else "no statement")


# -------------------------------------------------------------------------------------- PostgreSQL


def parse_postgresql(text: str, shape: Shape) -> Parse:
    try:
        import pglast
        from pglast.parser import ParseError
    except ImportError as error:  # pragma: no cover - pglast comes with verifiedsql[postgresql]
        raise ConfigurationError(
            "reading SQL for PostgreSQL needs pglast: pip install 'verifiedsql[postgresql]'."
        ) from error
    attempts = [text] + ([with_placeholders(text, shape, "$1")] if shape.pyformat else [])
    first: Parse | None = None
    for attempt in attempts:  # psycopg's %s placeholders are no PostgreSQL syntax: retry with $1
        try:
            statements = pglast.parse_sql(attempt)
        except ParseError as error:
            message = str(error.args[0]) if error.args else str(error)
            first = first or Parse(False, incomplete="at end of input" in message, message=message)
            continue
        except Exception as error:  # noqa: BLE001 - anything else the parser raises is a refusal
            first = first or Parse(False, message=f"{type(error).__name__}: {error}")
            continue
        return Parse(bool(statements), message="" if statements else "no statement")
    assert first is not None
    return first


# --------------------------------------------------------------------------------------- Snowflake


class _DropFallbackWarning(logging.Filter):
    """sqlglot logs a warning when it falls back to an opaque Command; the reading here is silent."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Falling back to parsing as a 'Command'" not in record.getMessage()


_SQLGLOT_FILTER = _DropFallbackWarning()


def parse_snowflake(text: str, shape: Shape) -> Parse:
    import sqlglot
    from sqlglot import exp

    word = shape.first_word
    if word not in STATEMENT_KEYWORDS["snowflake"]:
        return Parse(False, message=f"{word!r} does not begin a Snowflake statement" if word else "no statement")
    if word in _STAGE_COMMANDS and not any(s.startswith("stage ") for s in shape.structure):
        return Parse(False, message=f"{word.upper()} needs a @stage")
    if word == "copy" and (len(shape.words) < 2 or shape.words[1].lower() != "into"):
        return Parse(False, message="Snowflake's COPY is COPY INTO")
    if shape.last in _DANGLING:
        return Parse(False, incomplete=True, message=f"the statement ends in the middle, at {shape.last!r}")
    logger = logging.getLogger("sqlglot")
    logger.addFilter(_SQLGLOT_FILTER)
    try:
        statements = sqlglot.parse(with_placeholders(text, shape, "?"), read="snowflake")
    except Exception as error:  # noqa: BLE001 - sqlglot's ParseError, TokenError, RecursionError: refused
        return Parse(False, message=str(error).split("\n")[0])
    finally:
        logger.removeFilter(_SQLGLOT_FILTER)
    found = [s for s in statements if s is not None]
    if any(isinstance(s, exp.Command) for s in found) and not _opaque_command_is_sql(shape):
        return Parse(False, message="sqlglot does not know this Snowflake statement")
    return Parse(bool(found), message="" if found else "no statement")


def _opaque_command_is_sql(shape: Shape) -> bool:
    """A statement sqlglot keeps opaque is taken as SQL when it carries no English mark and either names
    a Snowflake object type second (``ALTER WAREHOUSE wh SUSPEND``) or is a command whose argument is
    SQL structure by its grammar (``CALL p(1)``, ``GET @stage ...``, ``EXPLAIN SELECT ...``)."""
    second = shape.words[1].lower() if len(shape.words) > 1 else ""
    return not shape.is_english and (
        second in SNOWFLAKE_OBJECTS or (shape.first_word in _STRUCTURED_COMMANDS and shape.has_structure)
    )

