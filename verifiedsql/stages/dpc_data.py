"""Data shared by the dual-paradigm (DPC) stages: the schema slice two candidates touch, and a minimal
distinguishing database (MDD) on which their results differ."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from ..results import ResultSet
from ..schema import Table

SliceMethod = Literal["lineage", "model"]
MDDMethod = Literal["deterministic", "model"]


@dataclass(frozen=True)
class SchemaSlice:
    """The tables (restricted to the columns the SQLs use, plus key columns and the primary/foreign-key
    closure) that both candidates touch. ``scratch_dialect`` is the profile name of the engine the MDDs
    run on; ``transpiled`` is true when it differs from the user's (Snowflake -> DuckDB)."""

    tables: tuple[Table, ...]
    source_dialect: str
    scratch_dialect: str
    method: SliceMethod = "lineage"
    transpiled: bool = False

    def table(self, name: str) -> Table | None:
        lowered = name.lower()
        return next((t for t in self.tables if t.name.lower() == lowered), None)


Rows = tuple[tuple[Any, ...], ...]


@dataclass
class MDD:
    """A small database (rows per slice table, in the slice's column order) and both SQLs' results on it.
    ``score`` is the bipartite soft-F1 between the two results (< 0.99 means they are told apart)."""

    tables: dict[str, Rows]
    result_a: ResultSet
    result_b: ResultSet
    score: float
    method: MDDMethod
    tries: int = 1
    notes: list[str] = field(default_factory=list)

    @property
    def row_count(self) -> int:
        return sum(len(rows) for rows in self.tables.values())


DISTINGUISHED_BELOW = 0.99  # BS-F1 under which two results count as different
