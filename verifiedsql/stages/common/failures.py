"""The kind of a failing candidate's error, read from the engine's own message on SQLite, DuckDB,
PostgreSQL and Snowflake (fakesnow), and the table or column name a schema-name error says is missing.

Used by the answer step (``stages/scope.py``: most candidates failed on a name the database does not have, or
were refused as statements that change data) and by the harness's failure anatomy (``bench/anatomy.py``), so
both read an error the same way.
"""

from __future__ import annotations

import re
from typing import Literal

ErrorClass = Literal[
    "unknown column", "unknown table", "ambiguous column", "unknown function", "type", "syntax",
    "aggregate misuse", "timeout", "unsafe", "other",
]
ERROR_CLASSES: tuple[ErrorClass, ...] = (
    "unknown column", "unknown table", "ambiguous column", "unknown function", "type", "syntax",
    "aggregate misuse", "timeout", "unsafe", "other",
)
SCHEMA_NAME_CLASSES: frozenset[ErrorClass] = frozenset({"unknown column", "unknown table"})

# (class, pattern) in order: the first match wins. Type errors come before unknown functions, because
# PostgreSQL and DuckDB report a function applied to the wrong argument types as a missing function
# ("function extract(unknown, bigint) does not exist ... add explicit type casts").
_PATTERN_TEXT: tuple[tuple[ErrorClass, str], ...] = (
    ("timeout", r"ran longer than|statement timeout|canceling statement|interrupted"),
    ("unsafe", r"read-only mode refused|generated sql may only read|only queries are run|is not allowed"
               r"|expected exactly one statement"),
    ("ambiguous column", r"ambiguous"),
    ("type", r"explicit type cast|argument types|datatype mismatch|invalid input syntax for type"
             r"|operator does not exist|conversion error|cannot (?:be )?cast|could not convert"
             r"|type mismatch|cannot compare"),
    ("unknown column", r"no such column|column \S+ does not exist|referenced column .* not found"
                       r"|does not have a column named"
                       r"|invalid identifier|column .* not found|missing from-clause entry"
                       r"|values of .* do not have a column"),
    ("unknown table", r"no such table|relation \S+ does not exist|table with name .* does not exist"
                      r"|table .* does not exist|catalog error: table"),
    ("unknown function", r"no such function|function \S+ does not exist|function with name .* does not exist"
                         r"|unknown function"),
    ("aggregate misuse", r"misuse of (?:aggregate|window)|must appear in the group by|aggregate function"
                         r"|group by clause"),
    ("syntax", r"syntax error|incomplete input|unrecognized token|parser error|could not parse"
               r"|unparseable|unterminated"),
)
_PATTERNS: tuple[tuple[ErrorClass, re.Pattern[str]], ...] = tuple(
    (name, re.compile(pattern, re.IGNORECASE)) for name, pattern in _PATTERN_TEXT
)


# Refusals of the safety layers that are really mistakes: SQL the statement guard cannot parse, and a
# function the engine's catalog does not have (the function allowlist refuses it before the engine would).
_MISTAKEN_REFUSALS: tuple[tuple[ErrorClass, re.Pattern[str]], ...] = (
    ("syntax", re.compile(r"could not parse", re.IGNORECASE)),
    ("unknown function", re.compile(r"not a function this database knows", re.IGNORECASE)),
)


def error_class(status: str, error: str | None) -> ErrorClass:
    """The kind of one failing candidate, from its status and its error text."""
    text = error or ""
    if status == "timeout":
        return "timeout"
    if status == "unsafe":
        return next((name for name, pattern in _MISTAKEN_REFUSALS if pattern.search(text)), "unsafe")
    return next((name for name, pattern in _PATTERNS if pattern.search(text)), "other")


# The missing name in a schema-name error, per engine: (kind, pattern with the name in group 1). A name may
# be qualified ("T1.genre", "main.sponsors") and quoted as the engine quotes it.
_PART = r"""(?:"[^"]+"|'[^']+'|`[^`]+`|[\w$]+)"""
_NAME = rf"({_PART}(?:\.{_PART})*)"
NameKind = Literal["table", "column"]
_MISSING_TEXT: tuple[tuple[NameKind, str], ...] = (
    ("column", rf"no such column: {_NAME}"),  # SQLite
    ("table", rf"no such table: {_NAME}"),
    ("column", rf"referenced column {_NAME} not found"),  # DuckDB
    ("column", rf"does not have a column named {_NAME}"),
    ("table", rf"table with name {_NAME} does not exist"),
    ("column", rf"column {_NAME} does not exist"),  # PostgreSQL
    ("table", rf"relation {_NAME} does not exist"),
    ("column", rf"invalid identifier {_NAME}"),  # Snowflake
    ("table", rf"object {_NAME} does not exist"),
)
_MISSING: tuple[tuple[NameKind, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(pattern, re.IGNORECASE)) for kind, pattern in _MISSING_TEXT
)


def missing_name(error: str | None) -> tuple[NameKind, str] | None:
    """(kind, name) of the table or column a schema-name error says the database does not have: the last part
    of a qualified name, unquoted. None when the error names none (or names an alias: "missing FROM-clause
    entry", "referenced table not found" are mistakes of the query's own aliases, not missing names)."""
    for kind, pattern in _MISSING:
        found = pattern.search(error or "")
        if found:
            # the last part; engines quote a whole qualified name too ('T1.GENRE', "public.sponsors")
            last = re.findall(_PART, found.group(1))[-1].strip("\"'`").rsplit(".", 1)[-1]
            return (kind, last) if last else None
    return None


# The statement guard's refusal of a statement that is not a query (``safety.check_query``): its keyword.
_NOT_A_QUERY = re.compile(r"only queries are run; this is an? (\w+) statement", re.IGNORECASE)
DATA_CHANGES = frozenset({"INSERT", "UPDATE", "DELETE", "MERGE", "REPLACE", "CREATE", "DROP", "ALTER",
                          "TRUNCATETABLE", "COPY"})


def data_change(status: str, error: str | None) -> str | None:
    """The keyword (``DELETE``) of a candidate the statement guard refused because it changes data or
    schema, or None."""
    found = _NOT_A_QUERY.search(error or "") if status == "unsafe" else None
    keyword = found.group(1).upper() if found else None
    return keyword if keyword in DATA_CHANGES else None
