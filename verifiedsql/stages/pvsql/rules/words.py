"""What a question's words settle about its answer: ``read_rules`` and the patterns it reads."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from ...common.date_nodes import time_amount
from ...common.terms import ASKS_PER_GROUP
from ..constraints import normalize

_PERCENT = re.compile(r"\b(?:percent|percentage|percentages|pct)\b|%")


_RATIO = re.compile(r"\b(?:ratio|fraction|proportion)\b")


_FRACTIONAL = re.compile(r"\b(?:ratio|fraction|proportion|percent|percentage|pct|share|rate|average|avg|mean|per|"
                         r"growth|grow|grew|change|changed|increase|increased|decrease|decreased)\b|%")


_TO_TERMS = re.compile(r"\bratio of (?:the )?(.+?) to (?:the )?(.+?)(?:[?.,;]|$)")


_TOTAL = re.compile(r"\b(?:total|all|overall|whole|entire)\b")


_DAYS = re.compile(r"\bdays?\b")
_COARSER = {"YEAR": re.compile(r"\byears?\b|\bannual(?:ly)?\b|\byearly\b"),
            "MONTH": re.compile(r"\bmonths?\b|\bmonthly\b"), "WEEK": re.compile(r"\bweeks?\b|\bweekly\b")}
_NUMBER = r"\d{1,3}(?:,\d{3})+|\d+"  # 2,000 or 2000
# amounts of time written in words: "two years", "one week"; "a year" only after a bound ("more than a year after")
_AMOUNT_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
                 "ten": 10, "eleven": 11, "twelve": 12, "fifteen": 15, "twenty": 20, "thirty": 30, "sixty": 60,
                 "ninety": 90}
_BOUND = r"more than|over|fewer than|less than|under|at least|at most|within"
_AFTER_BOUND = "|".join(f"(?<={bound} )" for bound in _BOUND.split("|"))
_AMOUNT = rf"{_NUMBER}|{'|'.join(_AMOUNT_WORDS)}|(?:{_AFTER_BOUND})an?"
_DURATION = re.compile(rf"\b(?<![\d,])({_AMOUNT}) (day|week|month|year)s?\b")
_WEEKS = re.compile(r"\b(?:how many|number of|in) weeks\b")


_FIRST_AND_LAST = (r"(?:(?:the|its|their) )?(?:first|start(?:ing)?|start date) (?:day )?and "
                   r"(?:(?:the|its|their) )?(?:last|end(?:ing)?|end date)")
_INCLUSIVE = re.compile(r"\binclusive(?:ly)?\b|\bboth ends\b"
                        rf"|\b(?:counting|including|include|includes|count) (?:both )?{_FIRST_AND_LAST}\b"
                        # "if the start day and the end day both count", "the first and the last day included"
                        rf"|\b{_FIRST_AND_LAST}(?: days?)?(?: of (?:each|every|the|its|their) [a-z]+)?"
                        r" (?:both |are |is |were |all )?(?:count|counts|counted|included|includes?)\b")
_WITHIN_AFTER = re.compile(rf"\bwithin (?:the first )?(?:{_NUMBER}|[a-z]+) days? (?:after|since|following)\b")
# "more than 10 days after", "fewer than 90 days before", "at least 2 weeks after": (how, N, unit, which way)
# "within two years of" is "at most two years after"
_BEYOND = re.compile(rf"\b({_BOUND}) ({_AMOUNT}) (day|week|month|year)s? (after|before|of)\b")
_LATER = {("more than", "after"), ("over", "after"), ("at least", "after"), ("fewer than", "before"),
          ("less than", "before"), ("under", "before"), ("at most", "before"),
          ("within", "before")}  # the date lies later than the move


_GROWTH = re.compile(r"(?:\bpercent(?:age)?|%)\s*(?:change|growth|increase|decrease|decline|drop|rise|fall)\b"
                     r"|\bby what (?:percent(?:age)?\b|%)|\bgrowth rate\b|\brate of (?:growth|change)\b")


# "its first order", "their first leave request" (not "its first and its last day"): the noun and the next word
_FIRST = re.compile(r"\b(?:its|their) first (?!(?:and|or)\b)([a-z]+)\b(?: ([a-z]+)\b)?")
# "inspected for the first time": the verb's stem, for the noun of the table of those events (``inspections``)
_FIRST_TIME = re.compile(r"\b([a-z]{3,})ed for the first time\b")


_AFTER = re.compile(r"\bdays? (after|since|before) (.+) (?:did|does|do|was|were|is|are|had|has) (.+?)(?:[?.,;]|$)")
_FROM_TO = re.compile(r"\bfrom (.+?) (?:to|until|till) (.+?)(?:[?.,;]|$)")


_PERIODS = re.compile(r"\bfrom (\d{4}) to (\d{4})\b")


_PER_ITEM = re.compile(r"\bon average, how many ([a-z][a-z ]*?) (?:does|do|did) (?:an?|each|every|one) (?:[a-z]+ )?"
                       r"([a-z]+) (?:have|get|receive|contain|include|hold)\b"
                       r"|\baverage number of ([a-z][a-z ]*?) (?:per|for each|for every) ([a-z]+)\b")


_MONTH_TEXT = re.compile(r"\byyyy-mm\b(?!-dd)")


_WEEKDAYS = {"sunday": 0, "monday": 1, "tuesday": 2, "wednesday": 3, "thursday": 4, "friday": 5, "saturday": 6}
_WEEKDAY = re.compile(rf"\b({'|'.join(_WEEKDAYS)})s?\b|\b(weekends?)\b")
# "the first half of 2023", "the fourth quarter", "Q2 2024": the part of a year, as (its first month, its last)
_IN_YEAR = re.compile(r"(?<!since )(?<!after )(?<!from )(?<!before )(?<!until )\b(?:in|during) (\d{4})\b"
                      r"(?! to\b| or (?:later|after|\d{4})\b| and (?:later|after|\d{4})\b| onwards?\b|-\d)")
_ORDINALS = {"first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3, "fourth": 4, "4th": 4}
_YEAR_PART = re.compile(rf"\b({'|'.join(_ORDINALS)}) (half|quarter)\b|\bq([1-4])\b")


# "on the first day of a month", "the 15th of each month": the day of the month it names
_MONTH_DAY = re.compile(r"\b(?:the )?(first|last|\d{1,2}(?:st|nd|rd|th)) (?:day )?of (?:a|the|each|every|any) month\b")
# "in the 90 days before 2023-01-01", "during the last two weeks before their leave": a window that ends at a date
_WINDOW_BEFORE = re.compile(rf"\b(?:in|during|within) the (?:last |final )?({_NUMBER}|{'|'.join(_AMOUNT_WORDS)}) "
                            r"(day|week|month|year)s? (?:before|prior to|leading up to)\b")

# "during the first year after their restaurant opened", "in the first 6 months since signing up": a window that
# starts at a date; the words after it name that date
_PERIOD_AFTER = re.compile(rf"\b(?:during|in|within) (?:the|its|their) first (?:({_NUMBER}|{'|'.join(_AMOUNT_WORDS)}) "
                           r")?(day|week|month|year)s? (?:after|since|following) (.+?)(?:[?.,;]|$)")


_DISTINCT_COUNT = re.compile(r"\b(?:how many|number of|count(?: of)?)\s+(?:the\s+)?(?:distinct|different|unique)\s+"
                             r"([a-z][a-z_]*)")


_NUMBER_WORDS = {"zero": 0, "no": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}


_ROUNDING = re.compile(r"\bround(?:ed|ing)?(?: off)? to (?:the nearest (?:whole number|integer)|(?:an? )?(?:whole "
                       r"number|integer)|(\w+) decimals?(?: places?| digits?)?|(\w+) places?)"
                       r"|\bto (\w+) decimal places?\b|\bto the nearest whole number\b")


_MANY = re.compile(r"\b(?:different|various|separately|apiece|distribution)\b")
_AN_AMOUNT = re.compile(r"\b(?:how many|number of|count|average|mean|in total|total|sum)\b")


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
    coarser: frozenset[str] = frozenset()  # units above a day the question names too: YEAR, MONTH, WEEK
    durations: tuple[tuple[int, str], ...] = ()  # amounts of time it names: "10 days" is (10, "day")
    weeks: bool = False  # the answer is a number of weeks
    inclusive: bool = False  # a number of days counts the first and the last day
    within_after: bool = False  # "within N days after A": a number of days from A is 0 to N, never below 0
    # "more than 10 days after A": (the move from A in days, months or years, its unit, whether the date is later)
    beyond: tuple[tuple[int, str, bool], ...] = ()
    first: str | None = None  # days or an amount of time to "its first X": X's noun
    first_next: str | None = None  # the word after it: X may be two words ("their first leave request")
    first_verb: bool = False  # X is a verb's stem ("inspected for the first time": "inspect"), not a noun
    span: tuple[str, str] | None = None  # a number of days from A to B: (A's words, B's words), B the later
    growth: bool = False  # a percentage change: (new - base) / base
    periods: tuple[str, str] | None = None  # a change "from 2023 to 2024": the base's year and the new one's
    per_item: tuple[str, str] | None = None  # "how many X does a Y have", on average: (X, Y)
    distinct: str | None = None  # the noun counted as distinct things ("customers")
    month_text: bool = False  # a month is given as YYYY-MM text
    rounding: int | None = None  # decimal places the answer is rounded to (0: a whole number)
    case_insensitive: bool = False
    numbers: frozenset[int] = field(default=frozenset(), compare=False)  # every number it gives, dates' parts too
    given_date: str | None = None  # the one date it gives (YYYY-MM-DD), where it names no time relative to today
    weekdays: frozenset[int] = frozenset()  # the days of the week it names, Sunday 0 to Saturday 6
    months: tuple[int, int] | None = None  # the part of a year it names: its first month and its last
    years: frozenset[int] = frozenset()  # the calendar years it names with "in" or "during" ("started in 2022")
    month_day: int | None = None  # the day of a month it names ("on the first day of a month": 1)
    window_before: tuple[int, str] | None = None  # "in the 90 days before D": the move back from D, (-90, "day")
    # "during the first year after A": the move on from A, (1, "year"), and the words that name A
    period_after: tuple[int, str, str] | None = None
    # it asks for one amount (how many, an average, a total) and for no value per group
    one_value: bool = field(default=False, compare=False)

    @property
    def any(self) -> bool:
        """Whether it settles any arithmetic (a candidate that breaks none of it earns the ``constraints`` check)."""
        return bool(self.given_date or self.weekdays or self.months or self.month_day or self.window_before
                    or self.period_after or self.scale or self.divisor or self.fractional
                    or self.days or self.inclusive or self.first or self.durations or self.weeks or self.growth
                    or self.beyond or self.per_item or self.distinct or self.month_text or self.rounding is not None
                    or self.case_insensitive)

    @property
    def shape(self) -> bool:
        """Whether it settles the answer's shape only (one value, a whole year): the repair runs, and earns no
        ``constraints`` check by it."""
        return self.one_value or bool(self.years)

    def describe(self) -> list[str]:
        """Each rule in words, for the report."""
        said = {"ratio": "a ratio, not multiplied by 100", "percent": "a percentage: the ratio times 100"}
        lines = [f"the answer is {said[self.scale]}"] if self.scale else []
        if self.given_date:
            lines.append(f"days are counted from {self.given_date}, not from today")
        if self.weekdays:
            lines.append("a day of the week is the date's weekday, not its day of the month or week of the year")
        if self.months:
            lines.append(f"the part of the year it names runs from month {self.months[0]} to month {self.months[1]}")
        if self.month_day:
            lines.append(f"a day of the month is the date's day ({self.month_day}), not its month")
        if self.window_before:
            count, unit = self.window_before
            lines.append(f"the dates lie in the {-count} {unit}{'s' if count != -1 else ''} before a date: from that "
                         "date moved back up to the date itself")
        if self.period_after:
            count, unit, words = self.period_after
            lines.append(f'the first {count} {unit}{"s" if count != 1 else ""} after "{words}" run from that date '
                         "to that date moved on, not by calendar years or months")
        if self.years:
            lines.append(f"a year named ({', '.join(map(str, sorted(self.years)))}) runs to its last day")
        if self.divisor:
            lines.append(f'"the ratio of A to {self.divisor}" divides by {self.divisor}')
        if self.fractional:
            lines.append("the answer is a fraction: no division may truncate to an integer")
        if self.days:
            lines.append("a number of days is a difference of dates in the engine's date arithmetic")
        if self.weeks:
            lines.append("the answer is a number of weeks: days divided by 7")
        if self.inclusive:
            lines.append("the number of days counts the first and the last day (the difference plus 1)")
        if self.within_after:
            lines.append('"within N days after" a date: the number of days from it is at least 0')
        for count, unit, later in self.beyond:
            moved = f"{abs(count)} {unit}{'s' if abs(count) != 1 else ''} {'after' if count > 0 else 'before'}"
            lines.append(f"a date {moved} another lies {'later' if later else 'earlier'} than that date moved on")
        if self.first and self.first_verb:
            lines.append(f'"{self.first}ed for the first time" reads the earliest date of each')
        elif self.first:
            lines.append(f"\"its first {self.first}\" is the earliest {self.first} of each")
        if self.span:
            lines.append(f'the days run from "{self.span[0]}" to "{self.span[1]}": the later date minus the earlier')
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
    durations = tuple(dict.fromkeys((_whole(n), unit) for n, unit in _DURATION.findall(text)))
    first = _FIRST.search(text) if days or durations else None
    first_time = _FIRST_TIME.search(text) if (days or durations) and not first else None
    span = _span(text) if days else None
    per = _PER_ITEM.search(text)
    per_item = ((per.group(1) or per.group(3)).strip(), per.group(2) or per.group(4)) if per else None
    return Rules(scale=scale, divisor=divisor, dividend=dividend, fractional=bool(_FRACTIONAL.search(text)), days=days,
                 coarser=frozenset(unit for unit, words in _COARSER.items() if days and words.search(text)),
                 durations=durations,
                 weeks=bool(_WEEKS.search(text)),
                 inclusive=days and bool(_INCLUSIVE.search(text)), within_after=bool(_WITHIN_AFTER.search(text)),
                 beyond=_beyond(text),
                 first=first.group(1) if first else first_time.group(1) if first_time else None,
                 first_next=first.group(2) if first else None, first_verb=first_time is not None, span=span,
                 growth=bool(_GROWTH.search(text)),
                 periods=(periods.group(1), periods.group(2)) if periods else None, per_item=per_item,
                 distinct=distinct.group(1) if distinct else None, month_text=bool(_MONTH_TEXT.search(text)),
                 rounding=_places(text), case_insensitive=bool(_CASE.search(text)),
                 numbers=frozenset(_whole(number) for number in re.findall(_NUMBER, text))
                 | {_whole(n) for n, _ in _DURATION.findall(text)},
                 given_date=_given_date(question), weekdays=_weekdays(text), months=_months(text),
                 years=frozenset(int(year) for year in _IN_YEAR.findall(text)), month_day=_month_day(text),
                 window_before=_window_before(text), period_after=_period_after(text),
                 one_value=bool(_AN_AMOUNT.search(text)) and not ASKS_PER_GROUP.search(text)
                 and not _MANY.search(text))


_ISO_DATE = re.compile(r"\b(\d{4}-\d{2}-\d{2})\b")
_NOW_WORDS = re.compile(r"\b(?:today|now|nowadays|current|currently|present|ago|so far|to date|this (?:year|month|"
                        r"week|quarter)|past \d+|last \d+|(?<!most )recent|(?<!most )recently)\b")


def _given_date(question: str) -> str | None:
    """The one date ``question`` gives, where it names no time relative to today; None otherwise."""
    dates = set(_ISO_DATE.findall(question))
    return dates.pop() if len(dates) == 1 and not _NOW_WORDS.search(question.lower()) else None


def _weekdays(text: str) -> frozenset[int]:
    """The days of the week ``text`` names ("on Mondays", "at the weekend": Saturday and Sunday)."""
    found: set[int] = set()
    for day, weekend in _WEEKDAY.findall(text):
        found |= {0, 6} if weekend else {_WEEKDAYS[day]}
    return frozenset(found)


def _months(text: str) -> tuple[int, int] | None:
    """(first month, last month) of the one part of a year ``text`` names: a half or a quarter; None for none or
    several."""
    parts = set()
    for ordinal, kind, quarter in _YEAR_PART.findall(text):
        number, size = (int(quarter), 3) if quarter else (_ORDINALS[ordinal], 6 if kind == "half" else 3)
        if number * size <= 12:
            parts.add(((number - 1) * size + 1, number * size))
    return parts.pop() if len(parts) == 1 else None


def _month_day(text: str) -> int | None:
    """The one day of a month ``text`` names ("the first day of a month": 1, "the 15th of each month": 15); None
    for none, several or the last day (whose number depends on the month)."""
    days = {1 if day == "first" else int(day[:-2]) for day in _MONTH_DAY.findall(text) if day != "last"}
    return days.pop() if len(days) == 1 and 1 <= min(days) <= 31 else None


def _window_before(text: str) -> tuple[int, str] | None:
    """The move back of the one window ``text`` ends at a date ("in the 90 days before D": (-90, "day"); a week
    is 7 days), or None."""
    windows = {time_amount(f"-{_whole(number)} {unit}") for number, unit in _WINDOW_BEFORE.findall(text)}
    return windows.pop() if len(windows) == 1 else None


def _period_after(text: str) -> tuple[int, str, str] | None:
    """(the move on, its unit, the words after "after") of the one window ``text`` starts at a date ("during the
    first year after their restaurant opened": (1, "year", "their restaurant opened")), or None."""
    found = {(*amount, words.strip()) for number, unit, words in _PERIOD_AFTER.findall(text)
             if (amount := time_amount(f"+{_whole(number) if number else 1} {unit}")) is not None}
    return found.pop() if len(found) == 1 else None


def _whole(number: str) -> int:
    """A whole number as the question writes it: with or without thousands separators (``2,000``), or in words
    (``two``; ``a`` is one)."""
    if number in ("a", "an"):
        return 1
    return _AMOUNT_WORDS.get(number) or int(number.replace(",", ""))


def _beyond(text: str) -> tuple[tuple[int, str, bool], ...]:
    """``Rules.beyond`` of the question's text (a week is 7 days)."""
    found = []
    for how, number, unit, way in _BEYOND.findall(text):
        if how == "within" and way == "after" and unit in ("day", "week"):
            continue  # "within 30 days after": a window from the date on (``within_after``), not only a bound
        amount = time_amount(f"{'-' if way == 'before' else '+'}{_whole(number)} {unit}")
        if amount is not None:
            found.append((*amount, (how, way) in _LATER))
    return tuple(dict.fromkeys(found))


def _span(text: str) -> tuple[str, str] | None:
    """(the earlier date's words, the later's) of "how many days after A did B", "days before A was B" (A the
    later) or "days from A to B"; None when the question says neither."""
    after = _AFTER.search(text)
    if after:
        return (after.group(2), after.group(3)) if after.group(1) != "before" else (after.group(3), after.group(2))
    span = _FROM_TO.search(text)
    return (span.group(1), span.group(2)) if span else None


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
