"""Days and months: a number of days in the engine's date arithmetic, to the first of several, with
both ends counted where asked; a month as YYYY-MM text."""

from __future__ import annotations

import re
from collections.abc import Callable

from sqlglot import exp

from ...common.date_nodes import is_date_valued
from ...common.operands import operand_of
from ...common.values import unaliased
from ...repair import date_part, day_of_year
from .tree import (
    Env,
    Finding,
    column_resolver,
    is_number,
    render,
    replaced,
    select_outputs,
    uncast,
    unparen,
)
from .windows import BELOW_ON_THE_LEFT, moved_by, within_moved
from .words import Rules


def _part(node: exp.Expr) -> tuple[str, exp.Expr] | None:
    """(YEAR, MONTH, DAY or DOY, the date) of a date-part call (``EXTRACT(YEAR FROM d)``, ``STRFTIME('%m', d)``,
    ``DAY(d)``, ``STRFTIME('%j', d)``, any of them cast to a number), or None."""
    node = uncast(node)
    found = date_part(node)
    if found is not None:
        return found
    date = day_of_year(node)
    return ("DOY", date) if date is not None else None


def _like_parts(sub: exp.Sub, rules: Rules) -> tuple[exp.Expr, exp.Expr, str] | None:
    """(the later date, the earlier, what the difference is) where ``sub`` subtracts one date's part from
    another's: the day of the month or of the year, or a year or a month where the question names no such unit
    ("within 30 days" as a difference of years); None otherwise."""
    ends = (_part(sub.left), _part(sub.right))
    if ends[0] is None or ends[1] is None:
        return None
    units = {ends[0][0], ends[1][0]}
    if units <= {"DAY", "DOY"}:
        return ends[0][1], ends[1][1], "a difference of day-of-month or day-of-year parts"
    unit = next(iter(units))
    if len(units) == 1 and unit not in rules.coarser:
        return ends[0][1], ends[1][1], f"a difference of {unit.lower()}s"
    return None


def days(tree: exp.Expr, rules: Rules, env: Env) -> list[Finding]:
    """A number of days computed as a difference of date parts (days of the month or the year; years or months
    where the question names only days), as the day part of an age (``EXTRACT(DAY FROM AGE(b, a))``), or
    (SQLite) as a difference of date text, cast to a number or not: the engine's date difference in days
    instead."""
    if not rules.days:
        return []
    column_of = column_resolver(tree, env)
    found = []
    for sub in tree.find_all(exp.Sub):
        parts = _like_parts(sub, rules)
        if parts is None:
            sides = (uncast(sub.left), uncast(sub.right))
            if env.engine != "sqlite" or not all(is_date_valued(side, column_of) for side in sides):
                continue
            parts = (*sides, "SQLite subtracts the years of date text")
        end, start, why = parts
        found.append(_day_difference(sub, end, start, why, env))
    for extract in tree.find_all(exp.Extract):  # PostgreSQL's EXTRACT(DAY FROM AGE(b, a)): the days left over
        age = extract.expression
        if extract.this.name.upper() == "DAY" and isinstance(age, exp.Anonymous) and age.name.upper() == "AGE" \
                and len(age.expressions) == 2:
            later, earlier = age.expressions
            found.append(_day_difference(extract, later, earlier, "the days of an age beside its years and months",
                                         env))
    return found


def _compared_bound(node: exp.Expr) -> tuple[exp.Expr, exp.Literal] | None:
    """(the comparison, the whole number) where ``node`` (through parentheses and casts) is compared with a whole
    number literal (``d - a <= 30``, ``30 > (d - a)``); None otherwise."""
    found = operand_of(node, (exp.GT, exp.GTE, exp.LT, exp.LTE, exp.EQ))
    if found is None:
        return None
    comparison, bound = found
    if not isinstance(bound, exp.Literal) or bound.is_string or not float(bound.this).is_integer():
        return None
    return comparison, bound


def named_bound(tree: exp.Expr, rules: Rules, env: Env) -> list[Finding]:
    """A number of days compared with a number the question does not give, where it gives exactly one amount of
    time, in days or weeks ("more than 90 days after" as ``issued - started > 9``; "within 365 days" read as one
    year, ``<= 1`` once ``days`` has made the years days): the question's number. Left alone where the same days
    are compared with the question's number elsewhere too (a window's other end)."""
    named = {count for count, unit in rules.durations if unit == "day"} | \
        {count * 7 for count, unit in rules.durations if unit == "week"}
    if len(named) != 1 or len(rules.durations) != 1:
        return []
    days = next(iter(named))
    other_numbers = rules.numbers - {count for count, _ in rules.durations}  # "2 weeks" read as 2 days is no other
    found = []
    for difference in _day_differences(tree, env):
        compared = _compared_bound(difference)
        if compared is None:
            continue
        comparison, bound = compared
        number = int(float(bound.this))
        if number in (0, days) or number in other_numbers or _compared_with(tree, difference, days, env):
            continue
        found.append(replaced(f"the question gives {days} days, but {render(comparison, env)} compares the days "
                              f"with {bound.this}", bound, exp.Literal.number(days), "the question's days", env))
    return found


def _compared_with(tree: exp.Expr, difference: exp.Expr, number: int, env: Env) -> bool:
    """Whether ``tree`` compares ``difference`` (the same SQL, anywhere) with the literal ``number``: a window's
    other end."""
    key = render(unparen(difference), env)
    for comparison in tree.find_all(exp.GT, exp.GTE, exp.LT, exp.LTE, exp.EQ):
        sides = (unparen(comparison.this), unparen(comparison.expression))
        if key in (render(side, env) for side in sides) and any(
                isinstance(side, exp.Literal) and side.to_py() == number for side in sides):
            return True
    return False


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


def _day_difference(node: exp.Expr, end: exp.Expr, start: exp.Expr, why: str, env: Env) -> Finding:
    """``node`` -> the engine's number of days from ``start`` to ``end``."""
    def build() -> exp.Expr:
        return exp.paren(days_between(end, start, env.engine))
    before = render(node, env)
    return Finding(f"{before} is {why}, not a number of days",
                   f"{before} -> {render(build(), env)} (days between two dates)", lambda: node.replace(build()))


def _operands(node: exp.Binary) -> list[tuple[exp.Expr, exp.Expr]]:
    """(one side, the other) of ``a + b`` both ways round, of ``a - b`` as written."""
    pairs = [(node.this, node.expression)]
    return [*pairs, (node.expression, node.this)] if isinstance(node, exp.Add) else pairs


def _signed_whole(node: exp.Binary, number: exp.Expr) -> int | None:
    """``number`` as a whole number, negated where ``node`` subtracts it; None when it is no whole number."""
    number = unparen(number)
    if not isinstance(number, exp.Literal) or number.is_string or not float(number.this).is_integer():
        return None
    return int(float(number.this)) * (-1 if isinstance(node, exp.Sub) else 1)


def _computes_days(node: exp.Expr, differences: set[int]) -> bool:
    """Whether ``node`` holds one of the day ``differences`` (by identity: ``_day_differences``' nodes)."""
    return any(id(inner) in differences for inner in node.find_all(exp.Sub, exp.DateDiff))


def shifted(tree: exp.Expr, rules: Rules, env: Env) -> list[Finding]:
    """(SQLite) a date moved by a number of days as ``d + 30``, which adds 30 to the year of the date text: the
    date 30 days on, ``DATE(d, '+30 days')`` (ISO text, so it compares with other dates as dates do)."""
    if not rules.days or env.engine != "sqlite":
        return []
    column_of = column_resolver(tree, env)
    found = []
    for node in tree.find_all(exp.Add, exp.Sub):
        date, number = next(((uncast(d), n) for d, n in _operands(node) if is_date_valued(uncast(d), column_of)),
                            (None, None))
        count = _signed_whole(node, number) if date is not None and number is not None else None
        if date is None or count is None:
            continue
        moved = moved_by(date, count, "day", "sqlite")
        found.append(replaced(f"{render(node, env)} adds to the year of SQLite's date text, not a number of days",
                              node, moved, "the date that many days on", env))
    return found


def _year_plus(node: exp.Expr) -> tuple[exp.Expr, int] | None:
    """(the date, the signed amount) of a date's year part plus or minus a whole number (``STRFTIME('%Y', d) +
    10``, ``EXTRACT(YEAR FROM d) - 3``), or None."""
    node = unparen(node)
    if not isinstance(node, (exp.Add, exp.Sub)):
        return None
    for part, number in _operands(node):
        year, count = _part(part), _signed_whole(node, number)
        if year is not None and year[0] == "YEAR" and count is not None:
            return year[1], count
    return None




def year_shift(tree: exp.Expr, rules: Rules, env: Env) -> list[Finding]:
    """(SQLite) "more than 10 days after A" as ``b > STRFTIME('%Y', a) + 10``, which compares the date text of b
    with a number (every text is above every number in SQLite): ``a`` moved by the amount in the unit the
    question names with that number, ``b > DATE(a, '+10 days')``; a year part on the other side is its date,
    unless the unit is years too."""
    if not rules.durations or env.engine != "sqlite":
        return []
    named: dict[int, set[str]] = {}
    for amount, unit in rules.durations:
        named.setdefault(amount, set()).add(unit)
    column_of = column_resolver(tree, env)
    found = []
    for comparison in tree.find_all(exp.GT, exp.GTE, exp.LT, exp.LTE, exp.EQ):
        for moved_side, other_side in ((comparison.expression, comparison.this),
                                       (comparison.this, comparison.expression)):
            shift = _year_plus(moved_side)
            units = named.get(abs(shift[1]), set()) if shift is not None else set()
            if shift is None or len(units) != 1 or not is_date_valued(shift[0], column_of):
                continue
            unit = next(iter(units))
            other = uncast(other_side)
            other_part = _part(other)
            year_with_years = other_part is not None and other_part[0] == "YEAR" and unit == "year"
            other_date = other_part[1] if other_part is not None and other_part[0] == "YEAR" else other
            if year_with_years or not is_date_valued(other_date, column_of):
                continue  # years compared with years plus years are as the question asks
            count = shift[1] * (7 if unit == "week" else 1)
            moved = moved_by(shift[0], count, unit, "sqlite")
            turned = comparison.copy()
            turned.set("this" if moved_side is comparison.this else "expression", moved)
            turned.set("expression" if moved_side is comparison.this else "this", other_date.copy())
            by = f"{abs(shift[1])} {unit}s"
            found.append(replaced(f"{render(comparison, env)} compares a date with a year number, not with the date "
                                  f"{by} on", comparison, turned, f"the date moved by {by}", env))
            break
    return found


def calendar_years(tree: exp.Expr, rules: Rules, env: Env) -> list[Finding]:
    """"More than 10 years after A" (a number of years the question names) as a difference of calendar years
    (``EXTRACT(YEAR FROM b) - EXTRACT(YEAR FROM a) > 10``, ``YEAR(b) > YEAR(a) + 10``), which holds 2014-01-02
    more than 10 years after 2003-12-31: the dates themselves, one moved by the years (``b > a + INTERVAL '10
    years'``, ``b > DATE(a, '+10 years')`` on SQLite)."""
    years = {count for count, unit in rules.durations if unit == "year"}
    if not years:
        return []
    found = []
    for comparison in tree.find_all(exp.GT, exp.GTE, exp.LT, exp.LTE):
        sides = _as_dates(unparen(comparison.this), unparen(comparison.expression), years, env)
        if sides is None:
            turned = _as_dates(unparen(comparison.expression), unparen(comparison.this), years, env)
            sides = turned[::-1] if turned is not None else None
        if sides is None:
            continue
        dated = comparison.copy()
        dated.set("this", sides[0])
        dated.set("expression", sides[1])
        found.append(replaced(f"{render(comparison, env)} compares calendar years, not dates that many years apart",
                              comparison, dated, "the dates, one moved by the years", env))
    return found


def _as_dates(one: exp.Expr, other: exp.Expr, years: set[int], env: Env) -> tuple[exp.Expr, exp.Expr] | None:
    """``one`` and ``other`` as dates where ``one`` is a difference of two dates' years and ``other`` one of
    ``years`` (``YEAR(b) - YEAR(a)`` and ``10``: ``b`` and ``a`` moved by 10 years), or ``one`` a date's year
    plus one of ``years`` and ``other`` a date's year (``YEAR(a) + 10`` and ``YEAR(b)``); None otherwise."""
    if isinstance(one, exp.Sub) and isinstance(other, exp.Literal) and not other.is_string:
        ends = (_part(one.this), _part(one.expression))
        count = float(other.this)
        if ends[0] is None or ends[1] is None or {ends[0][0], ends[1][0]} != {"YEAR"} or count not in years:
            return None
        return ends[0][1].copy(), moved_by(ends[1][1], int(count), "year", env.engine)
    shift, year = _year_plus(one), _part(uncast(other))
    if shift is None or abs(shift[1]) not in years or year is None or year[0] != "YEAR":
        return None
    return moved_by(shift[0], shift[1], "year", env.engine), year[1].copy()


_DAYS_IN = {365.0: "YEAR", 365.25: "YEAR", 30.0: "MONTH", 7.0: "WEEK"}  # a divisor that turns days into the unit


def day_units(tree: exp.Expr, rules: Rules, env: Env) -> list[Finding]:
    """A number of days asked, computed as a difference of dates and then divided into years, months or weeks
    (``/ 365``, ``/ 30``, ``/ 7``) that the question does not name: the days, undivided."""
    if not rules.days or rules.weeks:
        return []
    differences = {id(node) for node in _day_differences(tree, env)}
    found = []
    for division in tree.find_all(exp.Div):
        divisor = unparen(division.expression)
        if not isinstance(divisor, exp.Literal) or divisor.is_string:
            continue
        unit = _DAYS_IN.get(float(divisor.this))
        if unit is None or unit in rules.coarser or not _computes_days(division.this, differences):
            continue
        found.append(replaced(f"the question asks for days, but {render(division, env)} turns them into "
                              f"{unit.lower()}s", division, division.this, "the days", env))
    return found


def weeks(tree: exp.Expr, rules: Rules, env: Env) -> list[Finding]:
    """"How many weeks": an output that computes a number of days (a difference of dates) and neither divides
    nor multiplies by 7 is divided by 7.0."""
    if not rules.weeks or not isinstance(tree, exp.Select):
        return []
    differences = {id(node) for node in _day_differences(tree, env)}
    found = []
    for output in select_outputs(tree):
        if not _computes_days(output, differences) or any(
                is_number(node.expression, 7) or is_number(node.this, 7) for node in output.find_all(exp.Div, exp.Mul)):
            continue
        divided = exp.Div(this=exp.paren(output.copy()), expression=exp.Literal.number("7.0"), typed=True)
        found.append(replaced(f"the question asks for weeks, but {render(output, env)} is a number of days",
                              output, divided, "days in weeks", env))
    return found


def _bounds(tree: exp.Expr, difference: exp.Expr, env: Env) -> tuple[list[exp.Expr], bool]:
    """The comparisons that bound ``difference`` from above, and whether any bounds it from below, in ``tree``."""
    key = render(unparen(difference), env)
    above: list[exp.Expr] = []
    below = False
    for comparison in tree.find_all(exp.LTE, exp.LT, exp.GTE, exp.GT, exp.Between):
        if isinstance(comparison, exp.Between):
            below = below or render(unparen(comparison.this), env) == key
            continue
        upper_side = comparison.this if isinstance(comparison, BELOW_ON_THE_LEFT) else comparison.expression
        lower_side = comparison.expression if upper_side is comparison.this else comparison.this
        if render(unparen(upper_side), env) == key:
            above.append(comparison)
        elif render(unparen(lower_side), env) == key:
            below = True
    return above, below


def within_after(tree: exp.Expr, rules: Rules, env: Env) -> list[Finding]:
    """"Within 30 days after A": a number of days from A held below 30 (``d - a <= 30``) with nothing holding it
    at or above 0 counts the dates before A too; the comparison gets ``d - a >= 0`` beside it. The same for a
    date compared with A moved on by those days (``d <= DATE(a, '+30 days')``, ``d < a + INTERVAL '30 days'``),
    and a date held at or above A moved on (``d >= DATE(a, '+30 days')``) keeps the dates after the window
    instead: it becomes ``d BETWEEN a AND DATE(a, '+30 days')``."""
    if not rules.within_after:
        return []
    found = within_moved(tree, rules, env)
    for difference in _day_differences(tree, env):
        above, below = _bounds(tree, difference, env)
        if below or len(above) != 1:
            continue
        comparison = above[0]
        bounded = exp.paren(exp.and_(exp.GTE(this=difference.copy(), expression=exp.Literal.number(0)),
                                     comparison.copy()))
        found.append(replaced(f'the question asks for days "after" a date, but {render(comparison, env)} also '
                              "counts the days before it", comparison, bounded, "from 0 days on", env))
    return found


def _day_differences(tree: exp.Expr, env: Env) -> list[exp.Expr]:
    """The differences of dates in days: ``JULIANDAY(a) - JULIANDAY(b)``, ``DATE_DIFF('DAY', b, a)``, and where
    the engine subtracts dates as days (not SQLite), ``a - b`` of two dates."""
    column_of = column_resolver(tree, env)
    found: list[exp.Expr] = []
    for node in tree.find_all(exp.Sub, exp.DateDiff):
        if isinstance(node, exp.DateDiff):
            unit = node.args.get("unit")
            if unit is None or unit.name.upper() in ("DAY", "DAYS"):
                found.append(node)
            continue
        sides = (uncast(node.this), uncast(node.expression))
        if all(isinstance(side, exp.Anonymous) and side.name.upper() == "JULIANDAY" for side in sides) or (
                env.engine != "sqlite" and all(is_date_valued(side, column_of) for side in sides)):
            found.append(node)
    return found


def first(tree: exp.Expr, rules: Rules, env: Env) -> list[Finding]:
    """A number of days to "its first X" (or "their first X more than 2 years after", "X-ed for the first time
    more than a year after"), answered over every X
    (``AVG(x.d - o.d) FROM o JOIN x ON x.k = o.k``, X joined or in the FROM, its date read in the outputs, the
    WHERE or the order): the join reads X's earliest date per owner instead (``(SELECT k, MIN(d) AS d FROM x
    GROUP BY k) AS x``)."""
    if not rules.first or not isinstance(tree, exp.Select) or tree.args.get("group"):
        return []
    noun = rules.first
    two_words = _plurals(f"{noun}_{rules.first_next}") if rules.first_next else set()  # leave_requests
    names = _plurals(noun) | two_words
    if rules.first_verb:  # "inspected for the first time": inspections; "hired": hires; "invoiced": invoices
        names = _plurals(f"{noun}ion") | _plurals(f"{noun}e") | names
    catalog = env.catalog()
    column_of = column_resolver(tree, env)
    joins = tree.args.get("joins") or []
    conditions = [join.args.get("on") or exp.true() for join in joins]
    from_ = tree.args.get("from_")
    for node in [from_.this if joins and from_ is not None else None, *(join.this for join in joins)]:
        if not isinstance(node, exp.Table) or node.name.lower() not in names \
                or (table := catalog.table(node.name)) is None:
            continue
        alias, own = node.alias_or_name.lower(), {id(c) for c in table.columns}

        def reads_x(column: exp.Column, alias: str = alias, own: set[int] = own) -> bool:
            """Whether the column is X's: qualified by X's alias, or bare and X's table's alone."""
            return column.table.lower() == alias if column.table else id(column_of(column)) in own

        keys = [side for on in conditions for eq in on.find_all(exp.EQ)
                for side in (eq.this, eq.expression) if isinstance(side, exp.Column) and reads_x(side)]
        dates = {c.name.lower(): c for c in tree.find_all(exp.Column)  # in the outputs, the WHERE or the order
                 if reads_x(c) and is_date_valued(c, column_of)}
        read = {c.name.lower() for c in tree.find_all(exp.Column) if reads_x(c)}
        if len(keys) != 1 or len(dates) != 1 or read != {keys[0].name.lower(), *dates}:
            continue
        key, date = keys[0].this.copy(), next(iter(dates.values())).this.copy()
        earliest = exp.select(exp.column(key), exp.alias_(exp.Min(this=exp.column(date.copy())), date)) \
            .from_(unaliased(node)).group_by(exp.column(key.copy()))
        derived = exp.Subquery(this=earliest, alias=exp.TableAlias(this=exp.to_identifier(node.alias_or_name)))
        before = render(node, env)

        def apply(node: exp.Expr = node, derived: exp.Expr = derived) -> None:
            node.replace(derived)
        named = f"{noun} {rules.first_next}" if node.name.lower() in two_words else node.name if rules.first_verb \
            else noun
        asked = f'"{noun}ed for the first time"' if rules.first_verb else f'the time to "its first {named}"'
        return [Finding(f'the question asks for {asked}, but the SQL reads every {named}\'s '
                        f"{date.name}", f"{before} -> {render(derived, env)} (the earliest {named} of each)", apply)]
    return []


def _plurals(noun: str) -> set[str]:
    """A table's names for ``noun``: itself and its plurals (``order``, ``orders``; ``entry``, ``entries``)."""
    return {noun, f"{noun}s", f"{noun}es", noun[:-1] + "ies" if noun.endswith("y") else noun}


_NO_STEM = {"date", "dates", "days", "time", "times", "timestamp", "their", "with", "from"}  # four letters or more


def _words(text: str) -> set[str]:
    """The words of ``text`` (or a name's parts) of four letters or more that say more than "date"."""
    return {word for word in re.split(r"[^a-z0-9]+", text.lower()) if len(word) >= 4 and word not in _NO_STEM}


def _alike(a: str, b: str) -> bool:
    """One word a form of the other: one begins the other (``ship``, ``shipped``), they share five letters
    (``cancelled``, ``cancellation``), or the same stem of four letters or more (``opened``, ``opening``)."""
    return a.startswith(b) or b.startswith(a) or a[:5] == b[:5] or len(_stem(a)) >= 4 and _stem(a) == _stem(b)


def _stem(word: str) -> str:
    """``word`` without one ending of a verb's forms: -ing, -ed, -ion, -s (``opening``, ``opened``: ``open``)."""
    for ending in ("ings", "ing", "ions", "ion", "ed", "s"):
        if word.endswith(ending) and len(word) - len(ending) >= 4:
            return word[: -len(ending)]
    return word


def named_by(side: exp.Expr, words: str) -> bool:
    """Whether ``words`` name the date ``side`` reads: a part of its one column's name is a form of one of them
    (``created_on``: "an account was created"), or its one date literal is among them."""
    columns = {c.name.lower() for c in side.find_all(exp.Column)}
    if columns:
        return len(columns) == 1 and any(_alike(part, word) for part in _words(next(iter(columns)))
                                         for word in _words(words))
    literals = [node for node in side.find_all(exp.Literal) if node.is_string]
    return len(literals) == 1 and literals[0].name.lower() in words


def direction(tree: exp.Expr, rules: Rules, env: Env) -> list[Finding]:
    """"How many days after A did B" (or "before B was A", "from A to B"): a difference of dates that subtracts
    B's date from A's is turned round, B's minus A's. Only where each side's date is named by one phrase alone."""
    if not rules.span:
        return []
    earlier, later = rules.span
    found = []
    for difference in _day_differences(tree, env):
        first_side, second_side = difference.this, difference.expression  # DATE_DIFF: this is the end, too
        backwards = (named_by(first_side, earlier) and not named_by(first_side, later)
                     and named_by(second_side, later) and not named_by(second_side, earlier))
        if not backwards:
            continue
        turned = difference.copy()
        turned.set("this", difference.expression.copy())
        turned.set("expression", difference.this.copy())
        found.append(replaced(f'the question counts days from "{earlier}" to "{later}", but '
                              f"{render(difference, env)} subtracts the later date from the earlier", difference,
                              turned, "the later date minus the earlier", env))
    return found


def _plus_one(node: exp.Expr) -> bool:
    """Whether ``node`` (through parentheses and casts) is added to 1."""
    found = operand_of(node, exp.Add)
    return found is not None and is_number(found[1], 1)


def inclusive(tree: exp.Expr, rules: Rules, env: Env) -> list[Finding]:
    """"Counting the first and the last day": a difference of dates in days, plus 1."""
    if not rules.inclusive:
        return []
    found = []
    for difference in _day_differences(tree, env):
        if _plus_one(difference):
            continue
        before = render(difference, env)

        def build(difference: exp.Expr = difference) -> exp.Expr:
            added = exp.Add(this=difference.copy(), expression=exp.Literal.number(1))
            return added if isinstance(difference.parent, exp.Paren) else exp.paren(added)

        def apply(difference: exp.Expr = difference, build: Callable[[], exp.Expr] = build) -> None:
            difference.replace(build())
        found.append(Finding(f"the question counts the first and the last day, but {before} leaves one out",
                             f"{before} -> {render(build(), env)} (both ends counted)", apply))
    return found


def month_text(tree: exp.Expr, rules: Rules, env: Env) -> list[Finding]:
    """"Give the month as YYYY-MM", answered with the month as a number (``EXTRACT(MONTH FROM d)``, with or
    without ``EXTRACT(YEAR FROM d)`` in a column of its own): one column of ``d`` as YYYY-MM text in their
    place, in the GROUP BY and the ORDER BY too."""
    if not rules.month_text or not isinstance(tree, exp.Select):
        return []
    outputs = list(tree.expressions)
    parts = [date_part(uncast(output.unalias())) for output in outputs]
    months = [i for i, part in enumerate(parts) if part is not None and part[0] == "MONTH"]
    if len(months) != 1:
        return []
    month = months[0]
    date = parts[month][1]  # type: ignore[index]

    def part_of(node: exp.Expr) -> str | None:
        found = date_part(uncast(node))
        return found[0] if found is not None and render(found[1], env) == render(date, env) else None

    years = [i for i, output in enumerate(outputs) if i != month and part_of(output.unalias()) == "YEAR"]
    before = ", ".join(render(outputs[i], env) for i in sorted([month, *years]))
    problem = f"the question asks for the month as YYYY-MM text, but {before} gives it as numbers"
    clauses = [*(tree.args["group"].expressions if tree.args.get("group") else []),
               *(o.this for o in (tree.args["order"].expressions if tree.args.get("order") else []))]
    if any(isinstance(unparen(node), exp.Literal) for node in clauses):  # positions would shift
        return [Finding(problem)]
    alias = outputs[month].alias or "month"
    dropped_aliases = {outputs[i].alias.lower() for i in years if outputs[i].alias}

    def text() -> exp.Expr:
        return exp.TimeToStr(this=date.copy(), format=exp.Literal.string("%Y-%m"))

    def apply() -> None:
        leading = min([month, *years])
        kept = [exp.alias_(text(), alias) if i == leading else output for i, output in enumerate(outputs)
                if i == leading or (i != month and i not in years)]
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
                key = render(item.this if isinstance(item, exp.Ordered) else item, env)
                if key not in seen:
                    seen.add(key)
                    items.append(item)
            node.set("expressions", items)

    return [Finding(problem, f"{before} -> {render(exp.alias_(text(), alias), env)} (the month as YYYY-MM)", apply)]
