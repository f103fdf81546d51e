"""Prompt templates of the R3 review (review, rebuttal, revision among reviewer agents), and the parsers
of their replies' protocol (read through ``llm.replies``). Each ``*_messages`` function returns the message
tuple for one kind of model call."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ...llm.base import Message, messages
from ...llm.prompts import generation_follow_up
from ...llm.replies import first_json, without_fences
from ...llm.rows import REVIEW, render_rows
from ...profiles import DialectProfile
from ...results import ResultSet

TABLE_ROWS = 10  # rows of an execution result shown to reviewers and the writer

# Used when the model gives no usable list of professions; cycled when more reviewers are asked for.
FALLBACK_PROFESSIONS = (
    "Senior database engineer who checks joins, filters and grouping",
    "Data analyst who checks that the result answers the question as asked",
    "SQL reviewer who checks column choice, ordering, limits and NULL handling",
)

PROFESSIONS_SYSTEM = (
    "You assemble a panel of {n} reviewers for a {dialect} query written to answer a question about a "
    "database. Choose {n} different professions, each focused on a different aspect of the query "
    "(for example a database engineer specialised in some clauses, or an analyst of the data's domain).\n"
    "Answer with a JSON list of {n} strings and nothing else."
)

PROFESSIONS_USER = "Database schema:\n{schema}\n\nQuestion: {question}\n\nQuery:\n```sql\n{sql}\n```"

REVIEWER_SYSTEM = (
    "You are a {profession}. You review a {dialect} query written to answer a question about a database, "
    "using the schema, the query and the result it returned.\n"
    "Reply with a first line that is exactly 'VERDICT: APPROVE' (the query answers the question as asked) "
    "or 'VERDICT: ISSUES' (it does not), then explain briefly what is wrong and how to fix it."
)

REVIEWER_USER = (
    "Database schema:\n{schema}\n\nQuestion: {question}\n\nQuery:\n```sql\n{sql}\n```\n\n"
    "Its result:\n{result}"
)

WRITER_USER = (
    "The query ran on {dialect} and returned:\n{result}\n\n{failure}"
    "Reviewers commented on it:\n{reviews}\n\n"
    "Rebut any comment you disagree with, saying why, and revise the query for the others. "
    "End with the final query (revised, or unchanged if no comment holds) in a ```sql code block."
)

FAILED_REVISION = (
    "Your previous revision failed and was set aside:\n```sql\n{sql}\n```\nError: {error}\n\n"
)


def render_table(result: ResultSet, rows: int = TABLE_ROWS) -> str:
    """The first ``rows`` rows of a result as a small markdown table, with a line counting the rest."""
    return render_rows(result.columns, result.rows, rows, REVIEW, truncated=result.truncated)


def profession_messages(
    profile: DialectProfile, schema_text: str, question: str, sql: str, n: int
) -> tuple[Message, ...]:
    """The invitation: ``n`` reviewer professions derived from the schema and the SQL."""
    system = PROFESSIONS_SYSTEM.format(n=n, dialect=profile.display_name)
    return messages(system, PROFESSIONS_USER.format(schema=schema_text, question=question, sql=sql))


def reviewer_messages(
    profile: DialectProfile, profession: str, schema_text: str, question: str, sql: str, result: ResultSet
) -> tuple[Message, ...]:
    """One reviewer's turn: question, schema, SQL and its result as a table."""
    system = REVIEWER_SYSTEM.format(profession=profession, dialect=profile.display_name)
    user = REVIEWER_USER.format(schema=schema_text, question=question, sql=sql, result=render_table(result))
    return messages(system, user)


def writer_messages(
    profile: DialectProfile,
    schema_text: str,
    question: str,
    sql: str,
    result: ResultSet,
    reviews: Sequence[tuple[str, str, str]],
    failed: tuple[str, str] | None = None,
) -> tuple[Message, ...]:
    """The writer's turn: its generation prompt, ``sql`` as its answer, then the result and the reviews
    (profession, verdict, explanation); ``failed`` is the last revision that did not run and its error."""
    listed = "\n".join(f"- {profession} ({verdict}): {text[:800]}" for profession, verdict, text in reviews)
    failure = FAILED_REVISION.format(sql=failed[0], error=failed[1][:600]) if failed else ""
    user = WRITER_USER.format(dialect=profile.display_name, result=render_table(result), failure=failure,
                              reviews=listed or "(none)")
    return generation_follow_up(profile, schema_text, question, sql, user)


_VERDICT = re.compile(r"verdict\W{0,5}(approve[sd]?|issues?)\b", re.IGNORECASE)


def parse_professions(text: str, n: int) -> list[str] | None:
    """``n`` distinct professions from a JSON list (or a JSON object's values, as in the paper's
    invitation), else None."""
    found: Any = first_json(text, list)
    if found is None:
        found = first_json(text, dict)
    if isinstance(found, dict):
        found = list(found.values())
    if not isinstance(found, list):
        return None
    names: list[str] = []
    for item in found:
        if isinstance(item, str) and item.strip() and item.strip() not in names:
            names.append(" ".join(item.split())[:200])
    return names[:n] if len(names) >= n else None


def parse_verdict(text: str) -> tuple[str, str]:
    """``(verdict, explanation)``: verdict is "approve", "issues" or "unclear" (no verdict line)."""
    match = _VERDICT.search(text)
    if not match:
        return "unclear", text.strip()[:1000]
    verdict = "approve" if match.group(1).lower().startswith("approve") else "issues"
    explanation = (text[: match.start()] + text[match.end():]).strip(" \n:.-")
    return verdict, explanation[:1000]


def rebuttal_of(text: str) -> str:
    """The writer's words outside its code blocks."""
    return without_fences(text).strip()[:1500]
