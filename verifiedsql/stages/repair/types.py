"""Types, from the reflected column types and samples: date parts of columns that are not dates, the day of a
difference of dates (a number already), text compared with numbers, string functions on non-text columns,
number functions on text holding numbers, and PostgreSQL's rounding to decimal places (NUMERIC only)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.scope import Scope

from ...db.schema import Column
from ..common.catalog import has as _has
from ..common.catalog import own_nodes as _own_nodes
from ..common.catalog import sources as _sources
from ..common.facts import as_number, date_like, holds_years, is_year_number
from ..common.frames import column_kind
from .dialect import date_part
from .problems import COMPARISONS, Option, PlannerBase, Problem

Kind = Literal["int", "num", "text", "date", "bool", "other"]
STRICT_TYPES = frozenset({"postgresql", "duckdb", "snowflake"})  # engines that refuse mixed-type comparisons
DAYS_BETWEEN_DATES = frozenset({"postgresql", "duckdb"})  # engines where date - date is a number of days

_FAMILY: dict[str, Kind] = {"int": "int", "float": "num", "bool": "bool", "date": "date", "timestamp": "date",
                            "time": "date", "text": "text", "any": "other"}


def kind_of(type_text: str) -> Kind:
    """The family of a reflected column type (``common.frames.column_kind``, with dates and times as one)."""
    return _FAMILY[column_kind(type_text)]


_STRING_FUNCTIONS: tuple[type[exp.Expr], ...] = tuple(
    getattr(exp, name) for name in (
        "Lower", "Upper", "Substring", "Length", "Trim", "Left", "Right", "StrPosition", "Initcap", "Reverse",
    ) if hasattr(exp, name)
)
_NUMBER_FUNCTIONS: tuple[type[exp.Expr], ...] = (exp.Avg, exp.Sum, exp.Stddev, exp.Variance, exp.Round, exp.Abs)


class TypeRepairs(PlannerBase):
    """Type mismatches the strict engines refuse, and date parts of columns that are not dates."""

    def _column_of(self, scope: Scope, node: exp.Expr) -> Column | None:
        """The schema column that ``node`` (a column reference) reads, when one table in scope has it."""
        if not isinstance(node, exp.Column) or not isinstance(node.this, exp.Identifier):
            return None
        if node.table:
            source = self._find_source(scope, node.table)
            holders = [source] if source is not None else []
        else:
            holders = [s for s in _sources(scope, self.catalog).values() if _has(self.catalog, s, node.this)]
        if len(holders) != 1 or holders[0].table is None:
            return None
        return self.catalog.column(holders[0].table, node.this) or holders[0].table.column(node.name)

    def _kind(self, scope: Scope, node: exp.Expr) -> Kind | None:
        """The type family of ``node``: a literal, a cast, a count or average, a subquery's one output, or a
        column of a table in scope; None when it cannot be told."""
        if isinstance(node, exp.Literal):
            return "text" if node.is_string else ("int" if node.is_int else "num")
        if isinstance(node, exp.Cast):
            return kind_of(node.to.sql())
        if isinstance(node, exp.Count):
            return "int"
        if isinstance(node, exp.Avg):
            return "num"
        if (inner := self._output(node)) is not None:
            return self._kind(*inner)
        column = self._column_of(scope, node)
        return kind_of(column.type) if column is not None else None

    def _output(self, node: exp.Expr) -> tuple[Scope, exp.Expr] | None:
        """The scope and the one output expression of a subquery that selects one thing."""
        if not isinstance(node, exp.Subquery) or not isinstance(node.this, exp.Select) \
                or len(node.this.expressions) != 1 or (inner := self.scopes.get(id(node.this))) is None:
            return None
        return inner, node.this.expressions[0].unalias()

    def _type_problems(self, scope: Scope) -> list[Problem]:
        found: list[Problem] = []
        for node in _own_nodes(scope):
            if (option := self._date_function(scope, node)) is not None:
                found.append(Problem([option]))
            if (option := self._day_of_days(scope, node)) is not None:
                found.append(Problem([option]))
            if (option := self._round_places(scope, node)) is not None:
                found.append(Problem([option]))
            if self.engine not in STRICT_TYPES:
                continue
            compares = isinstance(node, COMPARISONS) \
                or (isinstance(node, exp.In) and isinstance(node.args.get("query"), exp.Subquery))
            if compares and (options := self._comparison(scope, node)):
                found.append(Problem(options))
            if isinstance(node, (exp.Like, exp.ILike, *_STRING_FUNCTIONS)) \
                    and (option := self._to_text(scope, node)) is not None:
                found.append(Problem([option]))
            if isinstance(node, _NUMBER_FUNCTIONS) and (option := self._to_number(scope, node)) is not None:
                found.append(Problem([option]))
        return found

    def _date_function(self, scope: Scope, node: exp.Expr) -> Option | None:
        """A year, month or day taken from a column that is not a date: a year column itself, a text year
        cast to a number, or text holding dates cast to a date (on the engines that refuse text there)."""
        found = date_part(node)
        if found is None:
            return None
        part, argument = found
        column = self._column_of(scope, argument)
        if column is None or kind_of(column.type) == "date":
            return None
        kind = kind_of(column.type)
        samples = column.samples
        target: exp.Expr = node.parent if isinstance(node.parent, exp.Cast) else node
        build: Callable[[], exp.Expr]
        if part == "YEAR" and holds_years(column):
            def build() -> exp.Expr:
                return argument.copy()
            why = "holds years"
        elif part == "YEAR" and kind == "text" and samples and all(is_year_number(v) for v in samples):
            def build() -> exp.Expr:
                return exp.Cast(this=argument.copy(), to=exp.DataType.build("INT"))
            why = "text holding years"
        elif kind == "text" and self.engine in STRICT_TYPES and samples and all(date_like(v) for v in samples):
            to = "TIMESTAMP" if any(date_like(v) == "timestamp" for v in samples) else "DATE"
            target = argument

            def build() -> exp.Expr:
                return exp.Cast(this=argument.copy(), to=exp.DataType.build(to))
            why = "text holding dates"
        else:
            return None
        written = argument.sql(dialect=self.dialect)
        description = f"{target.sql(dialect=self.dialect)} -> {build().sql(dialect=self.dialect)} ({written} {why})"
        return Option(description, lambda: target.replace(build()), target)

    def _day_of_days(self, scope: Scope, node: exp.Expr) -> Option | None:
        """``EXTRACT(DAY FROM (a - b))`` of two dates where the engine's ``a - b`` is already a number of days
        (an interval only between timestamps), which it refuses to take a day from: the difference itself."""
        found = date_part(node)
        if self.engine not in DAYS_BETWEEN_DATES or found is None or found[0] != "DAY":
            return None
        difference = found[1]
        while isinstance(difference, exp.Paren):
            difference = difference.this
        if not isinstance(difference, exp.Sub) \
                or not all(self._a_date(scope, side) for side in (difference.this, difference.expression)):
            return None
        target: exp.Expr = node.parent if isinstance(node.parent, exp.Cast) else node

        def build() -> exp.Expr:
            return exp.paren(difference.copy())
        description = (f"{target.sql(dialect=self.dialect)} -> {build().sql(dialect=self.dialect)} (a difference "
                       f"of dates is a number of days on {self.engine})")
        return Option(description, lambda: target.replace(build()), target)

    def _round_places(self, scope: Scope, node: exp.Expr) -> Option | None:
        """``ROUND(x, n)`` on PostgreSQL, which rounds to decimal places only a NUMERIC (``ROUND(double
        precision, integer)`` does not exist): ``x`` cast to NUMERIC where it is not an integer, text or a
        NUMERIC already."""
        if self.engine != "postgresql" or not isinstance(node, exp.Round) or node.args.get("decimals") is None:
            return None
        argument = node.this
        if isinstance(argument, exp.Cast) and argument.to.is_type(exp.DataType.Type.DECIMAL):
            return None
        if self._kind(scope, argument) in ("int", "text", "date", "bool"):
            return None
        return self._cast(argument, "NUMERIC", "PostgreSQL rounds to decimal places only a NUMERIC")

    def _a_date(self, scope: Scope, node: exp.Expr) -> bool:
        """A date without a time: a DATE column (by its reflected type), its MIN or MAX, a cast to DATE, or
        ``CURRENT_DATE``."""
        while isinstance(node, exp.Paren):
            node = node.this
        if isinstance(node, exp.CurrentDate):
            return True
        if isinstance(node, (exp.Max, exp.Min)):
            return self._a_date(scope, node.this)
        if isinstance(node, exp.Cast):
            return node.to.this == exp.DataType.Type.DATE
        column = self._column_of(scope, node)
        return column is not None and column_kind(column.type) == "date"

    def _comparison(self, scope: Scope, node: exp.Expr) -> list[Option]:
        """Text compared with a number (by a comparison operator or ``IN (subquery)``): cast the text side when
        its sampled values all read as numbers, else the number side to text. A date compared with a year
        number: compare its year."""
        left = node.this
        right = node.args["query"] if isinstance(node, exp.In) else node.expression
        options: list[Option] = []
        for text_side, number_side in ((left, right), (right, left)):
            text_kind, number_kind = self._kind(scope, text_side), self._kind(scope, number_side)
            if text_kind == "text" and number_kind in ("int", "num"):
                text_at, text_node = self._output(text_side) or (scope, text_side)
                number_at, number_node = self._output(number_side) or (scope, number_side)
                column = self._column_of(text_at, text_node)
                number_type = "BIGINT" if number_kind == "int" else "DOUBLE PRECISION"
                if (other := self._column_of(number_at, number_node)) is not None:
                    number_type = other.type
                if column is not None and column.samples and all(as_number(v) is not None for v in column.samples):
                    options.append(self._cast(text_node, number_type, "its values are numbers"))
                if isinstance(number_node, exp.Literal):
                    options.append(self._quote(number_node))
                elif other is not None:
                    options.append(self._cast(number_node, "TEXT", "compared with text"))
            if text_kind == "date" and isinstance(number_side, exp.Literal) and is_year_number(number_side.this) \
                    and not number_side.is_string:
                options.append(self._year_of(text_side))
        return options

    def _cast(self, node: exp.Expr, type_text: str, why: str) -> Option:
        try:
            to = exp.DataType.build(type_text, dialect=self.dialect)
        except (SqlglotError, ValueError):
            to = exp.DataType.build("TEXT")
        preview = exp.Cast(this=node.copy(), to=to.copy()).sql(dialect=self.dialect)
        return Option(f"{node.sql(dialect=self.dialect)} -> {preview} ({why})",
                       lambda: node.replace(exp.Cast(this=node.copy(), to=to.copy())), node)

    def _quote(self, literal: exp.Literal) -> Option:
        return Option(f"{literal.sql()} -> '{literal.this}' (compared with text)",
                       lambda: literal.replace(exp.Literal.string(str(literal.this))), literal)

    def _year_of(self, node: exp.Expr) -> Option:
        def build() -> exp.Expr:
            return exp.Extract(this=exp.var("YEAR"), expression=node.copy())
        return Option(f"{node.sql(dialect=self.dialect)} -> {build().sql(dialect=self.dialect)} "
                       "(a date compared with a year)", lambda: node.replace(build()), node)

    def _to_number(self, scope: Scope, node: exp.Expr) -> Option | None:
        """AVG, SUM and the like of a text column whose sampled values are all numbers: cast it to a number."""
        argument = node.this
        column = self._column_of(scope, argument)
        if column is None or kind_of(column.type) != "text" or not column.samples \
                or not all(as_number(v) is not None for v in column.samples):
            return None
        return self._cast(argument, "NUMERIC", f"{node.key.upper()}() of text holding numbers")

    def _to_text(self, scope: Scope, node: exp.Expr) -> Option | None:
        argument = node.this
        kind = self._kind(scope, argument)
        if kind is None or kind in ("text", "other") or isinstance(argument, exp.Literal):
            return None
        what = "LIKE" if isinstance(node, (exp.Like, exp.ILike)) else f"{node.key.upper()}()"
        return self._cast(argument, "TEXT", f"{what} on a {kind} column")
