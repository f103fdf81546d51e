"""Small read-only queries the model writes to look at the data (PV-SQL probes, ReFoRCE column
exploration): the statement guard with a row bound, an example to show the model, and a short preview of
what came back."""

from __future__ import annotations

from sqlglot import exp

from ...db.schema import Schema
from ...errors import UnsafeSQLError
from ...guard.safety import check_query
from ...llm.rows import PREVIEW, render_rows
from ...profiles import DialectProfile
from ...results import ResultSet
from .terms import TEXT_TYPE, question_terms

PROBE_LIMIT = 20
PREVIEW_ROWS = 5


def bound_probe(sql: str, profile: DialectProfile) -> str:
    """``sql`` checked by the statement guard, with its outermost LIMIT at most ``PROBE_LIMIT``."""
    tree = check_query(sql, profile)
    limit = tree.args.get("limit")
    bound = limit.expression if isinstance(limit, exp.Limit) else None
    if isinstance(bound, exp.Literal) and bound.is_int and int(bound.name) <= PROBE_LIMIT:
        return sql
    if not isinstance(tree, exp.Query):
        raise UnsafeSQLError("a probe must be a query.", construct=tree.key)
    return tree.limit(PROBE_LIMIT).sql(dialect=profile.sqlglot_dialect)


def preview(result: ResultSet) -> str:
    """A few rows of a probe result as compact text for the next prompt."""
    return render_rows(result.columns, result.rows, PREVIEW_ROWS, PREVIEW)


def example_probe(profile: DialectProfile, schema: Schema, question: str) -> str:
    """The dialect's example probe, filled in with a real text column and a term of the question."""
    table, column = next(
        ((t.name, c.name) for t in schema.tables for c in t.columns if TEXT_TYPE.search(c.type)),
        (schema.tables[0].name, schema.tables[0].columns[0].name) if schema.tables else ("t", "c"),
    )
    terms = question_terms(question)
    term = (terms[0] if terms else "a").replace("'", "''").lower()
    return profile.probe_template.format(table=table, column=column, term=term)
