"""What the rules read on a candidate's sqlglot tree: its outputs, divisions, counts, conditions and
columns, and the ``Finding`` each rule gives."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from sqlglot import exp

from ....db.schema import Column, Schema
from ...common.catalog import Catalog
from ...common.date_nodes import ColumnOf
from ...common.date_nodes import column_resolver as resolve_columns
from ...common.frames import column_kind
from ..constraints import INT, REAL, UNKNOWN
from .words import Rules


@dataclass(frozen=True)
class Finding:
    """One rule the SQL breaks: the problem in words, and its fix (``apply`` mutates the tree; None: no fix)."""

    problem: str
    fix: str = ""
    apply: Callable[[], object] | None = None


ValueReader = Callable[[exp.Table, exp.Identifier], Sequence[object]]


@dataclass(frozen=True)
class Env:
    """The candidate's surroundings: sqlglot's dialect, the engine's profile name and the reflected schema;
    ``values`` reads a column's stored values (a bounded read of the database), where the caller can read it;
    without it a column's samples stand in."""

    dialect: str
    engine: str
    schema: Schema
    values: ValueReader | None = None

    def catalog(self) -> Catalog:
        return Catalog(self.schema, self.engine)


Rule = Callable[[exp.Expr, Rules, Env], list[Finding]]


HUNDRED = (100, 100.0)


def unparen(node: exp.Expr) -> exp.Expr:
    while isinstance(node, exp.Paren):
        node = node.this
    return node


def uncast(node: exp.Expr) -> exp.Expr:
    """``node`` without its parentheses and the casts around it."""
    node = unparen(node)
    while isinstance(node, (exp.Cast, exp.TryCast)):
        node = unparen(node.this)
    return node


def select_outputs(tree: exp.Expr) -> list[exp.Expr]:
    """The outermost SELECT's output expressions (none for a set operation)."""
    return [e.unalias() for e in tree.expressions] if isinstance(tree, exp.Select) else []


def outside_subqueries(root: exp.Expr, kind: type[exp.Expr]) -> Iterator[exp.Expr]:
    """The ``kind`` nodes of ``root`` outside its subqueries."""
    for node in root.find_all(kind):
        if node.find_ancestor(exp.Select, exp.SetOperation) is root.find_ancestor(exp.Select, exp.SetOperation) \
                or root is node:
            yield node


def is_hundred(node: exp.Expr) -> bool:
    node = unparen(node)
    return isinstance(node, exp.Literal) and not node.is_string and node.to_py() in HUNDRED


def times_hundreds(root: exp.Expr) -> list[tuple[exp.Mul, exp.Expr]]:
    """Each multiplication by 100 (the Mul and its literal) in ``root``."""
    return [(mul, side) for mul in root.find_all(exp.Mul) for side in (mul.left, mul.right) if is_hundred(side)]


def scales_a_division(mul: exp.Mul) -> bool:
    """Whether ``mul`` multiplies a division (``(a / b) * 100``) or a division's numerator (``a * 100 / b``)."""
    if mul.find(exp.Div) is not None:
        return True
    child: exp.Expr = mul
    for parent in ancestors(mul):
        if isinstance(parent, exp.Div) and parent.this is child:
            return True
        if isinstance(parent, (exp.Select, exp.Subquery)):
            return False
        child = parent
    return False


def ancestors(node: exp.Expr) -> Iterator[exp.Expr]:
    parent = node.parent
    while parent is not None:
        yield parent
        parent = parent.parent


def top_divisions(output: exp.Expr) -> list[exp.Div]:
    """The divisions of one output expression (outside its subqueries) that no other division holds."""
    def held(division: exp.Expr) -> bool:
        node = division.parent
        while node is not None and node is not output.parent:
            if isinstance(node, exp.Div):
                return True
            node = node.parent
        return False

    return [d for d in outside_subqueries(output, exp.Div) if isinstance(d, exp.Div) and not held(d)]


def is_flag_average(node: exp.Expr) -> bool:
    """``AVG(CASE WHEN ... THEN 1 ELSE 0 END)``: a fraction of rows."""
    if not isinstance(node, exp.Avg) or not isinstance(case := unparen(node.this), exp.Case):
        return False
    values = [case.args.get("default"), *(w.args.get("true") for w in case.args.get("ifs", []))]
    return all(isinstance(v, exp.Literal) and not v.is_string and v.to_py() in (0, 1) for v in values if v is not None)


def render(node: exp.Expr, env: Env) -> str:
    return node.sql(dialect=env.dialect)


def replaced(problem: str, node: exp.Expr, new: exp.Expr, why: str, env: Env) -> Finding:
    """A finding whose fix puts a copy of ``new`` in ``node``'s place, told as "node -> new (why)"."""
    return Finding(problem, f"{render(node, env)} -> {render(new, env)} ({why})", lambda: node.replace(new.copy()))


def compared_elsewhere(tree: exp.Expr, comparison: exp.Expr, node: exp.Expr, env: Env) -> bool:
    """Whether ``tree`` compares ``node`` (the same SQL, parentheses and casts aside) in any comparison but
    ``comparison``: an order, an equality, a BETWEEN or a LIKE."""
    key = render(uncast(node), env)
    return any(other is not comparison and any(render(uncast(side), env) == key for side in other.iter_expressions())
               for other in tree.find_all(exp.GT, exp.GTE, exp.LT, exp.LTE, exp.EQ, exp.Between, exp.Like))


def reads_words(tree: exp.Expr, words: set[str]) -> bool:
    """Whether the SQL reads a column whose name holds one of ``words`` (``pct_late``: it stores percentages)."""
    return any(set(re.split(r"[^a-z0-9]+", c.name.lower())) & words for c in tree.find_all(exp.Column))


def divided_value(node: exp.Expr) -> exp.Expr:
    """The value divided, without the casts and factors of 1 or 100 that only change its type or scale."""
    node = unparen(node)
    while True:
        if isinstance(node, (exp.Cast, exp.TryCast)):
            node = unparen(node.this)
        elif isinstance(node, exp.Mul) and isinstance(unparen(node.left), exp.Literal):
            node = unparen(node.right)
        elif isinstance(node, exp.Mul) and isinstance(unparen(node.right), exp.Literal):
            node = unparen(node.left)
        else:
            return node


def count_condition(node: exp.Expr) -> exp.Expr | None:
    """The condition of a count of the rows that meet it (``SUM(CASE WHEN c THEN 1 ELSE 0 END)``,
    ``COUNT(CASE WHEN c THEN x END)``, under casts and factors), else None."""
    node = divided_value(node)
    if not isinstance(node, (exp.Sum, exp.Count)) or not isinstance(case := unparen(node.this), exp.Case):
        return None
    ifs = case.args.get("ifs") or []
    if len(ifs) != 1:
        return None
    then, default = unparen(ifs[0].args["true"]), case.args.get("default")
    if isinstance(node, exp.Sum):
        counts = is_number(then, 1) and (default is None or is_number(default, 0))
    else:
        counts = not isinstance(then, exp.Null) and (default is None or isinstance(unparen(default), exp.Null))
    return ifs[0].this if counts else None


def is_number(node: exp.Expr, value: int) -> bool:
    node = unparen(node)
    return isinstance(node, exp.Literal) and not node.is_string and node.to_py() == value


def plain_count(node: exp.Expr) -> exp.Count | None:
    """A count with no condition in it (``COUNT(*)``, ``COUNT(x)``, ``COUNT(DISTINCT x)``), under casts and
    factors, else None."""
    node = divided_value(node)
    return node if isinstance(node, exp.Count) and node.find(exp.Case) is None else None


def counts_every_row(count: exp.Count, column_of: Callable[[exp.Column], Column | None]) -> bool:
    """Whether ``count`` (of a one-table query) is the number of its rows: ``COUNT(*)``, a count of a literal
    or of a column that holds no NULL, or a distinct count of the primary key."""
    argument = unparen(count.this)
    distinct = isinstance(argument, exp.Distinct)
    if distinct:
        arguments = argument.expressions
        if len(arguments) != 1:
            return False
        argument = unparen(arguments[0])
    if isinstance(argument, (exp.Star, exp.Literal)):
        return not distinct
    if not isinstance(argument, exp.Column) or (column := column_of(argument)) is None:
        return False
    return column.primary_key if distinct else column.primary_key or not column.nullable


def flag_count(condition: exp.Expr) -> exp.Expr:
    """``SUM(CASE WHEN condition THEN 1 ELSE 0 END)``."""
    return exp.Sum(this=exp.Case(ifs=[exp.If(this=condition.copy(), true=exp.Literal.number(1))],
                                 default=exp.Literal.number(0)))


def where_conjuncts(select: exp.Select) -> list[exp.Expr]:
    where = select.args.get("where")
    if where is None:
        return []
    condition = unparen(where.this)
    return [unparen(c) for c in condition.flatten()] if isinstance(condition, exp.And) else [condition]


def drop_conjuncts(select: exp.Select, dropped: list[exp.Expr]) -> None:
    """Remove ``dropped`` (conjuncts of its WHERE) from ``select``: the WHERE goes when none is left."""
    kept = [c for c in where_conjuncts(select) if not any(c is d for d in dropped)]
    if not kept:
        select.set("where", None)
        return
    condition = kept[0].copy()
    for other in kept[1:]:
        condition = exp.And(this=condition, expression=other.copy())
    select.set("where", exp.Where(this=condition))


def text_equality(condition: exp.Expr) -> tuple[exp.Column, str] | None:
    """``column = 'text'`` (either way round): the column and the text."""
    condition = unparen(condition)
    if not isinstance(condition, exp.EQ):
        return None
    for column, value in ((condition.this, condition.expression), (condition.expression, condition.this)):
        column, value = unparen(column), unparen(value)
        if isinstance(column, exp.Column) and isinstance(value, exp.Literal) and value.is_string:
            return column, value.this
    return None


def sum_condition(node: exp.Expr) -> exp.Expr | None:
    """The condition of ``SUM(CASE WHEN c THEN x ELSE 0 END)`` (a sum of the rows that meet it), else None."""
    node = divided_value(node)
    if not isinstance(node, exp.Sum) or not isinstance(case := unparen(node.this), exp.Case):
        return None
    ifs = case.args.get("ifs") or []
    default = case.args.get("default")
    return ifs[0].this if len(ifs) == 1 and (default is None or is_number(default, 0)) else None


def column_resolver(tree: exp.Expr, env: Env) -> ColumnOf:
    """The schema column a column reference reads (``common.date_nodes.column_resolver`` in the env's catalog)."""
    return resolve_columns(tree, env.catalog())


def column_typer(tree: exp.Expr, env: Env) -> Callable[[exp.Column], str]:
    """A column's numeric type (INT, REAL or UNKNOWN) by its reflected type."""
    column_of = column_resolver(tree, env)

    def column_type(node: exp.Column) -> str:
        column = column_of(node)
        kind = column_kind(column.type) if column is not None else "any"
        return INT if kind in ("int", "bool") else REAL if kind == "float" else UNKNOWN

    return column_type


def noun_column(tree: exp.Select, noun: str, env: Env) -> exp.Column | None:
    """The one column of the tables in the outermost FROM and JOINs named for ``noun`` (``customers``:
    ``customer_id``, ``customerid``, ``customer``, ``customers``), qualified when the query joins."""
    stem = noun[:-3] + "y" if noun.endswith("ies") else noun[:-1] if noun.endswith("s") else noun
    names = {noun, stem, f"{stem}_id", f"{stem}id"}
    catalog = env.catalog()
    clauses = [tree.args.get("from_"), *(tree.args.get("joins") or [])]
    read = [node for clause in clauses if clause is not None and isinstance(node := clause.this, exp.Table)]
    hits = [(node, column) for node in read if (table := catalog.table(node.name)) is not None
            for column in table.columns if column.name.lower() in names]
    if len(hits) != 1:
        return None
    node, column = hits[0]
    qualifier = node.alias_or_name if len(clauses) > 1 else ""
    return exp.column(catalog.ident(column.name), table=exp.to_identifier(qualifier) if qualifier else None)
