"""Bulk reflection: one namespace's tables, columns and keys read from the engine's own catalog in a few
statements, whatever the number of tables.

SQLAlchemy's inspector reads SQLite table by table (about four statements per table: the columns, the DDL,
the foreign keys, the primary key), and on PostgreSQL and DuckDB it spends most of its time in Python,
turning each column's type text into a type anew. Each reader here issues a fixed number of catalog queries
for the whole namespace and turns each distinct type text into a type once, with the dialect's own type
parser, so that ``Database.reflect`` builds the same schema from its ``Catalog`` as from the inspector's:

* **sqlite** (2 statements): ``sqlite_master`` joined with ``pragma_table_xinfo(name)`` (columns and the
  primary key's ``pk`` positions), and with ``pragma_foreign_key_list(name)`` and the table's DDL (foreign
  keys in the order, and without the duplicates, that SQLAlchemy's reader gives).
* **duckdb** (2, and ``duckdb_types()`` for ENUM columns): ``duckdb_columns()`` of the ``duckdb_tables()``,
  and ``duckdb_constraints()``.
* **postgresql** (3, and 2 more when a column's type is a domain or an enum): ``pg_catalog``: columns with
  ``format_type``, primary keys from ``conkey``, foreign keys from ``pg_get_constraintdef`` (read by
  SQLAlchemy's own parser), and the domains and enums the types name.
* **snowflake** (5): ``SHOW TABLES``, ``information_schema.columns`` (views' columns dropped), ``SHOW PRIMARY
  KEYS`` and ``SHOW IMPORTED KEYS`` of the schema: Snowflake's information schema holds no key columns.
  When the foreign keys cannot be read (fakesnow's ``SHOW IMPORTED KEYS``), the schema keeps none, with one
  warning, where the inspector tries and warns table by table.

The readers lean on dialect internals (type parsers, SQLite's foreign-key DDL pattern, PostgreSQL's
foreign-key parser). Whatever a reader raises, ``Database`` reads the schema with the inspector instead
(``inspected``), so an upgrade that moves them costs speed, never the schema; ``tests/test_bulk_reflection.py``
holds both paths equal on every engine.
"""

from __future__ import annotations

import re
import warnings
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

import sqlalchemy as sa
from sqlalchemy.engine.interfaces import ReflectedForeignKeyConstraint
from sqlalchemy.types import TypeEngine

__all__ = ["Catalog", "CatalogColumn", "CatalogKey", "CatalogReader", "duckdb", "inspected", "postgresql", "snowflake",
           "sqlite"]

# What a failing get_multi_* or per-table inspector call raises (fakesnow's SHOW IMPORTED KEYS: ValueError).
INSPECTOR_ERRORS = (NotImplementedError, sa.exc.SQLAlchemyError, ValueError, KeyError)


class CatalogColumn(NamedTuple):  # a tuple: a schema has ~100,000 of them, made fast
    name: str
    type: TypeEngine[Any]  # readers share one object among the columns of one type text
    nullable: bool = True


class CatalogKey(NamedTuple):
    """A foreign key; ``referred_schema`` as SQLAlchemy reports it (None: the reflected namespace's)."""

    columns: tuple[str, ...]
    referred_table: str
    referred_columns: tuple[str, ...]
    referred_schema: str | None = None


@dataclass(frozen=True)
class Catalog:
    """One namespace's tables by their own names: ``columns`` has every table, ``primary_keys`` and
    ``foreign_keys`` those that have any; ``warnings`` say what could not be read."""

    columns: dict[str, tuple[CatalogColumn, ...]]
    primary_keys: dict[str, tuple[str, ...]] = field(default_factory=dict)
    foreign_keys: dict[str, tuple[CatalogKey, ...]] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()


# (connection, namespace or None) -> the namespace's catalog; raises anything on failure.
CatalogReader = Callable[[sa.Connection, "str | None"], Catalog]


def _rows(conn: sa.Connection, sql: str, params: Any = None) -> list[Any]:
    """Every row of one catalog query, as the driver's tuples (not SQLAlchemy's row objects: a catalog has
    ~100,000 rows); ``:name`` parameters."""
    result = conn.execute(sa.text(sql), params or {})
    try:
        return list(result.cursor.fetchall())
    finally:
        result.close()


def _keys(found: dict[str, list[ReflectedForeignKeyConstraint]]) -> dict[str, tuple[CatalogKey, ...]]:
    return {table: tuple(_key(fk) for fk in keys) for table, keys in found.items() if keys}


def _key(fk: ReflectedForeignKeyConstraint) -> CatalogKey:
    return CatalogKey(tuple(fk["constrained_columns"]), fk["referred_table"], tuple(fk["referred_columns"]),
                      fk.get("referred_schema"))


# ------------------------------------------------------------------------------------------------ SQLite

_SQLITE_TABLES = "{prefix}sqlite_master AS m JOIN {pragma}(m.name, :database) AS p " \
                 "WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite~_%' ESCAPE '~'"


def sqlite(conn: sa.Connection, schema: str | None) -> Catalog:
    """Columns and keys of every table, from the pragma table functions joined with ``sqlite_master``."""
    dialect: Any = conn.dialect
    prefix = f"{dialect.identifier_preparer.quote_identifier(schema)}." if schema else ""
    database = {"database": schema or "main"}
    xinfo = dialect.server_version_info >= (3, 31)  # generated columns are hidden from table_info
    columns_sql = (f"SELECT m.name, p.name, p.type, p.\"notnull\", p.pk, {'p.hidden' if xinfo else '0'} FROM "
                   + _SQLITE_TABLES.format(prefix=prefix, pragma="pragma_table_xinfo" if xinfo else "pragma_table_info")
                   + " ORDER BY m.name, p.cid")
    types: dict[tuple[str, bool], TypeEngine[Any]] = {}  # each type text parsed once
    columns: dict[str, list[CatalogColumn]] = {}
    positions: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for table, name, declared, notnull, pk, hidden in _rows(conn, columns_sql, database):
        own = columns.setdefault(table, [])
        if hidden == 1:  # a virtual table's hidden column
            continue
        key = ((declared or "").upper(), bool(hidden))
        type_ = types.get(key)
        if type_ is None:
            type_ = types[key] = dialect._get_column_info(name, key[0], True, None, 0, key[1], hidden == 3,
                                                          None)["type"]
        own.append(CatalogColumn(name, type_, not notnull))
        if pk:
            positions[table].append((pk, name))
    primary_keys = {table: tuple(name for _, name in sorted(found)) for table, found in positions.items()}
    keys_sql = ("SELECT m.name, m.sql, p.id, p.\"table\", p.\"from\", p.\"to\" FROM "
                + _SQLITE_TABLES.format(prefix=prefix, pragma="pragma_foreign_key_list")
                + " ORDER BY m.name, p.id, p.seq")
    rows: dict[str, list[Any]] = defaultdict(list)
    ddl: dict[str, str | None] = {}
    for table, sql, *row in _rows(conn, keys_sql, database):
        rows[table].append(row)
        ddl[table] = sql
    foreign_keys = {
        table: tuple(_key(fk) for fk in _sqlite_foreign_keys(dialect, found, ddl[table], primary_keys, schema))
        for table, found in rows.items()
    }
    return Catalog({t: tuple(c) for t, c in columns.items()}, primary_keys, foreign_keys)


def _sqlite_foreign_keys(dialect: Any, rows: list[Any], ddl: str | None, primary_keys: dict[str, tuple[str, ...]],
                         schema: str | None) -> list[ReflectedForeignKeyConstraint]:
    """One table's ``pragma_foreign_key_list`` rows (id, table, from, to) as SQLAlchemy's SQLite reader turns
    them into foreign keys: grouped by id; an unnamed referred column list is the referred table's primary
    key; those the DDL declares with ``FOREIGN KEY (...)`` first, in its order, then the others; one key
    declared twice is kept once."""
    from sqlalchemy.dialects.sqlite.base import FK_PATTERN

    keys: dict[int, ReflectedForeignKeyConstraint] = {}
    for number, referred, column, referred_column in rows:
        if dialect._broken_fk_pragma_quotes:
            referred = re.sub(r"^[\"\[`\']|[\"\]`\']$", "", referred)
        fk = keys.get(number)
        if fk is None:
            fk = keys[number] = {"name": None, "constrained_columns": [], "referred_schema": schema,
                                 "referred_table": referred, "options": {},
                                 "referred_columns": [] if referred_column else list(primary_keys.get(referred, ()))}
        fk["constrained_columns"].append(column)
        if referred_column:
            fk["referred_columns"].append(referred_column)

    def signature(columns: Iterable[str], table: str, referred: Iterable[str]) -> tuple[str, ...]:
        return (*columns, table, *referred)

    unmatched = {signature(fk["constrained_columns"], fk["referred_table"], fk["referred_columns"]): fk
                 for fk in keys.values()}
    ordered = []
    for match in FK_PATTERN.finditer(ddl or ""):
        constrained = list(dialect._find_cols_in_sig(match.group(3)))
        referred_columns = list(dialect._find_cols_in_sig(match.group(6))) if match.group(6) else constrained
        fk = unmatched.pop(signature(constrained, match.group(4) or match.group(5), referred_columns), None)
        if fk is not None:
            fk["name"] = match.group(1) or match.group(2)
            ordered.append(fk)
    return ordered + list(unmatched.values())


# ------------------------------------------------------------------------------------------------ DuckDB


def duckdb(conn: sa.Connection, schema: str | None) -> Catalog:
    """The namespace's ``duckdb_columns()`` less those of its ``duckdb_views()`` (the columns of its tables:
    joining ``duckdb_tables()`` instead, which writes each table's DDL, took twice as long), and its
    ``duckdb_constraints()``."""
    dialect: Any = conn.dialect
    # The namespace as duckdb-sqlalchemy's get_table_names resolves it (schema, or database.schema).
    where, params = dialect._build_query_where(schema_name=schema, default_to_current_schema=True)
    namespace = f"schema_name NOT LIKE 'pg\\_%' ESCAPE '\\'\n{where}"
    rows = _rows(conn, (
        "SELECT c.table_name, c.column_name, c.data_type, c.data_type_id, c.is_nullable FROM duckdb_columns() AS c "
        "WHERE " + namespace + " AND NOT c.internal AND NOT EXISTS (SELECT 1 FROM duckdb_views() AS v "
        "WHERE v.database_name = c.database_name AND v.schema_name = c.schema_name AND v.view_name = c.table_name) "
        "ORDER BY c.table_name, c.column_index"
    ), params)
    enum_ids = [row[3] for row in rows if row[2].upper().startswith("ENUM")]
    enums = dialect._duckdb_enum_rows(conn, enum_ids) if enum_ids else {}
    types: dict[tuple[str, Any], TypeEngine[Any]] = {}  # each type text parsed once
    columns: dict[str, list[CatalogColumn]] = {}
    for table, name, data_type, type_id, nullable in rows:
        key = (data_type, type_id if data_type.upper().startswith("ENUM") else None)
        type_ = types.get(key)
        if type_ is None:
            type_ = types[key] = dialect._reflect_duckdb_data_type(data_type, type_id, enums,
                                                                   type_description=f"column '{name}'")
        columns.setdefault(table, []).append(CatalogColumn(name, type_, bool(nullable)))
    primary_keys: dict[str, tuple[str, ...]] = {}
    foreign_keys: dict[str, list[CatalogKey]] = defaultdict(list)
    constraints = _rows(conn, (
        "SELECT table_name, constraint_type, constraint_column_names, referenced_table, referenced_column_names "
        "FROM duckdb_constraints() WHERE constraint_type IN ('PRIMARY KEY', 'FOREIGN KEY') AND " + namespace
        + " ORDER BY table_name, constraint_index"
    ), params)
    for table, kind, names, referred, referred_names in constraints:
        if kind == "PRIMARY KEY":
            primary_keys.setdefault(table, tuple(names or ()))
        else:  # a foreign key stays within its table's schema; SQLAlchemy names that schema only when given
            foreign_keys[table].append(CatalogKey(tuple(names), referred, tuple(referred_names), schema))
    return Catalog({t: tuple(c) for t, c in columns.items()}, primary_keys,
                   {t: tuple(k) for t, k in foreign_keys.items()})


# -------------------------------------------------------------------------------------------- PostgreSQL

# The tables SQLAlchemy's get_table_names lists: ordinary and partitioned, not temporary, in the schema or,
# without one, visible on the search path (outside pg_catalog).
_PG_TABLES = "c.relkind IN ('r', 'p') AND c.relpersistence <> 't' AND {namespace}"
_PG_FROM = ("pg_catalog.pg_class AS c JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace")


def postgresql(conn: sa.Connection, schema: str | None) -> Catalog:
    """Columns (``format_type``, the collation where it is not the type's), primary keys and foreign keys of
    the namespace's tables from ``pg_catalog``; domains and enums only when a column's type is one."""
    from sqlalchemy.dialects.postgresql import DOMAIN

    dialect: Any = conn.dialect
    tables = _PG_TABLES.format(namespace="n.nspname = :schema" if schema is not None else
                               "pg_catalog.pg_table_is_visible(c.oid) AND n.nspname <> 'pg_catalog'")
    params = {"schema": schema} if schema is not None else {}
    rows = _rows(conn, (
        "SELECT c.relname, a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod), a.attnotnull, "
        "CASE WHEN a.attcollation <> 0 AND a.attcollation <> t.typcollation THEN co.collname END, "
        "t.typtype IN ('d', 'e') OR coalesce(e.typtype IN ('d', 'e'), false) "
        f"FROM {_PG_FROM} "
        "LEFT JOIN pg_catalog.pg_attribute AS a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped "
        "LEFT JOIN pg_catalog.pg_type AS t ON t.oid = a.atttypid "
        "LEFT JOIN pg_catalog.pg_type AS e ON e.oid = t.typelem AND t.typcategory = 'A' "
        "LEFT JOIN pg_catalog.pg_collation AS co ON co.oid = a.attcollation "
        f"WHERE {tables} ORDER BY c.relname, a.attnum"
    ), params)
    domains: dict[tuple[str, ...], Any] = {}
    enums: dict[tuple[str, ...], Any] = {}
    if any(row[5] for row in rows):  # keyed as SQLAlchemy's get_multi_columns keys them
        domains = {((d["schema"], d["name"]) if not d["visible"] else (d["name"],)): d
                   for d in dialect._load_domains(conn, schema="*")}
        enums = {((e["name"],) if e["visible"] else (e["schema"], e["name"])): e
                 for e in dialect._load_enums(conn, schema="*")}
    types: dict[tuple[str, str | None], TypeEngine[Any]] = {}  # each type text parsed once
    columns: dict[str, list[CatalogColumn]] = {}
    for table, name, format_type, not_null, collation, _ in rows:
        own = columns.setdefault(table, [])
        if name is None:  # a table without columns
            continue
        type_ = types.get((format_type, collation))
        if type_ is None:
            type_ = types[format_type, collation] = dialect._reflect_type(
                format_type, domains, enums, type_description=f"column '{name}'", collation=collation)
        own.append(CatalogColumn(name, type_, not not_null and not (isinstance(type_, DOMAIN) and type_.not_null)))
    primary_keys: dict[str, list[str]] = defaultdict(list)
    for table, name in _rows(conn, (
        f"SELECT c.relname, a.attname FROM pg_catalog.pg_constraint AS con JOIN {_PG_FROM} ON c.oid = con.conrelid "
        "CROSS JOIN LATERAL unnest(con.conkey) WITH ORDINALITY AS k(attnum, ord) "
        "JOIN pg_catalog.pg_attribute AS a ON a.attrelid = con.conrelid AND a.attnum = k.attnum "
        f"WHERE con.contype = 'p' AND {tables} ORDER BY c.relname, k.ord"
    ), params):
        primary_keys[table].append(name)
    foreign_keys: dict[str, list[CatalogKey]] = defaultdict(list)
    for table, definition, referred_namespace in _rows(conn, (
        "SELECT c.relname, pg_catalog.pg_get_constraintdef(con.oid, true), rn.nspname "
        f"FROM pg_catalog.pg_constraint AS con JOIN {_PG_FROM} ON c.oid = con.conrelid "
        "LEFT JOIN pg_catalog.pg_class AS rc ON rc.oid = con.confrelid "
        "LEFT JOIN pg_catalog.pg_namespace AS rn ON rn.oid = rc.relnamespace "
        f"WHERE con.contype = 'f' AND {tables} ORDER BY c.relname, con.conname"
    ), params):
        foreign_keys[table].append(_pg_key(dialect, definition, referred_namespace, schema))
    return Catalog({t: tuple(c) for t, c in columns.items()}, {t: tuple(k) for t, k in primary_keys.items()},
                   {t: tuple(k) for t, k in foreign_keys.items()})


def _pg_key(dialect: Any, definition: str, referred_namespace: str | None, schema: str | None) -> CatalogKey:
    """One ``pg_get_constraintdef`` text read as SQLAlchemy's get_multi_foreign_keys reads it: the referred
    schema when PostgreSQL qualifies the table (it is off the search path), else the reflected schema's
    name when the table is there."""
    unquote = dialect.identifier_preparer._unquote_identifier
    constrained, referred_schema, referred_table, referred_columns, *_ = dialect._parse_fk(definition)
    if referred_schema:
        referred_schema = unquote(referred_schema)
    elif schema is not None and schema == referred_namespace:
        referred_schema = schema
    return CatalogKey(tuple(unquote(c) for c in re.split(r"\s*,\s*", constrained)), unquote(referred_table),
                      tuple(unquote(c) for c in re.split(r"\s*,\s", referred_columns)), referred_schema)


# --------------------------------------------------------------------------------------------- Snowflake


def snowflake(conn: sa.Connection, schema: str | None) -> Catalog:
    """The schema's tables (``SHOW TABLES``), their columns (``information_schema.columns``) and keys (``SHOW
    PRIMARY KEYS``, ``SHOW IMPORTED KEYS``), read and typed by snowflake-sqlalchemy's own helpers."""
    dialect: Any = conn.dialect
    cache: dict[Any, Any] = {}  # the dialect's reflection cache: current_database() is asked once
    full_name = dialect._get_full_schema_name(conn, schema, info_cache=cache)
    tables = set(dialect.get_table_names(conn, schema, info_cache=cache))
    primary_keys = dialect._get_schema_primary_keys(conn, full_name, info_cache=cache)
    found = dialect._query_all_columns_info(conn, full_name)
    if found is None:  # too many columns for one information_schema answer
        raise NotImplementedError("information_schema.columns is too large; reflecting table by table")
    from snowflake.sqlalchemy.custom_types import StructuredType  # type: ignore[import-untyped]
    from snowflake.sqlalchemy.snowdialect import _StructuredTypeInfoManager  # type: ignore[import-untyped]

    structured = _StructuredTypeInfoManager(conn, dialect.name_utils, dialect.default_schema_name)
    types: dict[tuple[Any, ...], TypeEngine[Any]] = {}  # each type text parsed once
    columns: dict[str, list[CatalogColumn]] = {table: [] for table in tables}
    for row in found.all():
        table = dialect.normalize_name(row[0])
        if table not in tables:  # a view's columns
            continue
        name = dialect.normalize_name(row[1])
        kind = dialect.ischema_names.get(row[2])
        if kind is not None and issubclass(kind, StructuredType):  # typed by DESC TABLE, as the dialect does
            built = dialect._build_column_info(*row[:16], full_name, primary_keys, structured)
            if built is not None:
                columns[table].append(CatalogColumn(built[1]["name"], built[1]["type"], built[1]["nullable"]))
            continue
        if name.startswith("sys_clustering_column"):
            continue
        key = (row[2], row[3], row[4], row[5], row[15])
        type_ = types.get(key)
        if type_ is None:
            type_ = types[key] = dialect._resolve_column_type(*key, name)
        columns[table].append(CatalogColumn(name, type_, row[6] == "YES"))
    notes: tuple[str, ...] = ()
    try:
        foreign_keys = _keys(dialect._get_schema_foreign_keys(conn, full_name, info_cache=cache))
    except INSPECTOR_ERRORS as error:  # e.g. fakesnow's SHOW IMPORTED KEYS, whose columns do not match
        foreign_keys, notes = {}, (f"verifiedsql could not reflect foreign keys of schema {full_name}: {error}",)
    return Catalog({t: tuple(c) for t, c in columns.items()},
                   {t: tuple(pk["constrained_columns"]) for t, pk in primary_keys.items() if t in tables},
                   {t: k for t, k in foreign_keys.items() if t in tables}, notes)


# ------------------------------------------------------------------------------------- the inspector


def inspected(inspector: sa.Inspector, schema: str | None) -> Catalog:
    """The catalog as SQLAlchemy's inspector reads it: ``get_multi_*`` for all tables at once where the
    dialect can, and table by table for what that call did not answer (the engines without a reader above,
    and their fallback)."""
    names = sorted(inspector.get_table_names(schema=schema))
    if not names:
        return Catalog({})
    columns = _bulk(inspector.get_multi_columns, schema, names)
    primary_keys = _bulk(inspector.get_multi_pk_constraint, schema, names)
    with quiet_fk_parsing():
        foreign_keys = _bulk(inspector.get_multi_foreign_keys, schema, names)
    notes: list[str] = []
    catalog = Catalog({})
    for name in names:
        infos = columns.get(name)
        if infos is None:
            infos = inspector.get_columns(name, schema=schema)
        catalog.columns[name] = tuple(CatalogColumn(i["name"], i["type"], bool(i.get("nullable", True)))
                                      for i in infos)
        pk = primary_keys.get(name)
        if pk is None:
            pk = inspector.get_pk_constraint(name, schema=schema)
        if pk.get("constrained_columns"):
            catalog.primary_keys[name] = tuple(pk["constrained_columns"])
        keys = foreign_keys.get(name)
        if keys is None:
            try:
                with quiet_fk_parsing():
                    keys = inspector.get_foreign_keys(name, schema=schema)
            except INSPECTOR_ERRORS as error:  # e.g. fakesnow's SHOW IMPORTED KEYS
                notes.append(f"verifiedsql could not reflect foreign keys of {name!r}: {error}")
                keys = []
        if keys:
            catalog.foreign_keys[name] = tuple(_key(fk) for fk in keys)
    return replace(catalog, warnings=tuple(notes))


def _bulk(method: Any, schema: str | None, names: list[str]) -> dict[str, Any]:
    """One ``Inspector.get_multi_*`` call for all tables, by table name; {} where it fails.

    Dialects without bulk reflection of their own get SQLAlchemy's per-table loop; a name missing from the
    answer is reflected on its own by the caller.
    """
    try:
        found = method(schema=schema, filter_names=names)
    except INSPECTOR_ERRORS:
        return {}
    return {table: value for (_, table), value in found.items()}


@contextmanager
def quiet_fk_parsing() -> Iterator[None]:
    """Silence SQLAlchemy's SQLite warning about a foreign key written twice in the DDL (Spider's
    dog_kennels declares ``FOREIGN KEY (owner_id) REFERENCES Owners (owner_id)`` twice): the PRAGMA
    lists both, SQLAlchemy keeps one, then warns that it cannot place the second. The data is
    right and the key is kept once; the warning is about the DDL, not about anything to fix."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="WARNING: SQL-parsed foreign key constraint",
                                category=sa.exc.SAWarning)
        yield
