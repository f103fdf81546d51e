"""Function policy: which functions generated SQL may call, decided per engine from its own catalog.

Both safety layers ask the same ``FunctionPolicy`` (the statement guard with the names it parsed, the
engine guards with the names the engine itself reports), and a refusal names the function:

* **PostgreSQL** (``pg_proc``): immutable and stable functions, plus a short named list of harmless
  volatile ones (``random``, ``clock_timestamp``, ``gen_random_uuid``, ...). Every other volatile
  function is refused (replication slots, ``pg_stat_reset``, advisory locks, large objects, ...), and so
  are, by name, stable ones that read server settings or files or run SQL text (``current_setting``,
  ``pg_ls_*``, ``pg_read_*``, ``*_to_xml``). Server-state readers are found in the catalog: a built-in
  function the server marks not parallel-safe (``proparallel``: it reads the session's or other
  backends' state, such as ``pg_stat_get_backend_activity``, or assigns a transaction id, such as
  ``pg_current_xact_id``) is refused, but for a few harmless ones (``age``, ``current_schema``, ...); so is
  every ``pg_stat_*`` name (statistics and activity, an extension's included). ``pg_views`` then gives
  the system views built on a refused function (``pg_stat_user_tables``, ``pg_locks``, ...), refused as
  relations (``FunctionPolicy.relations``), and the set-returning functions that the secret system views read
  from and no other system view does (``pg_get_replication_slots``). A name ``pg_proc`` does not know is
  refused too (the server would reject it). ``pg_attribute`` gives the settings columns of the system
  relations (``setconfig``, ``rolconfig``, ...: ``ALTER ROLE/DATABASE ... SET`` values, secrets
  included), which a plan may not read (``FunctionPolicy.columns``). Names are matched as the server
  resolves them: exactly, after pglast has folded unquoted names and decoded ``U&"..."`` escapes; all
  overloads of a name must be allowed.
* **DuckDB** (``duckdb_functions()``): CONSISTENT and CONSISTENT_WITHIN_QUERY scalars and aggregates,
  built-in macros whose body calls only allowed functions (``pg_sleep`` is a macro over ``sleep_ms``),
  and named harmless volatile ones (``random``, ``uuid``, ...); table functions only
  from a short allowlist (``range``, ``generate_series``, ``unnest``, catalog listings), so every file
  reader (``read_csv``, ``glob``, ...) is refused. A user-defined macro is refused: its body is not
  checked.
* **Snowflake**: no catalog the library can read gives volatility, so the rules are by name:
  ``SYSTEM$*``, any function of the ``SNOWFLAKE`` database (``SNOWFLAKE.CORTEX.COMPLETE``, paid model
  calls) and every table function outside a short allowlist (``FLATTEN``, ``GENERATOR``, ...; stage and
  file functions such as ``INFER_SCHEMA`` are refused). Under fakesnow, where DuckDB runs the query,
  DuckDB's verdicts on its own functions are added, so ``read_csv('/etc/passwd')`` is refused too.
* **SQLite**: no policy; the profile's deny list and the engine guard's authorizer apply.

The deny lists in ``dialects/*.toml`` stay a second net, checked first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Iterable, Literal, Mapping

from ..profiles import DialectProfile
from .boundary import SECRET_RELATIONS
from .callscan import function_calls

Position = Literal["scalar", "table", "any"]  # where a call stands: an expression, FROM, or not known

CATALOG_TIMEOUT_S = 10.0  # the one catalog query per database may take this long

# ------------------------------------------------------------------------------------- engine rules

PG_HARMLESS_VOLATILE = frozenset({
    "random", "random_normal", "clock_timestamp", "timeofday", "gen_random_uuid", "uuid_generate_v4",
})
PG_STATE_READERS = frozenset({  # stable or immutable, but they read settings, files or run SQL text
    "current_setting", "pg_show_all_settings", "pg_show_all_file_settings", "pg_config",
    "pg_stat_get_activity", "pg_hba_file_rules", "pg_ident_file_mappings",
    "query_to_xml", "query_to_xmlschema", "query_to_xml_and_xmlschema", "cursor_to_xml", "cursor_to_xmlschema",
    "table_to_xml", "table_to_xmlschema", "table_to_xml_and_xmlschema", "schema_to_xml", "schema_to_xmlschema",
    "schema_to_xml_and_xmlschema", "database_to_xml", "database_to_xmlschema", "database_to_xml_and_xmlschema",
})
# pg_stat_*: statistics and activity (other sessions' query text), an extension's (pg_stat_statements) too
PG_DENIED_PREFIXES = ("pg_ls_", "pg_read_", "pg_stat_", "pg_file_", "lo_", "dblink", "pg_sleep")
# Built-in functions the server marks not parallel-safe that read nothing of another session or the server
# (``age(xid)`` is the one restricted overload of ``age``, whose others are plain date arithmetic).
PG_HARMLESS_SESSION = frozenset({
    "age", "current_schema", "current_schemas", "pg_trigger_depth", "pg_my_temp_schema", "pg_get_viewdef",
    "_pg_index_position",
})
PG_FIRST_NORMAL_OID = 16384  # FirstNormalObjectId: below it, what initdb made (built-in functions and views)

DUCKDB_HARMLESS_VOLATILE = frozenset({"random", "uuid", "uuidv4", "uuidv7", "gen_random_uuid"})
DUCKDB_STATE_READERS = frozenset({"current_setting", "getenv", "current_query"})
DUCKDB_TABLE_FUNCTIONS = frozenset({
    "range", "generate_series", "unnest", "repeat", "json_each", "json_tree", "generate_subscripts",
    "regexp_split_to_table", "duckdb_tables", "duckdb_columns", "duckdb_views", "duckdb_schemas",
    "duckdb_constraints", "duckdb_indexes", "duckdb_types", "duckdb_functions", "duckdb_keywords",
    "pragma_table_info",
})

SNOWFLAKE_DENIED_PREFIXES = ("system$",)
SNOWFLAKE_DENIED_QUALIFIERS = ("snowflake",)  # the SNOWFLAKE database: CORTEX, ACCOUNT_USAGE, ...
SNOWFLAKE_TABLE_FUNCTIONS = frozenset({"flatten", "generator", "split_to_table", "strtok_split_to_table"})

UNKNOWN = "is not a function this database knows"


@dataclass(frozen=True)
class FunctionPolicy:
    """Which functions one database allows; built once per database from its catalog.

    ``verdicts`` maps a function name (lower case where the engine folds case) to ``None`` when it
    may be called in an expression, else to why not. ``table_allowlist`` (when not None) is the
    complete list of table functions allowed in FROM; ``table_functions`` are the names the catalog
    lists as table functions. PostgreSQL's catalog also gives ``relations``, the system relations
    refused as server state (views built on a refused function), ``columns``, the settings columns of
    system relations, by relation, and ``sources``, the functions refused because secret system views
    read their rows from them (kept apart so that a policy read later for other names keeps them).
    ``strict``: a name the catalog does not know is refused when it was written in the statement (it
    would fail anyway), and ignored when it comes from a lexical scan.
    """

    display_name: str
    verdicts: Mapping[str, str | None] = field(default_factory=dict)
    fold_case: bool = True
    strict: bool = False
    denied: frozenset[str] = frozenset()
    denied_prefixes: tuple[str, ...] = ()
    denied_qualifiers: tuple[str, ...] = ()
    table_functions: frozenset[str] = frozenset()
    table_allowlist: frozenset[str] | None = None
    relations: frozenset[str] = frozenset()
    columns: Mapping[str, frozenset[str]] = field(default_factory=dict)
    sources: frozenset[str] = frozenset()

    def refusal(self, name: str, qualifier: str = "", *, position: Position = "scalar",
                written: bool = True) -> str | None:
        """Why calling ``name`` (qualified by ``qualifier``, e.g. ``pg_catalog``) is refused, or None.
        ``written``: the name comes from a parse of the statement (else from a lexical scan of text
        or a plan, where words that are not functions also turn up)."""
        key = name.lower() if self.fold_case else name
        low = name.lower()
        if low in self.denied:
            return "is on the deny list (file, network, extension, session or admin access)"
        if low.startswith(self.denied_prefixes):
            return "reads or changes server files, settings or sessions"
        if qualifier and qualifier.lower().split(".")[0].strip('"') in self.denied_qualifiers:
            return f"belongs to {qualifier.upper()}, whose functions are not allowed"
        if self.table_allowlist is not None:
            table = position == "table" or (position == "any" and key in self.table_functions)
            if table and key not in self.table_allowlist:
                return "is a table function outside the allowlist (" + ", ".join(sorted(self.table_allowlist)) + ")"
            if position == "table" or (key not in self.verdicts and key in self.table_allowlist):
                return None
        if key in self.verdicts:
            return self.verdicts[key]
        return UNKNOWN if (written and self.strict and _is_identifier(key)) else None

    def first_refusal(self, calls: Iterable[tuple[str, str, Position]], *, written: bool) -> tuple[str, str] | None:
        """The first (name, reason) among ``calls`` of (name, qualifier, position) that is refused."""
        for name, qualifier, position in calls:
            if reason := self.refusal(name, qualifier, position=position, written=written):
                return name, reason
        return None


def _is_identifier(name: str) -> bool:
    """Operators (``+``, ``~~``) are never user-defined functions; only names can be unknown."""
    return bool(name) and (name[0].isalpha() or name[0] == "_")


def refusal_message(name: str, reason: str, display_name: str) -> str:
    """The text of a refusal that names the function and says what to do instead."""
    return (f"function {name}() is not allowed on {display_name}: it {reason}. Generated SQL may call only "
            "functions without side effects; rewrite the query without it.")


# -------------------------------------------------------------------------------- from the catalogs

PG_CATALOG = ("SELECT proname, provolatile, proparallel, proretset, oid < {first} FROM pg_catalog.pg_proc "
              "WHERE prokind <> 'p'").format(first=PG_FIRST_NORMAL_OID)
PG_SYSTEM_VIEWS = "SELECT viewname, definition FROM pg_catalog.pg_views WHERE schemaname = 'pg_catalog'"
# text[] columns named *config hold name=value settings: ALTER ROLE/DATABASE/FUNCTION ... SET
PG_SETTINGS_COLUMNS = (
    "SELECT c.relname, a.attname FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_class c ON c.oid = a.attrelid "
    "WHERE c.relnamespace = 'pg_catalog'::regnamespace AND a.attnum > 0 AND NOT a.attisdropped "
    "AND a.atttypid = 'text[]'::regtype AND a.attname LIKE '%config'"
)
PgProc = tuple  # (proname, provolatile[, proparallel, proretset, built_in]) of one pg_proc row
DUCKDB_CATALOG = "SELECT function_name, function_type, stability, internal, macro_definition FROM duckdb_functions()"
DuckDBFunction = tuple  # (function_name, function_type, stability, internal[, macro_definition])


SOURCE = "is what a system view of server state or secrets reads its rows from"


def postgresql_policy(rows: Iterable[PgProc], profile: DialectProfile, views: Iterable[tuple[str, str]] = (),
                      settings: Iterable[tuple[str, str]] = (), sources: Iterable[str] = ()) -> FunctionPolicy:
    """From ``pg_proc`` rows (``PG_CATALOG``): a name is allowed when every overload is. ``views``: the
    (viewname, definition) rows of ``PG_SYSTEM_VIEWS``; ``settings``: the (relation, column) rows of
    ``PG_SETTINGS_COLUMNS``; ``sources``: names already known as secret views' sources (a policy read
    for a few names only, in the engine guard, keeps the database's)."""
    rows = list(rows)
    verdicts: dict[str, str | None] = {}
    for row in rows:
        name = row[0]
        verdict = postgresql_verdict(*row)
        if verdicts.get(name, None) is None:
            verdicts[name] = verdict
    relations, found = _secret_views(views, verdicts, {row[0] for row in rows if len(row) > 4 and row[3] and row[4]})
    refused_sources = frozenset(found) | frozenset(sources)
    for name in refused_sources:
        if verdicts.get(name, None) is None and name in verdicts:
            verdicts[name] = SOURCE
    columns: dict[str, frozenset[str]] = {}
    for relation, column in settings:
        columns[relation] = columns.get(relation, frozenset()) | {column}
    return FunctionPolicy(profile.display_name, MappingProxyType(verdicts), fold_case=False, strict=True,
                          denied=_deny_list(profile), denied_prefixes=PG_DENIED_PREFIXES,
                          relations=frozenset(relations), columns=MappingProxyType(columns), sources=refused_sources)


def postgresql_verdict(name: str, volatility: str, parallel: str = "s", returns_set: bool = False,
                       built_in: bool = False) -> str | None:
    """One ``pg_proc`` row's verdict: None when it may be called."""
    if name in PG_STATE_READERS:
        return "reads server settings, files or other sessions, or runs SQL text"
    if volatility == "v":
        return None if name in PG_HARMLESS_VOLATILE else (
            "is volatile: it can change the server's state outside the read-only transaction")
    if built_in and parallel != "s" and name not in PG_HARMLESS_SESSION:
        return ("reads the session's or the server's state (other sessions, statistics, addresses, transaction "
                "ids): the server marks it not parallel-safe")
    return None


_WORD = re.compile(r"[a-z_][a-z0-9_$]*")  # a name in a view definition as pg_get_viewdef writes it


def _secret_views(views: Iterable[tuple[str, str]], verdicts: Mapping[str, str | None],
                  set_returning: set[str]) -> tuple[set[str], set[str]]:
    """The system views built on a refused function (directly or through another such view), and the
    built-in set-returning functions that these or the fixed secret relations read from and no other
    system view calls. Names in a definition are read as words: a word that names no function or view
    is ignored, and one in a string literal only makes the verdict stricter."""
    words = {view: set(_WORD.findall(definition.lower())) for view, definition in views}
    refused = {name for name, verdict in verdicts.items() if verdict is not None}
    derived: set[str] = set()
    changed = True
    while changed:  # at most one round per level of views over views
        changed = False
        for view, names in words.items():
            if view not in derived and (names & refused or names & derived):
                derived.add(view)
                changed = True
    secret = derived | SECRET_RELATIONS.get("postgresql", frozenset())
    elsewhere = set().union(*(names for view, names in words.items() if view not in secret))
    sources = set().union(*(names for view, names in words.items() if view in secret)) & set_returning
    return derived, sources - refused - elsewhere


def duckdb_verdicts(rows: Iterable[DuckDBFunction]) -> tuple[dict[str, str | None], set[str]]:
    """Verdicts and table-function names from ``duckdb_functions()`` rows of
    (function_name, function_type, stability, internal[, macro_definition]). A built-in macro is judged
    by the calls in its body (``pg_sleep`` calls ``sleep_ms``)."""
    verdicts: dict[str, str | None] = {}
    tables: set[str] = set()
    bodies: dict[str, set[str]] = {}
    for name, kind, stability, internal, *definition in rows:
        name = name.lower()
        if kind == "macro" and internal and definition and definition[0]:
            bodies.setdefault(name, set()).update(call.name.lower() for call in function_calls(definition[0]))
        if kind in ("table", "table_macro"):
            tables.add(name)
            continue
        if kind == "pragma":
            continue
        if name in DUCKDB_STATE_READERS:
            verdict: str | None = "reads settings, the environment or the session"
        elif kind == "macro":
            verdict = None if internal else "is a user-defined macro, whose body is not checked"
        elif stability == "VOLATILE" and name not in DUCKDB_HARMLESS_VOLATILE:
            verdict = "is volatile: it can change state or has side effects"
        else:
            verdict = None
        if verdicts.get(name, None) is None:
            verdicts[name] = verdict
    _judge_macros(verdicts, tables, bodies)
    return verdicts, tables


def _judge_macros(verdicts: dict[str, str | None], tables: set[str], bodies: Mapping[str, set[str]]) -> None:
    """Refuse each built-in macro whose body calls a refused function or a table function outside the
    allowlist, directly or through another macro (one round per level of macros over macros)."""
    changed = True
    while changed:
        changed = False
        for macro, called in bodies.items():
            if verdicts.get(macro) is not None:
                continue
            bad = sorted(name for name in called if verdicts.get(name) is not None
                         or (name in tables and name not in DUCKDB_TABLE_FUNCTIONS))
            if bad:
                verdicts[macro] = f"is a macro over {bad[0]}(), which is not allowed"
                changed = True


def duckdb_policy(rows: Iterable[DuckDBFunction], profile: DialectProfile) -> FunctionPolicy:
    verdicts, tables = duckdb_verdicts(rows)
    return FunctionPolicy(profile.display_name, MappingProxyType(verdicts), strict=True, denied=_deny_list(profile),
                          table_functions=frozenset(tables), table_allowlist=DUCKDB_TABLE_FUNCTIONS)


def snowflake_policy(profile: DialectProfile,
                     duckdb_rows: Iterable[DuckDBFunction] = ()) -> FunctionPolicy:
    """By name; ``duckdb_rows``: the catalog of the DuckDB that runs the queries under fakesnow, whose
    refusals (and table functions) are added. fakesnow's own emulation macros are not judged."""
    rows = list(duckdb_rows)
    verdicts, tables = duckdb_verdicts(row for row in rows if row[3])
    refused = {name: reason for name, reason in verdicts.items() if reason is not None}
    allow = SNOWFLAKE_TABLE_FUNCTIONS | (DUCKDB_TABLE_FUNCTIONS if rows else frozenset())
    return FunctionPolicy(profile.display_name, MappingProxyType(refused), denied=_deny_list(profile),
                          denied_prefixes=SNOWFLAKE_DENIED_PREFIXES, denied_qualifiers=SNOWFLAKE_DENIED_QUALIFIERS,
                          table_functions=frozenset(tables | profile.deny_table_functions), table_allowlist=allow)


def name_policy(profile: DialectProfile) -> FunctionPolicy | None:
    """The rules that need no catalog (deny lists, prefixes, table-function allowlists), for a check
    made without a database's policy; None for SQLite, whose deny list the statement guard applies."""
    if profile.name == "postgresql":
        return FunctionPolicy(profile.display_name, fold_case=False, denied=_deny_list(profile),
                              denied_prefixes=PG_DENIED_PREFIXES)
    if profile.name == "duckdb":
        return FunctionPolicy(profile.display_name, denied=_deny_list(profile), table_allowlist=DUCKDB_TABLE_FUNCTIONS)
    if profile.name == "snowflake":
        return snowflake_policy(profile)
    return None


def _deny_list(profile: DialectProfile) -> frozenset[str]:
    return profile.deny_functions | profile.deny_table_functions


def _is_fakesnow(raw: Any) -> bool:
    return type(raw).__module__.startswith("fakesnow")


def load_policy(profile: DialectProfile, raw: Any, strategy: Any) -> FunctionPolicy | None:
    """The policy of the database behind the DB-API connection ``raw``, read from its catalog with one
    query through the engine guard ``strategy`` (read-only, rolled back); None for SQLite."""
    def fetch(sql: str) -> list[Any]:
        rows: list[Any] = []
        with strategy(raw, sql, profile, CATALOG_TIMEOUT_S) as cursor:
            while batch := cursor.fetchmany(1_000):  # every engine guard's cursor streams with fetchmany
                rows.extend(tuple(row) for row in batch)
        return rows

    if profile.name == "postgresql":
        return postgresql_policy(fetch(PG_CATALOG), profile, fetch(PG_SYSTEM_VIEWS), fetch(PG_SETTINGS_COLUMNS))
    if profile.name == "duckdb":
        return duckdb_policy(fetch(DUCKDB_CATALOG), profile)
    if profile.name == "snowflake":
        return snowflake_policy(profile, _fakesnow_catalog(raw) if _is_fakesnow(raw) else ())
    return None


def _fakesnow_catalog(raw: Any) -> list[Any]:
    """``duckdb_functions()`` of the DuckDB under fakesnow (a fixed read of the catalog, run directly:
    the Snowflake guard would refuse DuckDB's table function)."""
    cursor = raw.cursor()
    try:
        cursor.execute(DUCKDB_CATALOG)
        return [tuple(row) for row in cursor.fetchall()]
    finally:
        cursor.close()
