"""Spider's query hardness (easy / medium / hard / extra) computed from the gold SQL with sqlglot.

Follows ``eval_hardness`` in Spider's ``evaluation.py``: it counts, on the outermost SELECT,
component1 (WHERE, GROUP BY, ORDER BY, LIMIT, each extra FROM table, each OR, each LIKE),
component2 (nested queries: subqueries in WHERE/HAVING/ON conditions and a set operation) and
"others" (more than one aggregate, more than one SELECT column, more than one WHERE condition, more
than one GROUP BY column). Spider's aggregate count also counts NOT conditions in WHERE/HAVING and
HAVING's AND/OR connectors (its ``has_agg`` reads the first slot of a condition); that quirk is kept.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlglot
from sqlglot import exp

LEVELS = ("easy", "medium", "hard", "extra")
SET_OPERATIONS = (exp.Union, exp.Intersect, exp.Except)


@dataclass(frozen=True)
class Counts:
    component1: int
    component2: int
    others: int


def _conditions(node: exp.Expr | None) -> tuple[list[exp.Expr], int, int]:
    """Leaves of an AND/OR tree, with the number of ORs and of connectors."""
    if node is None:
        return [], 0, 0
    if isinstance(node, exp.Paren) and isinstance(node.this, exp.Connector):
        return _conditions(node.this)
    if isinstance(node, exp.Connector):
        left, ors_l, con_l = _conditions(node.this)
        right, ors_r, con_r = _conditions(node.expression)
        return left + right, ors_l + ors_r + isinstance(node, exp.Or), con_l + con_r + 1
    return [node], 0, 0


def _is_like(cond: exp.Expr) -> bool:
    inner = cond.this if isinstance(cond, exp.Not) else cond
    return isinstance(inner, (exp.Like, exp.ILike))


def _is_negated(cond: exp.Expr) -> bool:
    return isinstance(cond, exp.Not) or bool(cond.args.get("negate"))


def _nested_in(conds: list[exp.Expr]) -> int:
    """Subqueries used directly as a condition's operand (not those nested inside them)."""
    count = 0
    for cond in conds:
        for node in cond.find_all(exp.Select, exp.Union, exp.Intersect, exp.Except):
            parent = node.parent
            while parent is not None and parent is not cond and not isinstance(
                parent, (exp.Select, *SET_OPERATIONS)
            ):
                parent = parent.parent
            count += parent is cond or parent is None
    return count


def _aggregates(nodes: list[exp.Expr]) -> int:
    return sum(1 for node in nodes if node.find(exp.AggFunc) is not None)


def count_components(tree: exp.Expr) -> Counts:
    """Spider's three counts for a parsed query."""
    main = tree
    nested = 0
    if isinstance(main, SET_OPERATIONS):
        nested += 1
        while isinstance(main, SET_OPERATIONS):
            main = main.this
    while isinstance(main, exp.Subquery):
        main = main.this
    if not isinstance(main, exp.Select):
        return Counts(0, nested, 0)
    where = main.args.get("where")
    having = main.args.get("having")
    group = main.args.get("group")
    order = main.args.get("order")
    joins = main.args.get("joins") or []
    where_conds, where_ors, _ = _conditions(where.this if where else None)
    having_conds, having_ors, having_connectors = _conditions(having.this if having else None)
    on_conds = [c for join in joins for c in _conditions(join.args.get("on"))[0]]
    group_items = list(group.expressions) if group else []

    component1 = (
        bool(where) + bool(group_items) + bool(order) + (main.args.get("limit") is not None)
        + len(joins) + where_ors + having_ors
        + sum(_is_like(c) for c in where_conds + having_conds)
    )
    nested += _nested_in(where_conds + having_conds + on_conds)

    aggregates = _aggregates(list(main.expressions)) + _aggregates(group_items)
    if order:
        aggregates += _aggregates([o.this for o in order.expressions])
    aggregates += sum(_is_negated(c) for c in where_conds + having_conds) + having_connectors
    others = (
        (aggregates > 1) + (len(main.expressions) > 1) + (len(where_conds) > 1) + (len(group_items) > 1)
    )
    return Counts(component1, nested, others)


def classify(counts: Counts) -> str:
    """Spider's thresholds, verbatim."""
    c1, c2, others = counts.component1, counts.component2, counts.others
    if c1 <= 1 and others == 0 and c2 == 0:
        return "easy"
    if (others <= 2 and c1 <= 1 and c2 == 0) or (c1 <= 2 and others < 2 and c2 == 0):
        return "medium"
    if (
        (others > 2 and c1 <= 2 and c2 == 0)
        or (2 < c1 <= 3 and others <= 2 and c2 == 0)
        or (c1 <= 1 and others == 0 and c2 <= 1)
    ):
        return "hard"
    return "extra"


def hardness(sql: str, dialect: str = "sqlite") -> str:
    """The Spider hardness level of ``sql``; ``"extra"`` when sqlglot cannot parse it."""
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except sqlglot.errors.SqlglotError:
        return "extra"
    return classify(count_components(tree))
