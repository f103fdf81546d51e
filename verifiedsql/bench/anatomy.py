"""Failure anatomy of a run: why each question ended as it did, and why each failing candidate failed.

Two classifications over the harness's per-question records, both computed from what the records
already hold (no model, no database):

* ``outcome_of``: a question is *right*; *majority wrong* (the answer is wrong although a correct
  candidate was in the pool: a selection failure); *pool all wrong* (candidates ran, none was right: a
  generation failure); or *no candidate ran* (every candidate failed on the database or a guard).
* ``error_class``: the kind of a failing candidate's error, read from the engine's own message on
  SQLite, DuckDB, PostgreSQL and Snowflake (fakesnow), so that the mechanical mistakes (a column on the
  wrong table, a function of another dialect) can be told from the rest.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any, Literal

Outcome = Literal["right", "majority wrong", "pool all wrong", "no candidate ran"]
OUTCOMES: tuple[Outcome, ...] = ("right", "majority wrong", "pool all wrong", "no candidate ran")
ErrorClass = Literal[
    "unknown column", "unknown table", "ambiguous column", "unknown function", "type", "syntax",
    "aggregate misuse", "timeout", "unsafe", "other",
]
ERROR_CLASSES: tuple[ErrorClass, ...] = (
    "unknown column", "unknown table", "ambiguous column", "unknown function", "type", "syntax",
    "aggregate misuse", "timeout", "unsafe", "other",
)

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
    """The kind of one failing candidate, from its status and the error text the harness recorded."""
    text = error or ""
    if status == "timeout":
        return "timeout"
    if status == "unsafe":
        return next((name for name, pattern in _MISTAKEN_REFUSALS if pattern.search(text)), "unsafe")
    return next((name for name, pattern in _PATTERNS if pattern.search(text)), "other")


def outcome_of(record: dict[str, Any]) -> Outcome:
    """The outcome class of one question's record (``llm_error`` records have none: leave them out)."""
    if record["correct"]:
        return "right"
    candidates = record.get("candidates") or []
    if not any(c["status"] == "ok" for c in candidates):
        return "no candidate ran"
    if any(c.get("correct") for c in candidates):
        return "majority wrong"
    return "pool all wrong"


@dataclass
class Anatomy:
    """One strategy's outcome classes (questions) and error classes (failing candidates)."""

    strategy: str
    questions: int
    outcomes: dict[str, int]
    candidates: int
    failed_candidates: int
    errors: dict[str, int]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def anatomy(records: list[dict[str, Any]], strategy: str) -> Anatomy:
    """The anatomy of ``strategy`` over its records; model failures (``llm_error``) are left out."""
    rows = [r for r in records if r["strategy"] == strategy and r["status"] != "llm_error"]
    outcomes = Counter(outcome_of(r) for r in rows)
    candidates = [c for r in rows for c in r.get("candidates") or []]
    failed = [c for c in candidates if c["status"] != "ok"]
    errors = Counter(error_class(c["status"], c.get("error")) for c in failed)
    return Anatomy(
        strategy=strategy,
        questions=len(rows),
        outcomes={name: outcomes[name] for name in OUTCOMES},
        candidates=len(candidates),
        failed_candidates=len(failed),
        errors={name: errors[name] for name in ERROR_CLASSES if errors[name]},
    )
