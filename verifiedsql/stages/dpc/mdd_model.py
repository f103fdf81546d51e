"""The model tester (DPC appendix A.2): when the deterministic search finds no distinguishing database,
ask the model for a few rows on which two candidates disagree.

Each round the model writes the data as JSON; it is checked against the schema slice (known tables and
columns, values of each column's type, NOT NULL, unique primary keys, foreign keys that reach a parent
row, at most ``max_rows`` rows per table), loaded into the scratch database, and both SQLs run on it.
Invalid data, a failing run, or results that agree (BS-F1 >= ``DISTINGUISHED_BELOW``) are fed back as
the next round's message (discriminative feedback), for at most ``rounds`` rounds in all.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ...db.schema import Table
from ...errors import LLMError, VerifiedSQLError
from ...llm.base import ChatModel, ChatRequest, Message
from ...llm.replies import extract_json_object, follow_up
from ...llm.rows import render_rows
from ...report import VerificationReport
from ...results import ResultSet
from ..calls import call_model
from ..common.frames import ColumnKind, column_kind
from ..common.slices import Rows, SchemaSlice
from .data import DISTINGUISHED_BELOW, MDD
from .prompts import (
    RESULT_ROWS,
    render_slice,
    tester_agree_feedback,
    tester_broken_feedback,
    tester_invalid_feedback,
    tester_messages,
)
from .softf1 import bipartite_soft_f1, normalize_cell

__all__ = ["ScratchDatabase", "coerce_value", "parse_tables", "synthesize_mdd"]

MAX_PROBLEMS = 8  # validation problems fed back at once

class ScratchDatabase(Protocol):
    """What the tester needs of the scratch database (``stages.scratch.Scratch`` fits)."""

    def load(self, tables: dict[str, Rows]) -> None: ...

    def run(self, sql: str) -> ResultSet: ...


_TRUE, _FALSE = {"true", "t", "yes", "y", "1"}, {"false", "f", "no", "n", "0"}


def _to_int(value: Any) -> int:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"\s*[+-]?\d+\s*", value):
        return int(value)
    if isinstance(value, int):
        return value
    raise ValueError


def _to_float(value: Any) -> float:
    number = float(value) if isinstance(value, (int, float, str)) else math.nan
    if not math.isfinite(number):
        raise ValueError
    return number


def _to_bool(value: Any) -> bool:
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise ValueError


def _to_text(value: Any) -> str:
    if isinstance(value, (int, float, str)):
        return value if isinstance(value, str) else str(value)
    raise ValueError


_COERCE = {
    "int": _to_int,
    "float": _to_float,
    "bool": _to_bool,
    "date": lambda v: dt.date.fromisoformat(v.strip()).isoformat(),
    "timestamp": lambda v: dt.datetime.fromisoformat(v.strip()).isoformat(sep=" "),
    "time": lambda v: dt.time.fromisoformat(v.strip()).isoformat(),
    "text": _to_text,
}
_EXPECTED = {"int": "an integer", "float": "a number", "bool": "true or false", "date": "an ISO date like "
             "'2013-09-15'", "timestamp": "an ISO timestamp like '2013-09-15 10:30:00'", "time": "an ISO "
             "time like '10:30:00'", "text": "text", "any": "a single value"}


def coerce_value(value: Any, kind: ColumnKind) -> Any:
    """``value`` as the column kind stores it (dates and times as ISO text); ``ValueError`` if it cannot be."""
    if value is None:
        return None
    if isinstance(value, (list, dict)) or (isinstance(value, bool) and kind not in ("bool", "any")):
        raise ValueError(f"{value!r} is not {_EXPECTED[kind]}")
    if kind == "any":
        return value
    if kind in ("date", "timestamp", "time") and not isinstance(value, str):
        raise ValueError(f"{value!r} is not {_EXPECTED[kind]}")
    try:
        return _COERCE[kind](value)
    except (ValueError, TypeError, OverflowError):
        raise ValueError(f"{value!r} is not {_EXPECTED[kind]}") from None


# --- validation against the slice ----------------------------------------------------------------


@dataclass
class _Problems:
    """Validation problems, capped at MAX_PROBLEMS (the rest only counted)."""

    items: list[str]
    extra: int = 0

    def add(self, text: str) -> None:
        if len(self.items) < MAX_PROBLEMS:
            self.items.append(text)
        else:
            self.extra += 1

    def listed(self) -> list[str]:
        return self.items + ([f"... and {self.extra} more problems"] if self.extra else [])


def _table_payloads(data: Mapping[str, Any], problems: _Problems) -> dict[str, Any]:
    tables = data.get("tables", data.get("test_data"))
    if not isinstance(tables, dict):
        problems.add('the JSON needs a "tables" object mapping each table name to its columns and rows')
        return {}
    return tables


def _columns_and_rows(name: str, payload: Any, problems: _Problems) -> tuple[list[str], list[Any]] | None:
    """A table's columns and rows from ``{"columns": [...], "rows": [[...]]}`` or a list of row objects."""
    if isinstance(payload, dict) and "columns" not in payload and isinstance(payload.get("rows"), list):
        payload = payload["rows"]
    if isinstance(payload, list) and all(isinstance(r, dict) for r in payload):
        columns = list(dict.fromkeys(str(k) for row in payload for k in row))
        return columns, [[row.get(c) for c in columns] for row in payload]
    if (isinstance(payload, dict) and isinstance(payload.get("columns"), list)
            and isinstance(payload.get("rows"), list)):
        return [str(c) for c in payload["columns"]], payload["rows"]
    problems.add(f'table {name}: give it as {{"columns": [...], "rows": [[...], ...]}}')
    return None


def _column_positions(table: Table, columns: list[str], problems: _Problems) -> list[int] | None:
    """For each slice column, its position among the given columns (-1: not given, so NULL)."""
    given: dict[str, int] = {}
    for i, name in enumerate(columns):
        column = table.column(name)
        if column is None:
            known = ", ".join(c.name for c in table.columns)
            problems.add(f"table {table.name} has no column {name!r} (its columns: {known})")
        elif column.name in given:
            problems.add(f"table {table.name}: column {column.name} is given twice")
        else:
            given[column.name] = i
    if len(given) < len(columns):
        return None
    return [given.get(c.name, -1) for c in table.columns]


def _table_rows(table: Table, payload: Any, max_rows: int, problems: _Problems) -> Rows:
    """The rows of one table in the slice's column order, each value coerced to its column's kind."""
    parsed = _columns_and_rows(table.name, payload, problems)
    positions = _column_positions(table, parsed[0], problems) if parsed else None
    if parsed is None or positions is None:
        return ()
    columns, raw = parsed
    if len(raw) > max_rows:
        problems.add(f"table {table.name} has {len(raw)} rows; at most {max_rows} are allowed")
        return ()
    kinds = [column_kind(c.type) for c in table.columns]
    rows: list[tuple[Any, ...]] = []
    for n, row in enumerate(raw, 1):
        if not isinstance(row, list) or len(row) != len(columns):
            problems.add(f"table {table.name} row {n}: expected a list of {len(columns)} values")
            continue
        values = []
        for column, kind, at in zip(table.columns, kinds, positions):
            try:
                values.append(coerce_value(row[at] if at >= 0 else None, kind))
            except ValueError as error:
                problems.add(f"table {table.name} row {n}, column {column.name} ({column.type}): {error}")
                values.append(None)
        rows.append(tuple(values))
    return tuple(rows)


def _key(row: Sequence[Any], positions: Sequence[int]) -> tuple[Any, ...]:
    return tuple(normalize_cell(row[i]) for i in positions)


def _check_not_null(table: Table, rows: Rows, problems: _Problems) -> None:
    for i, column in enumerate(table.columns):
        if column.nullable and not column.primary_key:
            continue
        for n, row in enumerate(rows, 1):
            if row[i] is None:
                problems.add(f"table {table.name} row {n}: column {column.name} must not be NULL")


def _check_primary_key(table: Table, rows: Rows, problems: _Problems) -> None:
    positions = [i for i, c in enumerate(table.columns) if c.primary_key]
    seen: set[tuple[Any, ...]] = set()
    for n, row in enumerate(rows, 1):
        key = _key(row, positions)
        if positions and None not in key and key in seen:
            shown = ", ".join(f"{table.columns[i].name}={row[i]!r}" for i in positions)
            problems.add(f"table {table.name} row {n}: primary key {shown} is used by an earlier row")
        seen.add(key)


def _check_foreign_keys(table: Table, slice_: SchemaSlice, tables: dict[str, Rows], problems: _Problems) -> None:
    """Each non-NULL foreign key must match a row of its parent (parents outside the slice are not checked)."""
    for fk in table.foreign_keys:
        parent = slice_.table(fk.referred_table)
        child_at = [_index(table, c) for c in fk.columns]
        parent_at = [_index(parent, c) for c in fk.referred_columns] if parent else []
        if parent is None or -1 in child_at or -1 in parent_at:
            continue
        present = {_key(row, parent_at) for row in tables.get(parent.name, ())}
        for n, row in enumerate(tables.get(table.name, ()), 1):
            key = _key(row, child_at)
            if None not in key and key not in present:
                shown = ", ".join(f"{c}={row[i]!r}" for c, i in zip(fk.columns, child_at))
                problems.add(f"table {table.name} row {n}: {shown} has no row in {parent.name} "
                             f"({', '.join(fk.referred_columns)}); add that parent row")


def _index(table: Table, name: str) -> int:
    lowered = name.lower()
    return next((i for i, c in enumerate(table.columns) if c.name.lower() == lowered), -1)


def parse_tables(data: Mapping[str, Any], slice_: SchemaSlice, max_rows: int) -> tuple[dict[str, Rows], list[str]]:
    """The model's JSON as rows per slice table (every slice table; omitted ones empty), and the problems
    that make it unusable (none when it is valid)."""
    problems = _Problems([])
    tables: dict[str, Rows] = {t.name: () for t in slice_.tables}
    for name, payload in _table_payloads(data, problems).items():
        table = slice_.table(str(name))
        if table is None:
            problems.add(f"unknown table {name!r} (the tables are: {', '.join(tables)})")
        else:
            tables[table.name] = _table_rows(table, payload, max_rows, problems)
    if problems.items:  # keys are checked only on rows that parsed, so that no problem is a knock-on one
        return tables, problems.listed()
    for table in slice_.tables:
        _check_not_null(table, tables[table.name], problems)
        _check_primary_key(table, tables[table.name], problems)
        _check_foreign_keys(table, slice_, tables, problems)
    return tables, problems.listed()


# --- the rounds ----------------------------------------------------------------------------------


def _render_result(result: ResultSet) -> str:
    return render_rows(result.columns, result.rows, limit=RESULT_ROWS)


@dataclass(frozen=True)
class _Rejected:
    """Why a round's data made no MDD: a short note for the MDD's notes, and the model's next message."""

    note: str
    feedback: str


def _try_data(reply: str, scratch: ScratchDatabase, slice_: SchemaSlice, sql_a: str, sql_b: str,
              max_rows: int) -> MDD | _Rejected:
    """The MDD the reply's data makes, or why it does not make one."""
    try:
        data = extract_json_object(reply)
    except ValueError as error:
        return _Rejected(f"unreadable JSON ({error})", tester_invalid_feedback([str(error)]))
    tables, problems = parse_tables(data, slice_, max_rows)
    if problems:
        return _Rejected(f"invalid data ({problems[0]})", tester_invalid_feedback(problems))
    try:
        scratch.load(tables)
        result_a, result_b = scratch.run(sql_a), scratch.run(sql_b)
    except VerifiedSQLError as error:
        return _Rejected(f"run failed ({error})", tester_broken_feedback(str(error)))
    score = bipartite_soft_f1(result_a, result_b)
    if score >= DISTINGUISHED_BELOW:
        feedback = tester_agree_feedback(_render_result(result_a), _render_result(result_b))
        return _Rejected(f"results agree (BS-F1 {score:.3f})", feedback)
    return MDD(tables=tables, result_a=result_a, result_b=result_b, score=score, method="model")


def synthesize_mdd(
    llm: ChatModel,
    report: VerificationReport,
    scratch: ScratchDatabase,
    slice_: SchemaSlice,
    question: str,
    sql_a: str,
    sql_b: str,
    *,
    dialect_name: str,
    max_rows: int = 30,
    rounds: int = 3,
    max_tokens: int = 1024,
) -> MDD | None:
    """Ask the model for data on which ``sql_a`` and ``sql_b`` disagree; None when ``rounds`` rounds
    bring none. Round n is sent with temperature 0 and seed n; ``MDD.tries`` is the round that worked.

    The scratch database holds the last data loaded when this returns. Giving up, or a model error,
    leaves a note in the report.
    """
    first = tester_messages(render_slice(slice_.tables), question, sql_a, sql_b,
                            dialect=dialect_name, max_rows=max_rows)
    prompt: tuple[Message, ...] = first
    notes: list[str] = []
    for round_ in range(1, rounds + 1):
        request = ChatRequest(messages=prompt, temperature=0.0, max_tokens=max_tokens, seed=round_, purpose="mdd")
        try:
            reply = call_model(llm, request, report).text
        except LLMError as error:
            report.notes.append(f"model tester stopped in round {round_}: {error}")
            return None
        outcome = _try_data(reply, scratch, slice_, sql_a, sql_b, max_rows)
        if isinstance(outcome, MDD):
            outcome.tries, outcome.notes = round_, notes
            return outcome
        notes.append(f"round {round_}: {outcome.note[:300]}")
        prompt = follow_up(first, reply, outcome.feedback)
    report.notes.append(f"model tester found no distinguishing data in {rounds} rounds: " + "; ".join(notes))
    return None
