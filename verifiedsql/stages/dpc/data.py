"""A minimal distinguishing database (MDD): rows on which two candidates' results differ."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from ...results import ResultSet
from ..common.slices import Rows

MDDMethod = Literal["deterministic", "model"]


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
