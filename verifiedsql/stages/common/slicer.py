"""The deterministic slicer of dual-paradigm selection: the part of the schema two candidate SQLs touch.

Each SQL is parsed in the user's dialect and resolved on a private copy of its sqlglot tree: table
references are looked up in the schema (bare or schema-qualified, case-insensitively), every
identifier is folded to lower case, and sqlglot's ``qualify`` (with the schema as its mapping) expands
``*`` and ``USING``, attaches every column to a source, and rejects unknown columns. Walking the scopes
then gives each column reference its table. The slice keeps, in schema order, the tables the SQLs
read and, in each, the columns they use plus its primary key and the foreign-key columns between
included tables (with the key columns they refer to). Any name that does not resolve raises
``SliceError``, so a caller can fall back.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.qualify import qualify
from sqlglot.optimizer.scope import Scope, traverse_scope
from sqlglot.schema import MappingSchema

from ... import backends
from ...db.schema import Column, Schema, Table
from ...errors import SliceError, UnknownBackendError, UnsafeSQLError
from ...guard.safety import parse_one_query
from ...profiles import DialectProfile
from .slices import SchemaSlice, SliceMethod

__all__ = ["SqlAnalysis", "TableIndex", "analyze_sql", "scratch_dialect_for", "slice_from_columns", "slice_schema",
           "table_references"]

def scratch_dialect_for(profile: DialectProfile) -> str:
    """The profile name of the scratch engine for ``profile``'s engine (``Backend.scratch_dialect``:
    Snowflake's run on DuckDB, transpiled)."""
    try:
        return backends.backend_for(profile.name).scratch_dialect
    except UnknownBackendError:
        raise SliceError(f"there is no scratch engine for {profile.display_name}; "
                         f"supported: {', '.join(backends.names())}.") from None


def bare_name(name: str) -> str:
    """A table name without the schema prefix that ``Database.reflect`` adds (``sales.orders`` -> ``orders``)."""
    return name.rsplit(".", 1)[-1]


class TableIndex:
    """Tables by name, case-insensitively, by full and by bare name (the full name wins)."""

    def __init__(self, tables: Iterable[Table]) -> None:
        tables = tuple(tables)
        self._by_name: dict[str, Table] = {}
        for table in tables:
            self._by_name.setdefault(table.name.lower(), table)
        for table in tables:
            self._by_name.setdefault(bare_name(table.name).lower(), table)

    def named(self, name: str) -> Table | None:
        return self._by_name.get(name.lower()) or self._by_name.get(bare_name(name).lower())

    def find(self, node: exp.Table) -> Table | None:
        """The table a reference such as ``orders`` or ``sales.orders`` names, if known."""
        full = ".".join(part.name for part in node.parts)
        return self._by_name.get(full.lower()) or self._by_name.get(node.name.lower())


def table_references(tree: exp.Expression, index: TableIndex) -> list[tuple[exp.Table, Table]]:
    """Every stored table ``tree`` reads, with the table it resolves to. References to CTEs and table
    functions are skipped; a name that is not in ``index`` raises ``SliceError``."""
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    found = []
    for node in tree.find_all(exp.Table):
        if not isinstance(node.this, exp.Identifier):
            continue  # a table function such as generate_series(...)
        if not node.args.get("db") and node.name.lower() in ctes:
            continue
        table = index.find(node)
        if table is None:
            name = ".".join(part.name for part in node.parts)
            raise SliceError(f"the SQL reads table {name!r}, which is not among the sliced tables; "
                             "fall back to running the candidates on the database itself.")
        found.append((node, table))
    return found


@dataclass(frozen=True)
class SqlAnalysis:
    """One SQL resolved against the schema: ``tree`` is the qualified, lower-cased copy; ``columns``
    maps ``id()`` of each column reference in it to the table and column it reads."""

    tree: exp.Expression
    tables: tuple[Table, ...]
    columns: dict[int, tuple[Table, Column]]

    def column_of(self, node: exp.Column) -> tuple[Table, Column] | None:
        return self.columns.get(id(node))


def _fold_identifiers(tree: exp.Expression) -> None:
    """Lower-case and quote every identifier, so names resolve case-insensitively in any dialect."""
    for identifier in tree.find_all(exp.Identifier):
        identifier.set("this", identifier.name.lower())
        identifier.set("quoted", True)


def _rename_tables(tree: exp.Expression, index: TableIndex) -> dict[str, Table]:
    """Point every table reference at a private key (``t0``, ``t1``, ...), keeping its name as the alias."""
    keys: dict[str, Table] = {}
    by_table: dict[str, str] = {}
    for node, table in table_references(tree, index):
        key = by_table.setdefault(table.name, f"t{len(by_table)}")
        keys[key] = table
        if not node.alias:
            node.set("alias", exp.TableAlias(this=exp.to_identifier(node.name, quoted=True)))
        node.set("this", exp.to_identifier(key, quoted=True))
        node.set("db", None)
        node.set("catalog", None)
    for column in tree.find_all(exp.Column):
        column.set("db", None)
        column.set("catalog", None)
    return keys


def _mapping(keys: dict[str, Table]) -> MappingSchema:
    columns: dict[str, object] = {key: {c.name.lower(): "TEXT" for c in table.columns} for key, table in keys.items()}
    return MappingSchema(columns, normalize=False)


def _source(scope: Scope, alias: str) -> object | None:
    """The source a column qualifier names, looked up in enclosing scopes too (correlated subqueries)."""
    current: Scope | None = scope
    while current is not None:
        if alias in current.sources:
            return current.sources[alias]
        current = current.parent
    return None


def _resolve_columns(tree: exp.Expression, keys: dict[str, Table]) -> dict[int, tuple[Table, Column]]:
    resolved: dict[int, tuple[Table, Column]] = {}
    for scope in traverse_scope(tree):
        for node in scope.columns:
            source = _source(scope, node.table) if node.table else None
            if not isinstance(source, exp.Table) or source.name not in keys:
                continue  # a select alias, or a column of a derived table (resolved in its own scope)
            table = keys[source.name]
            column = table.column(node.name)
            if column is None:
                raise SliceError(f"table {table.name} has no column {node.name!r}; "
                                 "fall back to running the candidates on the database itself.")
            resolved[id(node)] = (table, column)
    return resolved


def analyze_sql(sql: str, index: TableIndex, profile: DialectProfile) -> SqlAnalysis:
    """Resolve every table and column ``sql`` reads; ``SliceError`` when a name does not resolve."""
    try:
        tree = parse_one_query(sql, profile).copy()
    except UnsafeSQLError as error:
        raise SliceError(f"the slicer could not parse the SQL: {error}") from error
    _fold_identifiers(tree)
    keys = _rename_tables(tree, index)
    try:
        tree = qualify(tree, schema=_mapping(keys), dialect=profile.sqlglot_dialect,
                       validate_qualify_columns=True, quote_identifiers=True, identify=True)
        columns = _resolve_columns(tree, keys)
    except SliceError:
        raise
    except (SqlglotError, KeyError, ValueError, AttributeError) as error:
        raise SliceError(f"the slicer could not resolve the SQL's names: {error}") from error
    tables = tuple(dict.fromkeys(keys.values()))
    return SqlAnalysis(tree, tables, columns)


def _used_columns(sqls: Sequence[str], index: TableIndex, profile: DialectProfile) -> dict[str, set[str]]:
    """Column names (lower case) each table is read for, by table name; every read table is a key."""
    used: dict[str, set[str]] = {}
    for sql in sqls:
        analysis = analyze_sql(sql, index, profile)
        for table in analysis.tables:
            used.setdefault(table.name, set())
        for table, column in analysis.columns.values():
            used[table.name].add(column.name.lower())
    return used


def _add_keys(used: dict[str, set[str]], index: TableIndex) -> None:
    """Primary keys of included tables, and foreign keys between them (both ends)."""
    for name in list(used):
        table = index.named(name)
        assert table is not None
        used[name].update(c.lower() for c in table.primary_key)
        for fk in table.foreign_keys:
            parent = index.named(fk.referred_table)
            if parent is not None and parent.name in used:
                used[name].update(c.lower() for c in fk.columns)
                used[parent.name].update(c.lower() for c in fk.referred_columns)


def _restricted(table: Table, names: set[str], included: set[str], index: TableIndex) -> Table:
    """``table`` with only the named columns (schema order; its first column if none) and foreign keys
    to included tables whose columns it keeps."""
    columns = tuple(c for c in table.columns if c.name.lower() in names) or table.columns[:1]
    kept = {c.name.lower() for c in columns}
    keys = tuple(
        fk for fk in table.foreign_keys
        if (parent := index.named(fk.referred_table)) is not None and parent.name in included
        and all(c.lower() in kept for c in fk.columns)
    )
    return Table(table.name, columns, keys, table.namespace)


def slice_from_columns(used: dict[str, set[str]], schema: Schema, profile: DialectProfile, scratch_dialect: str,
                       *, method: SliceMethod = "lineage") -> SchemaSlice:
    """The slice of ``schema`` holding the named tables (by name) and columns (lower-case names), plus
    their keys (see ``slice_schema``); ``SliceError`` when no known table is named."""
    index = TableIndex(schema.tables)
    known = {table.name: set(columns) for name, columns in used.items() if (table := index.named(name))}
    if not known:
        raise SliceError("no table of the schema is used, so there is nothing to slice.")
    _add_keys(known, index)
    included = set(known)
    tables = tuple(_restricted(t, known[t.name], included, index) for t in schema.tables if t.name in known)
    return SchemaSlice(tables=tables, source_dialect=profile.name, scratch_dialect=scratch_dialect,
                       method=method, transpiled=scratch_dialect != profile.name)


def slice_schema(sqls: Sequence[str], schema: Schema, profile: DialectProfile, scratch_dialect: str) -> SchemaSlice:
    """The schema slice the SQLs (in ``profile``'s dialect) need, to be loaded into a
    ``scratch_dialect`` engine; ``SliceError`` when a table or column name does not resolve."""
    used = _used_columns(sqls, TableIndex(schema.tables), profile)
    return slice_from_columns(used, schema, profile, scratch_dialect)
