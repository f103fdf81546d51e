"""Prompt templates and reply parsers of the dual-paradigm (DPC) stages: the model tester, which writes
a small database on which two SQL candidates disagree, and the pandas solver, which answers the question
on that database in Python without seeing the candidates."""

from __future__ import annotations

import ast
import keyword
import re
from collections.abc import Sequence
from typing import Any

from ...schema import Table, render_table
from ...llm.base import Message, messages
from ...llm.prompts import loads_reply

# --- tester (DPC appendix A.2) -------------------------------------------------------------------

TESTER_SYSTEM = (
    "You build tiny test databases that tell two SQL queries apart.\n"
    "You get a database schema, a question and two {dialect} queries (A and B) written to answer it. "
    "Write a few rows per table on which A and B return DIFFERENT results.\n"
    "How:\n"
    "1. Find where the logic of A and B differs: a filter or its boundary, a join that drops or "
    "duplicates rows, grouping, DISTINCT, NULL handling, ordering and LIMIT, rounding, the columns "
    "returned.\n"
    "2. Write the fewest rows that make that difference show, plus the parent rows that the foreign "
    "keys need.\n"
    "3. Keep to the schema: only its tables and columns; values of each column's type, with dates "
    "and times as ISO text ('2013-09-15', '2013-09-15 10:30:00'); unique, non-NULL primary keys; "
    "every foreign key pointing to an existing row; at most {max_rows} rows per table. Make values "
    "look like the example values in the schema.\n"
    "Reply with a short explanation of the difference, then the data as one JSON object (no "
    "comments) in a ```json block, in this shape:\n"
    "```json\n"
    '{{"tables": {{"table_name": {{"columns": ["col1", "col2"], "rows": [[1, "x"], [2, null]]}}}}}}\n'
    "```"
)

TESTER_USER = (
    "Schema:\n{schema}\n\nQuestion: {question}\n\n"
    "Query A:\n```sql\n{sql_a}\n```\n\nQuery B:\n```sql\n{sql_b}\n```\n\n"
    "Write the test data on which A and B return different results."
)

TESTER_INVALID = (
    "That data cannot be used:\n{problems}\n\n"
    "Fix every point and reply with the complete corrected data (every table) as JSON in a "
    "```json block."
)

TESTER_AGREE = (
    "On your data both queries return the same result, so it does not tell them apart.\n\n"
    "Query A returned:\n{result_a}\n\nQuery B returned:\n{result_b}\n\n"
    "Look again at where A and B differ and write new data (complete JSON, every table) on which "
    "their results differ, for example a row that one query keeps and the other drops, or a value "
    "that one query counts and the other does not."
)

TESTER_BROKEN = (
    "Running the queries on that data failed:\n{error}\n\n"
    "Change the data so that both queries run (values of the right type and format) and return "
    "different results. Reply with the complete JSON (every table) in a ```json block."
)

# --- solver (DPC appendix A.3) -------------------------------------------------------------------

SOLVER_SYSTEM = (
    "You answer questions about small tables by writing pandas code.\n"
    "- Each table is already loaded as a pandas DataFrame in the variable named below; `pd` and "
    "`np` are imported, and `tables` maps every table name to its DataFrame. Use these variables; "
    "there is no need to load anything.\n"
    "- Dates and times are ISO text ('2013-09-15', '2013-09-15 10:30:00'); NULL cells are "
    "missing values.\n"
    "- Assign the answer to a variable named `result`, as a DataFrame: only the columns the "
    "question asks for, in the order it names them, one row per answer; a single value is a "
    "one-row, one-column DataFrame.\n"
    "- Only compute: do not read or write files, print or plot.\n"
    "Reply with the complete code in one ```python block."
)

SOLVER_USER = "Tables:\n\n{tables}\n\nQuestion: {question}\n\nWrite the pandas code that computes `result`."

SOLVER_RETRY = (
    "Running that code failed:\n```\n{error}\n```\n\n"
    "Fix it and reply with the complete corrected code in one ```python block."
)

ERROR_TAIL_CHARS = 1500  # of a traceback or a database error shown to the model
CELL_CHARS = 60  # longest cell text in a rendered table
RESULT_ROWS = 10  # rows of a query result shown in tester feedback


# --- rendering -----------------------------------------------------------------------------------


def render_slice(tables: Sequence[Table]) -> str:
    """The slice's tables as compact DDL with keys, example values and NOT NULL columns."""
    return "\n\n".join(_slice_table(t) for t in tables)


def _slice_table(table: Table) -> str:
    required = [c.name for c in table.columns if not c.nullable and not c.primary_key]
    return render_table(table) + (f"\n-- NOT NULL: {', '.join(required)}" if required else "")


def cell_text(value: Any) -> str:
    """One cell as the model sees it: NULL, quoted text, or the value."""
    if value is None:
        return "NULL"
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= CELL_CHARS else text[: CELL_CHARS - 3] + "..."


def render_rows(columns: Sequence[str], rows: Sequence[Sequence[Any]], limit: int | None = None) -> str:
    """A small table as text: a header line, then one ``|``-separated line per row (at most ``limit``)."""
    shown = rows if limit is None else rows[:limit]
    lines = [" | ".join(columns) or "(no columns)"]
    lines += [" | ".join(cell_text(v) for v in row) for row in shown]
    if len(rows) > len(shown):
        lines.append(f"... ({len(rows) - len(shown)} more rows)")
    if not rows:
        lines.append("(no rows)")
    return "\n".join(lines)


def frame_variable(name: str) -> str:
    """The expression that names a table's DataFrame in the solver's namespace."""
    plain = name.isidentifier() and not keyword.iskeyword(name) and name not in {"pd", "np", "tables", "result"}
    return name if plain else f"tables[{name!r}]"


def _column_notes(table: Table, column: str) -> list[str]:
    notes = ["primary key"] if column in table.primary_key else []
    for fk in table.foreign_keys:
        if column in fk.columns:
            parent = fk.referred_columns[fk.columns.index(column)]
            notes.append(f"references {fk.referred_table}.{parent}")
    return notes


def render_dataframe(table: Table, dtypes: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """One solver table: its variable, each column with dtype, SQL type and keys, then all its rows."""
    lines = [f"DataFrame `{frame_variable(table.name)}` (table {table.name}, {len(rows)} rows), columns:"]
    for column, dtype in zip(table.columns, dtypes):
        notes = ", ".join([column.type, *_column_notes(table, column.name)])
        lines.append(f"  {column.name}: {dtype} ({notes})")
    lines.append(render_rows([c.name for c in table.columns], rows))
    return "\n".join(lines)


def error_tail(error: str) -> str:
    """The end of a traceback or error message, where the cause is."""
    error = error.strip()
    return error if len(error) <= ERROR_TAIL_CHARS else "..." + error[-ERROR_TAIL_CHARS:]


# --- message builders ----------------------------------------------------------------------------


def follow_up(first: tuple[Message, ...], reply: str, feedback: str) -> tuple[Message, ...]:
    """The first turn, the model's latest reply, then the feedback on it (earlier rounds are dropped)."""
    return messages(first[0]["content"], feedback, [first[1], {"role": "assistant", "content": reply}])


def tester_messages(
    schema_text: str, question: str, sql_a: str, sql_b: str, *, dialect: str, max_rows: int
) -> tuple[Message, ...]:
    """The tester's first turn: schema slice, question and both candidates."""
    system = TESTER_SYSTEM.format(dialect=dialect, max_rows=max_rows)
    return messages(system, TESTER_USER.format(schema=schema_text, question=question, sql_a=sql_a, sql_b=sql_b))


def tester_invalid_feedback(problems: Sequence[str]) -> str:
    return TESTER_INVALID.format(problems="\n".join(f"- {p}" for p in problems))


def tester_agree_feedback(result_a: str, result_b: str) -> str:
    return TESTER_AGREE.format(result_a=result_a, result_b=result_b)


def tester_broken_feedback(error: str) -> str:
    return TESTER_BROKEN.format(error=error_tail(error))


def solver_messages(tables_text: str, question: str) -> tuple[Message, ...]:
    """The solver's first turn: every DataFrame with dtypes and rows, and the question (no SQL)."""
    return messages(SOLVER_SYSTEM, SOLVER_USER.format(tables=tables_text, question=question))


def solver_retry_feedback(error: str) -> str:
    return SOLVER_RETRY.format(error=error_tail(error))


# --- reply parsing -------------------------------------------------------------------------------

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)


def _fenced(text: str) -> list[tuple[str, str]]:
    """(language tag, body) of every fenced block; an unterminated last block runs to the end."""
    return [(m.group(1).lower(), m.group(2)) for m in _FENCE.finditer(text)]


def extract_python(text: str) -> str | None:
    """The code of the first ```python block, else of the first untagged block; None when there is none."""
    blocks = _fenced(text)
    for wanted in (("python", "py", "python3"), ("",)):
        code = next((body.strip() for tag, body in blocks if tag in wanted and body.strip()), None)
        if code:
            return code
    return None


def _balanced_spans(text: str) -> list[str]:
    """Every top-level ``{...}`` in ``text``, in order, with braces inside JSON strings ignored."""
    spans: list[str] = []
    depth, start, quote, escaped = 0, -1, "", False
    for i, ch in enumerate(text):
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = ""
        elif ch in "\"'" and depth:
            quote = ch
        elif ch == "{":
            depth, start = depth + 1, i if depth == 0 else start
        elif ch == "}" and depth:
            depth -= 1
            if depth == 0:
                spans.append(text[start : i + 1])
    return spans


def _loads(span: str) -> Any:
    """JSON, else a Python literal (single quotes, None/True): both parsers only read data."""
    try:
        return loads_reply(span)
    except ValueError as json_error:
        try:
            return ast.literal_eval(span)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            raise json_error from None


def extract_json_object(text: str) -> dict[str, Any]:
    """The first JSON object in a reply: fenced ```json blocks first, then the first balanced ``{...}``.

    Raises ``ValueError`` (with the parser's complaint) when no object can be read.
    """
    chunks = [body for tag, body in _fenced(text) if tag in ("json", "")] + [text]
    first_error: ValueError | None = None
    for chunk in chunks:
        for span in _balanced_spans(chunk):
            try:
                value = _loads(span)
            except ValueError as error:
                first_error = first_error or error
                continue
            if isinstance(value, dict):
                return value
    if first_error is not None:
        raise ValueError(f"the JSON could not be parsed: {first_error}")
    raise ValueError("the reply holds no JSON object")


SLICER_SYSTEM = (
    "You read {dialect} queries and list the database columns they use.\n"
    "Answer with one JSON object and nothing else: "
    '{{"tables": {{"table name": ["column", ...]}}}}, naming every table either query reads and every '
    "column it selects, filters, joins, groups or sorts on."
)
SLICER_USER = "Database schema:\n{schema}\n\nQuestion: {question}\n\nQuery A:\n{sql_a}\n\nQuery B:\n{sql_b}"


def slicer_messages(schema_text: str, question: str, sql_a: str, sql_b: str, *, dialect: str) -> tuple[Message, ...]:
    """The model slicer (the fallback when lineage cannot resolve the SQL): which columns the two use."""
    return messages(SLICER_SYSTEM.format(dialect=dialect),
                    SLICER_USER.format(schema=schema_text, question=question, sql_a=sql_a, sql_b=sql_b))
