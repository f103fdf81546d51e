"""Prompt templates. Each returns the message tuple for one kind of model call."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from ..profiles import DialectProfile
from .base import Message, messages

GENERATE_SYSTEM = (
    "You translate questions about a database into one {dialect} query.\n"
    "Rules:\n{hints}\n"
    "- Use only the tables and columns in the schema.\n"
    "- Return exactly one read-only SELECT statement in a ```sql code block, and nothing else."
)

GENERATE_USER = "Database schema:\n{schema}\n\nQuestion: {question}"

REFINE_USER = (
    "The query below failed on {dialect}.\n\n```sql\n{sql}\n```\n\nError: {error}\n\n"
    "Write a corrected query for the same question. Return only the SQL in a ```sql code block."
)

REPAIR_USER = (
    "The query below runs on {dialect} but does not answer the question as asked:\n{problems}\n\n"
    "```sql\n{sql}\n```\n\n"
    "Write a corrected query for the same question that fixes every point above. "
    "Return only the SQL in a ```sql code block."
)


def _hints(profile: DialectProfile) -> str:
    return "\n".join(f"- {hint}" for hint in profile.prompt_hints)


def generation_messages(profile: DialectProfile, schema_text: str, question: str) -> tuple[Message, ...]:
    """The candidate-generation prompt: dialect rules, compact schema with samples, question."""
    system = GENERATE_SYSTEM.format(dialect=profile.display_name, hints=_hints(profile))
    return messages(system, GENERATE_USER.format(schema=schema_text, question=question))


def with_context(schema_text: str, context: str) -> str:
    """The schema text followed by a grounding block (unchanged when the block is empty)."""
    return f"{schema_text}\n\n{context}" if context else schema_text


def _follow_up(
    profile: DialectProfile, schema_text: str, question: str, sql: str, user: str
) -> tuple[Message, ...]:
    """The generation turn, the model's ``sql`` as its answer, then a new user turn."""
    first = generation_messages(profile, schema_text, question)
    history: list[Message] = [first[1], {"role": "assistant", "content": f"```sql\n{sql}\n```"}]
    return messages(first[0]["content"], user, history)


def refinement_messages(
    profile: DialectProfile, schema_text: str, question: str, sql: str, error: str
) -> tuple[Message, ...]:
    """A follow-up turn showing the failed SQL and the database's error."""
    user = REFINE_USER.format(dialect=profile.display_name, sql=sql, error=error[:600])
    return _follow_up(profile, schema_text, question, sql, user)


def repair_messages(
    profile: DialectProfile, schema_text: str, question: str, sql: str, problems: Sequence[str]
) -> tuple[Message, ...]:
    """A follow-up turn listing what a query that ran fails to do (constraint violations, no rows)."""
    listed = "\n".join(f"- {problem[:300]}" for problem in problems)
    user = REPAIR_USER.format(dialect=profile.display_name, problems=listed, sql=sql)
    return _follow_up(profile, schema_text, question, sql, user)


def first_json_value(text: str, openers: str = "{[") -> Any:
    """The first JSON value in a model reply that starts at one of ``openers`` and parses (fenced or
    bare); None when there is none, or when the reply nests too deeply for the parser."""
    decoder = json.JSONDecoder()
    for start, char in enumerate(text):
        if char in openers:
            try:
                return decoder.raw_decode(text, start)[0]
            except json.JSONDecodeError:
                continue
            except RecursionError:  # every later start lies inside the same deep nest
                return None
    return None


def loads_reply(text: str) -> Any:
    """``json.loads`` for model text: JSON nested too deeply to parse raises ``ValueError``, like bad JSON."""
    try:
        return json.loads(text)
    except RecursionError as error:
        raise ValueError("the JSON is nested too deeply to read") from error


_FENCE = re.compile(r"```(?:[a-zA-Z]*)\s*\n?(.*?)```", re.DOTALL)
_CODE_START = re.compile(r"\b(SELECT|WITH)\b", re.IGNORECASE)
# In prose a query must begin a line or follow a colon, so "select" or "with" in a sentence is no SQL.
_PROSE_START = re.compile(r"(?:^|\n|:[ \t]*)[ \t]*(SELECT\b|WITH\s+\w+\s+AS\s*\()", re.IGNORECASE)


def extract_sql(text: str) -> str | None:
    """The SQL in a model reply: the whole first fenced block (whatever statement it holds, so the
    safety guard can name it), else the text from the first SELECT/WITH that starts a line.

    Returns None when the reply holds no query at all (prose, refusal, empty output).
    """
    fenced = _FENCE.search(text)
    unterminated = text.find("```")
    if fenced:
        return fenced.group(1).strip().rstrip(";").strip() or None
    if unterminated >= 0:
        body, pattern = re.sub(r"^[a-zA-Z]*\n", "", text[unterminated + 3:]), _CODE_START
    else:
        body, pattern = text, _PROSE_START
    start = pattern.search(body)
    if not start:
        return None
    sql = body[start.start(1):].strip()
    sql = sql.split("\n\n\n")[0].strip()
    return sql.rstrip(";").strip() or None


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


def probe_messages(
    profile: DialectProfile, schema_text: str, question: str, example: str, history: str
) -> tuple[Message, ...]:
    """One step of the probing loop: schema, question and every earlier probe with its outcome."""
    system = PROBE_SYSTEM.format(dialect=profile.display_name, hints=_hints(profile), example=example)
    return messages(system, PROBE_USER.format(schema=schema_text, question=question, history=history or "(none)"))


EXPLORE_SYSTEM = (
    "Candidate {dialect} queries for a question {situation}. Before the query is written again, explore the "
    "columns that matter with at most {count} small read-only exploration queries, ordered from simple to "
    "complex: first the distinct values, formats and ranges of single columns, then joins, filters and "
    "aggregates that test each reading of the question.\n"
    "Rules:\n{hints}\n"
    "- {case_rule}\n"
    "- Each exploration query is one read-only SELECT with LIMIT 20 or less, for example:\n"
    "  {example}\n"
    '- Answer with one JSON list of SQL strings and nothing else: ["SELECT ...", "SELECT ..."].'
)

EXPLORE_USER = "Database schema:\n{schema}\n\nQuestion: {question}\n\n{candidates}"

EXPLORE_FIX_USER = (
    "The exploration query below failed on {dialect}.\n\n```sql\n{sql}\n```\n\nError: {error}\n\n"
    "Write a corrected exploration query that looks at the same thing (one read-only SELECT, LIMIT 20 or "
    "less). Return only the SQL in a ```sql code block."
)


def _case_rule(profile: DialectProfile) -> str:
    if profile.has_ilike:
        return "Match text case-insensitively with column ILIKE '%term%'."
    return "Match text case-insensitively with LOWER(column) LIKE '%term%'."


def explore_messages(
    profile: DialectProfile, schema_text: str, question: str, example: str, candidates: str, *,
    tie: bool, count: int,
) -> tuple[Message, ...]:
    """Consensus enforcement: ask for up to ``count`` exploration queries, given the disagreeing (``tie``) or
    failing candidates described in ``candidates``."""
    system = EXPLORE_SYSTEM.format(
        dialect=profile.display_name, situation="disagree (their results tie)" if tie else "all failed",
        count=count, hints=_hints(profile), case_rule=_case_rule(profile), example=example,
    )
    return messages(system, EXPLORE_USER.format(schema=schema_text, question=question, candidates=candidates))


def explore_fix_messages(
    profile: DialectProfile, first: tuple[Message, ...], proposal: str, sql: str, error: str
) -> tuple[Message, ...]:
    """A follow-up to the exploration request: its reply (``proposal``), then one failed query and its error."""
    user = EXPLORE_FIX_USER.format(dialect=profile.display_name, sql=sql, error=error[:600])
    history: list[Message] = [first[1], {"role": "assistant", "content": proposal}]
    return messages(first[0]["content"], user, history)
