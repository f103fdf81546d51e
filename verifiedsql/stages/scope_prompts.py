"""The prompt of the scope check (``scope_check``, ``stages/scope.py``): does the schema hold the data to answer
the question? One zero-temperature call; the reply's first word, YES or NO, is read by ``llm.replies.yes_no``."""

from __future__ import annotations

from ..llm.base import Message, messages

SCOPE_SYSTEM = (
    "You check whether a database can answer a question. Reply with exactly one word: YES if the tables and "
    "columns of the schema hold the data the question asks about, NO if they do not (the question is about "
    "something the database does not store, is general knowledge, or asks for something other than data "
    "from this database)."
)

SCOPE_USER = (
    "Database schema:\n{schema}\n\nQuestion: {question}\n\n"
    "Does this database hold the data to answer the question? YES or NO."
)

SCOPE_MAX_TOKENS = 8  # one word is asked for


def scope_messages(schema_text: str, question: str) -> tuple[Message, ...]:
    """The scope check: the schema as the generation prompt showed it, and the question."""
    return messages(SCOPE_SYSTEM, SCOPE_USER.format(schema=schema_text, question=question))
