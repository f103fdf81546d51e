"""Parts of the calendar a question names: a day of the week ("on a Monday", "at the weekend"), a part of a year
("the first half of 2023", "the fourth quarter") and a whole year ("started in 2022")."""

from __future__ import annotations

from sqlglot import exp

from ...repair import date_part, week_of_year
from .tree import Env, Finding, render, replaced, uncast, unparen
from .words import Rules

_COMPARED = (exp.EQ, exp.In)


def weekday(tree: exp.Expr, rules: Rules, env: Env) -> list[Finding]:
    """A day of the week the question names, compared as a day of the month (``EXTRACT(DAY FROM d) = 1`` for "on a
    Monday") or a week of the year (``STRFTIME('%W', d) = '1'``): the day of the week, Sunday 0 to Saturday 6, as
    the question names them (``EXTRACT(DOW FROM d) = 1``; ``CAST(STRFTIME('%w', d) AS INTEGER)`` on SQLite)."""
    if not rules.weekdays:
        return []
    days = sorted(rules.weekdays)
    names = ", ".join(_NAMES[day] for day in days)
    found = []
    for comparison in list(tree.find_all(*_COMPARED)):
        date = _misread_weekday(comparison)
        if date is None:
            continue
        part = _day_of_week(date, env.engine)
        turned: exp.Expr = exp.EQ(this=part, expression=exp.Literal.number(days[0])) if len(days) == 1 else \
            exp.In(this=part, expressions=[exp.Literal.number(day) for day in days])
        found.append(replaced(f"the question names a day of the week ({names}), but {render(comparison, env)} reads "
                              "a day of the month or a week of the year", comparison, turned,
                              "the day of the week", env))
    return found


_NAMES = ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")


def _misread_weekday(comparison: exp.Expr) -> exp.Expr | None:
    """The date of ``comparison`` where it compares the date's day of the month or week of the year with whole
    numbers from 0 to 7 (a weekday's number in one of the engines' countings); None otherwise."""
    values = comparison.expressions if isinstance(comparison, exp.In) else [comparison.expression]
    if not values or not all(_weekday_number(value) for value in values):
        return None
    return _day_or_week_of(uncast(comparison.this))


def _weekday_number(node: exp.Expr) -> bool:
    node = unparen(node)
    if not isinstance(node, exp.Literal):
        return False
    text = node.name.strip()
    return text.isdigit() and int(text) <= 7


def _day_or_week_of(node: exp.Expr) -> exp.Expr | None:
    """The date of a day-of-the-month or week-of-the-year call (``EXTRACT(DAY FROM d)``, ``STRFTIME('%W', d)``,
    ``EXTRACT(WEEK FROM d)``), or None."""
    part = date_part(node)
    if part is not None:
        return part[1] if part[0] == "DAY" else None
    return week_of_year(node)


def _day_of_week(date: exp.Expr, engine: str) -> exp.Expr:
    """The day of the week of ``date``, Sunday 0 to Saturday 6, in ``engine``'s SQL."""
    if engine == "sqlite":
        call = exp.Anonymous(this="STRFTIME", expressions=[exp.Literal.string("%w"), date.copy()])
        return exp.Cast(this=call, to=exp.DataType.build("INTEGER"))
    return exp.Extract(this=exp.var("DOW"), expression=date.copy())


def year_part(tree: exp.Expr, rules: Rules, env: Env) -> list[Finding]:
    """A month compared with the edge of the part of a year the question names, one month off ("the first half
    of 2023" as ``EXTRACT(MONTH FROM d) < 6``, "the fourth quarter" as ``> 10``, "the second half" as ``>= 6``):
    the part's own edge (``<= 6``, ``>= 10``, ``>= 7``)."""
    if rules.months is None:
        return []
    first, last = rules.months
    found = []
    for comparison in list(tree.find_all(exp.GT, exp.GTE, exp.LT, exp.LTE)):
        for month_side, literal_side in (("this", "expression"), ("expression", "this")):
            part = date_part(uncast(comparison.args[month_side]))
            literal = unparen(comparison.args[literal_side])
            if part is None or part[0] != "MONTH" or not isinstance(literal, exp.Literal) \
                    or not literal.name.strip().isdigit():
                continue
            number = int(literal.name)
            upper = isinstance(comparison, (exp.LT, exp.LTE)) == (month_side == "this")
            strict = isinstance(comparison, (exp.LT, exp.GT))
            kept = (number - 1 if strict else number) if upper else (number + 1 if strict else number)
            edge = last if upper else first
            if abs(kept - edge) != 1:
                continue
            value = exp.Literal.string(f"{edge:02d}") if literal.is_string else exp.Literal.number(edge)
            kind = (exp.LTE if upper else exp.GTE) if month_side == "this" else (exp.GTE if upper else exp.LTE)
            turned = kind(this=comparison.args["this"].copy(), expression=comparison.args["expression"].copy())
            turned.set(literal_side, value)
            missed = f"leaves out month {edge}" if (kept < edge) == upper else f"adds month {kept}"
            found.append(replaced(f"the question asks for months {first} to {last}, but {render(comparison, env)} "
                                  f"{missed}", comparison, turned, f"up to month {edge}" if upper
                                  else f"from month {edge}", env))
    return found


def whole_year(tree: exp.Expr, rules: Rules, env: Env) -> list[Finding]:
    """A year the question names with "in" ("the subscriptions that started in 2022"), given as a date from its
    first day on (``started_on >= '2022-01-01'``) with nothing else bounding that date: the year's dates only
    (``started_on >= '2022-01-01' AND started_on < '2023-01-01'``)."""
    if not rules.years:
        return []
    found = []
    for comparison in list(tree.find_all(exp.GTE)):
        date, bound = comparison.this, unparen(comparison.expression)
        text = uncast(bound)
        if isinstance(date, exp.Literal) or not isinstance(text, exp.Literal) or not text.is_string \
                or not _first_day_of(text.name, rules.years) or _bounded_elsewhere(tree, comparison, date, env):
            continue
        next_year = exp.Literal.string(f"{int(text.name[:4]) + 1}-01-01")
        end: exp.Expr = next_year
        if bound is not text:  # CAST('2022-01-01' AS DATE): the same cast of the next year's first day
            end = bound.copy()
            uncast(end).replace(next_year)
        upper = exp.LT(this=date.copy(), expression=end)
        window = exp.paren(exp.and_(comparison.copy(), upper))
        found.append(replaced(f"the question asks for {text.name[:4]}, but {render(comparison, env)} also keeps the "
                              "years after it", comparison, window, "the year's dates only", env))
    return found


def _first_day_of(text: str, years: frozenset[int]) -> bool:
    return len(text) == 10 and text.endswith("-01-01") and text[:4].isdigit() and int(text[:4]) in years


def _bounded_elsewhere(tree: exp.Expr, comparison: exp.Expr, date: exp.Expr, env: Env) -> bool:
    """Whether ``tree`` compares ``date`` (the same SQL) in any other comparison, or reads its year or month."""
    key = render(unparen(date), env)
    for other in tree.find_all(exp.GT, exp.GTE, exp.LT, exp.LTE, exp.EQ, exp.Between, exp.Like):
        if other is not comparison and any(render(unparen(node), env) == key for node in other.iter_expressions()):
            return True
    return any(render(part[1], env) == key for node in tree.find_all(exp.Func)
               if (part := date_part(node)) is not None)
