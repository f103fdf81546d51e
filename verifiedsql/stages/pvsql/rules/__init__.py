"""The arithmetic an analytics question asks for, read from its words, and held against a candidate's AST.

``read_rules`` reads what the question's words settle (high-precision patterns, as ``constraints.py``'s):

- **scale**: a *ratio*, *fraction* or *proportion* (and no *percent*) is not multiplied by 100; a *percentage*
  (*percent*, ``%``) is;
- **divisor**: "the ratio of A to B" divides by B, not by A + B (unless B is a total), nor by every row;
  where the SQL counts A (or filters on it) and counts every row for B, B's count is built from the stored
  value B's words name;
- **whole**: a percentage or a fraction whose two sides aggregate the same rows is 100% (1) whatever the
  data: the condition that filters the rows belongs in the numerator; and in a grouped query, each group's
  share "of all" divides by the total over every group, not by the group itself;
- **fractional**: the answer is a fraction (a ratio, a percentage, a share, a rate, an average, a growth), so a
  division of integers must not truncate (PostgreSQL and SQLite divide integers);
- **days**: a number of days is a difference of dates in the engine's date arithmetic, not a difference of
  their day-of-month or day-of-year parts (``EXTRACT(DAY FROM end) - EXTRACT(DAY FROM start)``,
  ``STRFTIME('%j', end) - STRFTIME('%j', start)``), nor on SQLite a difference of date text (which subtracts
  the years);
- **first**: a number of days to "its first X" reads X's earliest date per owner, not every X's date;
- **direction**: "how many days after A did B" (or "days before A was B", "days from A to B") subtracts the
  earlier date from the later, not the other way round;
- **day units**: a number of days asked is not divided into years, months or weeks (``/ 365``) the question
  does not name;
- **shifted**: on SQLite, "30 days after" a date as ``d + 30`` (which adds to the year of the date text) is
  ``DATE(d, '+30 days')``;
- **year shift**: on SQLite, "more than 10 days after A" as ``b > STRFTIME('%Y', a) + 10`` (a date compared with
  a year number) is ``b > DATE(a, '+10 days')``, in the unit the question names with that number;
- **given day**: today's date (``CURRENT_DATE``, ``NOW()``, ``'now'``) where the question gives one date and
  names no time relative to today ("how many days before 2024-12-31") is that date;
- **calendar years**: "more than 10 years after A" (years the question names) as a difference of calendar
  years (``EXTRACT(YEAR FROM b) - EXTRACT(YEAR FROM a) > 10``) compares the dates, one moved by the years
  (``b > a + INTERVAL '10 YEAR'``);
- **named bound**: a number of days compared with a number the question does not give, where it gives one
  number of days ("more than 90 days after" as ``d - a > 9``; "within 365 days" as a difference of years, once
  ``days`` has made it days, ``<= 1``), is compared with the question's number;
- **weeks**: "how many weeks" divides a number of days by 7;
- **inclusive**: "counting the first and the last day" (or "inclusive", "if the start day and the end day both
  count") adds 1 to a difference of dates;
- **within after**: "within 30 days after A" holds a number of days from A at or above 0 as well as below 30,
  and a date between A and A moved on by those 30 days;
- **beyond**: "more than 10 days after A" holds a date later than A moved on by 10 days (``DATE(a, '+10 days')``),
  "fewer than 90 days before D" later than D moved back by 90, "within two years of A" earlier than A moved on
  by two years, and so on: not on the other side (amounts in words count: "one year", "a week" after a bound);
- **growth**: a percentage change ("by what percentage did X grow", "the percentage change from A to B")
  divides the difference of the two values by the base, not the new value alone;
- **growth base**: a change "from 2023 to 2024" whose base is the total of every period divides by the
  first period's instead;
- **per item**: "on average, how many X does a Y have" (or "the average number of X per Y") counts X's rows
  over the distinct Ys, not the mean of a stored column;
- **distinct**: "how many different X" counts distinct X;
- **month text**: "give the month as YYYY-MM" gives one text column, not the year and the month as numbers;
- **weekday**: "on a Monday" (or "at the weekend") compared as a day of the month or a week of the year is the
  date's day of the week;
- **window before**: "in the 90 days before D" holds a date from D moved back by 90 days up to D, not before
  the moved date nor after D, nor from any time before D;
- **month day**: "on the first day of a month" compared as a month (``EXTRACT(MONTH FROM d) = 1``) is the day
  of the month;
- **year part**: "the first half of 2023" (or "the fourth quarter", "Q2") as months one short of the part's edge
  (``< 6``) reaches the edge (``<= 6``); so does a date bound on a month's first or last day one month off the
  edge (``>= '2023-06-01'`` for the second half);
- **period after**: "during the first year after A" (or "the first 6 months since A") compared as calendar years or
  months of two dates (``YEAR(b) = YEAR(a)``) is the window from A to A moved on;
- **whole year**: "started in 2022" given as ``started_on >= '2022-01-01'``, with nothing else bounding the date,
  ends with the year (``AND started_on < '2023-01-01'``);
- **one value**: "how many" or "in total", with no "each", "per" or "by", answered as counts or sums grouped by
  columns the query does not show, is the count or the sum over every row (with ``whole year``, a reading of the
  answer's shape: it runs for every question, and alone earns no ``constraints`` check);
- **rounding**: "rounded to two decimal places" (or "to the nearest whole number") rounds the computed outputs
  to that many places;
- **case**: "match ... case-insensitively" compares text with a string literal in one letter case.

``findings`` gives what a candidate's SQL breaks, each with its fix (or none when it cannot be repaired here);
``repair`` applies the fixes rule after rule on a copy of the tree. Nothing here runs SQL or calls a model
(a rule may read a column's stored values through ``Env.values``, which the caller bounds): the caller
(``rule_repair.py``) runs a repaired SQL through both safety layers.

Modules: ``words`` (what the question settles), ``tree`` (what the rules read on the SQL), and the rules by
subject: ``shares`` (ratios, percentages, shares, averages per owner), ``changes`` (growth between periods),
``dates`` (days and months), ``calendar`` (days of the week, parts of a year, whole years), ``today`` (the
question's date for today's), ``forms`` (integer division, distinct counts, one value, rounding, letter case).
"""

from __future__ import annotations

from sqlglot import exp

from .calendar import month_day, period_after, weekday, whole_year, year_part
from .changes import growth, growth_base
from .dates import (
    calendar_years,
    day_units,
    days,
    direction,
    first,
    inclusive,
    month_text,
    named_bound,
    shifted,
    weeks,
    within_after,
    year_shift,
)
from .forms import distinct, integer_division, letter_case, one_value, rounding
from .shares import divisor, group_share, per_item, ratio_terms, scale, whole
from .today import given_day
from .tree import Env, Finding, Rule, ValueReader
from .windows import beyond, window_before
from .words import Rules, read_rules

__all__ = ["RULES", "Env", "Finding", "Rules", "ValueReader", "findings", "problems", "read_rules", "repair"]

RULES: tuple[Rule, ...] = (scale, divisor, ratio_terms, whole, group_share, growth_base, growth, per_item,
                          integer_division, given_day, days, day_units, shifted, year_shift, calendar_years,
                          named_bound, first, direction, inclusive, weeks, within_after, beyond, window_before,
                          distinct, month_text, weekday, month_day, year_part, whole_year, period_after,
                          one_value, rounding, letter_case)
"""In the order the repair applies them: the scale first (its ``100.0`` also makes a division real), then the
divisor and the rows each side of a ratio or a share counts, the change over a base (the first period's),
the average number of things per owner, integer division, the question's date for today's, days (not divided
into a unit the question does not name, a date moved by days or by a year part plus days, calendar years as
dates moved by years, the question's number of days, to the first of several, the later date minus the
earlier, then both ends of them, weeks, a window after a date, the side of a moved date and a window before a
date) and distinct counts, a month as text, a day of the week or of a month, a part of a year, a whole year and
the first year after a date, one value where one is asked; the rounding last of the arithmetic, then the letter
case of comparisons."""


def findings(tree: exp.Expr, rules: Rules, env: Env) -> list[Finding]:
    """What ``tree`` breaks of ``rules``, every rule read on the tree as it is."""
    return [finding for rule in RULES for finding in rule(tree, rules, env)]


def repair(tree: exp.Expr, rules: Rules, env: Env) -> tuple[exp.Expr, list[str]]:
    """A copy of ``tree`` with every fix applied, rule after rule (each rule read on the tree the rules before
    it left), and what changed."""
    tree = tree.copy()
    fixes: list[str] = []
    for rule in RULES:
        for finding in rule(tree, rules, env):
            if finding.apply is not None:
                finding.apply()
                fixes.append(finding.fix)
    return tree, fixes


def problems(tree: exp.Expr, rules: Rules, env: Env) -> list[str]:
    """What ``tree`` breaks of ``rules``, in words."""
    return [finding.problem for finding in findings(tree, rules, env)]
