"""Prompt templates of the dual-paradigm (DPC) stages: the model tester, which writes a small database on
which two SQL candidates disagree, the pandas solver, which answers the question on that database in Python
without seeing the candidates, and the model slicer. Replies are read by ``llm.replies``; rows and
DataFrames are rendered by ``llm.rows``."""

from __future__ import annotations

from collections.abc import Sequence

from ...db.schema import Table, render_table
from ...llm.base import Message, messages
from ...llm.replies import error_tail

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

RESULT_ROWS = 10  # rows of a query result shown in tester feedback


# --- rendering -----------------------------------------------------------------------------------


def render_slice(tables: Sequence[Table]) -> str:
    """The slice's tables as compact DDL with keys, example values and NOT NULL columns."""
    return "\n\n".join(_slice_table(t) for t in tables)


def _slice_table(table: Table) -> str:
    required = [c.name for c in table.columns if not c.nullable and not c.primary_key]
    return render_table(table) + (f"\n-- NOT NULL: {', '.join(required)}" if required else "")


# --- message builders ----------------------------------------------------------------------------


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


# --- model slicer ------------------------------------------------------------------------------

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
