"""A date compared with another date moved on by the time the question names: "within 30 days after A" is the
window from A to A moved on, "in the 90 days before D" the window from D moved back up to D, "more than 10 days
after A" lies beyond A moved on, "fewer than 90 days before D" after D moved back. Read on
``DATE(a, '+30 days')`` (SQLite) and ``a + INTERVAL '30 days'`` (the others)."""

from __future__ import annotations

from typing import NamedTuple

from sqlglot import exp

from ...common.date_nodes import interval_amount, reads_today, time_amount, without_conversions
from .tree import Env, Finding, compared_elsewhere, render, replaced, uncast, unparen
from .words import Rules

BELOW_ON_THE_LEFT = (exp.LTE, exp.LT)  # a < b, a <= b: the left side is held below; b > a, b >= a: the right
_TURNED: dict[type[exp.Expr], type[exp.Expr]] = {exp.GT: exp.LT, exp.LT: exp.GT, exp.GTE: exp.LTE, exp.LTE: exp.GTE}


class Move(NamedTuple):
    """A date moved by whole units: ``DATE(start, '+30 days')`` is (start, 30, "day")."""

    start: exp.Expr
    amount: int  # signed: a move back is negative
    unit: str  # day, month or year


class Compared(NamedTuple):
    """A comparison of a date with a moved date (``d >= DATE(a, '+30 days')``)."""

    comparison: exp.Expr
    date: exp.Expr  # d
    moved: exp.Expr  # DATE(a, '+30 days'), as written
    move: Move
    later: bool  # whether the comparison holds d later than the moved date


def moved_date(node: exp.Expr) -> Move | None:
    """(the date, the signed count, day/month/year) of a date moved by whole units: ``DATE(a, '+30 days')``,
    ``DATE(a, '-1 year')``, ``a + INTERVAL '30 days'``, ``a - INTERVAL 2 WEEK`` (a week is 7 days); None for
    anything else, and for a move from today ('now', ``CURRENT_DATE``)."""
    start: exp.Expr | None = None
    amount: tuple[int, str] | None = None
    node = without_conversions(node)  # STRFTIME('%Y-%m-%d', DATE(a, '+90 days')) is the moved date too
    if isinstance(node, exp.Date):
        modifiers = [m for m in (node.args.get("zone"), *node.expressions) if isinstance(m, exp.Literal)]
        if len(modifiers) == 1 and modifiers[0].is_string:
            start, amount = node.this, time_amount(modifiers[0].name)
    elif isinstance(node, (exp.Add, exp.Sub)) and isinstance(node.expression, exp.Interval):
        start, amount = node.this, interval_amount(node.expression)
        if amount is not None and isinstance(node, exp.Sub):
            amount = (-amount[0], amount[1])
    if start is None or amount is None or reads_today(start):
        return None
    return Move(start, *amount)


_SQLITE_UNITS = {"day": "days", "week": "days", "month": "months", "year": "years"}


def moved_by(date: exp.Expr, count: int, unit: str, engine: str) -> exp.Expr:
    """``date`` moved by ``count`` (signed) days, months or years in ``engine``'s date arithmetic: ``DATE(d,
    '+10 years')`` on SQLite, ``d + INTERVAL '10 YEAR'`` elsewhere."""
    if engine == "sqlite":
        return exp.Date(this=date.copy(), expressions=[exp.Literal.string(f"{count:+d} {_SQLITE_UNITS[unit]}")])
    interval = exp.Interval(this=exp.Literal.string(str(abs(count))), unit=exp.var(unit.upper()))
    return (exp.Add if count >= 0 else exp.Sub)(this=date.copy(), expression=interval)


def within_moved(tree: exp.Expr, rules: Rules, env: Env) -> list[Finding]:
    """"Within N days after A" for a date compared with A moved on by the question's N days: held at or after it
    (the dates after the window) becomes ``d BETWEEN a AND <a moved on>``; held up to it with nothing comparing
    ``d`` with ``a`` gets ``d >= a`` beside it."""
    named = {count for count, unit in rules.durations if unit == "day"}
    found = []
    for comparison, date, moved, (start, count, unit), later in _compared_with_moved(tree):
        if unit != "day" or count not in named or isinstance(unparen(start), exp.Literal):
            continue
        if later:
            window = exp.Between(this=date.copy(), low=start.copy(), high=moved.copy())
            found.append(replaced(f'the question asks for "within {count} days after", but {render(comparison, env)} '
                                  "keeps the dates after those days", comparison, window, "the dates within the days",
                                  env))
        elif not _compares(tree, date, start, env):
            bounded = exp.paren(exp.and_(exp.GTE(this=date.copy(), expression=start.copy()), comparison.copy()))
            found.append(replaced(f'the question asks for days "after" a date, but {render(comparison, env)} also '
                                  "counts the dates before it", comparison, bounded, "from that date on", env))
    return found


def window_before(tree: exp.Expr, rules: Rules, env: Env) -> list[Finding]:
    """"In the 90 days before D" for a date compared with D moved back by the question's 90 days: held before it
    (the dates before the window) becomes held from it on, ``d >= <D moved back>``; where nothing compares ``d``
    with ``D``, ``d < D`` goes beside it (the window ends where D begins); a date held only below the question's
    date gets the window's start beside it (``_window_start``)."""
    if rules.window_before is None:
        return []
    found = []
    for comparison, date, moved, (start, count, unit), later in _compared_with_moved(tree):
        if (count, unit) != rules.window_before:
            continue
        ends = not _compares(tree, date, start, env)
        if later and not ends:
            continue  # the window as asked
        kept: exp.Expr = comparison if later else exp.GTE(this=date.copy(), expression=moved.copy())
        if ends:
            kept = exp.paren(exp.and_(kept.copy(), exp.LT(this=date.copy(), expression=start.copy())))
        problem = "keeps the dates before the window" if not later else "keeps the dates after the window's end"
        found.append(replaced(f"the question asks for the {-count} {unit}s before {render(start, env)}, but "
                              f"{render(comparison, env)} {problem}", comparison, kept,
                              f"from {render(moved, env)} up to {render(start, env)}", env))
    return found or _window_start(tree, rules, env)


def _window_start(tree: exp.Expr, rules: Rules, env: Env) -> list[Finding]:
    """"In the 12 months before 2024-07-01" given as the end alone (``d < '2024-07-01'``, the question's one date,
    with nothing else comparing ``d``): the window's start beside it (``d >= DATE('2024-07-01', '-12 months')``)."""
    assert rules.window_before is not None
    count, unit = rules.window_before
    found = []
    for comparison in list(tree.find_all(*_TURNED)):
        for date, end, on_left in ((comparison.this, comparison.expression, True),
                                   (comparison.expression, comparison.this, False)):
            text = uncast(end)
            if isinstance(unparen(date), exp.Literal) or not isinstance(text, exp.Literal) or not text.is_string \
                    or text.name != rules.given_date or on_left != isinstance(comparison, BELOW_ON_THE_LEFT) \
                    or compared_elsewhere(tree, comparison, date, env):
                continue
            day = end if end is not text or env.engine == "sqlite" else exp.cast(text.copy(), "DATE")
            start = moved_by(day, count, unit, env.engine)
            window = exp.paren(exp.and_(exp.GTE(this=date.copy(), expression=start), comparison.copy()))
            found.append(replaced(f"the question asks for the {-count} {unit}s before {text.name}, but "
                                  f"{render(comparison, env)} keeps every date before it", comparison, window,
                                  f"from {render(start, env)} up to {text.name}", env))
    return found


def beyond(tree: exp.Expr, rules: Rules, env: Env) -> list[Finding]:
    """"More than 10 days after A" (a date later than A moved on by 10 days), "fewer than 10 days after A"
    (earlier), "more than 90 days before D" (earlier than D moved back by 90 days), "fewer than 90 days before D"
    (later): a date compared with that moved date the other way round has its comparison turned round."""
    if not rules.beyond:
        return []
    wanted = {(count, unit): later for count, unit, later in rules.beyond}
    found = []
    for comparison, _, moved, (_, count, unit), later in _compared_with_moved(tree):
        if wanted.get((count, unit), later) == later:
            continue
        turned = _TURNED[type(comparison)](this=comparison.this.copy(), expression=comparison.expression.copy())
        side = "later" if wanted[(count, unit)] else "earlier"
        found.append(replaced(f"the question asks for dates {side} than {render(moved, env)}, but "
                              f"{render(comparison, env)} keeps the other side", comparison, turned,
                              f"the dates {side} than it", env))
    return found


def _compared_with_moved(tree: exp.Expr) -> list[Compared]:
    """Each comparison of a date that is no literal with a moved date (``moved_date``)."""
    found = []
    for comparison in list(tree.find_all(*_TURNED)):
        for date, moved, on_left in ((comparison.this, comparison.expression, True),
                                     (comparison.expression, comparison.this, False)):
            move = moved_date(unparen(moved))
            if move is None or isinstance(unparen(date), exp.Literal):
                continue
            found.append(Compared(comparison, date, moved, move, on_left != isinstance(comparison, BELOW_ON_THE_LEFT)))
    return found


def _compares(tree: exp.Expr, one: exp.Expr, other: exp.Expr, env: Env) -> bool:
    """Whether ``tree`` compares ``one`` with ``other`` anywhere (either way round; a cast of either counts as it:
    ``d < CAST('2023-01-01' AS DATE)`` compares ``d`` with ``'2023-01-01'``)."""
    pair = {render(uncast(one), env), render(uncast(other), env)}
    return any({render(uncast(c.this), env), render(uncast(c.expression), env)} == pair
               for c in tree.find_all(*_TURNED))

