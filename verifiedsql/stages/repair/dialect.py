"""Dialect functions: a function the engine does not know, read as MySQL and written in the engine's
dialect by sqlglot; on SQLite, date parts through ``STRFTIME``. Also the reader of date-part calls."""

from __future__ import annotations

import re

import sqlglot
from sqlglot import exp
from sqlglot.errors import ErrorLevel, SqlglotError

from .problems import Option, PlannerBase, Problem

_FUNCTION_ERRORS = (
    re.compile(r"no such function: (\w+)", re.IGNORECASE),
    re.compile(r"function (\w+)\(\) is not allowed .*not a function this database knows", re.IGNORECASE),
    re.compile(r"function (?:\w+\.)?(\w+)\([^)]*\) does not exist", re.IGNORECASE),
    re.compile(r"function with name \"?(\w+)\"? does not exist", re.IGNORECASE),
    re.compile(r"unknown function:? \"?(\w+)", re.IGNORECASE),
)

_PARTS = {"YEAR": "%Y", "MONTH": "%m", "DAY": "%d"}
_DAY_OF_YEAR = {"DOY": "%j", "DAYOFYEAR": "%j"}
_WEEK_OF_YEAR = {"WEEK": "%W", "WEEKOFYEAR": "%U", "ISOWEEK": "%V"}  # Monday-first, Sunday-first, ISO weeks
_PART_CALLS = ((exp.Year, "YEAR"), (exp.Month, "MONTH"), (exp.Day, "DAY"), (exp.DayOfYear, "DOY"),
               (exp.Week, "WEEK"), (exp.WeekOfYear, "WEEK"))


class FunctionRepairs(PlannerBase):
    """Functions the engine does not know."""

    def _function_problems(self) -> list[Problem]:
        """Functions the engine does not know, as the error names them: read as MySQL and written in the
        engine's dialect by sqlglot; on SQLite, date parts through STRFTIME."""
        named = {m.group(1).lower() for pattern in _FUNCTION_ERRORS for m in pattern.finditer(self.error)}
        if self.engine != "sqlite":
            named -= {"extract", "date_part"}  # on the others, a type error: see _type_problems
        if not named:
            return []
        found: list[Problem] = []
        for node in list(self.tree.find_all(exp.Func)):
            name = (node.name if isinstance(node, exp.Anonymous) else node.sql_name()).lower()
            date_part = isinstance(node, (exp.Year, exp.Month, exp.Day, exp.Extract))
            if name in named or (self.engine == "sqlite" and date_part):
                if (option := self._translation(node)) is not None:
                    found.append(Problem([option]))
        return found

    def _translation(self, node: exp.Func) -> Option | None:
        before = node.sql(dialect="mysql")  # as a model with MySQL habits wrote it

        def translated() -> exp.Expr | None:
            replacement: exp.Expr | None = None
            if isinstance(node, exp.Anonymous):
                parsed = sqlglot.parse_one(node.sql(dialect="mysql"), read="mysql")
                if parsed is not None and not isinstance(parsed, exp.Anonymous):
                    replacement = parsed
            if self.engine == "sqlite":
                replacement = _sqlite_date_part(replacement or node) or replacement
            return replacement

        try:
            preview = translated()
            # a construct the dialect lacks is written as sqlglot can, without a warning on the user's stderr; the
            # engine then refuses it and the next attempt goes on (raising here would change the recorded runs)
            after = (preview or node).sql(dialect=self.dialect, unsupported_level=ErrorLevel.IGNORE)
        except (SqlglotError, RecursionError, ValueError):
            return None
        if not after or after == before and preview is None:
            return None

        def apply() -> None:
            if (replacement := translated()) is not None:
                node.replace(replacement)

        return Option(f"{before} -> {after} (written for {self.dialect})", apply, node)


def date_part(node: exp.Expr) -> tuple[str, exp.Expr] | None:
    """(YEAR/MONTH/DAY, the argument) of a date-part call: YEAR(x), EXTRACT(YEAR FROM x),
    DATE_PART('year', x), STRFTIME('%Y', x)."""
    return _part_call(node, _PARTS)


def day_of_year(node: exp.Expr) -> exp.Expr | None:
    """The argument of a day-of-year call (``STRFTIME('%j', x)``, ``EXTRACT(DOY FROM x)``, ``DAYOFYEAR(x)``),
    or None."""
    found = _part_call(node, _DAY_OF_YEAR)
    return found[1] if found is not None else None


def week_of_year(node: exp.Expr) -> exp.Expr | None:
    """The argument of a week-of-the-year call (``STRFTIME('%W', x)``, ``EXTRACT(WEEK FROM x)``, ``WEEK(x)``),
    or None."""
    found = _part_call(node, _WEEK_OF_YEAR)
    return found[1] if found is not None else None


def _part_call(node: exp.Expr, parts: dict[str, str]) -> tuple[str, exp.Expr] | None:
    """(the part, the argument) of a call that takes one of ``parts`` (its name -> its STRFTIME format) from a
    date, in any of the spellings the engines and the models use; None for any other node."""
    for cls, part in _PART_CALLS:
        if isinstance(node, cls):
            return (part, _unwrap_date(node.this)) if part in parts else None
    if isinstance(node, exp.Extract):
        part = node.this.name.upper() if isinstance(node.this, (exp.Var, exp.Identifier, exp.Literal)) else ""
        return (part, _unwrap_date(node.expression)) if part in parts else None
    if isinstance(node, exp.TimeToStr):
        pair = (node.args.get("format"), node.this)
        for fmt, argument in (pair, pair[::-1]):  # DuckDB's STRFTIME(x, fmt) written as SQLite's (fmt, x)
            if isinstance(fmt, exp.Literal) and argument is not None and not isinstance(argument, exp.Literal):
                named = next((p for p, f in parts.items() if fmt.name == f), "")
                return (named, _unwrap_date(argument)) if named else None
        return None
    if isinstance(node, exp.Anonymous) and node.name.lower() in ("date_part", "datepart", "strftime") \
            and len(node.expressions) == 2:
        first, second = node.expressions
        if node.name.lower() == "strftime":
            part = next((p for p, f in parts.items() if isinstance(first, exp.Literal) and first.name == f), "")
        else:
            part = first.name.upper() if isinstance(first, (exp.Literal, exp.Var, exp.Column)) else ""
        return (part, _unwrap_date(second)) if part in parts else None
    return None


def _unwrap_date(node: exp.Expr) -> exp.Expr:
    """``x`` from the date conversions sqlglot wraps arguments in (``DATE(x)``, ``CAST(x AS DATE)``)."""
    while isinstance(node, (exp.TsOrDsToDate, exp.Date, exp.TsOrDsToTimestamp)) and node.this is not None:
        node = node.this
    return node


def _sqlite_date_part(node: exp.Expr) -> exp.Expr | None:
    """``CAST(STRFTIME('%Y', x) AS INTEGER)`` for a year, month or day part, on SQLite."""
    found = date_part(node)
    if found is None or isinstance(node, exp.TimeToStr) or isinstance(node, exp.Anonymous):
        return None
    part, argument = found
    call = exp.Anonymous(this="STRFTIME", expressions=[exp.Literal.string(_PARTS[part]), argument.copy()])
    return exp.Cast(this=call, to=exp.DataType.build("INTEGER"))
