"""Prompts of verifiable execution tracing (VET): the next pandas step, its repair, the zero-temperature
stop check, SQL reconstructed from the trace, and the question reconstructed from that SQL."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ...llm.base import Message, messages
from ...llm.prompts import dialect_hints
from ...llm.replies import error_tail
from ...profiles import DialectProfile

STEP_SYSTEM = (
    "You answer a question about a database step by step with pandas. Each step is a few lines of Python "
    "that run at once on the real data, and you see each step's output before writing the next.\n"
    "Rules:\n"
    "- The tables are pandas DataFrames already in scope under the names listed; `pd` and `np` are imported.\n"
    "- Use only the DataFrames and columns listed: nothing else exists.\n"
    "- Steps run in order in one namespace: variables of earlier steps are still there.\n"
    "- One operation per step: filter rows, join (merge) two frames, compute a column, group and "
    "aggregate, sort, or select the columns of the answer.\n"
    "- A step must assign its output (a DataFrame, Series or single value) to the variable `result`.\n"
    "- Do not read files or print. Reply with the step in one ```python code block and nothing else."
)

STEP_USER = "DataFrames:\n{tables}\n\nQuestion: {question}\n\n{trace}\n\nWrite step {number}."

NO_STEPS = "No steps yet."

STEP_REPAIR = "Step {number} is not accepted: {problem}\n\nWrite step {number} again, fixed, in one ```python block."

STOP_SYSTEM = (
    "You check whether a step-by-step computation already answers a question. Reply with exactly one word: "
    "YES if the output of the last step is the complete answer to the question, NO if more steps are needed."
)

STOP_USER = "Question: {question}\n\n{trace}\n\nIs the output of the last step the complete answer? YES or NO."

SQL_SYSTEM = (
    "You turn a verified pandas computation into one {dialect} query that returns exactly the output of its "
    "last step.\n"
    "Rules:\n{hints}\n"
    "- Keep the tables, filters, join keys, groupings and aggregations of the steps; add no other table, "
    "column or value.\n"
    "- Return the same columns as the last step's output, in the same order.\n"
    "- Return exactly one read-only SELECT statement in a ```sql code block, and nothing else."
)

SQL_USER = "Database tables:\n{schema}\n\nQuestion: {question}\n\n{trace}\n\nWrite the {dialect} query."

SQL_RETRY = "{problem}\n\nWrite the query again so that it returns exactly the last step's output, in a ```sql block."

QUESTION_SYSTEM = (
    "You read a SQL query and its result and write the one question, in plain English, that the query "
    "answers. Reply with the question only: one English sentence ending with a question mark, no SQL."
)

QUESTION_USER = "Database tables:\n{schema}\n\n```sql\n{sql}\n```\n\nResult:\n{result}\n\nThe question it answers:"


def render_trace(steps: Sequence[tuple[str, str]]) -> str:
    """The accepted steps so far, each as its code and a preview of its output."""
    if not steps:
        return NO_STEPS
    parts = [f"Step {number} (accepted):\n```python\n{code}\n```\nOutput:\n{output}"
             for number, (code, output) in enumerate(steps, start=1)]
    return "Steps so far:\n\n" + "\n\n".join(parts)


def step_messages(tables: str, question: str, steps: Sequence[tuple[str, str]]) -> tuple[Message, ...]:
    """The request for the next step: the DataFrames, the question and the accepted steps with outputs."""
    user = STEP_USER.format(tables=tables, question=question, trace=render_trace(steps), number=len(steps) + 1)
    return messages(STEP_SYSTEM, user)


def step_repair_feedback(number: int, problem: str) -> str:
    """The follow-up turn for a step that failed, broke a sanity rule or left the candidate columns."""
    return STEP_REPAIR.format(number=number, problem=error_tail(problem))


def stop_messages(question: str, steps: Sequence[tuple[str, str]]) -> tuple[Message, ...]:
    return messages(STOP_SYSTEM, STOP_USER.format(question=question, trace=render_trace(steps)))


def sql_messages(profile: DialectProfile, schema_text: str, question: str,
                 steps: Sequence[tuple[str, str]]) -> tuple[Message, ...]:
    """The reconstruction request: the candidate tables' DDL, the question and the verified trace."""
    system = SQL_SYSTEM.format(dialect=profile.display_name, hints=dialect_hints(profile))
    user = SQL_USER.format(schema=schema_text, question=question, trace=render_trace(steps),
                           dialect=profile.display_name)
    return messages(system, user)


def sql_retry_feedback(problem: str) -> str:
    return SQL_RETRY.format(problem=error_tail(problem))


def question_messages(schema_text: str, sql: str, result: str) -> tuple[Message, ...]:
    return messages(QUESTION_SYSTEM, QUESTION_USER.format(schema=schema_text, sql=sql, result=result))


_CODE_LINE = re.compile(r"^\s*(```|select\b|with\b|from\b|where\b|group\b|order\b|join\b)", re.IGNORECASE)


_LABEL = re.compile(r"^(?:question|q)\s*:\s*", re.IGNORECASE)


def restated_question(text: str) -> str:
    """The question in a question-reconstruction reply: the first line ending with "?", else the first line
    that is not code or SQL; empty when the reply holds only code."""
    lines = [_LABEL.sub("", line.replace("**", "").strip().strip("\"'").strip()) for line in text.splitlines()]
    prose = [line for line in lines if line and not _CODE_LINE.match(line)]
    asked = [line for line in prose if line.endswith("?")]
    return (asked or prose or [""])[0]
