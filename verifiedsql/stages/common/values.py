"""Bounded reads of the values stored in one column, shared by the checks that look values up (literal
checks, the scope check's word matching)."""

from __future__ import annotations

from sqlglot import exp

from ...db.schema import Column
from .frames import column_kind

SCAN_ROWS = 10_000  # rows of a table that one read scans
LOOKUP_TIMEOUT_S = 5.0  # one lookup query (also capped by statement_timeout_s and the question's time left)


def holds_text(column: Column) -> bool:
    """A text column (or one of no declared type whose samples are text)."""
    kind = column_kind(column.type)
    return kind == "text" or (kind == "any" and bool(column.samples)
                              and all(isinstance(v, str) for v in column.samples))


def unaliased(node: exp.Table, name: exp.Identifier | None = None) -> exp.Table:
    """The table ``node`` names (or the table ``name`` in the same schema), with ``node``'s schema and catalog
    qualifiers and without its alias: the FROM of a read of the table a query names."""
    bare = exp.Table(this=(node.this if name is None else name).copy())
    for part in ("db", "catalog"):
        if (qualifier := node.args.get(part)) is not None:
            bare.set(part, qualifier.copy())
    return bare


def distinct_scan(column: exp.Identifier, table: exp.Table, limit: int, where: exp.Expr | None = None) -> exp.Select:
    """``SELECT DISTINCT v FROM (SELECT column AS v FROM table LIMIT SCAN_ROWS) AS s [WHERE ...] LIMIT limit``."""
    inner = exp.select(exp.alias_(exp.column(column), "v")).from_(table.copy()).limit(SCAN_ROWS)
    scan = exp.select(exp.column("v")).distinct().from_(inner.subquery("s"))
    return (scan if where is None else scan.where(where)).limit(limit)
