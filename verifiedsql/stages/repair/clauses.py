"""Clauses: an aggregate in WHERE moved to HAVING, and selected columns that are not grouped added to the
GROUP BY where the engine refuses them."""

from __future__ import annotations

import re

from sqlglot import exp
from sqlglot.optimizer.scope import Scope

from ..common.catalog import own_walk as _own_walk
from .problems import Option, PlannerBase, aggregates, select_aliases

# the engines' refusal of a column that is neither grouped nor aggregated (PostgreSQL, DuckDB, Snowflake)
UNGROUPED = re.compile(r"must appear in the group by clause|is not a valid group by expression", re.IGNORECASE)


class ClauseRepairs(PlannerBase):
    """Aggregates in WHERE and ungrouped columns."""

    def _aggregate_in_where(self, scope: Scope) -> Option | None:
        """A WHERE condition with an aggregate of its own query (``WHERE COUNT(*) > 2``): the conditions that
        hold one move to HAVING, grouped by the selected columns when the query has no GROUP BY."""
        select = scope.expression
        where = select.args.get("where") if isinstance(select, exp.Select) else None
        if where is None or not aggregates(where.this, select):
            return None
        if any(isinstance(e.unalias(), exp.Star) for e in select.expressions):
            return None

        def apply() -> None:
            condition = select.args["where"].this
            conditions = list(condition.flatten()) if isinstance(condition, exp.And) else [condition]
            kept = [c.copy() for c in conditions if not aggregates(c, select)]
            moved = [c.copy() for c in conditions if aggregates(c, select)]
            if having := select.args.get("having"):
                moved.insert(0, having.this.copy())
            select.set("where", exp.Where(this=exp.and_(*kept)) if kept else None)
            select.set("having", exp.Having(this=exp.and_(*moved)))
            keys = [e.unalias().copy() for e in select.expressions if not aggregates(e, select)]
            if not select.args.get("group") and keys:
                select.set("group", exp.Group(expressions=keys))
        return Option(f"{where.this.sql(dialect=self.dialect)} -> HAVING (an aggregate in WHERE)", apply, where)

    def _ungrouped(self, scope: Scope) -> Option | None:
        """The selected and ordering columns of a grouped query with an aggregate that are neither grouped nor
        inside an aggregate: they join the GROUP BY."""
        select = scope.expression
        group = select.args.get("group") if isinstance(select, exp.Select) else None
        if group is None or not group.expressions or not aggregates(select, select):
            return None  # a GROUP BY with no aggregate and a column left out is a mistake of its own
        grouped = {e.sql(dialect=self.dialect).lower() for e in group.expressions}
        aliases = {a.lower() for a in select_aliases(scope)}
        order = select.args.get("order")
        candidates = [e.unalias() for e in select.expressions]
        candidates += [o.this for o in order.expressions] if order is not None else []
        missing: dict[str, exp.Expr] = {}
        for node in candidates:
            if aggregates(node, select) or isinstance(node, exp.Star) or not any(
                    isinstance(c, exp.Column) for c in _own_walk(select, node)):
                continue
            if isinstance(node, exp.Column) and not node.table and node.name.lower() in aliases:
                continue  # an ORDER BY on a selected alias
            key = node.sql(dialect=self.dialect).lower()
            if key not in grouped:
                missing.setdefault(key, node)
        if not missing:
            return None
        added = list(missing.values())

        def apply() -> None:
            group.set("expressions", [*group.expressions, *(node.copy() for node in added)])
        shown = ", ".join(node.sql(dialect=self.dialect) for node in added)
        return Option(f"GROUP BY + {shown} (selected but not grouped)", apply, group)
