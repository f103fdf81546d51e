"""Keeping untyped exceptions inside verifiedsql's typed errors.

Model-written text is parsed by recursive parsers (sqlglot for SQL, Python's ``ast`` for VET steps,
``json`` for replies), and a reply nested a few dozen levels deep makes them raise ``RecursionError``.
Two tools, used where each kind of work is done:

* ``sql_size_problem`` bounds how long SQL may be (``MAX_SQL_CHARS``) and ``sql_nesting_problem`` how deeply
  it may nest brackets (``MAX_SQL_NESTING``), so the statement guard refuses such SQL before any parser,
  optimizer or engine reads or recurses into it (the parsers, the repairs and sqlglot's scopes take time
  that grows faster than the text on some shapes, such as a long ``OR`` chain);
* ``as_query_error`` turns any exception that is not a ``VerifiedSQLError`` raised while a generated query
  is checked, run or fetched (a ``RecursionError``, a driver's ``OverflowError`` on an interval it cannot
  convert, ...) into ``QueryError``, so the candidate is dropped with its reason in the report.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from ..errors import QueryError, VerifiedSQLError
from .redact import ENGINE_ERROR_CHARS, engine_error
from .sqlshape import skip_comment, skip_quoted

MAX_SQL_NESTING = 24  # brackets inside brackets; generated SQL rarely goes past 6
MAX_SQL_CHARS = 64_000  # characters of one generated statement; generated SQL rarely goes past 5,000
_OPENERS, _CLOSERS = "([{", ")]}"


def nesting_depth(text: str) -> int:
    """The deepest bracket nesting of ``text`` outside quoted strings, quoted identifiers and comments
    (one linear pass)."""
    depth = deepest = 0
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in "'\"`":
            i = skip_quoted(text, i, ch)
            continue
        if (after := skip_comment(text, i)) is not None:
            i = after
            continue
        if ch in _OPENERS:
            depth += 1
            deepest = max(deepest, depth)
        elif ch in _CLOSERS and depth:
            depth -= 1
        i += 1
    return deepest


def sql_size_problem(sql: str) -> str | None:
    """Why ``sql`` is too long to be checked, or None."""
    if len(sql) <= MAX_SQL_CHARS:
        return None
    return (f"the SQL is {len(sql):,} characters long, more than the {MAX_SQL_CHARS:,} the statement guard "
            "checks; write a shorter query")


def sql_nesting_problem(sql: str) -> str | None:
    """Why ``sql`` nests too deeply to be checked, or None."""
    depth = nesting_depth(sql)
    if depth <= MAX_SQL_NESTING:
        return None
    return (f"the SQL nests brackets {depth} levels deep, more than the {MAX_SQL_NESTING} the statement guard "
            "checks; write it with fewer nested parentheses (a CTE per level, for example)")


@contextmanager
def as_query_error(what: str) -> Iterator[None]:
    """Re-raise any exception of the block that is not a ``VerifiedSQLError`` as ``QueryError``."""
    try:
        yield
    except VerifiedSQLError:
        raise
    except RecursionError as error:
        raise QueryError(f"{what} failed: the query is nested too deeply to handle; write it flatter.") from error
    except Exception as error:  # noqa: BLE001 - any other stray error is still a failed query, not a crash
        detail = engine_error(str(error)[:ENGINE_ERROR_CHARS].strip())[:300]
        raise QueryError(f"{what} failed: {type(error).__name__}: {detail}") from error
