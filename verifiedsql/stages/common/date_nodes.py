"""Which nodes of a query hold dates: the schema column a column reference reads, and whether a node's value
is a date (the rules of ``pvsql`` and the vote's doubts both read it)."""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from ...db.schema import Column, Table
from .catalog import Catalog
from .facts import date_like
from .frames import column_kind

ColumnOf = Callable[[exp.Column], Column | None]


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
