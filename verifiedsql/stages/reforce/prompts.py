"""Prompt templates of ReFoRCE's column exploration (section 3.2.3), for consensus enforcement: the request
for exploration queries (with the tied or failed candidates), the self-correction of one that failed, and
the block of exploration results for the regeneration prompt.

Schema compression's Y/N table-linking prompt (section 3.2.1) is in ``stages/common/linking.py``, beside the
lexical linking that VET shares; only compression asks the model with it."""

from __future__ import annotations

from collections.abc import Sequence

from ...llm.base import Message, messages
from ...llm.prompts import dialect_hints
from ...llm.replies import follow_up
from ...llm.rows import render_previews
from ...profiles import DialectProfile
from ...report import Cluster, Exploration
from ..generate import CandidateRun

SHOWN_CANDIDATES = 4  # tied or failed candidates shown to the model in the exploration request

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


def describe_candidates(runs: Sequence[CandidateRun], clusters: Sequence[Cluster], tie: bool) -> str:
    """The tied clusters' representatives (SQL and row count) or the failed candidates (SQL and error)."""
    by_index = {run.candidate.index: run for run in runs}
    if tie:
        largest = max(len(c.members) for c in clusters)
        shown = [min((by_index[i] for i in c.members), key=lambda r: (len(r.candidate.sql), r.candidate.index))
                 for c in clusters if len(c.members) == largest][:SHOWN_CANDIDATES]
        parts = [f"```sql\n{run.candidate.sql}\n```\n({run.candidate.row_count} rows)" for run in shown]
        return "These candidate queries return different results, with equal votes:\n" + "\n".join(parts)
    failed = [run for run in runs if run.candidate.sql][:SHOWN_CANDIDATES]
    parts = [f"```sql\n{run.candidate.sql}\n```\nError: {(run.candidate.error or '')[:300]}" for run in failed]
    return "Every candidate query failed:\n" + ("\n".join(parts) if parts else "(no SQL was written)")


def render_explorations(explorations: list[Exploration]) -> str:
    """The block for the regeneration prompt: every exploration query that ran, with a preview."""
    ran = [e for e in explorations if e.status == "ok"]
    if not ran:
        return ""
    shown = render_previews([(e.sql, e.preview) for e in ran])
    return f"Exploration results (read-only queries already run on this database):\n{shown}"


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
        count=count, hints=dialect_hints(profile), case_rule=_case_rule(profile), example=example,
    )
    return messages(system, EXPLORE_USER.format(schema=schema_text, question=question, candidates=candidates))


def explore_fix_messages(
    profile: DialectProfile, first: tuple[Message, ...], proposal: str, sql: str, error: str
) -> tuple[Message, ...]:
    """A follow-up to the exploration request: its reply (``proposal``), then one failed query and its error."""
    return follow_up(first, proposal, EXPLORE_FIX_USER.format(dialect=profile.display_name, sql=sql, error=error[:600]))
