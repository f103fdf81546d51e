"""Today's date where the question gives the day to count from: "how many days before 2024-12-31" answered
with ``CURRENT_DATE - d`` changes from one day to the next, and is wrong on every day but one."""

from __future__ import annotations

from sqlglot import exp

from .tree import Env, Finding, replaced
from .words import Rules

_CLOCK = (exp.CurrentDate, exp.CurrentTimestamp, exp.CurrentDatetime)


def given_day(tree: exp.Expr, rules: Rules, env: Env) -> list[Finding]:
    """Today's date (``CURRENT_DATE``, ``NOW()``, SQLite's ``'now'``) where the question gives one date and names
    no time relative to today: that date (``CAST('2024-12-31' AS DATE)``, ``AS TIMESTAMP`` for ``NOW()``;
    ``'2024-12-31'`` on SQLite, where dates are text). Left alone beside a ``'localtime'`` or ``'utc'`` modifier."""
    if rules.given_date is None or any(isinstance(node, exp.Literal) and node.is_string
                                       and node.name.strip().lower() in ("localtime", "utc") for node in tree.walk()):
        return []
    day = rules.given_date
    found = []
    for node in list(tree.walk()):
        is_now = isinstance(node, exp.Literal) and node.is_string and node.name.strip().lower() == "now"
        if not (isinstance(node, _CLOCK) or is_now):
            continue
        given: exp.Expr = exp.Literal.string(day)
        if env.engine != "sqlite" and not is_now:  # a date for a date, a timestamp for a timestamp
            kind = "DATE" if isinstance(node, exp.CurrentDate) else "TIMESTAMP"
            given = exp.Cast(this=given, to=exp.DataType.build(kind))
        found.append(replaced(f"the SQL reads today's date, where the question counts from {day}", node, given,
                              "the question's date", env))
    return found
