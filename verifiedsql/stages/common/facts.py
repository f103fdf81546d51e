"""What a column's reflected type and sampled values say it holds: numbers, years, dates. Shared by the
deterministic repair (``stages/repair/``) and the schema-derived prompt hints (``common/hints.py``)."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any, Literal

from ...db.schema import Column
from .frames import column_kind


def as_number(value: Any) -> float | None:
    """``value`` read as a number (booleans are not numbers); ``None`` when it does not read as one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return float(str(value).strip())
    except ValueError:
        return None


def is_year_number(value: Any) -> bool:
    """A whole number from 1000 to 2999 (as a number or as text)."""
    number = as_number(value)
    return number is not None and number == int(number) and 1000 <= number <= 2999


def date_like(value: Any) -> Literal["date", "timestamp"] | None:
    """Whether ``value`` is, or is ISO text for, a date or a timestamp."""
    if isinstance(value, dt.datetime):
        return "timestamp"
    if isinstance(value, dt.date):
        return "date"
    text = str(value).strip()
    if not re.match(r"^\d{4}-\d{1,2}-\d{1,2}", text):
        return None
    try:
        parsed = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    return "timestamp" if (parsed.hour, parsed.minute, parsed.second) != (0, 0, 0) or len(text) > 10 else "date"


def holds_years(column: Column) -> bool:
    """A number column that holds years: its samples are whole numbers from 1000 to 2999 (with no samples,
    its name says year)."""
    if column_kind(column.type) not in ("int", "float"):
        return False
    if column.samples:
        return all(is_year_number(v) for v in column.samples)
    return "year" in column.name.lower()


def holds_dates(column: Column) -> Literal["typed", "text"] | None:
    """``typed`` for a date or timestamp column, ``text`` for text whose samples are all ISO dates."""
    kind = column_kind(column.type)
    if kind in ("date", "timestamp"):
        return "typed"
    if kind == "text" and column.samples and all(date_like(v) for v in column.samples):
        return "text"
    return None
