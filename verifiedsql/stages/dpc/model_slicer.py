"""The model slicer (DPC A.1), used only when lineage cannot resolve the two SQLs: the model names the
tables and columns they use; names that do not exist are dropped, keys are added as for lineage, and the
caller's dry run on the empty slice decides whether the slice is usable."""

from __future__ import annotations

from collections.abc import Sequence

from ...db.schema import Schema, render_schema
from ...errors import LLMError, VerifiedSQLError
from ...llm.base import ChatModel, ChatRequest
from ...llm.replies import extract_json_object
from ...profiles import DialectProfile
from ...report import VerificationReport
from ..calls import call_model
from ..common.slicer import slice_from_columns
from ..common.slices import SchemaSlice
from .prompts import slicer_messages

MAX_TOKENS = 512


def named_columns(data: object, schema: Schema) -> dict[str, set[str]]:
    """``{"tables": {table: [column, ...]}}`` reduced to the tables and columns that exist (lower case)."""
    tables = data.get("tables", data) if isinstance(data, dict) else {}
    used: dict[str, set[str]] = {}
    for name, columns in (tables.items() if isinstance(tables, dict) else ()):
        table = schema.table(str(name))
        if table is None or not isinstance(columns, list):
            continue
        used[table.name] = {c.name.lower() for n in columns if isinstance(n, str) and (c := table.column(n))}
    return used


def model_slice(llm: ChatModel, report: VerificationReport, schema: Schema, profile: DialectProfile,
                sqls: Sequence[str], question: str, scratch_dialect: str) -> SchemaSlice | None:
    """The slice the model names, or None when it names nothing usable or cannot be reached."""
    sql_a, sql_b = sqls[0], sqls[-1]
    messages = slicer_messages(render_schema(schema, with_samples=False), question, sql_a, sql_b,
                               dialect=profile.display_name)
    request = ChatRequest(messages=messages, temperature=0.0, max_tokens=MAX_TOKENS, seed=0, purpose="slice")
    try:
        reply = call_model(llm, request, report)
        used = named_columns(extract_json_object(reply.text), schema)
    except (LLMError, ValueError) as error:
        report.notes.append(f"dpc: the model slicer gave no usable answer ({error})")
        return None
    if not used:
        report.notes.append("dpc: the model slicer named no known table")
        return None
    try:
        return slice_from_columns(used, schema, profile, scratch_dialect, method="model")
    except VerifiedSQLError as error:
        report.notes.append(f"dpc: the model's slice is unusable ({error})")
        return None
