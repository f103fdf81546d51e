"""Function policy: which functions generated SQL may call, decided per engine from its own catalog.

Both safety layers ask the same ``FunctionPolicy`` (the statement guard with the names it parsed, the
engine guards with the names the engine itself reports), and a refusal names the function:

* **PostgreSQL** (``pg_proc``): immutable and stable functions, plus a short named list of harmless
  volatile ones (``random``, ``clock_timestamp``, ``gen_random_uuid``, ...). Every other volatile
  function is refused (replication slots, ``pg_stat_reset``, advisory locks, large objects, ...), and so
  are, by name, stable ones that read server settings or files or run SQL text (``current_setting``,
  ``pg_ls_*``, ``pg_read_*``, ``*_to_xml``). A name ``pg_proc`` does not know is refused too (the
  server would reject it). Names are matched as the server resolves them: exactly, after pglast has
  folded unquoted names and decoded ``U&"..."`` escapes; all overloads of a name must be allowed.
* **DuckDB** (``duckdb_functions()``): CONSISTENT and CONSISTENT_WITHIN_QUERY scalars and aggregates,
  built-in macros, and named harmless volatile ones (``random``, ``uuid``, ...); table functions only
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

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Iterable, Literal, Mapping

from .profiles import DialectProfile

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
PG_DENIED_PREFIXES = ("pg_ls_", "pg_read_", "pg_stat_file", "pg_file_", "lo_", "dblink", "pg_sleep")

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
    lists as table functions. ``strict``: a name the catalog does not know is refused when it was
    written in the statement (it would fail anyway), and ignored when it comes from a lexical scan.
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

PG_CATALOG = "SELECT proname, provolatile FROM pg_catalog.pg_proc WHERE prokind <> 'p'"
DUCKDB_CATALOG = "SELECT function_name, function_type, stability, internal FROM duckdb_functions()"


def postgresql_policy(rows: Iterable[tuple[str, str]], profile: DialectProfile) -> FunctionPolicy:
    """From ``pg_proc`` rows of (proname, provolatile): a name is allowed when every overload is."""
    verdicts: dict[str, str | None] = {}
    for name, volatility in rows:
        verdict = postgresql_verdict(name, volatility)
        if verdicts.get(name, None) is None:
            verdicts[name] = verdict
    return FunctionPolicy(profile.display_name, MappingProxyType(verdicts), fold_case=False, strict=True,
                          denied=_deny_list(profile), denied_prefixes=PG_DENIED_PREFIXES)


def postgresql_verdict(name: str, volatility: str) -> str | None:
    if name in PG_STATE_READERS:
        return "reads server settings, files or other sessions, or runs SQL text"
    if volatility == "v" and name not in PG_HARMLESS_VOLATILE:
        return "is volatile: it can change the server's state outside the read-only transaction"
    return None


def duckdb_verdicts(rows: Iterable[tuple[str, str, str | None, bool]]) -> tuple[dict[str, str | None], set[str]]:
    """Verdicts and table-function names from ``duckdb_functions()`` rows of
    (function_name, function_type, stability, internal)."""
    verdicts: dict[str, str | None] = {}
    tables: set[str] = set()
    for name, kind, stability, internal in rows:
        name = name.lower()
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
    return verdicts, tables


def duckdb_policy(rows: Iterable[tuple[str, str, str | None, bool]], profile: DialectProfile) -> FunctionPolicy:
    verdicts, tables = duckdb_verdicts(rows)
    return FunctionPolicy(profile.display_name, MappingProxyType(verdicts), strict=True, denied=_deny_list(profile),
                          table_functions=frozenset(tables), table_allowlist=DUCKDB_TABLE_FUNCTIONS)


def snowflake_policy(profile: DialectProfile,
                     duckdb_rows: Iterable[tuple[str, str, str | None, bool]] = ()) -> FunctionPolicy:
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
        return postgresql_policy(fetch(PG_CATALOG), profile)
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
