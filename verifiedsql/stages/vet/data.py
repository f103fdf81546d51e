"""The data an execution trace works on (VET section 3.3): a schema-constrained candidate set of tables and
columns for the question, and their rows fetched by bounded read-only queries as typed DataFrames.

The candidate set is high-recall: the tables the question names, the tables whose names or columns share
words with it (``linking.lexical_scores``) and the foreign-key neighbours of the best of them, each with all
its columns; when nothing matches, every table. At most ``MAX_TABLES`` tables are loaded."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd  # type: ignore[import-untyped,unused-ignore]

from ...db.schema import Schema, Table
from ..common.frames import slice_frames
from ..common.grouping import group_tables
from ..common.linking import HIGH_SCORE_FRACTION, lexical_scores, link_order, named_groups, neighbours
from ..common.slicer import scratch_dialect_for
from ..common.slices import Rows, SchemaSlice
from ..context import QuestionContext

MAX_TABLES = 12


@dataclass
class TraceData:
    """The candidate tables as a schema slice, their rows (slice column order) and DataFrames, and the
    tables cut at the row bound (the trace saw only part of those)."""

    slice: SchemaSlice
    rows: dict[str, Rows]
    frames: dict[str, pd.DataFrame]
    truncated: list[str]

    @property
    def tables(self) -> tuple[Table, ...]:
        return self.slice.tables

    def row_counts(self) -> dict[str, int]:
        return {name: len(rows) for name, rows in self.rows.items()}

    def column_set(self) -> dict[str, list[str]]:
        """The candidate column set, by table."""
        return {t.name: [c.name for c in t.columns] for t in self.tables}


def candidate_tables(schema: Schema, question: str) -> list[Table]:
    """The tables of the candidate set, best first (see the module docstring)."""
    groups = group_tables(schema)
    scores = lexical_scores(groups, question)
    named = named_groups(groups, question)
    adjacency = neighbours(groups)
    top = max(scores, default=0)
    strong = named | {i for i, score in enumerate(scores) if top and score >= HIGH_SCORE_FRACTION * top}
    kept = named | {i for i, score in enumerate(scores) if score > 0}
    kept |= {other for i in strong for other in adjacency[i]}
    order = link_order(scores, named, adjacency)
    chosen = [i for i in order if i in kept] or order
    tables = [table for i in chosen for table in groups[i].tables]
    return tables[:MAX_TABLES]


def _reordered(columns: tuple[str, ...], rows: tuple[tuple, ...], table: Table) -> Rows:
    """Rows in the table's reflected column order (result columns matched without case)."""
    position = {name.lower(): i for i, name in enumerate(columns)}
    order = [position.get(c.name.lower()) for c in table.columns]
    return tuple(tuple(None if i is None else row[i] for i in order) for row in rows)


def load_trace_data(ctx: QuestionContext, tables: list[Table], max_rows: int) -> TraceData:
    """Fetch at most ``max_rows`` rows of each table with ``SELECT * ... LIMIT``, through both safety layers
    and within the question's time left. ``QueryError`` and ``QueryTimeoutError`` propagate."""
    database = ctx.database
    bound = min(max_rows, database.options.row_cap)
    rows: dict[str, Rows] = {}
    truncated: list[str] = []
    for table in tables:
        sql = f"SELECT * FROM {database.quoted_table(table.name)} LIMIT {bound + 1}"
        result = ctx.query(sql, doing=f"fetching the rows of {table.name} for the execution trace")
        fetched = result.rows[:bound]
        if len(result.rows) > bound or result.truncated:
            truncated.append(table.name)
        rows[table.name] = _reordered(result.columns, fetched, table)
    scratch_dialect = scratch_dialect_for(database.profile)
    slice_ = SchemaSlice(tuple(tables), database.profile.name, scratch_dialect,
                         transpiled=scratch_dialect != database.profile.name)
    frames = {name: frame for name, (frame, _) in slice_frames(slice_, rows).items()}
    return TraceData(slice_, rows, frames, truncated)
