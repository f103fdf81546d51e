"""The answer's form: no integer division in a fraction, distinct counts, one value where one is asked, rounding,
and letter case."""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from ..constraints import INT, numeric_type
from .tree import (
    Env,
    Finding,
    column_typer,
    noun_column,
    outside_subqueries,
    render,
    select_outputs,
    uncast,
    unparen,
    where_conjuncts,
)
from .words import Rules


def integer_division(tree: exp.Expr, rules: Rules, env: Env) -> list[Finding]:
    """A division of integers where the answer is a fraction: the numerator is cast to a real number (a
    division by an integer literal, ``(month + 2) / 3``, is left alone: it buckets on purpose)."""
    if not rules.fractional:
        return []
    column_type = column_typer(tree, env)
    found = []
    for division in tree.find_all(exp.Div):
        right = unparen(division.expression)
        if isinstance(right, exp.Literal) or numeric_type(division, column_type) != INT:
            continue
        before = render(division, env)

        def build(division: exp.Div = division) -> exp.Expr:
            return exp.Cast(this=division.this.copy(), to=exp.DataType.build("DOUBLE"))

        def apply(division: exp.Div = division, build: Callable[[], exp.Expr] = build) -> None:
            division.set("this", build())
        preview = division.copy()
        preview.set("this", build())
        found.append(Finding(f"{before} divides integers, which truncates on {env.engine}",
                             f"{before} -> {render(preview, env)} (integer division truncates)", apply))
    return found


def distinct(tree: exp.Expr, rules: Rules, env: Env) -> list[Finding]:
    """"How many different X": a COUNT of the outermost SELECT counts each X once."""
    if not rules.distinct or not isinstance(tree, exp.Select):
        return []
    counts = [c for output in select_outputs(tree) for c in outside_subqueries(output, exp.Count)
              if isinstance(c, exp.Count)]
    if len(counts) != 1 or isinstance(counts[0].this, exp.Distinct):
        return []
    count = counts[0]
    argument = count.this
    if isinstance(argument, exp.Star):
        column = noun_column(tree, rules.distinct, env)
        if column is None:
            return [Finding(f'the question counts different "{rules.distinct}", but COUNT(*) counts rows')]
        argument = column
    elif not isinstance(argument, exp.Column):
        return []

    def build(argument: exp.Expr = argument) -> exp.Expr:
        return exp.Count(this=exp.Distinct(expressions=[argument.copy()]))
    before = render(count, env)
    return [Finding(f'the question counts different "{rules.distinct}", but {before} counts repeats too',
                    f"{before} -> {render(build(), env)} (counted once each)", lambda: count.replace(build()))]


def one_value(tree: exp.Expr, rules: Rules, env: Env) -> list[Finding]:
    """One amount asked ("how many", "in total", and no "each", "per", "by", "which" or "list"), given as counts
    or sums grouped by columns the query does not show (one unlabelled part of the total per group), or as any
    aggregate grouped by a column the WHERE holds to one value in any letter case (groups that differ by spelling):
    the aggregate over every row, without the GROUP BY. Left alone with a HAVING, an ORDER BY or a LIMIT (the
    groups are ranked or filtered: "the largest department's headcount"), a DISTINCT, or any other aggregate
    (an average per group is no part of the average over the rows)."""
    if not rules.one_value or not isinstance(tree, exp.Select):
        return []
    group = tree.args.get("group")
    outputs = select_outputs(tree)
    if group is None or not outputs or any(tree.args.get(key) for key in ("having", "order", "limit", "distinct")) \
            or any(output.find(exp.Window) for output in outputs):
        return []
    parts_of_a_total = all(isinstance(uncast(output), (exp.Count, exp.Sum)) for output in outputs)
    groups_by_spelling = all(_pinned(key, tree) for key in group.expressions) and \
        all(output.find(exp.AggFunc) for output in outputs)
    if not (parts_of_a_total or groups_by_spelling):
        return []
    keys = ", ".join(render(key, env) for key in group.expressions)
    return [Finding(f"the question asks for one value, but the SQL gives one for each {keys}, unlabelled",
                    f"GROUP BY {keys} -> (none) (one value over every row)", lambda: tree.set("group", None))]


_MATCHES = (exp.EQ, exp.Like, exp.ILike)


def _pinned(key: exp.Expr, select: exp.Select) -> bool:
    """Whether the WHERE holds ``key`` (a column) to one literal, in any letter case (``city = 'Leeds'``,
    ``city ILIKE 'leeds'``, ``LOWER(city) = 'leeds'``): its groups differ by spelling at most."""
    if not isinstance(key, exp.Column):
        return False
    for condition in where_conjuncts(select):
        if isinstance(condition, _MATCHES) and isinstance(unparen(condition.expression), exp.Literal):
            side = uncast(condition.this)
            side = side.this if isinstance(side, (exp.Lower, exp.Upper)) else side
            if isinstance(side, exp.Column) and side.name.lower() == key.name.lower() \
                    and side.table.lower() == key.table.lower():
                return True
    return False


_COMPUTED = (exp.Avg, exp.Sum, exp.Div, exp.Mul, exp.Add, exp.Sub, exp.Stddev, exp.Variance)


def _places_of(rounded: exp.Round) -> int:
    """The places ``ROUND(x, n)`` rounds to (0 without ``n``; -1 when ``n`` is not a number)."""
    places = rounded.args.get("decimals")
    if places is None:
        return 0
    places = unparen(places)
    return int(places.to_py()) if isinstance(places, exp.Literal) and not places.is_string else -1


def rounding(tree: exp.Expr, rules: Rules, env: Env) -> list[Finding]:
    """"Rounded to n decimal places": every computed output of the outermost SELECT (an average, a sum, an
    arithmetic expression; not a count or a column as stored) is ``ROUND(x, n)``."""
    if rules.rounding is None:
        return []
    places = rules.rounding
    found = []
    for output in select_outputs(tree):
        rounded = uncast(output)
        if not isinstance(rounded, exp.Round):
            if not isinstance(unparen(output), _COMPUTED):
                continue
        elif _places_of(rounded) == places:
            continue
        # ROUND to other places: round the value it rounds, in the output's place
        target = rounded.this if isinstance(rounded, exp.Round) else unparen(output)

        def build(target: exp.Expr = target) -> exp.Expr:
            value = target.copy()
            if env.engine == "postgresql" and places:  # PostgreSQL rounds to places only a NUMERIC
                value = exp.Cast(this=value, to=exp.DataType.build("NUMERIC"))
            return exp.Round(this=value, decimals=exp.Literal.number(places) if places else None)
        node = output if isinstance(rounded, exp.Round) else target
        before = render(node, env)
        said = f"{places} decimal places" if places else "a whole number"

        def apply(node: exp.Expr = node, build: Callable[[], exp.Expr] = build) -> None:
            node.replace(build())
        found.append(Finding(f"the question asks for the answer rounded to {said}, but {before} is not",
                             f"{before} -> {render(build(), env)} (rounded to {said})", apply))
    return found


def _case_sides(node: exp.Expr) -> tuple[exp.Column, list[exp.Literal]] | None:
    """The column and the string literals of a comparison ``column = 'x'`` (either side), ``column IN ('x',
    ...)`` or ``column LIKE 'x'``; None for any other node."""
    if isinstance(node, exp.In):
        values = node.expressions
        column = unparen(node.this)
        if isinstance(column, exp.Column) and values and all(isinstance(v, exp.Literal) and v.is_string
                                                            for v in values):
            return column, list(values)
        return None
    if not isinstance(node, (exp.EQ, exp.NEQ, exp.Like)):
        return None
    left, right = unparen(node.this), unparen(node.expression)
    if isinstance(left, exp.Literal) and not isinstance(node, exp.Like):
        left, right = right, left
    if isinstance(left, exp.Column) and isinstance(right, exp.Literal) and right.is_string:
        return left, [right]
    return None


def _lowered(literal: exp.Literal) -> exp.Expr:
    text = literal.this
    return exp.Literal.string(text.lower()) if text.isascii() else exp.Lower(this=literal.copy())


def letter_case(tree: exp.Expr, rules: Rules, env: Env) -> list[Finding]:
    """"Match ... case-insensitively": a text column compared with a string literal (``=``, ``<>``, ``IN``,
    ``LIKE`` where the engine's LIKE heeds case) is compared in lower case on both sides."""
    if not rules.case_insensitive:
        return []
    found = []
    for node in tree.find_all(exp.EQ, exp.NEQ, exp.In, exp.Like):
        sides = _case_sides(node)
        if sides is None or (isinstance(node, exp.Like) and env.engine == "sqlite"):  # SQLite's LIKE folds case
            continue
        column, literals = sides
        before = render(node, env)

        def apply(column: exp.Column = column, literals: list[exp.Literal] = literals) -> None:
            for literal in literals:
                literal.replace(_lowered(literal))
            column.replace(exp.Lower(this=column.copy()))
        preview = node.copy()
        preview_sides = _case_sides(preview)
        assert preview_sides is not None
        apply(*preview_sides)
        found.append(Finding(f"the question asks for a case-insensitive match, but {before} heeds letter case",
                             f"{before} -> {render(preview, env)} (compared in lower case)", apply))
    return found
