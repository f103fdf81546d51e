"""What the schema says about a failing candidate's missing name, for the refinement prompt (``schema_facts``).

When the engine rejects a candidate for a table or column it does not have and no deterministic repair
runs, the model is shown, beside the engine's error, the facts it got wrong: which tables hold that column
and how they join the tables the query reads, or that no table holds it and what the query's tables do
hold; for a missing table, the tables there are. Facts come from the reflected schema only."""

from __future__ import annotations

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from ..db.schema import Schema, Table
from .common.catalog import Catalog, distance
from .common.failures import missing_name
from .common.grouping import capped_list

MAX_TABLES = 12  # tables named in one fact; more are counted
MAX_COLUMNS = 16  # columns listed for one table


def _read_tables(sql: str, dialect: str, catalog: Catalog) -> list[Table]:
    """The schema tables ``sql`` reads, in order of appearance (none when it does not parse)."""
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except (SqlglotError, ValueError):
        return []
    found: list[Table] = []
    for node in tree.find_all(exp.Table):
        table = catalog.table(node.name)
        if table is not None and table not in found:
            found.append(table)
    return found


def _links(catalog: Catalog, holder: Table, read: list[Table]) -> list[str]:
    """``a.x = b.y`` for each key link between ``holder`` and a table the query reads."""
    links: list[str] = []
    for other in read:
        for own, target, key in catalog.edges_from(holder):
            if target is other:
                links.append(f"{catalog.bare(holder)}.{own} = {catalog.bare(other)}.{key}")
        for own, target, key in catalog.edges_from(other):
            if target is holder:
                links.append(f"{catalog.bare(other)}.{own} = {catalog.bare(holder)}.{key}")
    return list(dict.fromkeys(links))


def _column_facts(catalog: Catalog, name: str, read: list[Table]) -> list[str]:
    holders = [t for t in catalog.schema.tables if t.column(name) is not None]
    bare = [catalog.bare(t) for t in holders]
    if holders:
        facts = [f"Column {name} is in {'table' if len(holders) == 1 else 'tables'} {capped_list(bare, MAX_TABLES)}."]
        for holder in holders:
            if holder in read:
                continue
            links = _links(catalog, holder, read)
            if links:
                facts.append(f"{catalog.bare(holder)} joins the query's tables on {'; '.join(links)}.")
        return facts
    facts = [f"No table has a column named {name}."]
    similar = _similar(catalog, name)
    if similar:
        facts.append(f"Columns with similar names: {capped_list(similar, MAX_COLUMNS)}.")
    for table in read:
        columns = [c.name for c in table.columns]
        facts.append(f"Columns of {catalog.bare(table)}: {capped_list(columns, MAX_COLUMNS)}.")
    return facts


def _similar(catalog: Catalog, name: str) -> list[str]:
    """``table.column`` for columns whose name is one or two edits from ``name``, or contains it (or the
    other way round, for names of four letters or more)."""
    wanted = name.lower().replace("_", "")
    found: list[str] = []
    for table in catalog.schema.tables:
        for column in table.columns:
            have = column.name.lower().replace("_", "")
            contains = min(len(have), len(wanted)) >= 4 and (wanted in have or have in wanted)
            if contains or distance(have, wanted, 2) <= 2:
                found.append(f"{catalog.bare(table)}.{column.name}")
    return found


def _table_facts(catalog: Catalog, name: str) -> list[str]:
    tables = [catalog.bare(t) for t in catalog.schema.tables]
    near = [t for t in tables if distance(t.lower(), name.lower(), 2) <= 2]
    facts = [f"No table is named {name}. The tables are: {capped_list(tables, MAX_TABLES)}."]
    if near:
        facts.append(f"Closest names: {', '.join(near)}.")
    return facts


def schema_facts(schema: Schema, engine: str, dialect: str, sql: str, error: str) -> str:
    """The facts for ``error`` (one line each), or "" when the error names no missing table or column."""
    found = missing_name(error)
    if found is None:
        return ""
    kind, name = found
    catalog = Catalog(schema, engine)
    if kind == "table":
        facts = _table_facts(catalog, name)
    else:
        facts = _column_facts(catalog, name, _read_tables(sql, dialect, catalog))
    return "\n".join(f"- {fact}" for fact in facts)
