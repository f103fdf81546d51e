"""Prompt templates of PV-SQL: the probing loop (section 4.1) and the repair turn of verify-and-repair, for
a query that runs but breaks a constraint of the question or returns no rows; and the grounding block of
what the probes found, for the generation prompt."""

from __future__ import annotations

from collections.abc import Sequence

from ...llm.base import Message, messages
from ...llm.prompts import dialect_hints, generation_follow_up
from ...llm.rows import render_previews
from ...profiles import DialectProfile
from ...report import Findings, Probe

PROBE_SYSTEM = (
    "Before a {dialect} query is written for a question, you may explore the database with small "
    "exploratory queries (probes): how values are stored, which columns matter, what formats dates and "
    "codes use.\n"
    "Rules:\n{hints}\n"
    "- A probe is one read-only SELECT with LIMIT 20 or less that looks at one thing, for example:\n"
    "  {example}\n"
    "- Answer with one JSON object and nothing else:\n"
    '  {{"action": "probe" or "done", "probe_sql": "SELECT ...", '
    '"relevant_columns": {{"table": ["column"]}}, "value_mappings": {{"words in the question": "value as stored"}}}}\n'
    '- Answer "done" as soon as the schema and the earlier probes are enough to write the query.'
)

PROBE_USER = "Database schema:\n{schema}\n\nQuestion: {question}\n\nProbes so far:\n{history}"

REPAIR_USER = (
    "The query below runs on {dialect} but does not answer the question as asked:\n{problems}\n\n"
    "```sql\n{sql}\n```\n\n"
    "Write a corrected query for the same question that fixes every point above. "
    "Return only the SQL in a ```sql code block."
)


def probe_messages(
    profile: DialectProfile, schema_text: str, question: str, example: str, history: str
) -> tuple[Message, ...]:
    """One step of the probing loop: schema, question and every earlier probe with its outcome."""
    system = PROBE_SYSTEM.format(dialect=profile.display_name, hints=dialect_hints(profile), example=example)
    return messages(system, PROBE_USER.format(schema=schema_text, question=question, history=history or "(none)"))


def repair_messages(
    profile: DialectProfile, schema_text: str, question: str, sql: str, problems: Sequence[str]
) -> tuple[Message, ...]:
    """A follow-up turn listing what a query that ran fails to do (constraint violations, no rows)."""
    listed = "\n".join(f"- {problem[:300]}" for problem in problems)
    user = REPAIR_USER.format(dialect=profile.display_name, problems=listed, sql=sql)
    return generation_follow_up(profile, schema_text, question, sql, user)


def render_findings(probes: list[Probe], findings: Findings) -> str:
    """The grounding block: successful probes with a preview, value mappings, relevant columns."""
    parts: list[str] = []
    ran = [p for p in probes if p.status == "ok"]
    if ran:
        shown = render_previews([(p.sql, p.preview) for p in ran])
        parts.append(f"Probe results (queries already run on this database):\n{shown}")
    if findings.value_mappings:
        lines = "\n".join(f"- \"{term}\" is stored as '{value}'" for term, value in findings.value_mappings.items())
        parts.append(f"Values as stored (use them exactly):\n{lines}")
    if findings.relevant_columns:
        lines = "\n".join(f"- {table}: {', '.join(cols)}" for table, cols in findings.relevant_columns.items())
        parts.append(f"Relevant columns:\n{lines}")
    return "\n\n".join(parts)
