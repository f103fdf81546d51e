"""Parts of the calendar a question names: a day of the week ("on a Monday", "at the weekend"), a day of a month
("on the first day of a month"), a part of a year ("the first half of 2023", "the fourth quarter"), a whole year
("started in 2022") and the first year after a date, not its calendar year."""

from __future__ import annotations

import calendar as days_in
import datetime as dt
import re

from sqlglot import exp

from ...repair import date_part, week_of_year
from .dates import named_by
from .tree import Env, Finding, compared_elsewhere, render, replaced, uncast, unparen
from .windows import moved_by
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
    return _numbered_part(date, "%w", "DOW", engine)


def _numbered_part(date: exp.Expr, sqlite_format: str, part: str, engine: str) -> exp.Expr:
    """A part of ``date`` as a whole number in ``engine``'s SQL: ``CAST(STRFTIME(format, d) AS INTEGER)`` on SQLite,
    ``EXTRACT(part FROM d)`` on the others."""
    if engine == "sqlite":
        call = exp.Anonymous(this="STRFTIME", expressions=[exp.Literal.string(sqlite_format), date.copy()])
        return exp.Cast(this=call, to=exp.DataType.build("INTEGER"))
    return exp.Extract(this=exp.var(part), expression=date.copy())


def month_day(tree: exp.Expr, rules: Rules, env: Env) -> list[Finding]:
    """A day of a month the question names ("on the first day of a month") compared as a month
    (``EXTRACT(MONTH FROM d) = 1``, January): the day of the month (``EXTRACT(DAY FROM d) = 1``)."""
    if rules.month_day is None:
        return []
    found = []
    for comparison in list(tree.find_all(exp.EQ)):
        part = date_part(uncast(comparison.this))
        literal = unparen(comparison.expression)
        if part is None or part[0] != "MONTH" or not isinstance(literal, exp.Literal) \
                or not literal.name.strip().isdigit() or int(literal.name) != rules.month_day:
            continue
        turned = exp.EQ(this=_numbered_part(part[1], "%d", "DAY", env.engine),
                        expression=exp.Literal.number(rules.month_day))
        found.append(replaced(f"the question names day {rules.month_day} of a month, but {render(comparison, env)} "
                              "reads a month", comparison, turned, "the day of the month", env))
    return found


def year_part(tree: exp.Expr, rules: Rules, env: Env) -> list[Finding]:
    """A month compared with the edge of the part of a year the question names, one month off ("the first half
    of 2023" as ``EXTRACT(MONTH FROM d) < 6``, "the fourth quarter" as ``> 10``, "the second half" as ``>= 6``):
    the part's own edge (``<= 6``, ``>= 10``, ``>= 7``); and the same of a date bounded by a month's first or last
    day (``_dates_off_the_edge``)."""
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
    return found + _dates_off_the_edge(tree, rules, env)


def _dates_off_the_edge(tree: exp.Expr, rules: Rules, env: Env) -> list[Finding]:
    """A date bounded by a month's first or last day one month off the edge of the part of a year the question
    names ("the second half of 2023" as ``created_on >= '2023-06-01'``, or ``BETWEEN '2023-01-01' AND
    '2023-05-31'`` for the first half): the part's own edge (``'2023-07-01'``, ``'2023-06-30'``)."""
    assert rules.months is not None
    found = []
    for bound, day, upper, inclusive in _date_bounds(tree):
        if day.isoformat() == rules.given_date:
            continue  # a date the question gives is its own
        edge = _edge_day(day, rules.months, upper, inclusive, rules.numbers)
        if edge is None:
            continue
        turned: exp.Expr = exp.Literal.string(edge.isoformat())
        if uncast(bound) is not bound:  # DATE '2023-06-01', CAST(... AS DATE): the same cast of the edge
            turned = bound.copy()
            uncast(turned).replace(exp.Literal.string(edge.isoformat()))
        first, last = rules.months
        found.append(replaced(f"the question asks for months {first} to {last}, but the date bound "
                              f"{render(bound, env)} is one month off", bound, turned,
                              "the edge of the part of the year", env))
    return found


def _date_bounds(tree: exp.Expr) -> list[tuple[exp.Expr, dt.date, bool, bool]]:
    """Each date text that bounds a value that is no literal, as (the bound as written, its day, whether it is an
    upper bound, whether the bound itself is in): ``d >= '2023-06-01'``, ``'2023-12-31' >= d``, the two ends of
    ``d BETWEEN ... AND ...``."""
    found: list[tuple[exp.Expr, bool, bool]] = []
    for node in tree.find_all(exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Between):
        if isinstance(node, exp.Between):
            if not isinstance(unparen(node.this), exp.Literal):
                found += [(node.args["low"], False, True), (node.args["high"], True, True)]
            continue
        inclusive = isinstance(node, (exp.GTE, exp.LTE))
        held_below = isinstance(node, (exp.LT, exp.LTE))  # the left side is held below the right
        for value, bound, upper in ((node.this, node.expression, held_below),
                                    (node.expression, node.this, not held_below)):
            if not isinstance(unparen(value), exp.Literal):
                found.append((bound, upper, inclusive))
    return [(bound, day, upper, inclusive) for bound, upper, inclusive in found
            if (day := _iso_day(uncast(bound))) is not None]


_ISO_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


def _iso_day(node: exp.Expr) -> dt.date | None:
    """The day a text literal gives as YYYY-MM-DD, or None (another node, another text, no such day)."""
    if not isinstance(node, exp.Literal) or not node.is_string or not _ISO_DAY.fullmatch(node.name):
        return None
    try:
        return dt.date.fromisoformat(node.name)
    except ValueError:
        return None


def _edge_day(day: dt.date, months: tuple[int, int], upper: bool, inclusive: bool,
              numbers: frozenset[int]) -> dt.date | None:
    """The part of a year's edge (its first day for a lower bound, else its last, or the day after it for an
    upper bound that leaves it out) in place of ``day``, where ``day`` bounds the months one off that edge; None
    where ``day`` is no month's edge, is on the part's edge already or is further off."""
    month = day.year * 12 + day.month - 1  # months since year 0, so that December and January are one apart
    last_day = day.day == days_in.monthrange(day.year, day.month)[1]
    if upper:  # the last month the bound keeps
        kept = month if inclusive and last_day else month - 1 if not inclusive and day.day == 1 else None
    else:  # the first month it keeps
        kept = month if inclusive and day.day == 1 else month + 1 if not inclusive and last_day else None
    if kept is None:
        return None
    wanted = (months[1] if upper else months[0]) - 1
    edges = [year * 12 + wanted for year in (kept // 12 - 1, kept // 12, kept // 12 + 1)]
    edge = next((e for e in edges if abs(e - kept) == 1), None)
    if edge is None or (any(n > 999 for n in numbers) and edge // 12 not in numbers):
        return None  # the edge falls in a year the question does not name
    year, index = divmod(edge, 12)
    if upper:
        end = dt.date(year, index + 1, days_in.monthrange(year, index + 1)[1])
        return end if inclusive else end + dt.timedelta(days=1)
    start = dt.date(year, index + 1, 1)
    return start if inclusive else start - dt.timedelta(days=1)


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
    """Whether ``tree`` compares ``date`` in any other comparison, or reads its year or month."""
    key = render(uncast(date), env)
    return compared_elsewhere(tree, comparison, date, env) \
        or any(render(part[1], env) == key for node in tree.find_all(exp.Func) if (part := date_part(node)) is not None)


def period_after(tree: exp.Expr, rules: Rules, env: Env) -> list[Finding]:
    """"During the first year after A" (or "in the first 6 months since A") compared as calendar years or months
    of two dates (``YEAR(b) = YEAR(a)``, ``YEAR(b) - YEAR(a) <= 1``): the window from A to A moved on (``b >= a AND
    b < DATE(a, '+1 years')``), A the date whose column the words after "after" name (``named_by``: "opened",
    ``opened_on``)."""
    if rules.period_after is None:
        return []
    count, unit, words = rules.period_after
    found = []
    for comparison in list(tree.find_all(exp.EQ, exp.GT, exp.GTE, exp.LT, exp.LTE)):
        dates = _calendar_pair(comparison, env)
        if dates is None:
            continue
        named = [date for date in dates if named_by(date, words)]
        if len(named) != 1:
            continue
        start = named[0]
        later = dates[1] if start is dates[0] else dates[0]
        window = exp.paren(exp.and_(exp.GTE(this=later.copy(), expression=start.copy()),
                                    exp.LT(this=later.copy(), expression=moved_by(start, count, unit, env.engine))))
        found.append(replaced(f'the question asks for the first {count} {unit}{"s" if count != 1 else ""} after '
                              f'"{words}", but {render(comparison, env)} compares calendar {unit}s', comparison,
                              window, "from that date to that date moved on", env))
    return found


def _calendar_pair(comparison: exp.Expr, env: Env) -> tuple[exp.Expr, exp.Expr] | None:
    """The two dates of a comparison made only of their years (or months) and whole numbers (``YEAR(b) =
    YEAR(a)``, ``YEAR(b) - YEAR(a) <= 1``, ``YEAR(b) > YEAR(a) + 1``); None for any other comparison."""
    parts: list[tuple[str, exp.Expr]] = []
    stack = [comparison.this, comparison.expression]
    while stack:
        node = uncast(stack.pop())
        part = date_part(node)
        if part is not None:
            parts.append(part)
        elif isinstance(node, (exp.Add, exp.Sub)):
            stack += [node.this, node.expression]
        elif not (isinstance(node, exp.Literal) and not node.is_string):
            return None
    if len(parts) != 2 or parts[0][0] != parts[1][0] or parts[0][0] not in ("YEAR", "MONTH") \
            or render(parts[0][1], env) == render(parts[1][1], env):
        return None
    return parts[0][1], parts[1][1]

