"""Question constraints (PV-SQL's ten types): extracted by high-precision rules, checked on the SQL's AST.

``extract_constraints`` reads the question (and any hint) and returns what the answer's SQL must contain:
a top-k asks for ``ORDER BY ... LIMIT k``, a percentage for a division that is not integer division, and
so on. Rules favour precision over recall: a missed constraint costs nothing, a wrong one triggers a
needless repair. ``check_constraints`` parses a candidate in the engine's dialect with sqlglot and returns
a ``Violation`` per unmet constraint, with a message a repair prompt can quote.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TypeVar

from sqlglot import exp

from ...guard.safety import parse_one_query
from ...profiles import DialectProfile, profile_for

E = TypeVar("E", bound=exp.Expression)


class ConstraintType(StrEnum):
    DISTINCT = "distinct"
    TOP_K = "top_k"
    RANKING = "ranking"
    COUNT = "count"
    PERCENTAGE = "percentage"
    SUM = "sum"
    AVERAGE = "average"
    EXTREME = "extreme"
    TEMPORAL = "temporal"
    COMPARISON = "comparison"


@dataclass(frozen=True)
class Constraint:
    """One requirement of the question. ``span`` is the question text that triggered it."""

    type: ConstraintType
    span: str
    k: int | None = None  # top-k: how many rows
    descending: bool | None = None  # ranking: the requested sort direction, when the question says it
    year: int | None = None  # temporal: the year the question names

    def describe(self) -> str:
        """The requirement in words, for a generation or repair prompt."""
        needs = {
            ConstraintType.DISTINCT: "unique values (DISTINCT or GROUP BY on the returned column)",
            ConstraintType.TOP_K: f"the top {self.k} rows (ORDER BY on the outermost query and LIMIT {self.k})",
            ConstraintType.RANKING: "sorted rows (ORDER BY on the outermost query"
            + {None: ")", True: ", descending)", False: ", ascending)"}[self.descending],
            ConstraintType.COUNT: "a count (COUNT, or SUM of counts)",
            ConstraintType.PERCENTAGE: "a percentage or ratio (a division that is not integer division)",
            ConstraintType.SUM: "a total (SUM)",
            ConstraintType.AVERAGE: "an average (AVG, or SUM / COUNT)",
            ConstraintType.EXTREME: "an extreme value (MAX/MIN, or ORDER BY with LIMIT)",
            ConstraintType.TEMPORAL: f"a filter on the year {self.year}" if self.year
            else "the latest or earliest by a date column (ORDER BY or MAX/MIN on it)",
            ConstraintType.COMPARISON: "a comparison (>, <, >=, <= or BETWEEN) in WHERE or HAVING",
        }
        return f'"{self.span}" needs {needs[self.type]}'


@dataclass(frozen=True)
class Violation:
    constraint: Constraint
    message: str


# ----------------------------------------------------------------------------------------------- extraction

NUMBER_WORDS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
    "ten": 10, "eleven": 11, "twelve": 12, "fifteen": 15, "twenty": 20,
}
_NUMBER = r"(\d{1,3}|" + "|".join(NUMBER_WORDS) + r")"
# Words ending in -est that are not superlatives.
_NOT_SUPERLATIVE = (
    "interest|forest|request|guest|test|west|rest|nest|chest|contest|quest|priest|suggest|harvest|honest|"
    "modest|protest|arrest|digest|manifest|invest|inquest|conquest|midwest|southwest|northwest|budapest|"
    "bucharest|pest|vest|zest|crest|jest|everest|latest|earliest|newest|est"
)
_SUPERLATIVE = rf"(?:most|least|fewest|best|worst|(?!(?:{_NOT_SUPERLATIVE})\b)[a-z]{{2,}}est)"
_EXTREME_WORD = rf"(?:maximum|minimum|max|min|{_SUPERLATIVE})"
_TOP_WORD = rf"(?:{_SUPERLATIVE}|latest|newest|earliest)"
_UNITS = r"(?:letters?|characters?|digits?|words?|years?|months?|weeks?|days?|hours?|minutes?|seconds?|decades?)"
# "from the highest to the lowest", "ordered by ... from oldest to youngest": a sort, not an extreme.
_SORT_RANGE = rf"\bfrom (?:the )?{_EXTREME_WORD} to (?:the )?{_EXTREME_WORD}\b"
_YEAR = r"(1[89]\d\d|20\d\d)"
_MONTHS = "january|february|march|april|may|june|july|august|september|october|november|december"
_QUOTED = re.compile(r"\"[^\"]*\"|(?<![a-z0-9])'[^']*'(?![a-z0-9])|“[^”]*”|‘[^’]*’")


_Params = dict[str, int | bool | None]


@dataclass(frozen=True)
class _Rule:
    type: ConstraintType | None  # None: a guard that consumes its span and yields nothing
    pattern: re.Pattern[str]
    build: Callable[[re.Match[str]], _Params]


def _k(match: re.Match[str]) -> _Params:
    word = next(group for group in match.groups() if group and re.fullmatch(_NUMBER, group))
    return {"k": int(word) if word.isdigit() else NUMBER_WORDS[word]}


def _direction(match: re.Match[str]) -> _Params:
    """The first direction word decides: "from highest to lowest" is descending, "reverse alphabetical" too."""
    first = re.search(r"descending|decreasing|reverse|high|large|big|great|most|ascending|increasing|"
                      r"alphabetic|low|small|least|fewest", match.group(0))
    if first is None:
        return {"descending": None}
    return {"descending": first.group(0) in {"descending", "decreasing", "reverse", "high", "large", "big",
                                             "great", "most"}}


def _rule(kind: ConstraintType, pattern: str, build: Callable[[re.Match[str]], _Params] | None = None) -> _Rule:
    return _Rule(kind, re.compile(pattern), build or (lambda match: {}))


def _guard(pattern: str) -> _Rule:
    return _Rule(None, re.compile(pattern), lambda match: {})


# Ordered: a span consumed by an earlier rule is not matched again (so "the 3 oldest" is a top-k, not an
# extreme, and "at least" is never an extreme).
RULES: tuple[_Rule, ...] = (
    _rule(ConstraintType.COMPARISON, rf"\bat (?:least|most) (?!(?:one|1)\b){_NUMBER}\b"),
    _guard(r"\bat (?:least|most)\b"),  # "at least one" is existence; "at most" with no number is vague
    _rule(ConstraintType.TOP_K, rf"\b(?:top|first|bottom|last) {_NUMBER}\b(?![-%])(?! {_UNITS}\b)", _k),
    _rule(ConstraintType.TOP_K, rf"\b(?!one\b){_NUMBER} {_TOP_WORD}\b", _k),
    _rule(ConstraintType.TOP_K, rf"\b{_EXTREME_WORD} (?!one\b){_NUMBER}\b(?![-%])"
          rf"(?! (?:and|or|to|percent|{_UNITS})\b)", _k),
    _rule(ConstraintType.COMPARISON, r"\bno (?:more|less|fewer) than\b"),
    _rule(ConstraintType.COMPARISON, r"\b(?:more|less|fewer|greater|larger|smaller|higher|lower|bigger|older|"
          r"younger|longer|shorter|cheaper|heavier|lighter|taller|earlier|later) than\b"),
    _rule(ConstraintType.COMPARISON, r"\b(?:above|below|over|under|exceeds?|exceeding) (?:\d[\d,.]*|the average\b)"),
    _rule(ConstraintType.COMPARISON, r"\bbetween \d[\d,.]* and \d[\d,.]*"),
    _rule(ConstraintType.RANKING, rf"{_SORT_RANGE}(?: order)?", _direction),
    _rule(ConstraintType.RANKING, r"\b(?:in|by) (?:ascending|descending|increasing|decreasing|alphabetical|"
          r"reverse alphabetical|alphabetic|lexicographic) order\b", _direction),
    _guard(r"\b(?:ordered|purchased|bought) by (?:the |a |each )?(?:customers?|clients?|users?|buyers?|people)\b"),
    _rule(ConstraintType.RANKING, r"\b(?:sorted|sort|ordered|order|ranked|rank|listed) (?:them |the results? )?"
          r"(?:(?:ascending|descending)(?:ly)? )?by\b", _direction),
    _rule(ConstraintType.RANKING, r"\b(?:in order of|alphabetically)\b", _direction),
    _rule(ConstraintType.TEMPORAL, r"\b(?:most recent(?:ly)?|latest|newest|earliest)\b"),
    _rule(ConstraintType.TEMPORAL, rf"\b(?:in|during|before|after|since|until|till|from|of|year) (?:the year )?"
          rf"(?:(?:{_MONTHS}) (?:\d{{1,2}},? )?)?{_YEAR}\b(?!\s*(?:%|percent))",
          lambda m: {"year": int(m.group(1))}),
    _rule(ConstraintType.PERCENTAGE, r"\b(?:percentage|percent|proportion|ratio|fraction of)\b|%"),
    _rule(ConstraintType.AVERAGE, r"\b(?:average|avg)\b|\b(?:the|a) mean\b"),
    _rule(ConstraintType.COUNT, r"\bhow many\b|\b(?:the|a) (?:total )?number of\b|\bcount\b"),
    _rule(ConstraintType.SUM, r"\b(?:sum|combined)\b|\btotal\b(?! (?:number|count)\b)(?<!\bin total)"),
    _rule(ConstraintType.EXTREME, rf"\b{_EXTREME_WORD}\b"),
    _rule(ConstraintType.DISTINCT, r"\b(?:distinct|unique|different|deduplicated?|no duplicates?)\b"
          r"(?! (?:from|than|to)\b)"),
)


def normalize(text: str) -> str:
    """Lower-case, mask quoted literals (their words are values, not instructions), single spaces."""
    masked = _QUOTED.sub(" _value_ ", text)
    return re.sub(r"\s+", " ", masked.lower().replace("’", "'")).strip()


def extract_constraints(question: str, hint: str | None = None) -> list[Constraint]:
    """Constraints in ``question`` and ``hint``, one per type and parameters, ordered by type."""
    found: dict[tuple[object, ...], Constraint] = {}
    for text in (question, hint or ""):
        for constraint in _extract(normalize(text)):
            key = (constraint.type, constraint.k, constraint.descending, constraint.year)
            found.setdefault(key, constraint)
    return sorted(found.values(), key=lambda c: list(ConstraintType).index(c.type))


def _extract(text: str) -> Iterator[Constraint]:
    taken: list[tuple[int, int]] = []
    for rule in RULES:
        for match in rule.pattern.finditer(text):
            start, end = match.span()
            if any(start < t_end and t_start < end for t_start, t_end in taken):
                continue
            taken.append((start, end))
            if rule.type is not None:
                yield Constraint(rule.type, match.group(0), **rule.build(match))  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------------- checking


def check_constraints(
    sql: str | exp.Expression, constraints: Sequence[Constraint], dialect: str | DialectProfile = "sqlite"
) -> list[Violation]:
    """The constraints ``sql`` does not meet. ``dialect`` is a SQLAlchemy dialect name or a profile.

    Raises ``UnparseableSQLError`` when the SQL cannot be parsed in that dialect.
    """
    profile = dialect if isinstance(dialect, DialectProfile) else profile_for(dialect)
    tree = parse_one_query(sql, profile) if isinstance(sql, str) else sql
    while isinstance(tree, exp.Subquery):
        tree = tree.this
    violations = []
    for constraint in constraints:
        problem = CHECKS[constraint.type](tree, constraint, profile)
        if problem:
            violations.append(Violation(constraint, f'the question says "{constraint.span}" but {problem}'))
    return violations


# Each check returns what is missing, phrased to follow 'the question says "..." but', or None.
Check = Callable[[exp.Expression, Constraint, DialectProfile], str | None]


def _nodes(tree: exp.Expression, kind: type[E], *more: type[E]) -> list[E]:
    """Every node of ``tree`` of the given kinds, in walk order."""
    return [node for node in tree.find_all(kind, *more) if isinstance(node, (kind, *more))]


def _column_tokens(column: exp.Column) -> set[str]:
    words = re.sub(r"([a-z])([A-Z])", r"\1_\2", column.name)
    return set(re.split(r"[^a-z0-9]+", words.lower()))


def _stores(tree: exp.Expression, words: set[str]) -> bool:
    """Whether the query reads a column whose name already carries the concept (``num_employees``)."""
    return any(_column_tokens(column) & words for column in _nodes(tree, exp.Column))


def _limit(query: exp.Expression) -> int | None:
    clause = query.args.get("limit")
    value = clause.args.get("count") if isinstance(clause, exp.Fetch) else clause and clause.expression
    if isinstance(value, exp.Literal) and value.is_int:
        return int(value.this)
    return None


def _order_keys(query: exp.Expression) -> list[exp.Ordered]:
    order = query.args.get("order")
    return list(order.expressions) if order else []


def _queries(tree: exp.Expression) -> list[exp.Expression]:
    return _nodes(tree, exp.Select, exp.SetOperation)


def _check_top_k(tree: exp.Expression, c: Constraint, profile: DialectProfile) -> str | None:
    limit, ordered = _limit(tree), bool(_order_keys(tree))
    if ordered and limit == c.k:
        return None
    missing = [] if ordered else ["ORDER BY"]
    if limit != c.k:
        missing.append(f"LIMIT {c.k}" + (f" (it has LIMIT {limit})" if limit is not None else ""))
    return f"the outermost query has no {' and no '.join(missing)}"


EXTREME_WORDS = {"max", "min", "maximum", "minimum", "highest", "lowest", "best", "worst", "top"}


def _check_extreme(tree: exp.Expression, c: Constraint, profile: DialectProfile) -> str | None:
    if _nodes(tree, exp.Max, exp.Min, exp.ArgMax, exp.ArgMin, exp.Rank, exp.DenseRank, exp.RowNumber):
        return None
    # ORDER BY with any LIMIT picks extremes; whether it picks the right number is the top-k check's job.
    if any(_order_keys(query) and _limit(query) is not None for query in _queries(tree)):
        return None
    if _stores(tree, EXTREME_WORDS | {c.span}):
        return None
    return "the query has no MAX/MIN and no ORDER BY with LIMIT"


def _check_ranking(tree: exp.Expression, c: Constraint, profile: DialectProfile) -> str | None:
    keys = _order_keys(tree)
    if not keys:
        if _nodes(tree, exp.Rank, exp.DenseRank, exp.RowNumber):
            return None
        return "the outermost query has no ORDER BY"
    if c.descending is None or any(bool(key.args.get("desc")) == c.descending for key in keys):
        return None
    return f"its ORDER BY is not {'descending (DESC)' if c.descending else 'ascending (ASC)'}"


def _projected_names(query: exp.Select) -> set[str]:
    names = {projection.alias_or_name.lower() for projection in query.expressions}
    names |= {column.name.lower() for projection in query.expressions for column in projection.find_all(exp.Column)}
    return names


def _check_distinct(tree: exp.Expression, c: Constraint, profile: DialectProfile) -> str | None:
    if _nodes(tree, exp.Distinct):
        return None
    if any(isinstance(q, exp.SetOperation) and q.args.get("distinct") for q in _queries(tree)):
        return None
    for query in _nodes(tree, exp.Select):
        group = query.args.get("group")
        if group and {key.name.lower() for key in group.expressions} & _projected_names(query):
            return None
    return "the query has no DISTINCT and no GROUP BY on a returned column"


def _sum_over_count(tree: exp.Expression) -> bool:
    return any(div.left.find(exp.Sum) and div.right.find(exp.Count) for div in _nodes(tree, exp.Div))


def _aggregate_check(
    kinds: tuple[type[exp.Expression], ...],
    sql: str,
    stored: set[str],
    also: Callable[[exp.Expression], bool] = lambda tree: False,
) -> Check:
    """Satisfied by one of the aggregate functions, by ``also``, or by reading a column that stores it."""

    def check(tree: exp.Expression, c: Constraint, profile: DialectProfile) -> str | None:
        if _nodes(tree, *kinds) or also(tree) or _stores(tree, stored):
            return None
        return f"the query has no {sql}"

    return check


# Three-valued numeric type of an expression, enough to tell integer division from real division.
INT, REAL, UNKNOWN = "int", "real", "unknown"


ColumnType = Callable[[exp.Column], str]  # a column's numeric type (INT, REAL or UNKNOWN), e.g. from the schema


def numeric_type(node: exp.Expr, column_type: ColumnType | None = None) -> str:
    """INT, REAL or UNKNOWN: enough to tell integer division from real division. Columns are UNKNOWN unless
    ``column_type`` says what they hold."""
    def typed(child: exp.Expr) -> str:
        return numeric_type(child, column_type)

    if isinstance(node, (exp.Paren, exp.Neg)):
        return typed(node.this)
    if isinstance(node, exp.Column) and column_type is not None:
        return column_type(node)
    if isinstance(node, exp.Literal) and not node.is_string:
        return INT if node.is_int else REAL
    if isinstance(node, (exp.Cast, exp.TryCast)):
        to = node.to
        if to.is_type(*exp.DataType.REAL_TYPES):
            return REAL
        return INT if to.is_type(*exp.DataType.INTEGER_TYPES) else UNKNOWN
    if isinstance(node, (exp.Count, exp.Length)):
        return INT
    if isinstance(node, exp.Avg):
        return REAL
    if isinstance(node, (exp.Sum, exp.Max, exp.Min, exp.Abs)):
        return typed(node.this)
    if isinstance(node, exp.IntDiv):
        return INT
    if isinstance(node, exp.Div) and not node.args.get("typed"):
        return REAL
    if isinstance(node, (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod)):
        return _combine(typed(node.left), typed(node.right))
    if isinstance(node, exp.Case):
        branches = [node.args.get("default"), *(when.args.get("true") for when in node.args.get("ifs", []))]
        types = [typed(b) for b in branches if b is not None]
        return REAL if REAL in types else INT if types and all(t == INT for t in types) else UNKNOWN
    if isinstance(node, exp.Subquery) and isinstance(node.this, exp.Select) and len(node.this.expressions) == 1:
        return typed(node.this.expressions[0].unalias())
    return UNKNOWN


def _combine(left: str, right: str) -> str:
    if REAL in (left, right):
        return REAL
    return INT if left == right == INT else UNKNOWN


PERCENT_WORDS = {"percent", "percentage", "pct", "ratio", "rate", "proportion", "share", "fraction"}


def _check_percentage(tree: exp.Expression, c: Constraint, profile: DialectProfile) -> str | None:
    divisions = _nodes(tree, exp.Div, exp.IntDiv)
    if _stores(tree, PERCENT_WORDS):
        return None
    if not divisions:
        by_100 = any(
            isinstance(side, exp.Literal) and side.to_py() == 100
            for mul in _nodes(tree, exp.Mul) for side in (mul.left, mul.right)
        )
        return None if by_100 else "the query has no division"
    if any(numeric_type(div) != INT for div in divisions):
        return None
    division = divisions[0].sql(profile.sqlglot_dialect)
    return (
        f"{division} is integer division in {profile.display_name}, which truncates; make an operand real "
        "(CAST it AS REAL or NUMERIC, or multiply by 100.0 or 1.0 first)"
    )


DATE_WORDS = {
    "date", "time", "timestamp", "datetime", "year", "years", "month", "day", "dob", "birthday", "birth",
    "created", "updated", "modified", "founded", "opened", "established",
}
_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Between, exp.In, exp.Like)


def _is_date_like(node: exp.Expression) -> bool:
    """A date-named column, a date/time function, or a year-like literal anywhere in ``node``."""
    for sub in node.walk():
        if isinstance(sub, exp.Column) and _column_tokens(sub) & DATE_WORDS:
            return True
        if isinstance(sub, exp.Func) and re.search(r"date|time|year|month|day|week|extract|julian", sub.key):
            return True
        if isinstance(sub, exp.Literal) and re.match(_YEAR + r"(?!\d)", str(sub.this)):
            return True
    return False


def _check_temporal(tree: exp.Expression, c: Constraint, profile: DialectProfile) -> str | None:
    if c.year:
        if any(_is_date_like(node) for node in _nodes(tree, *_COMPARISONS)):
            return None
        return f"the query compares no date or year column with {c.year}"
    sorted_or_picked = [key.this for query in _queries(tree) for key in _order_keys(query)]
    sorted_or_picked += [node.this for node in _nodes(tree, exp.Max, exp.Min)]
    if any(_is_date_like(node) for node in sorted_or_picked):
        return None
    return "the query neither sorts by nor takes MAX/MIN of a date or time column"


def _check_comparison(tree: exp.Expression, c: Constraint, profile: DialectProfile) -> str | None:
    for clause in _nodes(tree, exp.Where, exp.Having, exp.Qualify):
        if clause.find(exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Between):
            return None
    return "the query has no >, <, >=, <= or BETWEEN in a WHERE or HAVING clause"


CHECKS: dict[ConstraintType, Check] = {
    ConstraintType.DISTINCT: _check_distinct,
    ConstraintType.TOP_K: _check_top_k,
    ConstraintType.RANKING: _check_ranking,
    ConstraintType.COUNT: _aggregate_check(
        (exp.Count, exp.Sum), "COUNT (or SUM of counts)", {"count", "num", "number", "cnt"}
    ),
    ConstraintType.PERCENTAGE: _check_percentage,
    ConstraintType.SUM: _aggregate_check((exp.Sum,), "SUM", {"total", "sum"}),
    ConstraintType.AVERAGE: _aggregate_check(
        (exp.Avg,), "AVG (or SUM / COUNT)", {"avg", "average", "mean"}, also=_sum_over_count
    ),
    ConstraintType.EXTREME: _check_extreme,
    ConstraintType.TEMPORAL: _check_temporal,
    ConstraintType.COMPARISON: _check_comparison,
}
