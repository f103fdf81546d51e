"""The core prompt templates: candidate generation and its self-refinement, shared by every method. Each
``*_messages`` function returns the message tuple for one kind of model call; the methods' own prompts live
beside them (``stages/<method>/prompts.py``), and replies are read by ``llm.replies``."""

from __future__ import annotations

from ..profiles import DialectProfile
from .base import Message, messages
from .replies import follow_up, sql_answer

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

# The same turn with what the schema says about the name the error reports missing (``schema_facts``).
REFINE_FACTS_USER = (
    "The query below failed on {dialect}.\n\n```sql\n{sql}\n```\n\nError: {error}\n\n"
    "What the schema says:\n{facts}\n\n"
    "Write a corrected query for the same question. Return only the SQL in a ```sql code block."
)


def dialect_hints(profile: DialectProfile) -> str:
    """The dialect's prompt hints as a list of rules, one ``- `` line each."""
    return "\n".join(f"- {hint}" for hint in profile.prompt_hints)


def generation_messages(profile: DialectProfile, schema_text: str, question: str) -> tuple[Message, ...]:
    """The candidate-generation prompt: dialect rules, compact schema with samples, question."""
    system = GENERATE_SYSTEM.format(dialect=profile.display_name, hints=dialect_hints(profile))
    return messages(system, GENERATE_USER.format(schema=schema_text, question=question))


def with_context(schema_text: str, context: str) -> str:
    """The schema text followed by a grounding block (unchanged when the block is empty)."""
    return f"{schema_text}\n\n{context}" if context else schema_text


def generation_follow_up(
    profile: DialectProfile, schema_text: str, question: str, sql: str, user: str
) -> tuple[Message, ...]:
    """The generation turn, the model's ``sql`` as its answer, then a new user turn."""
    return follow_up(generation_messages(profile, schema_text, question), sql_answer(sql), user)


def refinement_messages(
    profile: DialectProfile, schema_text: str, question: str, sql: str, error: str, facts: str = ""
) -> tuple[Message, ...]:
    """A follow-up turn showing the failed SQL and the database's error, and the schema's ``facts`` about
    it when there are any (``stages/schema_facts.py``)."""
    template = REFINE_FACTS_USER if facts else REFINE_USER
    user = template.format(dialect=profile.display_name, sql=sql, error=error[:600], facts=facts)
    return generation_follow_up(profile, schema_text, question, sql, user)
