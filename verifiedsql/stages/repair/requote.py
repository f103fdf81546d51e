"""Quotes that the SQL leaves out where the schema's names need them (one of the repairs in this package).

A model often writes a name with spaces or other signs as bare words (``FROM Customer Info``, ``SUM(Preis
(EUR))``), a table that is a reserved word unquoted (``FROM order``), or a name in MySQL's backticks where the
engine does not take them. Such SQL does not parse, or parses as something else (``SELECT Full Name`` selects
``Full`` as ``Name``). ``requote`` finds these names in the SQL's tokens and writes each as the engine's quoted
identifier of the schema's name. String literals and names that are quoted already are left as written.
Nothing here calls the model or the database.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator
from functools import cache

import sqlglot
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import SqlglotError
from sqlglot.tokens import Token, TokenType

from ...db.schema import reserved_words
from ..common.catalog import Catalog

_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_QUOTES = "'\"`["  # how a string literal or a quoted name starts
_BEFORE_TABLE = frozenset({TokenType.FROM, TokenType.JOIN})
_COMPARISONS = frozenset({TokenType.EQ, TokenType.NEQ, TokenType.GT, TokenType.GTE, TokenType.LT, TokenType.LTE,
                          TokenType.LIKE, TokenType.ILIKE, TokenType.IN, TokenType.IS, TokenType.BETWEEN})


def requote(catalog: Catalog, dialect: str, sql: str) -> tuple[str, tuple[str, ...]] | None:
    """``sql`` with the schema's names that need quotes quoted, and what changed; None when none is left bare
    (or the SQL cannot be tokenized)."""
    try:
        tokens = Dialect.get_or_raise(dialect).tokenize(sql)
    except (SqlglotError, ValueError):
        return None
    spans = sorted(_spans(catalog, sql, tokens), key=lambda span: span[0])
    if not spans:
        return None
    parts: list[str] = []
    fixes: list[str] = []
    end = 0
    for start, stop, name in spans:
        quoted = catalog.ident(name).sql(dialect=dialect)
        parts += [sql[end:start], quoted]
        fixes.append(f"{sql[start:stop]} -> {quoted} (the schema's name, quoted where it must be)")
        end = stop
    parts.append(sql[end:])
    return "".join(parts), tuple(dict.fromkeys(fixes))


def _spans(catalog: Catalog, sql: str, tokens: list[Token]) -> Iterator[tuple[int, int, str]]:
    """(start, end, schema name) of each bare occurrence to quote, none overlapping (an earlier finder's
    occurrence wins). ``taken`` holds the kept spans in order, so each check is a binary search."""
    taken: list[tuple[int, int]] = []
    names = _names(catalog)
    found = (*_backticked(names, sql, tokens), *_multi_token(names, sql, tokens), *_reserved(catalog, tokens))
    for start, stop, name in found:
        at = bisect.bisect_left(taken, (start, stop))
        if (at == 0 or taken[at - 1][1] <= start) and (at == len(taken) or taken[at][0] >= stop):
            taken.insert(at, (start, stop))
            yield start, stop, name


def _backticked(names: list[str], sql: str, tokens: list[Token]) -> Iterator[tuple[int, int, str]]:
    """A schema name in MySQL's backticks where the dialect quotes names otherwise (its tokenizer leaves each
    backtick an unknown sign)."""
    ticks = [token for token in tokens if token.token_type == TokenType.UNKNOWN and token.text == "`"]
    by_lower = {name.lower(): name for name in names}
    for opening, closing in zip(ticks[::2], ticks[1::2], strict=False):
        name = by_lower.get(sql[opening.end + 1:closing.start].lower())
        if name is not None:
            yield opening.start, closing.end + 1, name


def _names(catalog: Catalog) -> list[str]:
    """The schema's table and column names, longest first."""
    names = {catalog.bare(table) for table in catalog.schema.tables}
    names |= {column.name for table in catalog.schema.tables for column in table.columns}
    return sorted(names, key=lambda name: (-len(name), name))


def _multi_token(names: list[str], sql: str, tokens: list[Token]) -> Iterator[tuple[int, int, str]]:
    """Names that the SQL writes as two or more bare tokens (``Customer Info``, ``Preis (EUR)``,
    ``18_49_Rating_Share``), matched in any case, with any whitespace where the name has a space."""
    starts = {token.start: index for index, token in enumerate(tokens)}
    ends = {token.end + 1: index for index, token in enumerate(tokens)}
    for name in names:
        if _PLAIN.fullmatch(name) or _reads_as_function(name):
            continue
        pattern = r"\s+".join(re.escape(word) for word in name.split())
        for match in re.finditer(pattern, sql, re.IGNORECASE):
            first, last = starts.get(match.start()), ends.get(match.end())
            if first is None or last is None or last == first:
                continue  # not on token boundaries, or a single token (a name the engine reads as written)
            if any(sql[token.start] in _QUOTES for token in tokens[first:last + 1]):
                continue  # part of a string literal or a quoted name
            yield match.start(), match.end(), name


def _reserved(catalog: Catalog, tokens: list[Token]) -> Iterator[tuple[int, int, str]]:
    """A table named by a reserved word, bare after FROM or JOIN or before a dot (``FROM order``,
    ``order.id``), and a column named by one, bare after a dot or before a comparison (``o.select``,
    ``select = 'express'``)."""
    reserved = reserved_words(catalog.engine)
    columns = {column.name.lower(): column.name for table in catalog.schema.tables for column in table.columns}
    for index, token in enumerate(tokens):
        word = token.text.lower()
        if word not in reserved or not _PLAIN.fullmatch(token.text):
            continue
        before = tokens[index - 1] if index else None
        after = tokens[index + 1] if index + 1 < len(tokens) else None
        table = catalog.table(word)
        if table is not None and ((before is not None and before.token_type in _BEFORE_TABLE)
                                  or (after is not None and after.token_type == TokenType.DOT)):
            yield token.start, token.end + 1, catalog.bare(table)
        elif word in columns and ((before is not None and before.token_type == TokenType.DOT)
                                  or (after is not None and after.token_type in _COMPARISONS)):
            yield token.start, token.end + 1, columns[word]


@cache
def _reads_as_function(name: str) -> bool:
    """Whether the name, written bare, is a call of a function SQL knows (a column named ``COUNT(*)``): such
    text in a query is that call, not the column."""
    try:
        node = sqlglot.parse_one(name)
    except (SqlglotError, ValueError):
        return False
    return isinstance(node, exp.Func) and not isinstance(node, exp.Anonymous)
