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
- **inclusive**: "counting the first and the last day" (or "inclusive") adds 1 to a difference of dates;
- **growth**: a percentage change ("by what percentage did X grow", "the percentage change from A to B")
  divides the difference of the two values by the base, not the new value alone;
- **growth base**: a change "from 2023 to 2024" whose base is the total of every period divides by the
  first period's instead;
- **per item**: "on average, how many X does a Y have" (or "the average number of X per Y") counts X's rows
  over the distinct Ys, not the mean of a stored column;
- **distinct**: "how many different X" counts distinct X;
- **month text**: "give the month as YYYY-MM" gives one text column, not the year and the month as numbers;
- **rounding**: "rounded to two decimal places" (or "to the nearest whole number") rounds the computed outputs
  to that many places;
- **case**: "match ... case-insensitively" compares text with a string literal in one letter case.

``findings`` gives what a candidate's SQL breaks, each with its fix (or none when it cannot be repaired here);
``repair`` applies the fixes rule after rule on a copy of the tree. Nothing here runs SQL or calls a model:
the caller (``rule_repair.py``) runs a repaired SQL through both safety layers.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

from sqlglot import exp

from ...db.schema import Column, Schema, Table
from ..common.catalog import Catalog
from ..common.facts import date_like
from ..common.frames import column_kind
from ..repair import date_part, day_of_year
from .constraints import INT, REAL, UNKNOWN, normalize, numeric_type

_PERCENT = re.compile(r"\b(?:percent|percentage|percentages|pct)\b|%")
_RATIO = re.compile(r"\b(?:ratio|fraction|proportion)\b")
_FRACTIONAL = re.compile(r"\b(?:ratio|fraction|proportion|percent|percentage|pct|share|rate|average|avg|mean|per|"
                         r"growth|grow|grew|change|changed|increase|increased|decrease|decreased)\b|%")
_TO_TERMS = re.compile(r"\bratio of (?:the )?(.+?) to (?:the )?(.+?)(?:[?.,;]|$)")
_TOTAL = re.compile(r"\b(?:total|all|overall|whole|entire)\b")
_DAYS = re.compile(r"\bdays?\b")
_INCLUSIVE = re.compile(r"\binclusive(?:ly)?\b|\b(?:counting|including|include|includes|count) (?:both )?(?:the )?"
                        r"(?:first|start(?:ing)?|start date) (?:day )?and (?:the )?(?:last|end(?:ing)?|end date)\b")
_GROWTH = re.compile(r"(?:\bpercent(?:age)?|%)\s*(?:change|growth|increase|decrease|decline|drop|rise|fall)\b"
                     r"|\bby what (?:percent(?:age)?\b|%)|\bgrowth rate\b|\brate of (?:growth|change)\b")
_FIRST = re.compile(r"\b(?:its|their) first ([a-z]+)\b")
_PERIODS = re.compile(r"\bfrom (\d{4}) to (\d{4})\b")
_PER_ITEM = re.compile(r"\bon average, how many ([a-z][a-z ]*?) (?:does|do|did) (?:an?|each|every|one) (?:[a-z]+ )?"
                       r"([a-z]+) (?:have|get|receive|contain|include|hold)\b"
                       r"|\baverage number of ([a-z][a-z ]*?) (?:per|for each|for every) ([a-z]+)\b")
_MONTH_TEXT = re.compile(r"\byyyy-mm\b(?!-dd)")
_DISTINCT_COUNT = re.compile(r"\b(?:how many|number of|count(?: of)?)\s+(?:the\s+)?(?:distinct|different|unique)\s+"
                             r"([a-z][a-z_]*)")
_HUNDRED = (100, 100.0)
_NUMBER_WORDS = {"zero": 0, "no": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
_ROUNDING = re.compile(r"\bround(?:ed|ing)?(?: off)? to (?:the nearest (?:whole number|integer)|(?:an? )?(?:whole "
                       r"number|integer)|(\w+) decimals?(?: places?| digits?)?|(\w+) places?)"
                       r"|\bto (\w+) decimal places?\b|\bto the nearest whole number\b")
_CASE = re.compile(r"\bcase[- ]insensitiv|\b(?:without regard to|regardless of|ignoring|ignore|in any) (?:the )?"
                   r"(?:letter )?case\b|\bmixed (?:letter )?case\b")

Scale = Literal["ratio", "percent"]


@dataclass(frozen=True)
class Rules:
    """What the question's words settle about its answer's arithmetic."""

    scale: Scale | None = None
    divisor: str | None = None  # "the ratio of A to B": B's words
    dividend: str | None = None  # and A's
    fractional: bool = False
    days: bool = False
    inclusive: bool = False  # a number of days counts the first and the last day
    first: str | None = None  # a number of days to "its first X": X's noun
    growth: bool = False  # a percentage change: (new - base) / base
    periods: tuple[str, str] | None = None  # a change "from 2023 to 2024": the base's year and the new one's
    per_item: tuple[str, str] | None = None  # "how many X does a Y have", on average: (X, Y)
    distinct: str | None = None  # the noun counted as distinct things ("customers")
    month_text: bool = False  # a month is given as YYYY-MM text
    rounding: int | None = None  # decimal places the answer is rounded to (0: a whole number)
    case_insensitive: bool = False

    @property
    def any(self) -> bool:
        return bool(self.scale or self.divisor or self.fractional or self.days or self.inclusive or self.first
                    or self.growth
                    or self.per_item or self.distinct or self.month_text or self.rounding is not None
                    or self.case_insensitive)

    def describe(self) -> list[str]:
        """Each rule in words, for the report."""
        said = {"ratio": "a ratio, not multiplied by 100", "percent": "a percentage: the ratio times 100"}
        lines = [f"the answer is {said[self.scale]}"] if self.scale else []
        if self.divisor:
            lines.append(f'"the ratio of A to {self.divisor}" divides by {self.divisor}')
        if self.fractional:
            lines.append("the answer is a fraction: no division may truncate to an integer")
        if self.days:
            lines.append("a number of days is a difference of dates in the engine's date arithmetic")
        if self.inclusive:
            lines.append("the number of days counts the first and the last day (the difference plus 1)")
        if self.first:
            lines.append(f"\"its first {self.first}\" is the earliest {self.first} of each")
        if self.growth:
            lines.append("a change is the difference of the two values divided by the base")
        if self.growth and self.periods:
            lines.append(f"the change's base is {self.periods[0]}'s value, not the total of every period")
        if self.per_item:
            lines.append(f"an average number of {self.per_item[0]} per {self.per_item[1]} counts rows over "
                         f"distinct {self.per_item[1]}s")
        if self.distinct:
            lines.append(f'"{self.distinct}" are counted once each (COUNT DISTINCT)')
        if self.month_text:
            lines.append("a month is given as YYYY-MM text, in one column")
        if self.rounding is not None:
            lines.append(f"the answer is rounded to {self.rounding} decimal places" if self.rounding
                         else "the answer is rounded to a whole number")
        if self.case_insensitive:
            lines.append("text is compared with a value in one letter case (LOWER on both sides)")
        return lines


def read_rules(question: str) -> Rules:
    """The rules ``question`` states (quoted values masked, so their words are not read as instructions)."""
    text = normalize(question)
    percent = bool(_PERCENT.search(text))
    scale: Scale | None = "percent" if percent else "ratio" if _RATIO.search(text) else None
    terms = _TO_TERMS.search(text)
    divisor = terms.group(2).strip() if terms and not _TOTAL.search(terms.group(2)) else None
    dividend = terms.group(1).strip() if terms and divisor else None
    distinct = _DISTINCT_COUNT.search(text)
    days = bool(_DAYS.search(text))
    periods = _PERIODS.search(text)
    first = _FIRST.search(text) if days else None
    per = _PER_ITEM.search(text)
    per_item = ((per.group(1) or per.group(3)).strip(), per.group(2) or per.group(4)) if per else None
    return Rules(scale=scale, divisor=divisor, dividend=dividend, fractional=bool(_FRACTIONAL.search(text)), days=days,
                 inclusive=days and bool(_INCLUSIVE.search(text)), first=first.group(1) if first else None,
                 growth=bool(_GROWTH.search(text)),
                 periods=(periods.group(1), periods.group(2)) if periods else None, per_item=per_item,
                 distinct=distinct.group(1) if distinct else None, month_text=bool(_MONTH_TEXT.search(text)),
                 rounding=_places(text), case_insensitive=bool(_CASE.search(text)))


def _places(text: str) -> int | None:
    """The decimal places "rounded to ..." asks for (0 for a whole number), or None when it asks for none or
    names a number of places that cannot be read."""
    found = _ROUNDING.search(text)
    if found is None:
        return None
    word = next((group for group in found.groups() if group), None)
    if word is None:
        return 0
    return int(word) if word.isdigit() else _NUMBER_WORDS.get(word)


@dataclass(frozen=True)
class Finding:
    """One rule the SQL breaks: the problem in words, and its fix (``apply`` mutates the tree; None: no fix)."""

    problem: str
    fix: str = ""
    apply: Callable[[], object] | None = None


ValueReader = Callable[[exp.Table, exp.Identifier], Sequence[object]]


@dataclass(frozen=True)
class Env:
    """The candidate's surroundings: sqlglot's dialect, the engine's profile name and the reflected schema;
    ``values`` reads a column's stored values (a bounded read of the database), where the caller can read it;
    without it a column's samples stand in."""

    dialect: str
    engine: str
    schema: Schema
    values: ValueReader | None = None

    def catalog(self) -> Catalog:
        return Catalog(self.schema, self.engine)


Rule = Callable[[exp.Expr, Rules, Env], list[Finding]]


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
    return [finding.problem for finding in findings(tree, rules, env)]


# --------------------------------------------------------------------------------------------- helpers

def _bare(node: exp.Expr) -> exp.Expr:
    while isinstance(node, exp.Paren):
        node = node.this
    return node


def _uncast(node: exp.Expr) -> exp.Expr:
    """``node`` without its parentheses and the casts around it."""
    node = _bare(node)
    while isinstance(node, (exp.Cast, exp.TryCast)):
        node = _bare(node.this)
    return node


def _outputs(tree: exp.Expr) -> list[exp.Expr]:
    """The outermost SELECT's output expressions (none for a set operation)."""
    return [e.unalias() for e in tree.expressions] if isinstance(tree, exp.Select) else []


def _own(root: exp.Expr, kind: type[exp.Expr]) -> Iterator[exp.Expr]:
    """The ``kind`` nodes of ``root`` outside its subqueries."""
    for node in root.find_all(kind):
        if node.find_ancestor(exp.Select, exp.SetOperation) is root.find_ancestor(exp.Select, exp.SetOperation) \
                or root is node:
            yield node


def _is_hundred(node: exp.Expr) -> bool:
    node = _bare(node)
    return isinstance(node, exp.Literal) and not node.is_string and node.to_py() in _HUNDRED


def _hundreds(root: exp.Expr) -> list[tuple[exp.Mul, exp.Expr]]:
    """Each multiplication by 100 (the Mul and its literal) in ``root``."""
    return [(mul, side) for mul in root.find_all(exp.Mul) for side in (mul.left, mul.right) if _is_hundred(side)]


def _scales_a_division(mul: exp.Mul) -> bool:
    """Whether ``mul`` multiplies a division (``(a / b) * 100``) or a division's numerator (``a * 100 / b``)."""
    if mul.find(exp.Div) is not None:
        return True
    child: exp.Expr = mul
    for parent in _ancestors(mul):
        if isinstance(parent, exp.Div) and parent.this is child:
            return True
        if isinstance(parent, (exp.Select, exp.Subquery)):
            return False
        child = parent
    return False


def _ancestors(node: exp.Expr) -> Iterator[exp.Expr]:
    parent = node.parent
    while parent is not None:
        yield parent
        parent = parent.parent


def _top_divisions(output: exp.Expr) -> list[exp.Div]:
    """The divisions of one output expression (outside its subqueries) that no other division holds."""
    def held(division: exp.Expr) -> bool:
        node = division.parent
        while node is not None and node is not output.parent:
            if isinstance(node, exp.Div):
                return True
            node = node.parent
        return False

    return [d for d in _own(output, exp.Div) if isinstance(d, exp.Div) and not held(d)]


def _flag_average(node: exp.Expr) -> bool:
    """``AVG(CASE WHEN ... THEN 1 ELSE 0 END)``: a fraction of rows."""
    if not isinstance(node, exp.Avg) or not isinstance(case := _bare(node.this), exp.Case):
        return False
    values = [case.args.get("default"), *(w.args.get("true") for w in case.args.get("ifs", []))]
    return all(isinstance(v, exp.Literal) and not v.is_string and v.to_py() in (0, 1) for v in values if v is not None)


def _sql(node: exp.Expr, env: Env) -> str:
    return node.sql(dialect=env.dialect)


def _read_words(tree: exp.Expr, words: set[str]) -> bool:
    """Whether the SQL reads a column whose name holds one of ``words`` (``pct_late``: it stores percentages)."""
    return any(set(re.split(r"[^a-z0-9]+", c.name.lower())) & words for c in tree.find_all(exp.Column))


# ----------------------------------------------------------------------------------------------- the rules

def _scale(tree: exp.Expr, rules: Rules, env: Env) -> list[Finding]:
    if rules.scale == "ratio":
        found = []
        for mul, side in _hundreds(tree):
            if not _scales_a_division(mul):
                continue
            before = _sql(mul, env)

            def apply(side: exp.Expr = side) -> None:
                side.replace(exp.Literal.number("1.0"))
            after = _sql(mul.copy().transform(lambda n: exp.Literal.number("1.0") if _is_hundred(n) else n), env)
            found.append(Finding("the question asks for a ratio, but the SQL multiplies it by 100",
                                 f"{before} -> {after} (a ratio, not a percentage)", apply))
        return found
    if rules.scale != "percent" or _read_words(tree, {"percent", "percentage", "pct"}):
        return []
    found = []
    for output in _outputs(tree):
        if _hundreds(output):
            continue
        tops = _top_divisions(output)
        target: exp.Expr | None = tops[0] if len(tops) == 1 else None
        if target is None and not tops and _flag_average(output):
            target = output
        if target is None:
            if tops:
                found.append(Finding(f"the question asks for a percentage, but {_sql(output, env)} is not "
                                     "multiplied by 100"))
            continue
        found.append(_times_hundred(target, env))
    return found


def _times_hundred(node: exp.Expr, env: Env) -> Finding:
    """``a / b`` -> ``100.0 * a / b`` (real arithmetic from the start); any other node -> ``100.0 * node``."""
    def build() -> exp.Expr:
        hundred = exp.Literal.number("100.0")
        if isinstance(node, exp.Div):
            left = node.this.copy()
            left = exp.paren(left) if isinstance(left, exp.Binary) else left
            return exp.Div(this=exp.Mul(this=hundred, expression=left), expression=node.expression.copy(),
                           typed=node.args.get("typed"), safe=node.args.get("safe"))
        return exp.Mul(this=hundred, expression=node.copy())
    before, after = _sql(node, env), _sql(build(), env)
    return Finding(f"the question asks for a percentage, but {before} is not multiplied by 100",
                   f"{before} -> {after} (a percentage)", lambda: node.replace(build()))


def _numerator(node: exp.Expr) -> exp.Expr:
    """The value divided, without the casts and factors of 1 or 100 that only change its type or scale."""
    node = _bare(node)
    while True:
        if isinstance(node, (exp.Cast, exp.TryCast)):
            node = _bare(node.this)
        elif isinstance(node, exp.Mul) and isinstance(_bare(node.left), exp.Literal):
            node = _bare(node.right)
        elif isinstance(node, exp.Mul) and isinstance(_bare(node.right), exp.Literal):
            node = _bare(node.left)
        else:
            return node


def _divisor(tree: exp.Expr, rules: Rules, env: Env) -> list[Finding]:
    """"The ratio of A to B" computed as A / (A + B): divide by B."""
    if not rules.divisor:
        return []
    found = []
    for output in _outputs(tree):
        for division in _top_divisions(output):
            total = _bare(division.expression)
            if not isinstance(total, exp.Add):
                continue
            numerator = _sql(_numerator(division.this), env)
            terms = [_bare(total.left), _bare(total.right)]
            for kept, other in ((terms[1], terms[0]), (terms[0], terms[1])):
                if _sql(_numerator(other), env) != numerator:
                    continue
                before = _sql(division.expression, env)

                def apply(division: exp.Div = division, kept: exp.Expr = kept) -> None:
                    division.set("expression", kept.copy())
                found.append(Finding(f'"the ratio of A to {rules.divisor}" divides by A plus B ({before})',
                                     f"/ {before} -> / {_sql(kept, env)} (a ratio of A to B divides by B)", apply))
                break
    return found


def _count_condition(node: exp.Expr) -> exp.Expr | None:
    """The condition of a count of the rows that meet it (``SUM(CASE WHEN c THEN 1 ELSE 0 END)``,
    ``COUNT(CASE WHEN c THEN x END)``, under casts and factors), else None."""
    node = _numerator(node)
    if not isinstance(node, (exp.Sum, exp.Count)) or not isinstance(case := _bare(node.this), exp.Case):
        return None
    ifs = case.args.get("ifs") or []
    if len(ifs) != 1:
        return None
    then, default = _bare(ifs[0].args["true"]), case.args.get("default")
    if isinstance(node, exp.Sum):
        counts = _is_number(then, 1) and (default is None or _is_number(default, 0))
    else:
        counts = not isinstance(then, exp.Null) and (default is None or isinstance(_bare(default), exp.Null))
    return ifs[0].this if counts else None


def _is_number(node: exp.Expr, value: int) -> bool:
    node = _bare(node)
    return isinstance(node, exp.Literal) and not node.is_string and node.to_py() == value


def _row_count(node: exp.Expr) -> exp.Count | None:
    """A count with no condition in it (``COUNT(*)``, ``COUNT(x)``, ``COUNT(DISTINCT x)``), under casts and
    factors, else None."""
    node = _numerator(node)
    return node if isinstance(node, exp.Count) and node.find(exp.Case) is None else None


def _counts_every_row(count: exp.Count, column_of: Callable[[exp.Column], Column | None]) -> bool:
    """Whether ``count`` (of a one-table query) is the number of its rows: ``COUNT(*)``, a count of a literal
    or of a column that holds no NULL, or a distinct count of the primary key."""
    argument = _bare(count.this)
    distinct = isinstance(argument, exp.Distinct)
    if distinct:
        arguments = argument.expressions
        if len(arguments) != 1:
            return False
        argument = _bare(arguments[0])
    if isinstance(argument, (exp.Star, exp.Literal)):
        return not distinct
    if not isinstance(argument, exp.Column) or (column := column_of(argument)) is None:
        return False
    return column.primary_key if distinct else column.primary_key or not column.nullable


def _flag_count(condition: exp.Expr) -> exp.Expr:
    """``SUM(CASE WHEN condition THEN 1 ELSE 0 END)``."""
    return exp.Sum(this=exp.Case(ifs=[exp.If(this=condition.copy(), true=exp.Literal.number(1))],
                                 default=exp.Literal.number(0)))


def _conjuncts(select: exp.Select) -> list[exp.Expr]:
    where = select.args.get("where")
    if where is None:
        return []
    condition = _bare(where.this)
    return [_bare(c) for c in condition.flatten()] if isinstance(condition, exp.And) else [condition]


def _drop_conjuncts(select: exp.Select, dropped: list[exp.Expr]) -> None:
    """Remove ``dropped`` (conjuncts of its WHERE) from ``select``: the WHERE goes when none is left."""
    kept = [c for c in _conjuncts(select) if not any(c is d for d in dropped)]
    if not kept:
        select.set("where", None)
        return
    condition = kept[0].copy()
    for other in kept[1:]:
        condition = exp.And(this=condition, expression=other.copy())
    select.set("where", exp.Where(this=condition))


def _equality(condition: exp.Expr) -> tuple[exp.Column, str] | None:
    """``column = 'text'`` (either way round): the column and the text."""
    condition = _bare(condition)
    if not isinstance(condition, exp.EQ):
        return None
    for column, value in ((condition.this, condition.expression), (condition.expression, condition.this)):
        column, value = _bare(column), _bare(value)
        if isinstance(column, exp.Column) and isinstance(value, exp.Literal) and value.is_string:
            return column, value.this
    return None


def _names(value: str, words: str, codes: bool) -> bool:
    """Whether ``words`` name the stored ``value``: the value is one of them (or several in a row), or begins
    one of them by all but a short ending (``fail``: "failed"); a one-letter code (``codes``: every value of
    the column is one letter) names the word it begins (``F``: "female")."""
    text = value.strip().lower()
    tokens = re.findall(r"[a-z0-9]+", words.lower())
    if not text:
        return False
    if codes:
        return len(text) == 1 and any(token[0] == text for token in tokens)
    if " " in text:
        return f" {text} " in f" {' '.join(tokens)} "
    return any(token == text or (len(text) >= 3 and token.startswith(text) and len(token) - len(text) <= 3)
               for token in tokens)


def _named_value(values: Sequence[object], words: str, other: str) -> str | None:
    """The one stored text value ``words`` name and ``other`` (the ratio's other side) does not."""
    texts = [v for v in values if isinstance(v, str)]
    codes = bool(texts) and all(len(v.strip()) == 1 for v in texts)
    hits = {v for v in texts if _names(v, words, codes) and not _names(v, other, codes)}
    return next(iter(hits)) if len(hits) == 1 else None


def _stored_values(tree: exp.Select, column: exp.Column, env: Env) -> Sequence[object]:
    """The values ``column`` holds: read through ``env.values`` where it can be, else its samples."""
    column_of = _columns(tree, env)
    schema_column = column_of(column)
    if schema_column is None:
        return ()
    if env.values is None:
        return schema_column.samples
    tables = [t for t in tree.find_all(exp.Table) if t.find_ancestor(exp.Select) is tree]
    node = next((t for t in tables if t.alias_or_name.lower() == column.table.lower()), None) if column.table \
        else (tables[0] if len(tables) == 1 else None)
    if node is None:
        return schema_column.samples
    bare = exp.Table(this=node.this.copy())
    for part in ("db", "catalog"):
        if (qualifier := node.args.get(part)) is not None:
            bare.set(part, qualifier.copy())
    return env.values(bare, column.this if isinstance(column.this, exp.Identifier) else exp.to_identifier(column.name))


def _ratio_terms(tree: exp.Expr, rules: Rules, env: Env) -> list[Finding]:
    """"The ratio of A to B" computed over every row (``count of A / COUNT(*)``, ``COUNT(*) / count of A``, or
    ``COUNT(*) / COUNT(*)`` with A in the WHERE): A's count over B's. A is the condition the SQL counts or
    filters on; B is a WHERE condition on a value B's words name (dropped from the WHERE, which would keep
    only B's rows), else A's column equal to the stored value B's words name."""
    if not (rules.divisor and rules.dividend) or not isinstance(tree, exp.Select) or tree.args.get("group"):
        return []
    a_words, b_words = rules.dividend, rules.divisor
    divisions = [d for output in _outputs(tree) for d in _top_divisions(output)]
    if len(divisions) != 1:
        return []
    division = divisions[0]
    top, bottom = _count_condition(division.this), _count_condition(division.expression)
    if top is not None and bottom is not None:
        return []
    conjuncts = _conjuncts(tree)

    def naming(condition: exp.Expr | None, words: str, other: str) -> bool:
        found = _equality(condition) if condition is not None else None
        return found is not None and _names(found[1], words, len(found[1].strip()) == 1) \
            and not _names(found[1], other, len(found[1].strip()) == 1)

    dropped: list[exp.Expr] = []
    if top is not None and _row_count(division.expression) is not None:
        a = top
    elif bottom is not None and _row_count(division.this) is not None and naming(bottom, a_words, b_words):
        a = bottom
    elif _row_count(division.this) is not None and _row_count(division.expression) is not None:
        a_filters = [c for c in conjuncts if naming(c, a_words, b_words)]
        if len(a_filters) != 1:
            return []
        a = a_filters[0]
        dropped.append(a)
    else:
        return []
    b_filters = [c for c in conjuncts if naming(c, b_words, a_words)]
    b: exp.Expr | None = None
    if len(b_filters) == 1:
        b = b_filters[0]
        dropped.append(b)
    elif (equal := _equality(a)) is not None:
        value = _named_value(_stored_values(tree, equal[0], env), b_words, a_words)
        b = exp.EQ(this=equal[0].copy(), expression=exp.Literal.string(value)) if value is not None else None
    before = _sql(division, env)
    if b is None:
        return [Finding(f'"the ratio of A to {b_words}" divides by B, but {before} divides by every row')]
    if (a_equal := _equality(a)) is not None:  # a filter on A's own value would leave B no rows
        dropped += [c for c in conjuncts if (e := _equality(c)) is not None and e[1] == a_equal[1]
                    and _sql(e[0], env) == _sql(a_equal[0], env) and not any(c is d for d in dropped)]
    top_count, bottom_count = _numerator(division.this), _numerator(division.expression)

    def apply(a: exp.Expr = a, b: exp.Expr = b) -> None:
        a_count, b_count = _flag_count(a), _flag_count(b)  # built before the WHERE loses them
        if top is None:
            top_count.replace(a_count)
        bottom_count.replace(b_count)
        if dropped:
            _drop_conjuncts(tree, dropped)

    fix = f"{before} -> {_sql(_flag_count(a), env)} / {_sql(_flag_count(b), env)} (A's rows over B's)"
    return [Finding(f'"the ratio of A to {b_words}" divides by B, but {before} divides by every row', fix,
                    apply)]


def _same_rows(tree: exp.Select, division: exp.Div, env: Env) -> bool:
    """Whether both sides of ``division`` aggregate the same rows alike: the same aggregate, or (in a one-table
    query) two counts of every row."""
    top, bottom = _numerator(division.this), _numerator(division.expression)
    if isinstance(top, exp.AggFunc) and _sql(top, env) == _sql(bottom, env):
        return True
    counts = _row_count(division.this), _row_count(division.expression)
    one_table = not tree.args.get("joins") and isinstance((tree.args.get("from_") or exp.From()).this, exp.Table)
    column_of = _columns(tree, env)
    return one_table and all(c is not None and _counts_every_row(c, column_of) for c in counts)


def _over_rows_that(aggregate: exp.Expr, condition: exp.Expr) -> exp.Expr | None:
    """``COUNT(...)`` -> ``SUM(CASE WHEN condition THEN 1 ELSE 0 END)``, ``SUM(x)`` -> ``SUM(CASE WHEN
    condition THEN x ELSE 0 END)``; None for any other aggregate."""
    if isinstance(aggregate, exp.Count):
        return _flag_count(condition)
    if isinstance(aggregate, exp.Sum):
        return exp.Sum(this=exp.Case(ifs=[exp.If(this=condition.copy(), true=aggregate.this.copy())],
                                     default=exp.Literal.number(0)))
    return None


def _whole(tree: exp.Expr, rules: Rules, env: Env) -> list[Finding]:
    """A percentage or a fraction of the rows its WHERE keeps, which is 100% (1) whatever the data: where
    both sides aggregate the same rows (``COUNT(*) * 100 / COUNT(*) ... WHERE c``), the numerator counts ``c``
    over every row instead; and a numerator's ``CASE WHEN c`` that the WHERE also requires is not required of
    the denominator's rows. Grouped queries are ``_group_share``'s."""
    if not rules.scale or rules.divisor or not isinstance(tree, exp.Select) or tree.args.get("group"):
        return []
    conjuncts = _conjuncts(tree)
    divisions = [d for output in _outputs(tree) for d in _top_divisions(output)]
    if not conjuncts or len(divisions) != 1:
        return []
    division = divisions[0]
    before = _sql(division, env)
    condition = _count_condition(division.this) or _case_condition(division.this)
    if condition is not None:
        same = [c for c in conjuncts if _sql(c, env) == _sql(_bare(condition), env)]
        if not same:
            return []
        return [Finding(f"the WHERE keeps only the rows the numerator counts, so {before} is 100% of them",
                        f"WHERE {_sql(same[0], env)} dropped (the share is of every row)",
                        lambda: _drop_conjuncts(tree, same))]
    if not _same_rows(tree, division, env):
        return []
    problem = f"{before} aggregates the same rows on both sides, so it is 100% of them whatever the data"
    top = _numerator(division.this)
    rebuilt = _over_rows_that(top, conjuncts[0]) if len(conjuncts) == 1 else None
    if rebuilt is None:
        return [Finding(problem)]
    kept = conjuncts[0]

    def apply(top: exp.Expr = top, kept: exp.Expr = kept, rebuilt: exp.Expr = rebuilt) -> None:
        top.replace(rebuilt)
        _drop_conjuncts(tree, [kept])
    return [Finding(problem, f"{_sql(top, env)} -> {_sql(rebuilt, env)}, WHERE {_sql(kept, env)} dropped (the "
                             "share is of every row)", apply)]


def _group_share(tree: exp.Expr, rules: Rules, env: Env) -> list[Finding]:
    """Each group's percentage or fraction "of all" computed within the group (``COUNT(*) * 100 / COUNT(*)
    ... GROUP BY g``), which is 100% (1) in every group: the denominator is the total over every group (the
    same FROM, joins and WHERE, in a subquery)."""
    if not rules.scale or rules.divisor or not isinstance(tree, exp.Select) or not tree.args.get("group"):
        return []
    divisions = [d for output in _outputs(tree) for d in _top_divisions(output)]
    if len(divisions) != 1 or not _same_rows(tree, divisions[0], env):
        return []
    division = divisions[0]
    bottom = _numerator(division.expression)
    total = tree.copy()
    for part in ("group", "having", "order", "limit", "offset", "distinct", "qualify", "with_"):
        total.set(part, None)
    total.set("expressions", [bottom.copy()])
    subquery = exp.Subquery(this=total)
    return [Finding(f"{_sql(division, env)} divides each group by itself, so it is 100% of it whatever the data",
                    f"/ {_sql(bottom, env)} -> / {_sql(subquery, env)} (the share of the total)",
                    lambda: bottom.replace(subquery))]


def _case_condition(node: exp.Expr) -> exp.Expr | None:
    """The condition of ``SUM(CASE WHEN c THEN x ELSE 0 END)`` (a sum of the rows that meet it), else None."""
    node = _numerator(node)
    if not isinstance(node, exp.Sum) or not isinstance(case := _bare(node.this), exp.Case):
        return None
    ifs = case.args.get("ifs") or []
    default = case.args.get("default")
    return ifs[0].this if len(ifs) == 1 and (default is None or _is_number(default, 0)) else None


def _columns(tree: exp.Expr, env: Env) -> Callable[[exp.Column], Column | None]:
    """The schema column a column reference reads: in the table its qualifier names, else in the one table the
    query reads that has it (None when none or several do)."""
    catalog = env.catalog()
    tables: dict[str, Table] = {}
    for node in tree.find_all(exp.Table):
        if (table := catalog.table(node.name)) is not None:
            tables[node.alias_or_name.lower()] = table
            tables.setdefault(node.name.lower(), table)
    every = list({id(t): t for t in tables.values()}.values())

    def column_of(node: exp.Column) -> Column | None:
        holders = ([tables[node.table.lower()]] if node.table.lower() in tables else []) if node.table else every
        ident = node.this if isinstance(node.this, exp.Identifier) else node.name
        found = [c for t in holders if (c := catalog.column(t, ident)) is not None]
        return found[0] if len(found) == 1 else None

    return column_of


def _column_types(tree: exp.Expr, env: Env) -> Callable[[exp.Column], str]:
    """A column's numeric type (INT, REAL or UNKNOWN) by its reflected type."""
    column_of = _columns(tree, env)

    def column_type(node: exp.Column) -> str:
        column = column_of(node)
        kind = column_kind(column.type) if column is not None else "any"
        return INT if kind in ("int", "bool") else REAL if kind == "float" else UNKNOWN

    return column_type


def _integer_division(tree: exp.Expr, rules: Rules, env: Env) -> list[Finding]:
    """A division of integers where the answer is a fraction: the numerator is cast to a real number (a
    division by an integer literal, ``(month + 2) / 3``, is left alone: it buckets on purpose)."""
    if not rules.fractional:
        return []
    column_type = _column_types(tree, env)
    found = []
    for division in tree.find_all(exp.Div):
        right = _bare(division.expression)
        if isinstance(right, exp.Literal) or numeric_type(division, column_type) != INT:
            continue
        before = _sql(division, env)

        def build(division: exp.Div = division) -> exp.Expr:
            return exp.Cast(this=division.this.copy(), to=exp.DataType.build("DOUBLE"))

        def apply(division: exp.Div = division, build: Callable[[], exp.Expr] = build) -> None:
            division.set("this", build())
        preview = division.copy()
        preview.set("this", build())
        found.append(Finding(f"{before} divides integers, which truncates on {env.engine}",
                             f"{before} -> {_sql(preview, env)} (integer division truncates)", apply))
    return found


def _day_part(node: exp.Expr) -> exp.Expr | None:
    """The date whose day of the month or of the year ``node`` takes (``EXTRACT(DAY FROM d)``, ``DAY(d)``,
    ``STRFTIME('%d', d)``, ``STRFTIME('%j', d)``, ``EXTRACT(DOY FROM d)``, any of them cast to a number), or
    None."""
    node = _uncast(node)
    found = date_part(node)
    return found[1] if found is not None and found[0] == "DAY" else day_of_year(node)


def _date_valued(node: exp.Expr, env: Env, column_of: Callable[[exp.Column], Column | None]) -> bool:
    """A date column (by its type, or text whose sampled values are all dates), its MIN or MAX, a date function,
    or a date literal."""
    node = _bare(node)
    if isinstance(node, (exp.Max, exp.Min)):
        return _date_valued(node.this, env, column_of)
    if isinstance(node, (exp.Date, exp.TsOrDsToDate, exp.CurrentDate)):
        return True
    if isinstance(node, exp.Literal) and node.is_string:
        return date_like(node.this) is not None
    if isinstance(node, exp.Column) and (column := column_of(node)) is not None:
        kind = column_kind(column.type)
        return kind in ("date", "timestamp") or (kind in ("text", "any") and bool(column.samples)
                                                 and all(date_like(v) for v in column.samples))
    return False


def _days(tree: exp.Expr, rules: Rules, env: Env) -> list[Finding]:
    """A number of days computed as a difference of day-of-month parts, or (SQLite) of date text: the engine's
    date difference in days instead."""
    if not rules.days:
        return []
    column_of = _columns(tree, env)
    found = []
    for sub in tree.find_all(exp.Sub):
        ends = (_day_part(sub.left), _day_part(sub.right))
        why = "a difference of day-of-month or day-of-year parts"
        if ends[0] is None or ends[1] is None:
            if env.engine != "sqlite" or not all(_date_valued(side, env, column_of) for side in (sub.left,
                                                                                                  sub.right)):
                continue
            ends, why = (_bare(sub.left), _bare(sub.right)), "SQLite subtracts the years of date text"
        end, start = ends
        assert end is not None and start is not None

        found.append(_day_difference(sub, end, start, why, env))
    return found


def days_between(end: exp.Expr, start: exp.Expr, engine: str) -> exp.Expr:
    """The number of days from ``start`` to ``end`` in ``engine``'s date arithmetic: ``JULIANDAY(end) -
    JULIANDAY(start)`` on SQLite, a difference of dates on PostgreSQL, sqlglot's ``DATE_DIFF`` elsewhere."""
    if engine == "sqlite":
        return exp.Sub(this=exp.Anonymous(this="JULIANDAY", expressions=[end.copy()]),
                       expression=exp.Anonymous(this="JULIANDAY", expressions=[start.copy()]))
    if engine == "postgresql":
        return exp.Sub(this=exp.Cast(this=end.copy(), to=exp.DataType.build("DATE")),
                       expression=exp.Cast(this=start.copy(), to=exp.DataType.build("DATE")))
    return exp.DateDiff(this=end.copy(), expression=start.copy(), unit=exp.var("DAY"))


def _day_difference(sub: exp.Sub, end: exp.Expr, start: exp.Expr, why: str, env: Env) -> Finding:
    """``sub`` -> the engine's number of days from ``start`` to ``end``."""
    def build() -> exp.Expr:
        return exp.paren(days_between(end, start, env.engine))
    before = _sql(sub, env)
    return Finding(f"{before} is {why}, not a number of days",
                   f"{before} -> {_sql(build(), env)} (days between two dates)", lambda: sub.replace(build()))


def _day_differences(tree: exp.Expr, env: Env) -> list[exp.Expr]:
    """The differences of dates in days: ``JULIANDAY(a) - JULIANDAY(b)``, ``DATE_DIFF('DAY', b, a)``, and where
    the engine subtracts dates as days (not SQLite), ``a - b`` of two dates."""
    column_of = _columns(tree, env)
    found: list[exp.Expr] = []
    for node in tree.find_all(exp.Sub, exp.DateDiff):
        if isinstance(node, exp.DateDiff):
            unit = node.args.get("unit")
            if unit is None or unit.name.upper() in ("DAY", "DAYS"):
                found.append(node)
            continue
        sides = (_uncast(node.this), _uncast(node.expression))
        if all(isinstance(side, exp.Anonymous) and side.name.upper() == "JULIANDAY" for side in sides) or (
                env.engine != "sqlite" and all(_date_valued(side, env, column_of) for side in sides)):
            found.append(node)
    return found


def _first(tree: exp.Expr, rules: Rules, env: Env) -> list[Finding]:
    """A number of days to "its first X" that joins every X (``AVG(x.d - o.d) FROM o JOIN x ON x.k = o.k``):
    the join reads X's earliest date per owner instead (``(SELECT k, MIN(d) AS d FROM x GROUP BY k) AS x``)."""
    if not rules.first or not isinstance(tree, exp.Select) or tree.args.get("group"):
        return []
    noun = rules.first
    names = {noun, f"{noun}s", f"{noun}es", noun[:-1] + "ies" if noun.endswith("y") else noun}
    catalog = env.catalog()
    column_of = _columns(tree, env)
    for join in tree.args.get("joins") or []:
        node = join.this
        if not isinstance(node, exp.Table) or node.name.lower() not in names or catalog.table(node.name) is None:
            continue
        alias = node.alias_or_name.lower()
        keys = [side for eq in (join.args.get("on") or exp.true()).find_all(exp.EQ)
                for side in (eq.this, eq.expression) if isinstance(side, exp.Column) and side.table.lower() == alias]
        dates = {c.name.lower(): c for output in _outputs(tree) for c in output.find_all(exp.Column)
                 if c.table.lower() == alias and _date_valued(c, env, column_of)}
        read = {c.name.lower() for c in tree.find_all(exp.Column) if c.table.lower() == alias}
        if len(keys) != 1 or len(dates) != 1 or read != {keys[0].name.lower(), *dates}:
            continue
        key, date = keys[0].this.copy(), next(iter(dates.values())).this.copy()
        source = node.copy()
        source.set("alias", None)
        earliest = exp.select(exp.column(key), exp.alias_(exp.Min(this=exp.column(date.copy())), date)) \
            .from_(source).group_by(exp.column(key.copy()))
        derived = exp.Subquery(this=earliest, alias=exp.TableAlias(this=exp.to_identifier(node.alias_or_name)))
        before = _sql(node, env)

        def apply(node: exp.Expr = node, derived: exp.Expr = derived) -> None:
            node.replace(derived)
        return [Finding(f'the question asks for days to "its first {noun}", but the SQL reads every {noun}\'s '
                        f"{date.name}", f"{before} -> {_sql(derived, env)} (the earliest {noun} of each)", apply)]
    return []


def _plus_one(node: exp.Expr) -> bool:
    """Whether ``node`` (through parentheses and casts) is added to 1."""
    child, parent = node, node.parent
    while isinstance(parent, (exp.Paren, exp.Cast, exp.TryCast)):
        child, parent = parent, parent.parent
    if not isinstance(parent, exp.Add):
        return False
    other = _bare(parent.expression if parent.this is child else parent.this)
    return isinstance(other, exp.Literal) and not other.is_string and other.to_py() == 1


def _inclusive(tree: exp.Expr, rules: Rules, env: Env) -> list[Finding]:
    """"Counting the first and the last day": a difference of dates in days, plus 1."""
    if not rules.inclusive:
        return []
    found = []
    for difference in _day_differences(tree, env):
        if _plus_one(difference):
            continue
        before = _sql(difference, env)

        def build(difference: exp.Expr = difference) -> exp.Expr:
            added = exp.Add(this=difference.copy(), expression=exp.Literal.number(1))
            return added if isinstance(difference.parent, exp.Paren) else exp.paren(added)

        def apply(difference: exp.Expr = difference, build: Callable[[], exp.Expr] = build) -> None:
            difference.replace(build())
        found.append(Finding(f"the question counts the first and the last day, but {before} leaves one out",
                             f"{before} -> {_sql(build(), env)} (both ends counted)", apply))
    return found


def _growth(tree: exp.Expr, rules: Rules, env: Env) -> list[Finding]:
    """A percentage change computed as the new value over the base (``new * 100 / base``, no subtraction
    anywhere in the output): the difference over the base instead."""
    if not rules.growth:
        return []
    found = []
    for output in _outputs(tree):
        divisions = _top_divisions(output)
        if len(divisions) != 1 or next(_own(output, exp.Sub), None) is not None:
            continue
        new, base = _numerator(divisions[0].this), _numerator(divisions[0].expression)
        if isinstance(new, exp.Literal) or _sql(new, env) == _sql(base, env):
            continue
        before = _sql(new, env)

        def build(new: exp.Expr = new, base: exp.Expr = base) -> exp.Expr:
            return exp.paren(exp.Sub(this=new.copy(), expression=base.copy()))

        def apply(new: exp.Expr = new, build: Callable[[], exp.Expr] = build) -> None:
            new.replace(build())
        found.append(Finding(f"the question asks for a change, but {_sql(output, env)} divides the new value "
                             "by the base without subtracting the base",
                             f"{before} -> {_sql(build(), env)} (a change is the difference over the base)",
                             apply))
    return found


def _year_condition(condition: exp.Expr, year: str) -> bool:
    """Whether ``condition`` holds a date's year equal to ``year`` (``STRFTIME('%Y', d) = '2024'``,
    ``EXTRACT(YEAR FROM d) = 2024``)."""
    condition = _bare(condition)
    if not isinstance(condition, exp.EQ):
        return False
    for part, value in ((condition.this, condition.expression), (condition.expression, condition.this)):
        found = date_part(_uncast(part))
        value = _uncast(value)
        if found is not None and found[0] == "YEAR" and isinstance(value, exp.Literal) and value.name == year:
            return True
    return False


def _growth_base(tree: exp.Expr, rules: Rules, env: Env) -> list[Finding]:
    """A change "from X to Y" computed over a base that is the total of every period (``SUM(CASE WHEN year = Y
    THEN v ELSE 0 END) / SUM(v)``): the base becomes X's value (the same CASE with X's year)."""
    if not (rules.growth and rules.periods) or not isinstance(tree, exp.Select) or tree.args.get("group"):
        return []
    base_year, new_year = rules.periods
    if any(_year_condition(c, new_year) or _year_condition(c, base_year) for c in _conjuncts(tree)):
        return []
    found = []
    for output in _outputs(tree):
        divisions = _top_divisions(output)
        if len(divisions) != 1:
            continue
        base = _numerator(divisions[0].expression)
        if not isinstance(base, exp.Sum) or base.find(exp.Case) is not None:
            continue
        new = [s for s in _own(output, exp.Sum) if isinstance(s, exp.Sum) and _case_condition(s) is not None
               and _year_condition(_case_condition(s), new_year)]  # type: ignore[arg-type]
        if len(new) != 1 or _sql(_numerator(new[0]), env) == _sql(base, env):
            continue
        case = _bare(new[0].this)
        if _sql(case.args["ifs"][0].args["true"], env) != _sql(base.this, env):
            continue
        rebuilt = new[0].copy()
        for literal in rebuilt.find_all(exp.Literal):
            if literal.name == new_year and literal.find_ancestor(exp.EQ) is not None:
                literal.replace(exp.Literal(this=base_year, is_string=literal.is_string))
        totals = [s for s in _own(output, exp.Sum) if _sql(s, env) == _sql(base, env)]
        before = _sql(base, env)

        def apply(totals: list[exp.Expr] = totals, rebuilt: exp.Expr = rebuilt) -> None:
            for total in totals:
                total.replace(rebuilt.copy())
        found.append(Finding(f"the change from {base_year} to {new_year} divides by {before}, the total of every "
                             "period", f"{before} -> {_sql(rebuilt, env)} ({base_year}'s value is the base)",
                             apply))
    return found


def _per_item(tree: exp.Expr, rules: Rules, env: Env) -> list[Finding]:
    """"On average, how many X does a Y have" answered with the mean of a stored column (``AVG(quantity)``,
    ``SUM(quantity) / COUNT(*)``): X's rows over the distinct Ys of X's table (``1.0 * COUNT(*) /
    COUNT(DISTINCT y_id)``)."""
    if not rules.per_item or not isinstance(tree, exp.Select) or tree.args.get("group"):
        return []
    outputs = _outputs(tree)
    if len(outputs) != 1 or outputs[0].find(exp.Distinct, exp.Subquery) is not None:
        return []
    output = _uncast(outputs[0])
    mean = isinstance(output, exp.Avg) and isinstance(_bare(output.this), exp.Column)
    divisions = _top_divisions(outputs[0])
    ratio = len(divisions) == 1 and isinstance(top := _numerator(divisions[0].this), exp.Sum) \
        and isinstance(_bare(top.this), exp.Column) and _row_count(divisions[0].expression) is not None
    if not (mean or ratio):
        return []
    items, owner = rules.per_item
    catalog = env.catalog()
    words = items.split()
    stems = {"_".join(words), "_".join(words).rstrip("s"), words[-1], words[-1].rstrip("s")}
    clauses = [tree.args.get("from_"), *(tree.args.get("joins") or [])]
    read = [n for clause in clauses if clause is not None and isinstance(n := clause.this, exp.Table)]
    held = [n for n in read if n.name.lower() in stems or n.name.lower().rstrip("s") in stems]
    if len(held) != 1 or (table := catalog.table(held[0].name)) is None:
        return []
    owner_stem = owner[:-1] if owner.endswith("s") else owner
    keys = [c for c in table.columns if c.name.lower() in (f"{owner_stem}_id", f"{owner_stem}id")]
    if len(keys) != 1:
        return []
    key = exp.column(catalog.ident(keys[0].name), table=exp.to_identifier(held[0].alias_or_name)
                     if len(read) > 1 else None)
    rebuilt = exp.Div(this=exp.Cast(this=exp.Count(this=exp.Star()), to=exp.DataType.build("DOUBLE")),
                      expression=exp.Count(this=exp.Distinct(expressions=[key])))
    target = tree.expressions[0]
    before = _sql(target, env)

    def apply() -> None:
        node = tree.expressions[0]
        node.replace(exp.alias_(rebuilt.copy(), node.alias) if node.alias else rebuilt.copy())
    return [Finding(f"the question asks how many {items} a {owner} has on average, but {before} is a mean of "
                    "stored values", f"{before} -> {_sql(rebuilt, env)} (rows over distinct {owner}s)", apply)]


def _noun_column(tree: exp.Select, noun: str, env: Env) -> exp.Column | None:
    """The one column of the tables in the outermost FROM and JOINs named for ``noun`` (``customers``:
    ``customer_id``, ``customerid``, ``customer``, ``customers``), qualified when the query joins."""
    stem = noun[:-3] + "y" if noun.endswith("ies") else noun[:-1] if noun.endswith("s") else noun
    names = {noun, stem, f"{stem}_id", f"{stem}id"}
    catalog = env.catalog()
    clauses = [tree.args.get("from_"), *(tree.args.get("joins") or [])]
    read = [node for clause in clauses if clause is not None and isinstance(node := clause.this, exp.Table)]
    hits = [(node, column) for node in read if (table := catalog.table(node.name)) is not None
            for column in table.columns if column.name.lower() in names]
    if len(hits) != 1:
        return None
    node, column = hits[0]
    qualifier = node.alias_or_name if len(clauses) > 1 else ""
    return exp.column(catalog.ident(column.name), table=exp.to_identifier(qualifier) if qualifier else None)


def _distinct(tree: exp.Expr, rules: Rules, env: Env) -> list[Finding]:
    """"How many different X": a COUNT of the outermost SELECT counts each X once."""
    if not rules.distinct or not isinstance(tree, exp.Select):
        return []
    counts = [c for output in _outputs(tree) for c in _own(output, exp.Count) if isinstance(c, exp.Count)]
    if len(counts) != 1 or isinstance(counts[0].this, exp.Distinct):
        return []
    count = counts[0]
    argument = count.this
    if isinstance(argument, exp.Star):
        column = _noun_column(tree, rules.distinct, env)
        if column is None:
            return [Finding(f'the question counts different "{rules.distinct}", but COUNT(*) counts rows')]
        argument = column
    elif not isinstance(argument, exp.Column):
        return []

    def build(argument: exp.Expr = argument) -> exp.Expr:
        return exp.Count(this=exp.Distinct(expressions=[argument.copy()]))
    before = _sql(count, env)
    return [Finding(f'the question counts different "{rules.distinct}", but {before} counts repeats too',
                    f"{before} -> {_sql(build(), env)} (counted once each)", lambda: count.replace(build()))]


def _month_text(tree: exp.Expr, rules: Rules, env: Env) -> list[Finding]:
    """"Give the month as YYYY-MM", answered with the month as a number (``EXTRACT(MONTH FROM d)``, with or
    without ``EXTRACT(YEAR FROM d)`` in a column of its own): one column of ``d`` as YYYY-MM text in their
    place, in the GROUP BY and the ORDER BY too."""
    if not rules.month_text or not isinstance(tree, exp.Select):
        return []
    outputs = list(tree.expressions)
    parts = [date_part(_uncast(output.unalias())) for output in outputs]
    months = [i for i, part in enumerate(parts) if part is not None and part[0] == "MONTH"]
    if len(months) != 1:
        return []
    month = months[0]
    date = parts[month][1]  # type: ignore[index]

    def part_of(node: exp.Expr) -> str | None:
        found = date_part(_uncast(node))
        return found[0] if found is not None and _sql(found[1], env) == _sql(date, env) else None

    years = [i for i, output in enumerate(outputs) if i != month and part_of(output.unalias()) == "YEAR"]
    before = ", ".join(_sql(outputs[i], env) for i in sorted([month, *years]))
    problem = f"the question asks for the month as YYYY-MM text, but {before} gives it as numbers"
    clauses = [*(tree.args["group"].expressions if tree.args.get("group") else []),
               *(o.this for o in (tree.args["order"].expressions if tree.args.get("order") else []))]
    if any(isinstance(_bare(node), exp.Literal) for node in clauses):  # positions would shift
        return [Finding(problem)]
    alias = outputs[month].alias or "month"
    dropped_aliases = {outputs[i].alias.lower() for i in years if outputs[i].alias}

    def text() -> exp.Expr:
        return exp.TimeToStr(this=date.copy(), format=exp.Literal.string("%Y-%m"))

    def apply() -> None:
        first = min([month, *years])
        kept = [exp.alias_(text(), alias) if i == first else output for i, output in enumerate(outputs)
                if i == first or (i != month and i not in years)]
        tree.set("expressions", kept)
        for clause in ("group", "order"):
            node = tree.args.get(clause)
            if node is None:
                continue
            items, seen = [], set()
            for item in node.expressions:
                inner = item.this if isinstance(item, exp.Ordered) else item
                part = part_of(inner)
                named = isinstance(inner, exp.Column) and not inner.table and inner.name.lower() in dropped_aliases
                if part == "MONTH" or named or part == "YEAR":
                    replacement = exp.column(alias) if clause == "order" else text()
                    if isinstance(item, exp.Ordered):
                        item = item.copy()
                        item.set("this", replacement)
                    else:
                        item = replacement
                key = _sql(item.this if isinstance(item, exp.Ordered) else item, env)
                if key not in seen:
                    seen.add(key)
                    items.append(item)
            node.set("expressions", items)

    return [Finding(problem, f"{before} -> {_sql(exp.alias_(text(), alias), env)} (the month as YYYY-MM)", apply)]


_COMPUTED = (exp.Avg, exp.Sum, exp.Div, exp.Mul, exp.Add, exp.Sub, exp.Stddev, exp.Variance)


def _places_of(rounded: exp.Round) -> int:
    """The places ``ROUND(x, n)`` rounds to (0 without ``n``; -1 when ``n`` is not a number)."""
    places = rounded.args.get("decimals")
    if places is None:
        return 0
    places = _bare(places)
    return int(places.to_py()) if isinstance(places, exp.Literal) and not places.is_string else -1


def _rounding(tree: exp.Expr, rules: Rules, env: Env) -> list[Finding]:
    """"Rounded to n decimal places": every computed output of the outermost SELECT (an average, a sum, an
    arithmetic expression; not a count or a column as stored) is ``ROUND(x, n)``."""
    if rules.rounding is None:
        return []
    places = rules.rounding
    found = []
    for output in _outputs(tree):
        rounded = _uncast(output)
        if not isinstance(rounded, exp.Round):
            if not isinstance(_bare(output), _COMPUTED):
                continue
        elif _places_of(rounded) == places:
            continue
        # ROUND to other places: round the value it rounds, in the output's place
        target = rounded.this if isinstance(rounded, exp.Round) else _bare(output)

        def build(target: exp.Expr = target) -> exp.Expr:
            value = target.copy()
            if env.engine == "postgresql" and places:  # PostgreSQL rounds to places only a NUMERIC
                value = exp.Cast(this=value, to=exp.DataType.build("NUMERIC"))
            return exp.Round(this=value, decimals=exp.Literal.number(places) if places else None)
        node = output if isinstance(rounded, exp.Round) else target
        before = _sql(node, env)
        said = f"{places} decimal places" if places else "a whole number"

        def apply(node: exp.Expr = node, build: Callable[[], exp.Expr] = build) -> None:
            node.replace(build())
        found.append(Finding(f"the question asks for the answer rounded to {said}, but {before} is not",
                             f"{before} -> {_sql(build(), env)} (rounded to {said})", apply))
    return found


def _case_sides(node: exp.Expr) -> tuple[exp.Column, list[exp.Literal]] | None:
    """The column and the string literals of a comparison ``column = 'x'`` (either side), ``column IN ('x',
    ...)`` or ``column LIKE 'x'``; None for any other node."""
    if isinstance(node, exp.In):
        values = node.expressions
        column = _bare(node.this)
        if isinstance(column, exp.Column) and values and all(isinstance(v, exp.Literal) and v.is_string
                                                            for v in values):
            return column, list(values)
        return None
    if not isinstance(node, (exp.EQ, exp.NEQ, exp.Like)):
        return None
    left, right = _bare(node.this), _bare(node.expression)
    if isinstance(left, exp.Literal) and not isinstance(node, exp.Like):
        left, right = right, left
    if isinstance(left, exp.Column) and isinstance(right, exp.Literal) and right.is_string:
        return left, [right]
    return None


def _lowered(literal: exp.Literal) -> exp.Expr:
    text = literal.this
    return exp.Literal.string(text.lower()) if text.isascii() else exp.Lower(this=literal.copy())


def _case(tree: exp.Expr, rules: Rules, env: Env) -> list[Finding]:
    """"Match ... case-insensitively": a text column compared with a string literal (``=``, ``<>``, ``IN``,
    ``LIKE`` where the engine's LIKE heeds case) is compared in lower case on both sides."""
    if not rules.case_insensitive:
        return []
    found = []
    for node in tree.find_all(exp.EQ, exp.NEQ, exp.In, exp.Like):
        sides = _case_sides(node)
        if sides is None or (isinstance(node, exp.Like) and env.engine == "sqlite"):  # SQLite's LIKE folds case
            continue
        column, literals = sides
        before = _sql(node, env)

        def apply(column: exp.Column = column, literals: list[exp.Literal] = literals) -> None:
            for literal in literals:
                literal.replace(_lowered(literal))
            column.replace(exp.Lower(this=column.copy()))
        preview = node.copy()
        preview_sides = _case_sides(preview)
        assert preview_sides is not None
        apply(*preview_sides)
        found.append(Finding(f"the question asks for a case-insensitive match, but {before} heeds letter case",
                             f"{before} -> {_sql(preview, env)} (compared in lower case)", apply))
    return found


RULES: tuple[Rule, ...] = (_scale, _divisor, _ratio_terms, _whole, _group_share, _growth_base, _growth, _per_item,
                          _integer_division, _days, _first, _inclusive, _distinct, _month_text, _rounding, _case)
"""In the order the repair applies them: the scale first (its ``100.0`` also makes a division real), then the
divisor and the rows each side of a ratio or a share counts, the change over a base (the first period's),
the average number of things per owner, integer division, days
(then both ends of them) and distinct counts; the rounding last of the arithmetic, then the letter case of
comparisons."""
