"""Checks that read a candidate against the question's own words (``evidence``'s ``days``, ``joins``, ``counted``,
``grouping`` and one ``result`` check; all are among the vote's doubts):

- ``days``: a day of the year or of the month (``STRFTIME('%j', d)``, ``EXTRACT(DAY FROM d)``, ``DAYOFYEAR(d)``)
  of a date, read as a number (an output, or arithmetic) where the question asks for no day of a year, month or
  week: a calendar field counts the days since the first of its year or month, not the days between two dates.
  SQLite's ``STRFTIME('%j', x)`` of a number of days is no better: it reads the number as a Julian day. A
  filter on one is left alone, unless it compares it with a number the question gives as days ("more than 7
  days" as ``EXTRACT(DAY FROM d) > 7``);
- ``joins``: a table read for nothing but its join to one other table, which the question does not name (no
  word of its name), joined on columns that are not its whole primary key: each row of the rest of the query
  meets any number of its rows, so the join only repeats rows (or drops those without a match), and counts,
  sums and averages change with it. A table joined to two others links them (``course_arrange`` between
  ``course`` and ``teacher``) and is read for that;
- ``counted``: "how many orders ..." where a table is named by those words, and the SQL reads no such table
  (it counts the customers instead), nor a column named for them (``COUNT(DISTINCT customer_id)``);
- ``result``: a result whose every number is negative where the question asks how many days or how long: a
  time between two dates taken the wrong way round;
- ``grouping``: several rows of bare aggregates, one per group of a column the query does not show, where the
  question asks for one value (no "each", "per", "by", "which" or "list"); or several rows of no aggregate at
  all, where it asks for an average or a total.
"""

from __future__ import annotations

import re
from decimal import Decimal

from sqlglot import exp

from ..db.schema import Table
from ..report import Evidence
from ..results import ResultSet
from .common.catalog import Catalog
from .common.date_nodes import column_resolver, is_date_valued, without_conversions
from .common.operands import operand_of
from .common.terms import ASKS_PER_GROUP, named_in

_DAY_OF = re.compile(r"\b(?:day of (?:the )?(?:year|month|week)|which day|what day|weekday|day number)\b")
_DAY_FORMATS = ("%j", "%d")  # SQLite's day of the year and day of the month
_DAY_PARTS = ("DAY", "DOY", "DAYOFYEAR", "DAYOFMONTH")
_REPEATABLE = (exp.Count, exp.Sum, exp.Avg)  # aggregates whose value changes when rows repeat


def calendar_days(tree: exp.Expr | None, question: str, catalog: Catalog, dialect: str) -> list[Evidence]:
    """Against a day of the year or month of a date read as a number of days (see the module's docstring)."""
    if tree is None or _DAY_OF.search(question.lower()):
        return []
    column_of = column_resolver(tree, catalog)
    for node in tree.find_all(exp.TimeToStr, exp.Extract, exp.DayOfYear, exp.DayOfMonth, exp.Day):
        if not _day_field(node):
            continue
        if not isinstance(node, exp.TimeToStr) and not is_date_valued(without_conversions(_field_argument(node)),
                                                                      column_of):
            continue  # EXTRACT(DAY FROM a - b) reads the days of an interval
        if _read_as_number(node) or _compared_with_named_days(node, question):
            return [Evidence("days", "against", f"{node.sql(dialect=dialect)} is a day of the year "
                             "or month, not a number of days between two dates")]
    return []


def _compared_with_named_days(node: exp.Expr, question: str) -> bool:
    """Compared with a number the question gives as days ("took more than 7 days" as ``EXTRACT(DAY FROM d) >
    7``): a filter on the day of the month would name no number of days."""
    found = operand_of(node, (exp.GT, exp.GTE, exp.LT, exp.LTE))
    if found is None:
        return False
    other = found[1]
    return isinstance(other, exp.Literal) and not other.is_string and \
        re.search(rf"\b{re.escape(other.name)} days?\b", question.lower()) is not None


def _day_field(node: exp.Expr) -> bool:
    if isinstance(node, exp.TimeToStr):
        fmt = node.args.get("format")
        return isinstance(fmt, exp.Literal) and fmt.name in _DAY_FORMATS
    if isinstance(node, exp.Extract):
        return node.this.name.upper() in _DAY_PARTS
    return True


def _field_argument(node: exp.Expr) -> exp.Expr:
    return node.expression if isinstance(node, exp.Extract) else node.this


def _read_as_number(node: exp.Expr) -> bool:
    """An output of the query (alone or under an aggregate or arithmetic), or an operand of arithmetic."""
    parent = node.parent
    while isinstance(parent, (exp.Paren, exp.Cast, exp.AggFunc, exp.Alias)):
        node, parent = parent, parent.parent
    if isinstance(parent, (exp.Add, exp.Sub, exp.Mul, exp.Div)):
        return True
    return isinstance(parent, exp.Select) and node in parent.expressions


def repeating_joins(tree: exp.Expr | None, question: str, catalog: Catalog) -> list[Evidence]:
    """Against a join that only repeats rows (see the module's docstring)."""
    if tree is None:
        return []
    for select in tree.find_all(exp.Select):
        if select.args.get("distinct") or not _repeats_matter(select):
            continue
        for alias, table in _joined_tables(select, catalog).items():
            name = catalog.bare(table)
            if _named(name, question) or _reads_beyond_join(select, alias, table, catalog):
                continue
            keys, partners = _join_columns(select, alias)
            primary = {c.lower() for c in table.primary_key}
            if primary and not primary <= keys and len(partners) <= 1:
                return [Evidence("joins", "against", f"{name} is joined on {', '.join(sorted(keys)) or 'nothing'} "
                                 "and read for nothing else: its rows only repeat the others")]
    return []


def _repeats_matter(select: exp.Select) -> bool:
    """Whether repeated rows change the answer: no aggregate at all, or one that counts, sums or averages
    without DISTINCT."""
    outputs = [e.unalias() for e in select.expressions]
    aggregates = [a for e in outputs for a in e.find_all(exp.AggFunc)]
    if not aggregates:
        return not select.args.get("group")
    return any(isinstance(a, _REPEATABLE) and not isinstance(a.this, exp.Distinct) for a in aggregates)


def _joined_tables(select: exp.Select, catalog: Catalog) -> dict[str, Table]:
    """The query's own tables by alias (lower case), when it joins two or more and every join has a
    condition."""
    joins = select.args.get("joins") or []
    sources = [select.args.get("from_"), *joins]
    if not joins or any(not (j.args.get("on") or j.args.get("using")) for j in joins):
        return {}
    found: dict[str, Table] = {}
    for source in sources:
        node = source.this if source is not None else None
        if isinstance(node, exp.Table) and (table := catalog.table(node.name)) is not None:
            found[node.alias_or_name.lower()] = table
    return found


def _conditions(select: exp.Select) -> list[exp.Expr]:
    return [j.args["on"] for j in select.args.get("joins") or [] if j.args.get("on") is not None]


def _name_words(table_name: str) -> list[str]:
    """The words of a table's name (``leave_requests``: leave, requests)."""
    return [word for word in re.split(r"[_\W]+", table_name) if word]


def _named(table_name: str, question: str) -> bool:
    """Whether the question names a word of the table's name (``concerts`` names ``singer_in_concert``)."""
    return any(len(word) > 2 and named_in(word, question) for word in _name_words(table_name))


def _join_columns(select: exp.Select, alias: str) -> tuple[set[str], set[str]]:
    """The columns of ``alias`` its join conditions equate with other tables' (lower case), and those tables'
    aliases (a ``USING`` join's other side counts as one unnamed table)."""
    keys: set[str] = set()
    partners: set[str] = set()
    for condition in _conditions(select):
        for eq in condition.find_all(exp.EQ):
            sides = [side for side in (eq.this, eq.expression) if isinstance(side, exp.Column)]
            if any(side.table.lower() == alias for side in sides):
                keys.update(side.name.lower() for side in sides if side.table.lower() == alias)
                partners.update(side.table.lower() for side in sides if side.table.lower() != alias)
    for join in select.args.get("joins") or []:
        for ident in join.args.get("using") or []:
            keys.add(ident.name.lower())
            partners.add("")
    return keys, partners


def _reads_beyond_join(select: exp.Select, alias: str, table: Table, catalog: Catalog) -> bool:
    """Whether the query reads a column of ``alias`` outside the join conditions (an unqualified column the
    table has counts as read: the check stays silent where it cannot tell)."""
    inside = {id(node) for condition in _conditions(select) for node in condition.walk()}
    for column in select.find_all(exp.Column):
        if id(column) in inside:
            continue
        if column.table.lower() == alias or (not column.table and catalog.column(table, column.name) is not None):
            return True
    return any(isinstance(star, exp.Star) for star in select.expressions)  # alias.* is a column, read above


_HOW_MANY = re.compile(r"\bhow many (\w+)(?: (\w+))?", re.IGNORECASE)


def counted_table(tree: exp.Expr | None, question: str, catalog: Catalog) -> list[Evidence]:
    """Against a query that reads no table of the things the question counts (see the module's docstring)."""
    match = _HOW_MANY.search(question)
    if tree is None or match is None:
        return []
    counted = " ".join(word for word in match.groups() if word)
    read = [table for node in tree.find_all(exp.Table) if (table := catalog.table(node.name)) is not None]
    if not read or any(_names_all(catalog.bare(t), counted) for t in read):
        return []  # the common case, settled without reading the whole schema
    wanted = [t for t in catalog.schema.tables if _names_all(catalog.bare(t), counted)]
    if not wanted:
        return []
    columns = {column.name.replace("_", " ") for column in tree.find_all(exp.Column)}
    if any(_names_all(catalog.bare(t), column) for t in wanted for column in columns):
        return []  # COUNT(DISTINCT customer_id) counts the customers through another table
    names = " or ".join(catalog.bare(t) for t in wanted[:2])
    return [Evidence("counted", "against", f"the question counts {match.group(1)}, and the SQL reads no {names} "
                     "table")]


def _names_all(table_name: str, words: str) -> bool:
    """Whether every word of the table's name is one of ``words`` (``leave_requests`` in "leave requests")."""
    parts = _name_words(table_name)
    return bool(parts) and all(named_in(word, words) for word in parts)


_DURATION = re.compile(r"\b(?:how many days|number of days|how long|in days|days (?:between|after|before|from|"
                       r"did|does|do|passed|elapsed))\b", re.IGNORECASE)


def negative_duration(result: ResultSet, question: str) -> list[Evidence]:
    """Against a result whose every number is negative where the question asks how long."""
    numbers = [v for row in result.rows for v in row
               if isinstance(v, (int, float, Decimal)) and not isinstance(v, bool)]
    if not numbers or not _DURATION.search(question) or any(v >= 0 for v in numbers):
        return []
    return [Evidence("result", "against", "every number of the result is negative, where the question asks how "
                     "long: the dates are subtracted the wrong way round")]


_ONE_AGGREGATE = re.compile(r"\b(?:average|mean|in total|total|sum)\b", re.IGNORECASE)


def split_into_groups(tree: exp.Expr | None, result: ResultSet, question: str) -> list[Evidence]:
    """Against several rows of bare aggregates (``GROUP BY`` a column the query does not show) where the question
    asks for one value: no "each", "per", "by", "which" or "list" in it; and against several rows of a query that
    aggregates nothing, anywhere, where it asks for an average or a total (one row per record, left to the reader
    to add up; "more than the average" is a subquery's aggregate)."""
    if not isinstance(tree, exp.Select) or result.row_count < 2 or ASKS_PER_GROUP.search(question):
        return []
    group = tree.args.get("group")
    outputs = [e.unalias() for e in tree.expressions]
    if group is None and outputs and _ONE_AGGREGATE.search(question) and tree.find(exp.AggFunc, exp.Window) is None:
        return [Evidence("grouping", "against", f"the SQL gives {result.row_count} rows and no average or total, "
                         "where the question asks for one")]
    if group is None or tree.args.get("having") or not outputs:
        return []
    if not all(e.find(exp.AggFunc) is not None for e in outputs):
        return []
    keys = ", ".join(key.sql() for key in group.expressions)
    return [Evidence("grouping", "against", f"the SQL gives one value for each {keys} ({result.row_count} rows), "
                     "where the question asks for one")]
