"""What a node is an operand of, seen through parentheses and casts: the operation and the operand on its other
side (``d - a`` in ``CAST(d - a AS INT) > 30``: the comparison and ``30``). The rules of ``pvsql`` and the vote's
doubts both read it."""

from __future__ import annotations

from sqlglot import exp

_WRAPPERS = (exp.Paren, exp.Cast, exp.TryCast)


def operand_of(node: exp.Expr, kinds: type[exp.Expr] | tuple[type[exp.Expr], ...]) -> tuple[exp.Expr, exp.Expr] | None:
    """(the operation, the other operand without its parentheses) where ``node``, through parentheses and casts,
    is one side of a binary operation of ``kinds``; None otherwise."""
    child, parent = node, node.parent
    while isinstance(parent, _WRAPPERS):
        child, parent = parent, parent.parent
    if not isinstance(parent, kinds) or not isinstance(parent, exp.Binary):
        return None
    other = parent.expression if parent.this is child else parent.this
    while isinstance(other, exp.Paren):
        other = other.this
    return parent, other
