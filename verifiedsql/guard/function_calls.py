"""The function calls in a statement or in an engine's own view of it, as (name, qualifier, position).

One reader per source, so that each safety layer judges names it found by itself:

* ``postgresql_statement``: PostgreSQL's own parser (pglast), which folds unquoted names and decodes
  ``U&"..."`` escapes exactly as the server does; it also says whether the text is one plain query.
* ``sqlglot_tree``: the statement guard's sqlglot tree (names as written where sqlglot does not know
  the function, else the name its dialect generator writes).
* ``postgresql_plan``: the expressions of an ``EXPLAIN (VERBOSE, FORMAT JSON)`` plan, scanned
  lexically (``callscan``), plus the ``Function Name`` of function scans.
* ``duckdb_tree``: DuckDB's serialized parse tree (``json_serialize_sql``).
"""

from __future__ import annotations

import json
from typing import Any, Iterator

from sqlglot import exp
from sqlglot.errors import SqlglotError

from ..errors import ConfigurationError
from .callscan import function_calls
from .functions import Position
from .jsontree import json_nodes

Call = tuple[str, str, Position]  # (name, qualifier, where the call stands)

# Nodes of PostgreSQL's raw parse tree that make a SELECT more than a read.
_PG_WRITES = {"InsertStmt": "INSERT", "UpdateStmt": "UPDATE", "DeleteStmt": "DELETE", "MergeStmt": "MERGE",
              "intoClause": "SELECT INTO", "lockingClause": "FOR UPDATE/SHARE"}


def postgresql_statement(sql: str) -> tuple[list[Call], str | None] | None:
    """The calls in ``sql`` per PostgreSQL's parser, and what makes it not one plain query (None when it
    is one); None when the parser rejects the text (the server then rejects it too)."""
    try:
        from pglast import parser
    except ImportError as error:  # pragma: no cover - pglast ships with the postgresql extra
        raise ConfigurationError(
            "the PostgreSQL statement guard needs pglast; install verifiedsql[postgresql]."
        ) from error
    try:
        tree = json.loads(parser.parse_sql_json(sql))
    except (parser.ParseError, RecursionError, ValueError):
        return None
    statements = tree.get("stmts", [])
    problem = None
    if len(statements) != 1:
        problem = f"{len(statements)} statements"
    elif "SelectStmt" not in statements[0].get("stmt", {}):
        problem = next(iter(statements[0].get("stmt", {"?": 0}))).removesuffix("Stmt").upper()
    calls: list[Call] = []
    for node in json_nodes(tree):
        for key, construct in _PG_WRITES.items():
            if key in node and problem is None:
                problem = construct
        function = node.get("FuncCall")
        if isinstance(function, dict):
            parts = [part.get("String", {}).get("sval", "") for part in function.get("funcname", [])]
            if parts:
                calls.append((parts[-1], ".".join(parts[:-1]), "scalar"))
    return calls, problem


def _qualifier(node: exp.Expr) -> str:
    """``snowflake.cortex`` for ``SNOWFLAKE.CORTEX.COMPLETE(...)`` (sqlglot puts the call under a Dot)."""
    parent = node.parent
    if isinstance(parent, exp.Dot) and parent.expression is node:
        try:
            return parent.this.sql().replace('"', "")
        except SqlglotError:
            return "?"
    return ""


def sqlglot_tree(tree: exp.Expr, dialect: str) -> Iterator[tuple[Call, bool]]:
    """(call, written) for each function in the tree: ``written`` when the name is the one in the text
    (sqlglot does not know the function), else it is the name sqlglot's generator writes for it."""
    for node in tree.walk():
        if not isinstance(node, exp.Func):
            continue
        position: Position = "table" if isinstance(node.parent, (exp.Table, exp.TableFromRows)) else "scalar"
        if isinstance(node, exp.Anonymous):
            this = node.this
            name = this.name if isinstance(this, exp.Identifier) else str(this)
            yield (name, _qualifier(node), position), True
            continue
        try:
            head = _binary_head(type(node), dialect) if isinstance(node, exp.Binary) else _head(node, dialect)
        except SqlglotError:
            continue
        if head and " " not in head:
            yield (head, _qualifier(node), position), False


def _head(node: exp.Expr, dialect: str) -> str:
    """What the generator writes before the first ``(`` of ``node`` in ``dialect``."""
    return node.sql(dialect=dialect).split("(", 1)[0].strip().strip('"')


_BINARY_HEADS: dict[tuple[str, str], str] = {}


def _binary_head(kind: type[exp.Binary], dialect: str) -> str:
    """``_head`` of a two-operand function (``AND``, ``OR``, ``->``, ``POWER``, ...), written once per kind
    with stand-in operands: its name does not depend on them, and a chain of them (``a OR b OR ...``) nests
    as deep as it is long, where writing each link whole would take time in the square of the length."""
    key = (kind.__qualname__, dialect)
    if key not in _BINARY_HEADS:
        _BINARY_HEADS[key] = _head(kind(this=exp.column("a"), expression=exp.column("b")), dialect)
    return _BINARY_HEADS[key]


def postgresql_plan(plan: Any) -> Iterator[Call]:
    """Call-like names in a JSON plan's expressions (a linear scan), and its function scans' names."""
    for node in json_nodes(plan):
        name = node.get("Function Name")
        if isinstance(name, str):
            yield name, str(node.get("Schema", "")), "any"
        for value in node.values():
            texts = value if isinstance(value, list) else [value]
            for text in texts:
                if isinstance(text, str) and "(" in text:
                    for call in function_calls(text):
                        yield call.name, call.qualifier, "any"


def duckdb_tree(tree: Any) -> Iterator[Call]:
    """Function names in DuckDB's serialized parse tree; table functions are marked as such."""
    tables = {id(node["function"]) for node in json_nodes(tree)
              if node.get("type") == "TABLE_FUNCTION" and isinstance(node.get("function"), dict)}
    for node in json_nodes(tree):
        name = node.get("function_name")
        if isinstance(name, str):
            qualifier = ".".join(part for part in (node.get("catalog"), node.get("schema")) if part)
            yield name, qualifier, "table" if id(node) in tables else "scalar"


def statement_text(sql: str) -> Iterator[Call]:
    """Call-like names in SQL text (Snowflake: backslash escapes in strings, ``//`` comments, ``$$``)."""
    for call in function_calls(sql, backslash_escapes=True, comments=True):
        yield call.name, call.qualifier, "any"
