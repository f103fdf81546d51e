"""Which nodes of a query hold dates: the schema column a column reference reads, whether a node's value
is a date (the rules of ``pvsql`` and the vote's doubts both read it), and a whole amount of time written as text
or as an interval (the rules and the schema repair read it)."""

from __future__ import annotations

import re
from collections.abc import Callable

from sqlglot import exp

from ...db.schema import Column, Table
from .catalog import Catalog
from .facts import date_like
from .frames import column_kind

ColumnOf = Callable[[exp.Column], Column | None]
_CLOCK = (exp.CurrentDate, exp.CurrentTimestamp, exp.CurrentTime, exp.CurrentDatetime)
_AMOUNT = re.compile(r"\s*([+-])?\s*(\d+)\s*(day|week|month|year)s?\s*", re.IGNORECASE)
_WEEK_DAYS = 7


def column_resolver(tree: exp.Expr, catalog: Catalog) -> ColumnOf:
    """The schema column a column reference reads: in the table its qualifier names, else in the one table the
    query reads that has it (None when none or several do)."""
    tables: dict[str, Table] = {}
    for node in tree.find_all(exp.Table):
        if (table := catalog.table(node.name)) is not None:
            tables[node.alias_or_name.lower()] = table
            tables.setdefault(node.name.lower(), table)
    every = list({id(t): t for t in tables.values()}.values())

    def column_of(node: exp.Column) -> Column | None:
        holders = ([tables[node.table.lower()]] if node.table.lower() in tables else []) if node.table else every
        ident = node.this if isinstance(node.this, exp.Identifier) else node.name
        found = [c for t in holders if (c := catalog.column(t, ident)) is not None]
        return found[0] if len(found) == 1 else None

    return column_of


def is_date_valued(node: exp.Expr, column_of: ColumnOf) -> bool:
    """A date column (by its type, or text whose sampled values are all dates), its MIN or MAX, a date function,
    or a date literal."""
    node = node.unnest()
    if isinstance(node, (exp.Max, exp.Min)):
        return is_date_valued(node.this, column_of)
    if isinstance(node, (exp.Date, exp.TsOrDsToDate, exp.CurrentDate)):
        return True
    if isinstance(node, exp.Literal) and node.is_string:
        return date_like(node.this) is not None
    if isinstance(node, exp.Column) and (column := column_of(node)) is not None:
        kind = column_kind(column.type)
        return kind in ("date", "timestamp") or (kind in ("text", "any") and bool(column.samples)
                                                 and all(date_like(v) for v in column.samples))
    return False


def without_conversions(node: exp.Expr) -> exp.Expr:
    """The value under the parser's own conversions and under a date written out as a date: ``STRFTIME(f, d)``
    reads ``d`` as a timestamp, and ``STRFTIME('%Y-%m-%d', d)`` of a date is that date."""
    while True:
        if isinstance(node, (exp.TsOrDsToTimestamp, exp.TsOrDsToDate, exp.Cast)) and node.this is not None:
            node = node.this
        elif (isinstance(node, exp.TimeToStr) and isinstance(fmt := node.args.get("format"), exp.Literal)
              and fmt.name == "%Y-%m-%d"):
            node = node.this
        else:
            return node


def reads_today(node: exp.Expr) -> bool:
    """Whether ``node`` reads today's date anywhere: ``CURRENT_DATE``, ``NOW()``, ``'now'`` (``DATE('now')``)."""
    return any(isinstance(inner, _CLOCK) or (isinstance(inner, exp.Literal) and inner.is_string
                                             and inner.name.strip().lower() == "now") for inner in node.walk())


def time_amount(text: str) -> tuple[int, str] | None:
    """(the signed count, ``day``, ``month`` or ``year``) of a whole amount of time written as text: ``'+30 days'``,
    ``'-1 year'``, ``'2 weeks'`` (14 days); None for anything else (``'1.5 days'``, ``'3 hours'``)."""
    match = _AMOUNT.fullmatch(text)
    if match is None:
        return None
    count, unit = int(match.group(2)) * (-1 if match.group(1) == "-" else 1), match.group(3).lower()
    return (count * _WEEK_DAYS, "day") if unit == "week" else (count, unit)


def interval_amount(interval: exp.Interval) -> tuple[int, str] | None:
    """``time_amount`` of ``INTERVAL 5 DAY``, ``INTERVAL '5' DAY``, ``INTERVAL '2 weeks'``."""
    value, unit = interval.this, interval.args.get("unit")
    if not isinstance(value, exp.Literal):
        return None
    return time_amount(value.name if unit is None else f"{value.name} {unit.name}")
