"""Pattern-based table grouping: sharded or copied tables shown once, the others by name only.

Tables whose names differ only by numbers or dates (``ga_sessions_20160801`` ... ``ga_sessions_20170801``,
``events_2021_01``), by a period token (``sales_q1``, ``logs_jan``, ``t_v2``) or by a copy affix
(``tmp_users``, ``users_backup``) share a name pattern. Among the tables of one pattern, those with the
same columns (or nearly: at most one column in ten, at least one, added, removed or retyped) form a group:
its first table in schema order is the representative, whose DDL is shown; the others are listed by name,
with their column differences said. Everything is deterministic: schema order in, schema order out.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace

from ...db.schema import Schema, Table, render_table

NUMBERS = re.compile(r"\d+(?:[_-]\d+)*")  # a number or a date written with separators: one variable part
MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec",
          "january", "february", "march", "april", "june", "july", "august", "september", "october",
          "november", "december")
PERIOD_TOKEN = re.compile(r"(?:v|q|h|w|wk|m|p|y|part|shard|ver|rev)?#|" + "|".join(MONTHS))
COPY_AFFIXES = frozenset({"tmp", "temp", "stg", "staging", "bak", "backup", "bkp", "old", "copy", "archive",
                          "archived", "snapshot"})
NEAR_FRACTION = 10  # tables may join a group when at most 1 column in NEAR_FRACTION (at least 1) differs
FULL_NAME_LIST = 8  # longer name lists write a shared prefix/suffix once


@dataclass(frozen=True)
class ColumnDifference:
    """Tables of a group whose columns differ from the representative's in the same way."""

    tables: tuple[str, ...]
    extra: tuple[str, ...]  # "name TYPE" of columns only these tables have
    missing: tuple[str, ...]  # names of representative columns these tables lack


@dataclass(frozen=True)
class TableGroup:
    """Tables with one name pattern and (nearly) the same columns; a lone table is a group of one."""

    pattern: str
    tables: tuple[Table, ...]  # schema order; the first is the representative
    differences: tuple[ColumnDifference, ...] = ()

    @property
    def representative(self) -> Table:
        return self.tables[0]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.tables)

    @property
    def is_group(self) -> bool:
        return len(self.tables) > 1


def name_pattern(name: str) -> str:
    """The name with numbers, dates, period tokens and leading/trailing copy affixes made generic:
    ``ga_sessions_20160801`` -> ``ga_sessions``, ``events_2021_01`` -> ``events``, ``sales_q1`` and
    ``tmp_sales_v2`` and ``sales2020`` -> ``sales``."""
    schema, _, table = name.lower().rpartition(".")
    tokens = re.split(r"[_\-\s]+", NUMBERS.sub("#", table))
    core = [("#" if PERIOD_TOKEN.fullmatch(t) else t.rstrip("#") or t) for t in tokens if t]
    start, end = 0, len(core)
    while start < end and (core[start] in COPY_AFFIXES or core[start] == "#"):
        start += 1
    while end > start and (core[end - 1] in COPY_AFFIXES or core[end - 1] == "#"):
        end -= 1
    stem = "_".join(core[start:end]) or "_".join(core) or table
    return f"{schema}.{stem}" if schema else stem


def _signature(table: Table) -> frozenset[tuple[str, str]]:
    return frozenset((c.name.lower(), c.type.upper()) for c in table.columns)


def _near(a: frozenset[tuple[str, str]], b: frozenset[tuple[str, str]]) -> bool:
    return len(a ^ b) <= max(1, len(a | b) // NEAR_FRACTION)


def _differences(representative: Table, others: list[Table]) -> tuple[ColumnDifference, ...]:
    """The members whose columns are not exactly the representative's, by kind of difference."""
    base = _signature(representative)
    by_kind: dict[tuple[tuple[str, ...], tuple[str, ...]], list[str]] = {}
    for table in others:
        own = _signature(table)
        if own == base:
            continue
        extra = tuple(f"{c.name} {c.type}" for c in table.columns if (c.name.lower(), c.type.upper()) not in base)
        missing = tuple(c.name for c in representative.columns if (c.name.lower(), c.type.upper()) not in own)
        by_kind.setdefault((extra, missing), []).append(table.name)
    return tuple(ColumnDifference(tuple(names), extra, missing) for (extra, missing), names in by_kind.items())


def group_tables(schema: Schema) -> list[TableGroup]:
    """The schema's tables in groups: every table in exactly one (a lone table in a group of one), groups
    in the schema order of their representatives."""
    families: dict[str, list[tuple[frozenset[tuple[str, str]], list[Table]]]] = {}
    order: list[list[Table]] = []
    for table in schema.tables:
        signature = _signature(table)
        family = families.setdefault(name_pattern(table.name), [])
        cluster = next((members for first, members in family if _near(first, signature)), None)
        if cluster is None:
            cluster = []
            family.append((signature, cluster))
            order.append(cluster)
        cluster.append(table)
    return [
        TableGroup(name_pattern(c[0].name), tuple(c), _differences(c[0], c[1:]))
        for c in order
    ]


def capped_list(names: list[str], limit: int) -> str:
    """The first ``limit`` names, comma-separated, and how many more there are: ``a, b and 3 more``."""
    return ", ".join(names[:limit]) + (f" and {len(names) - limit} more" if len(names) > limit else "")


def name_list(names: tuple[str, ...] | list[str]) -> str:
    """Names, comma-separated; a long list with a shared prefix or suffix writes it once:
    ``ga_sessions_<X> for X in 20160802, 20160803``."""
    if len(names) <= FULL_NAME_LIST:
        return ", ".join(names)
    prefix = os.path.commonprefix(list(names)).rstrip("0123456789")
    if prefix[-1:].isalpha() and any(n[len(prefix):][:1].isalpha() for n in names):
        prefix = re.sub(r"[a-zA-Z]+$", "", prefix)  # never cut a word in two
    rests = [n[len(prefix):] for n in names]
    suffix = os.path.commonprefix([r[::-1] for r in rests])[::-1].lstrip("0123456789")
    if suffix[:1].isalpha() and any(r[: len(r) - len(suffix)][-1:].isalpha() for r in rests):
        suffix = re.sub(r"^[a-zA-Z]+", "", suffix)
    if len(prefix) + len(suffix) < 3 or any(len(r) <= len(suffix) for r in rests):
        return ", ".join(names)
    parts = [r[: len(r) - len(suffix)] for r in rests]
    return f"{prefix}<X>{suffix} for X in " + ", ".join(parts)


def _trimmed(table: Table, samples: int) -> Table:
    columns = tuple(replace(c, samples=c.samples[:samples]) if len(c.samples) > samples else c for c in table.columns)
    return replace(table, columns=columns)


def render_group(group: TableGroup, *, samples: int | None = None) -> str:
    """The representative's DDL (at most ``samples`` sample values per column; None: all), then a
    comment line per kind of member: the same columns, or which columns differ."""
    table = group.representative if samples is None else _trimmed(group.representative, samples)
    text = render_table(table, with_samples=samples != 0)
    if not group.is_group:
        return text
    differing = {name for d in group.differences for name in d.tables}
    same = [name for name in group.names[1:] if name not in differing]
    lines = [text]
    if same:
        lines.append(f"-- {len(same)} more table(s) with the same columns: {name_list(same)}")
    for d in group.differences:
        changes = [f"+ {c}" for c in d.extra] + [f"- {c}" for c in d.missing]
        lines.append(f"-- {len(d.tables)} more table(s) with these columns, except {', '.join(changes)}: "
                     f"{name_list(d.tables)}")
    return "\n".join(lines)


def sample_depth(tables: tuple[Table, ...] | list[Table]) -> int:
    """The most sample values any column has."""
    return max((len(c.samples) for t in tables for c in t.columns), default=0)


