"""The schema boundary: which tables generated SQL may read.

With ``Options.schema`` set, a query may only read that schema: a table named with another schema (or
another database) is refused before it runs, and so is an unqualified name that is not one of the schema's
own tables (the engine's search path could resolve it elsewhere: PostgreSQL looks in ``pg_catalog`` first).
On every engine, with or without ``schema=``, the system relations that hold secrets (password hashes,
user-mapping options, other sessions' query text, server settings, column statistics; with the database's
function policy also the system views built on server-state functions, such as ``pg_stat_user_tables``) are
refused, and so are the settings columns of system relations (``pg_roles.rolconfig``).

Two checks, one per safety layer: ``relation_refusal`` on the sqlglot tree (statement guard) and
``plan_relation_refusal`` on PostgreSQL's ``EXPLAIN (VERBOSE, FORMAT JSON)`` plan (engine guard), which
names the schema of every relation the query scans, views expanded.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import PurePath
from typing import Any

import sqlalchemy as sa
from sqlglot import exp

from ..errors import UnsafeSQLError
from ..profiles import DialectProfile
from .jsontree import json_nodes

# System relations (tables and views) whose rows are secrets or server internals, by engine; refused in
# the engine's system schema or unqualified, whatever ``schema=`` says.
SECRET_RELATIONS: dict[str, frozenset[str]] = {
    "postgresql": frozenset({
        "pg_authid", "pg_shadow", "pg_user_mapping", "pg_user_mappings", "pg_statistic",
        "pg_statistic_ext_data", "pg_largeobject", "pg_subscription", "pg_stat_activity", "pg_settings",
        "pg_file_settings", "pg_hba_file_rules", "pg_ident_file_rules", "pg_config", "pg_stat_ssl",
        "pg_stat_gssapi", "pg_replication_slots", "pg_stat_replication", "pg_db_role_setting",
    }),
}
SYSTEM_SCHEMAS: dict[str, frozenset[str]] = {"postgresql": frozenset({"", "pg_catalog"})}
# Databases that are the account's own records (Snowflake's shared SNOWFLAKE database: query and login
# history, grants, ...), refused as a whole.
SECRET_CATALOGS: dict[str, frozenset[str]] = {"snowflake": frozenset({"snowflake"})}
# Columns of PostgreSQL's catalogs that hold credentials: a plan that reads one (by name, or the whole row:
# ``a::text``) is refused, so a view that masks them (pg_roles, pg_user) still works while a direct read of
# pg_authid.rolpassword does not. The settings columns (setconfig, ...) come from the database's catalog.
SECRET_COLUMNS: dict[str, frozenset[str]] = {
    "pg_authid": frozenset({"rolpassword"}),
    "pg_user_mapping": frozenset({"umoptions"}),
    "pg_subscription": frozenset({"subconninfo"}),
    "pg_statistic": frozenset({"stavalues1", "stavalues2", "stavalues3", "stavalues4", "stavalues5"}),
}


def _refuse(detail: str, construct: str, layer: str = "statement") -> UnsafeSQLError:
    return UnsafeSQLError(f"{detail}; generated SQL may only read the tables it was shown.",
                          construct=construct, layer=layer)


def _names_a_cte(table: exp.Table) -> bool:
    """True when an unqualified ``table`` names a CTE of a WITH in scope (an enclosing query's)."""
    name = table.name.lower()
    node = table.parent
    while node is not None:
        with_ = node.args.get("with_") or node.args.get("with")
        if isinstance(with_, exp.With) and any(cte.alias_or_name.lower() == name for cte in with_.expressions):
            return True
        node = node.parent
    return False


def _tables(tree: exp.Expression) -> Iterator[exp.Table]:
    """Every named table the tree reads (table functions, file scans and ``ROWS FROM`` are not names)."""
    for node in tree.find_all(exp.Table):
        if isinstance(node.this, exp.Identifier) and node.name:
            yield node


def relation_refusal(tree: exp.Expression, profile: DialectProfile, schema: str | None = None,
                     tables: Iterable[str] = (), catalogs: Iterable[str] = (), *, secret_relations: Iterable[str] = (),
                     secret_columns: Mapping[str, frozenset[str]] | None = None) -> None:
    """Raise ``UnsafeSQLError`` when ``tree`` reads a secret system relation, or (with ``schema``) a table
    outside ``schema``: one qualified with another schema, with a database not in ``catalogs``, or an
    unqualified name that is not one of ``tables`` (the schema's tables) nor a CTE of the query.
    ``secret_relations`` and ``secret_columns`` (by relation): those the database's catalog adds
    (``FunctionPolicy.relations`` and ``.columns``); a secret column is refused by name, by ``*`` and by
    a whole-row reference to its relation."""
    secret = SECRET_RELATIONS.get(profile.name, frozenset()) | frozenset(secret_relations)
    secret_catalogs = SECRET_CATALOGS.get(profile.name, frozenset())
    system = SYSTEM_SCHEMAS.get(profile.name, frozenset({""}))
    known = {name.lower().rpartition(".")[2] for name in tables}
    allowed_catalogs = {c.lower() for c in catalogs if c}
    for table in _tables(tree):
        name, db, catalog = table.name, table.db, table.catalog
        shown = ".".join(part for part in (catalog, db, name) if part)
        if (name.lower() in secret and db.lower() in system) or catalog.lower() in secret_catalogs:
            raise _refuse(f"{shown} is a system relation that holds credentials or server internals",
                          f"relation {shown.lower()}")
        if db.lower() in system and not catalog and (column := _secret_column(tree, table, secret_columns or {})):
            raise _refuse(f"{column} of {shown} holds settings or credentials", f"column {name.lower()}.{column}")
        if not schema or (not db and not catalog and _names_a_cte(table)):
            continue
        if catalog and catalog.lower() not in allowed_catalogs:
            raise _refuse(f"{shown} is in another database, outside schema={schema!r}", f"relation {shown}")
        if db and not same_schema(table.args.get("db"), schema, profile.name):
            raise _refuse(f"{shown} is outside schema={schema!r}", f"relation {shown}")
        if not db and name.lower() not in known:
            raise _refuse(f"{name} is not a table of schema={schema!r}", f"relation {name}")


def same_schema(written: Any, schema: str, engine: str) -> bool:
    """Whether the schema name ``written`` in a query (an ``exp.Identifier``) names ``schema`` as the engine
    resolves it: PostgreSQL folds an unquoted name to lower case and keeps a quoted one exactly (``"S1"`` is
    not ``s1``); Snowflake folds unquoted names to upper case, and a lower-case ``schema`` is SQLAlchemy's
    case-insensitive spelling of the upper-case name; DuckDB and SQLite match names in any case."""
    if not isinstance(written, exp.Identifier):
        return str(written or "").lower() == schema.lower()
    name, quoted = written.name, bool(written.args.get("quoted"))
    if engine == "postgresql":
        return (name if quoted else name.lower()) == schema
    if engine == "snowflake":
        return (name if quoted else name.upper()) == (schema.upper() if schema == schema.lower() else schema)
    return name.lower() == schema.lower()


def _secret_column(tree: exp.Expression, table: exp.Table, secret_columns: Mapping[str, frozenset[str]]) -> str | None:
    """The secret column of the system relation ``table`` that ``tree`` may read: one named, or ``*`` or
    the whole row (``r``, ``r::text``, ``row_to_json(r)``) read."""
    columns = secret_columns.get(table.name.lower(), frozenset()) | SECRET_COLUMNS.get(table.name.lower(), frozenset())
    if not columns or (not table.db and _names_a_cte(table)):
        return None
    whole_row = {table.name.lower(), table.alias_or_name.lower()}
    for node in tree.walk():
        if isinstance(node, exp.Star) and isinstance(node.parent, (exp.Select, exp.Column)):  # not count(*)
            return sorted(columns)[0]
        if isinstance(node, exp.Column) and (node.name.lower() in columns or node.name.lower() in whole_row):
            return node.name.lower() if node.name.lower() in columns else sorted(columns)[0]
    return None


def current_catalogs(url: sa.URL) -> tuple[str, ...]:
    """The names a query may give the connected database as a catalog qualifier (``db.schema.table``):
    the URL's database (Snowflake: the part before ``/schema``; DuckDB: the file's stem)."""
    database = url.database or ""
    if url.get_backend_name() == "duckdb":
        return ("memory",) if database in ("", ":memory:") else (PurePath(database).stem,)
    return (database.split("/")[0],) if database else ()


def _reads_column(node: dict[str, Any], columns: frozenset[str]) -> bool:
    """True when a scan node's output or conditions name one of ``columns`` or its whole row (``a.*``,
    as in ``a::text`` or ``row_to_json(a)``: a scan's whole-row reference is always its own row)."""
    if not columns:
        return False
    texts = [*node.get("Output", ()), str(node.get("Filter", "")), str(node.get("Index Cond", ""))]
    return any(column in text for text in texts for column in columns) or any(".*" in text for text in texts)


def duckdb_relation_refusal(tree: Any, schema: str | None, catalog: str) -> str | None:
    """The first table DuckDB's serialized parse tree (``json_serialize_sql``) names outside ``schema`` or
    outside the database ``catalog``; None when there is none or no ``schema``. Names written without a
    schema are left to the statement guard (the parser does not resolve them)."""
    if not schema:
        return None
    for node in json_nodes(tree):
        if node.get("type") != "BASE_TABLE":
            continue
        parts = [str(node.get(key) or "") for key in ("catalog_name", "schema_name", "table_name")]
        if parts[1].lower() not in ("", schema.lower()) or parts[0].lower() not in ("", catalog.lower()):
            return "relation " + ".".join(part for part in parts if part)
    return None


def plan_relation_refusal(plan: Any, schema: str | None = None,
                          settings: Mapping[str, frozenset[str]] | None = None) -> str | None:
    """The first relation a PostgreSQL JSON plan scans outside ``schema`` (when one is given), or a secret
    catalog column it reads (``SECRET_COLUMNS``, and the settings columns by relation that the database's
    catalog lists: ``FunctionPolicy.columns``); None when there is none."""
    for node in json_nodes(plan):
        relation = node.get("Relation Name")
        if not isinstance(relation, str):
            continue
        secret = SECRET_COLUMNS.get(relation, frozenset()) | (settings or {}).get(relation, frozenset())
        if node.get("Schema") == "pg_catalog" and _reads_column(node, secret):
            return f"relation pg_catalog.{relation}"
        if schema and node.get("Schema") != schema:
            return f"relation {node.get('Schema')}.{relation}"
    return None
