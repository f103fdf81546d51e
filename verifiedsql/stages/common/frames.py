"""Typed DataFrames of a schema slice: the kind of value each SQL column type holds, and every slice table
as a pandas DataFrame with dtypes from those kinds. Shared by the DPC solver and VET's execution tracing."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any, Literal

import pandas as pd  # type: ignore[import-untyped,unused-ignore]

from ...db.schema import Table
from .slices import Rows, SchemaSlice

ColumnKind = Literal["int", "float", "bool", "date", "timestamp", "time", "text", "any"]

# --- column types --------------------------------------------------------------------------------

_INT = re.compile(r"^(U?(TINY|SMALL|MEDIUM|BIG|HUGE)?INT(EGER)?\d*|(BIG|SMALL)?SERIAL\d*|BYTEINT|LONG)\b")
_SCALE_ZERO = re.compile(r"^(NUMBER|NUMERIC|DECIMAL)\s*\(\s*\d+\s*,\s*0\s*\)")
_FLOAT = re.compile(r"^(REAL|FLOAT|DOUBLE|DECIMAL|NUMERIC|NUMBER|MONEY|SMALLMONEY)")
_TEXT = re.compile(r"CHAR|TEXT|STRING|CLOB|UUID|ENUM")


def column_kind(type_name: str) -> ColumnKind:
    """The kind of value a SQL column type holds; ``any`` for types without a check here."""
    t = type_name.strip().upper()
    if _INT.match(t) or _SCALE_ZERO.match(t):
        return "int"
    if _FLOAT.match(t):
        return "float"
    if t.startswith("BOOL"):
        return "bool"
    if t.startswith(("TIMESTAMP", "DATETIME")):
        return "timestamp"
    if t.startswith("DATE"):
        return "date"
    if t.startswith("TIME"):
        return "time"
    if _TEXT.search(t):
        return "text"
    return "any"


_DTYPES: dict[ColumnKind, str] = {"int": "Int64", "float": "float64", "bool": "boolean",
                                  "text": "object", "date": "object", "timestamp": "object", "time": "object"}


def _plain(value: Any) -> Any:
    """A cell as the DataFrame holds it: dates and times as ISO text, Decimals as floats."""
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    return value


def _series(values: list[Any], kind: ColumnKind) -> pd.Series:
    dtype = _DTYPES.get(kind)
    try:
        return pd.Series(values, dtype=dtype)
    except (TypeError, ValueError, OverflowError):  # values unlike the declared type: let pandas infer
        return pd.Series(values)


def _rows_of(mdd_tables: Mapping[str, Rows], table: Table) -> Rows:
    lowered = table.name.lower()
    return next((rows for name, rows in mdd_tables.items() if name.lower() == lowered), ())


def slice_frames(slice_: SchemaSlice, mdd_tables: Mapping[str, Rows]) -> dict[str, tuple[pd.DataFrame, Rows]]:
    """Every slice table as a DataFrame (typed from the column types), with its plain rows, by table name."""
    frames: dict[str, tuple[pd.DataFrame, Rows]] = {}
    for table in slice_.tables:
        rows = tuple(tuple(_plain(v) for v in row) for row in _rows_of(mdd_tables, table))
        columns = {c.name: _series([row[i] for row in rows], column_kind(c.type))
                   for i, c in enumerate(table.columns)}
        frames[table.name] = (pd.DataFrame(columns, columns=[c.name for c in table.columns]), rows)
    return frames
