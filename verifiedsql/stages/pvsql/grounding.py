"""Deterministic value grounding: literals of the question looked up in the database's text columns.

``question_terms`` picks the literals (quoted strings, capitalised terms not at a sentence start, numbers,
dates); ``ground_values`` runs one bounded, read-only query per text column (``common/values.distinct_scan``,
through ``ctx.query``, so both safety layers) and classifies the stored values it finds; ``render_matches``
writes them as a short block for the generation prompt. No model is involved.
"""

from __future__ import annotations

from sqlglot import exp

from ...config import Options
from ...db.schema import Schema, Table
from ...errors import QueryError, QueryTimeoutError, UnsafeSQLError
from ...report import MatchKind, ValueMatch
from ..common.catalog import Catalog
from ..common.terms import TEXT_TYPE, question_terms
from ..common.values import distinct_scan
from ..context import QuestionContext

ROWS_PER_COLUMN = 20  # distinct matching values one lookup may return
MAX_COLUMNS = 40  # lookups per question
MAX_MATCHES = 12  # matches rendered into the prompt
MIN_CONTAINS_CHARS = 3  # shorter terms match whole values only
KIND_RANK: dict[MatchKind, int] = {"exact": 0, "case-insensitive": 1, "prefix": 2, "contains": 3}

def match_kind(value: str, term: str) -> MatchKind | None:
    """How a stored ``value`` matches ``term``, best kind first; None when it does not."""
    if value == term:
        return "exact"
    stored, wanted = value.casefold(), term.casefold()
    if stored == wanted:
        return "case-insensitive"
    if len(wanted) < MIN_CONTAINS_CHARS:
        return None
    if stored.startswith(wanted):
        return "prefix"
    return "contains" if wanted in stored else None


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def lookup_sql(catalog: Catalog, dialect: str, table: Table, column: str, terms: list[str]) -> str:
    """One bounded query for the distinct values of ``table.column`` that may match any term, case-insensitively
    (``ILIKE``, which sqlglot writes as ``LOWER(...) LIKE LOWER(...)`` where the engine has no ILIKE)."""
    patterns = [exp.Literal.string(f"%{t}%" if len(t) >= MIN_CONTAINS_CHARS else t) for t in terms]
    matching = exp.or_(*(exp.ILike(this=exp.column("v"), expression=pattern) for pattern in patterns))
    scan = distinct_scan(catalog.ident(column), catalog.table_node(table), ROWS_PER_COLUMN, matching)
    return scan.sql(dialect=dialect)


def _text_columns(schema: Schema) -> list[tuple[Table, str]]:
    found = [(t, c.name) for t in schema.tables for c in t.columns if TEXT_TYPE.search(c.type)]
    return found[:MAX_COLUMNS]


def ground_values(ctx: QuestionContext) -> list[ValueMatch]:
    """Stored values that match the question's literals, best kind first (at most MAX_MATCHES).

    A lookup that the database refuses or that fails is skipped: grounding only ever adds context. Each
    lookup is capped by the question's time left, and none starts once it is gone.
    """
    terms = question_terms(ctx.question)
    if not terms:
        return []
    catalog = Catalog(ctx.schema, ctx.database.profile.name)
    matches: list[ValueMatch] = []
    for table, column in _text_columns(ctx.schema):
        sql = lookup_sql(catalog, ctx.database.profile.sqlglot_dialect, table, column, terms)
        try:
            result = ctx.query(sql, doing="a value-grounding lookup")
        except (QueryError, QueryTimeoutError, UnsafeSQLError):
            continue
        for (value,) in result.rows:
            if not isinstance(value, str):
                continue
            kinds = [(kind, term) for term in terms if (kind := match_kind(value, term))]
            if kinds:
                kind, term = min(kinds, key=lambda pair: KIND_RANK[pair[0]])
                matches.append(ValueMatch(table.name, column, value, kind, term))
    matches.sort(key=lambda m: KIND_RANK[m.kind])
    return matches[:MAX_MATCHES]


def render_matches(matches: list[ValueMatch]) -> str:
    """The prompt block; empty when nothing matched."""
    if not matches:
        return ""
    lines = [f"- {m.table}.{m.column} = {_literal(m.value)} ({m.kind} match for \"{m.term}\")" for m in matches]
    return "Values found in the database (use them exactly as stored):\n" + "\n".join(lines)


class ValueGrounding:
    """Context stage (option ``ground_values``): the stored values matching the question's literals go
    into ``report.value_matches`` and into the prompt."""

    name = "ground"

    def enabled(self, options: Options) -> bool:
        return options.ground_values

    def run(self, ctx: QuestionContext) -> None:
        ctx.report.value_matches = ground_values(ctx)
        ctx.add_context(render_matches(ctx.report.value_matches))
