"""Changes between periods: the difference over the base, and the base's own period."""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from ...repair import date_part
from .tree import (
    Env,
    Finding,
    divided_value,
    is_number,
    outside_subqueries,
    render,
    select_outputs,
    sum_condition,
    top_divisions,
    uncast,
    unparen,
    where_conjuncts,
)
from .words import Rules


def growth(tree: exp.Expr, rules: Rules, env: Env) -> list[Finding]:
    """A percentage change computed as the new value over the base (``new * 100 / base``, no subtraction
    anywhere in the output): the difference over the base instead."""
    if not rules.growth:
        return []
    found = []
    for output in select_outputs(tree):
        divisions = top_divisions(output)
        if len(divisions) != 1 or next(outside_subqueries(output, exp.Sub), None) is not None:
            continue
        new, base = divided_value(divisions[0].this), divided_value(divisions[0].expression)
        if isinstance(new, exp.Literal) or render(new, env) == render(base, env):
            continue
        before = render(new, env)

        def build(new: exp.Expr = new, base: exp.Expr = base) -> exp.Expr:
            return exp.paren(exp.Sub(this=new.copy(), expression=base.copy()))

        def apply(new: exp.Expr = new, build: Callable[[], exp.Expr] = build) -> None:
            new.replace(build())
        found.append(Finding(f"the question asks for a change, but {render(output, env)} divides the new value "
                             "by the base without subtracting the base",
                             f"{before} -> {render(build(), env)} (a change is the difference over the base)",
                             apply))
    return found


def _year_condition(condition: exp.Expr, year: str) -> bool:
    """Whether ``condition`` holds a date's year equal to ``year`` (``STRFTIME('%Y', d) = '2024'``,
    ``EXTRACT(YEAR FROM d) = 2024``)."""
    condition = unparen(condition)
    if not isinstance(condition, exp.EQ):
        return False
    for part, value in ((condition.this, condition.expression), (condition.expression, condition.this)):
        found = date_part(uncast(part))
        value = uncast(value)
        if found is not None and found[0] == "YEAR" and isinstance(value, exp.Literal) and value.name == year:
            return True
    return False


def _total_of(case: exp.Expr, base: exp.Expr, env: Env) -> bool:
    """Whether ``base`` totals over every period what ``case`` (``CASE WHEN year = Y THEN v ELSE 0 END``) takes
    for one: ``SUM(v)``, or for a count of the period's rows (``THEN 1``) the count of every row."""
    taken = unparen(case.args["ifs"][0].args["true"])
    if isinstance(base, exp.Sum):
        return base.find(exp.Case) is None and render(taken, env) == render(base.this, env)
    counted = unparen(base.this) if isinstance(base, exp.Count) else None
    return isinstance(counted, (exp.Star, exp.Literal)) and is_number(taken, 1)


def growth_base(tree: exp.Expr, rules: Rules, env: Env) -> list[Finding]:
    """A change "from X to Y" computed over a base that is the total of every period (``SUM(CASE WHEN year = Y
    THEN v ELSE 0 END) / SUM(v)``, or ``COUNT(*)`` for a count of Y's rows): the base becomes X's value (the same
    CASE with X's year)."""
    if not (rules.growth and rules.periods) or not isinstance(tree, exp.Select) or tree.args.get("group"):
        return []
    base_year, new_year = rules.periods
    if any(_year_condition(c, new_year) or _year_condition(c, base_year) for c in where_conjuncts(tree)):
        return []
    found = []
    for output in select_outputs(tree):
        divisions = top_divisions(output)
        if len(divisions) != 1:
            continue
        base = divided_value(divisions[0].expression)
        if not isinstance(base, (exp.Sum, exp.Count)):
            continue
        new = [s for s in outside_subqueries(output, exp.Sum) if isinstance(s, exp.Sum) and sum_condition(s) is not None
               and _year_condition(sum_condition(s), new_year)]  # type: ignore[arg-type]
        if len(new) != 1 or render(divided_value(new[0]), env) == render(base, env):
            continue
        if not _total_of(unparen(new[0].this), base, env):
            continue
        rebuilt = new[0].copy()
        for literal in rebuilt.find_all(exp.Literal):
            if literal.name == new_year and literal.find_ancestor(exp.EQ) is not None:
                literal.replace(exp.Literal(this=base_year, is_string=literal.is_string))
        totals = [s for s in outside_subqueries(output, type(base)) if render(s, env) == render(base, env)]
        before = render(base, env)

        def apply(totals: list[exp.Expr] = totals, rebuilt: exp.Expr = rebuilt) -> None:
            for total in totals:
                total.replace(rebuilt.copy())
        found.append(Finding(f"the change from {base_year} to {new_year} divides by {before}, the total of every "
                             "period", f"{before} -> {render(rebuilt, env)} ({base_year}'s value is the base)",
                             apply))
    return found
