"""Date arithmetic written for another engine: on SQLite, which has no intervals, ``x + INTERVAL n unit`` and
``DATE_ADD``/``DATE_SUB`` become ``DATE(x, '+n unit')``; ``DATEDIFF(day, a, b)`` (the unit first and bare, as SQL
Server and Snowflake write it) becomes the engine's own count of days from ``a`` to ``b`` on SQLite and PostgreSQL,
and DuckDB's ``DATE_DIFF('day', a, b)`` on DuckDB. Snowflake reads it as written."""

from __future__ import annotations

import re

from sqlglot import exp
from sqlglot.errors import ErrorLevel

from ..common.date_nodes import interval_amount
from .problems import Option, PlannerBase, Problem

_DAY_WORDS = {"day", "days", "dd", "d"}  # the unit argument of a day count (SQL Server's abbreviations too)


class DateMathRepairs(PlannerBase):
    """Date arithmetic the engine does not read."""

    def _date_math_problems(self) -> list[Problem]:
        found: list[Problem] = []
        if self.engine == "sqlite":
            for node in list(self.tree.find_all(exp.Add, exp.Sub, exp.DateAdd, exp.DateSub)):
                if (option := self._shift(node)) is not None:
                    found.append(Problem([option]))
        if self.engine != "snowflake":  # Snowflake reads DATEDIFF(day, a, b) itself
            for diff in list(self.tree.find_all(exp.DateDiff)):
                if (option := self._days_between(diff)) is not None:
                    found.append(Problem([option]))
        return found

    def _shift(self, node: exp.Expr) -> Option | None:
        """``DATE(x, '±n unit')`` for ``x ± INTERVAL n unit``, ``INTERVAL n unit + x``, ``DATE_ADD(x, INTERVAL n
        unit)`` and ``DATE_SUB(...)``, on SQLite; None for any other node."""
        preview = _shifted(node)
        if preview is None:
            return None

        def apply() -> None:
            if (replacement := _shifted(node)) is not None:  # built now: an earlier fix may have changed x
                node.replace(replacement)

        before = node.sql(dialect="mysql", unsupported_level=ErrorLevel.IGNORE)  # as a model with MySQL habits
        return Option(f"{before} -> {preview.sql(dialect=self.dialect)} (SQLite has no intervals)", apply, node)

    def _days_between(self, diff: exp.DateDiff) -> Option | None:
        """The engine's days from ``a`` to ``b`` for ``DATEDIFF(day, a, b)``; None for a DATEDIFF of another
        shape or unit."""
        preview = self._days(diff)
        if preview is None:
            return None

        def apply() -> None:
            if (replacement := self._days(diff)) is not None:
                diff.replace(replacement)

        if isinstance(preview, exp.DateDiff):  # DuckDB's, the unit quoted
            before = f"DATEDIFF({diff.args['unit'].name.lower()}, {diff.expression.sql(dialect=self.dialect)}, " \
                     f"{diff.this.sql(dialect=self.dialect)})"
        else:
            start, end = preview.this.expression, preview.this.this  # the dates as the engine reads them
            before = f"DATEDIFF({diff.this.sql()}, {_argument(start).sql(dialect=self.dialect)}, " \
                     f"{_argument(end).sql(dialect=self.dialect)})"
        return Option(f"{before} -> {preview.sql(dialect=self.dialect)} (days from the second date to the third)",
                      apply, diff)

    def _days(self, diff: exp.DateDiff) -> exp.Expr | None:
        """The days from ``a`` to ``b`` of ``DATEDIFF(day, a, b)`` in the engine's arithmetic, or None."""
        if self.engine == "duckdb":  # DuckDB reads the unit first, but only quoted: written again, it is
            unit = diff.args.get("unit")
            bare = isinstance(unit, exp.Var) and re.search(rf'"{re.escape(unit.name)}"', self.error, re.IGNORECASE)
            return diff.copy() if bare else None
        unit, start, end = diff.this, diff.expression, diff.args.get("unit")
        if not is_day_unit_argument(unit) or start is None or end is None:
            return None
        if isinstance(end, exp.Var):  # the parser read a bare column name third as a unit, in capitals
            end = self._column_named(end.name)
        if self.engine == "sqlite":
            days = exp.Sub(this=exp.Anonymous(this="JULIANDAY", expressions=[end.copy()]),
                           expression=exp.Anonymous(this="JULIANDAY", expressions=[start.copy()]))
        else:
            days = exp.Sub(this=exp.Cast(this=end.copy(), to=exp.DataType.build("DATE")),
                           expression=exp.Cast(this=start.copy(), to=exp.DataType.build("DATE")))
        return exp.Paren(this=days)

    def _column_named(self, name: str) -> exp.Column:
        """A bare column of the schema named ``name`` in any case, spelled as the schema does."""
        columns = (c.name for table in self.catalog.schema.tables for c in table.columns)
        spelled = next((column for column in columns if column.lower() == name.lower()), name.lower())
        return exp.Column(this=self._ident(spelled))


def _shifted(node: exp.Expr) -> exp.Expr | None:
    """SQLite's ``DATE(x, '±n unit')`` for a date shifted by an interval, or None."""
    sign = "-" if isinstance(node, (exp.Sub, exp.DateSub)) else "+"
    start, interval = node.this, node.expression
    if isinstance(node, exp.Add) and isinstance(start, exp.Interval):
        start, interval = interval, start
    if not isinstance(interval, exp.Interval) or start is None or isinstance(start, exp.Interval):
        return None
    amount = interval_amount(interval)
    if amount is None or amount[0] < 0:
        return None
    modifier = f"{sign}{amount[0]} {amount[1]}s"  # SQLite's: '+5 days', '-1 months'
    return exp.Anonymous(this="DATE", expressions=[start.copy(), exp.Literal.string(modifier)])


def is_day_unit_argument(node: exp.Expr | None) -> bool:
    """Whether ``node`` is the unit word of a unit-first ``DATEDIFF`` counting days (``day``, ``'day'``,
    ``dd``): the column repairs leave it alone."""
    if node is None or not isinstance(node.parent, exp.DateDiff) or node.arg_key != "this":
        return False
    if isinstance(node, exp.Column) and not node.table:
        return node.name.lower() in _DAY_WORDS
    return isinstance(node, exp.Literal) and node.is_string and node.name.lower() in _DAY_WORDS


def _argument(node: exp.Expr) -> exp.Expr:
    """The date inside ``JULIANDAY(x)`` or ``CAST(x AS DATE)``."""
    return node.this if isinstance(node, exp.Cast) else node.expressions[0]
