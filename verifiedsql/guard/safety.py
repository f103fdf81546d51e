"""The statement guard: the first of the two safety layers, applied to every generated statement.

It parses the SQL with sqlglot in the engine's dialect and accepts exactly one query (SELECT, WITH,
VALUES or a set operation) with no data-modifying node anywhere in its tree and no function or table
function on the dialect's deny list. Every called function must then pass the database's function
policy (``functions``: an allowlist from the engine's own catalog). On PostgreSQL the text is also read
by PostgreSQL's own parser (pglast), which must see one plain query and resolves quoted and ``U&``
names exactly as the server does.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from ..errors import UnparseableSQLError, UnsafeSQLError
from ..profiles import DialectProfile
from . import function_calls as calls
from .contain import sql_nesting_problem, sql_size_problem
from .functions import FunctionPolicy, name_policy, refusal_message

QUERY_ROOTS = (exp.Select, exp.Union, exp.Intersect, exp.Except, exp.Values, exp.Subquery)

# Any of these anywhere in the tree makes the statement more than a read.
FORBIDDEN_NODES: tuple[type[exp.Expr], ...] = tuple(
    getattr(exp, name)
    for name in (
        "Insert", "Update", "Delete", "Merge", "Create", "Drop", "Alter", "AlterColumn", "TruncateTable",
        "Command", "Copy", "Pragma", "Attach", "Detach", "Set", "SetItem", "Use", "Transaction",
        "Commit", "Rollback", "Grant", "Revoke", "LoadData", "Into", "Lock", "Install", "Describe",
        "Analyze", "Refresh", "Cache", "Uncache", "Export", "Put", "Get", "Call", "Execute",
    )
    if hasattr(exp, name)
)


def _describe(node: exp.Expr) -> str:
    try:
        sql = node.sql()
    except SqlglotError:
        sql = ""
    if not sql or sql.endswith("()"):
        sql = f"{_construct(node)} ..."
    return sql if len(sql) <= 60 else sql[:57] + "..."


def _construct(node: exp.Expr) -> str:
    """The statement keyword a refusal names: the command word for opaque commands (CALL, LOAD)."""
    if isinstance(node, exp.Command):
        return str(node.this).upper()
    return type(node).__name__.upper()


UNPARSEABLE = "the statement guard could not parse"  # how the refusal of SQL it cannot read begins


def _function_name(node: exp.Expr) -> str | None:
    if isinstance(node, exp.Anonymous):  # unquoted, so that "pg_sleep"(5) is still pg_sleep
        this = node.this
        return (this.name if isinstance(this, exp.Identifier) else str(this)).lower()
    if isinstance(node, exp.Func):
        return node.sql_name().lower()
    return None


def parse_one_query(sql: str, profile: DialectProfile) -> exp.Expression:
    """Parse ``sql`` as exactly one statement in the profile's dialect, or raise."""
    if problem := sql_size_problem(sql):
        raise UnparseableSQLError(f"{problem}.", construct="overlong SQL")
    if problem := sql_nesting_problem(sql):
        raise UnparseableSQLError(f"{problem}.", construct="deeply nested SQL")
    try:
        statements = [s for s in sqlglot.parse(sql, read=profile.sqlglot_dialect) if s is not None]
    except (SqlglotError, RecursionError) as error:
        raise UnparseableSQLError(
            f"{UNPARSEABLE} this {profile.display_name} SQL ({error}); "
            "only statements it can check are run.",
            construct="unparseable SQL",
        ) from error
    if len(statements) != 1:
        raise UnsafeSQLError(
            f"expected exactly one statement, got {len(statements)}; send one query at a time.",
            construct=f"{len(statements)} statements",
        )
    statement = statements[0]
    if not isinstance(statement, exp.Expression):  # sqlglot's parser returns Expressions; a type guard
        raise UnparseableSQLError("the statement guard could not read this SQL as a statement.",
                                  construct="unparseable SQL")
    return statement


def check_query(sql: str, profile: DialectProfile, functions: FunctionPolicy | None = None) -> exp.Expression:
    """Return the parsed query if it is a pure read for this dialect; raise ``UnsafeSQLError`` otherwise.

    ``functions``: the database's function policy (``Database.functions``); without one, only the rules
    that need no catalog apply."""
    tree = parse_one_query(sql, profile)
    if not isinstance(tree, QUERY_ROOTS):
        raise UnsafeSQLError(
            f"only queries are run; this is a {_construct(tree)} statement ({_describe(tree)}).",
            construct=_construct(tree),
        )
    for node in tree.walk():
        if isinstance(node, FORBIDDEN_NODES):
            raise UnsafeSQLError(
                f"the query contains a {_construct(node)} ({_describe(node)}); generated SQL may only read.",
                construct=_construct(node),
            )
        name = _function_name(node)
        if name and (name in profile.deny_functions or name in profile.deny_table_functions):
            raise UnsafeSQLError(
                f"function {name}() is not allowed on {profile.display_name} "
                "(file, network, extension, session or admin access).",
                construct=f"{name}()",
            )
        if isinstance(node, exp.Table) and isinstance(node.this, exp.Func):
            table_function = _function_name(node.this)
            if table_function in profile.deny_table_functions:
                raise UnsafeSQLError(
                    f"table function {table_function}() is not allowed on {profile.display_name}.",
                    construct=f"{table_function}()",
                )
        if isinstance(node, exp.Table) and _looks_like_path(node):
            raise UnsafeSQLError(
                f"reading from a file or URL ({_describe(node)}) is not allowed.",
                construct="file table",
            )
    _check_calls(sql, tree, profile, functions or name_policy(profile))
    return tree


def _check_calls(sql: str, tree: exp.Expr, profile: DialectProfile, functions: FunctionPolicy | None) -> None:
    """Every called function against the policy. PostgreSQL's own parser (pglast) reads PostgreSQL
    text, so quoting and ``U&`` escapes resolve as on the server; it must also see one plain query."""
    if functions is None:  # SQLite: the deny list above is the statement guard's function check
        return
    if profile.name == "postgresql":
        found = calls.postgresql_statement(sql)
        if found is None:  # PostgreSQL's grammar rejects it: the server will say why
            return
        pg_calls, problem = found
        if problem:
            raise UnsafeSQLError(
                f"PostgreSQL's parser reads this as {problem}, not one query; generated SQL may only read.",
                construct=problem,
            )
        judged = [(call, True) for call in pg_calls]
    else:
        judged = list(calls.sqlglot_tree(tree, profile.sqlglot_dialect))
    for (name, qualifier, position), written in judged:
        if reason := functions.refusal(name, qualifier, position=position, written=written):
            raise UnsafeSQLError(refusal_message(name, reason, profile.display_name), construct=f"{name}()")


FILE_SUFFIXES = (
    ".csv", ".tsv", ".txt", ".parquet", ".json", ".jsonl", ".ndjson", ".gz", ".zst", ".xlsx", ".db",
    ".sqlite", ".duckdb", ".arrow", ".avro",
)


def is_file_path(name: str) -> bool:
    """True for a table name that an engine would read as a file or URL (``/etc/passwd``, ``x.csv``)."""
    return any(ch in name for ch in "/\\:") or name.lower().endswith(FILE_SUFFIXES)


def _looks_like_path(table: exp.Table) -> bool:
    """DuckDB reads ``FROM 'file.csv'`` or ``FROM "/etc/passwd"`` as a file (a replacement scan)."""
    name = table.name
    if not name:
        return isinstance(table.this, exp.Literal) and table.this.is_string
    return is_file_path(name)


def outermost_orders(tree: exp.Expr) -> bool:
    """True when the outermost query sorts its rows, so row order is part of its answer."""
    return tree.args.get("order") is not None
