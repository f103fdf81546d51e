"""The schema slice two candidates touch (the tables and columns a scratch database holds), and rows as
plain tuples: shared by DPC's distinguishing databases and VET's traces."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ...db.schema import Table

SliceMethod = Literal["lineage", "model"]


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
