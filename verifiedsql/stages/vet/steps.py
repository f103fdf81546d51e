"""What one pandas step of an execution trace does, read from its syntax tree, and the checks a step must
pass (VET section 3.3-3.4): it stays inside the candidate column set, and its output is plausible for
its kind: a filter never adds rows, an aggregation reduces them, and no filter leaves nothing."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

StepKind = Literal["aggregate", "join", "filter", "transform"]

AGGREGATIONS = frozenset({
    "groupby", "agg", "aggregate", "sum", "count", "mean", "median", "max", "min", "nunique", "size",
    "value_counts", "idxmax", "idxmin", "pivot_table", "std", "var", "prod", "mode", "any", "all",
})
JOINS = frozenset({"merge", "join", "concat"})
FILTERS = frozenset({"query", "head", "tail", "nlargest", "nsmallest", "drop_duplicates", "dropna",
                     "unique", "isin", "between", "contains", "startswith", "endswith"})
COLUMN_KEYWORDS = frozenset({"on", "left_on", "right_on", "by", "columns", "subset", "column", "values",
                             "index", "usecols"})
_MASK_NODES = (ast.Compare, ast.BoolOp, ast.UnaryOp)
# What Python's parser raises besides SyntaxError on hostile code: null bytes (ValueError) and nesting
# too deep for its recursion (RecursionError, MemoryError).
_UNREADABLE = (SyntaxError, ValueError, RecursionError, MemoryError)


def _parse(code: str) -> ast.Module:
    """``ast.parse``; code Python cannot read raises ``SyntaxError`` whatever the reason."""
    try:
        return ast.parse(code)
    except SyntaxError:
        raise
    except _UNREADABLE as error:
        reason = f"{type(error).__name__}: nested too deeply or not text"
        raise SyntaxError(f"the code cannot be read ({reason})") from error


@dataclass(frozen=True)
class StepShape:
    """The step's kind, the names it reads (tables, earlier variables, ``result``) and the string literals
    it uses as column names (subscripts and column keywords)."""

    kind: StepKind
    reads: frozenset[str]
    column_names: frozenset[str]
    calls_len: bool


def _called(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Attribute):
                names.add(node.func.attr)
            elif isinstance(node.func, ast.Name):
                names.add(node.func.id)
    return names


def _masks(tree: ast.AST) -> bool:
    """A boolean mask in a subscript: ``df[df.x > 3]``, ``df.loc[(a) & (b)]``, ``df[~m]``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript):
            inner = node.slice.elts[0] if isinstance(node.slice, ast.Tuple) and node.slice.elts else node.slice
            if isinstance(inner, _MASK_NODES) or (isinstance(inner, ast.BinOp)
                                                   and isinstance(inner.op, (ast.BitAnd, ast.BitOr))):
                return True
    return False


def _strings(node: ast.AST | None) -> Iterable[str]:
    if node is None:
        return
    for child in ast.walk(node):
        if isinstance(child, ast.Constant) and isinstance(child.value, str):
            yield child.value


def _column_literals(tree: ast.AST) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript):
            found.update(_strings(node.slice))
        elif isinstance(node, ast.keyword) and node.arg in COLUMN_KEYWORDS:
            found.update(_strings(node.value))
    return found


def _reads_before_writes(tree: ast.Module) -> set[str]:
    """Names the step loads that it has not assigned itself before (statement by statement)."""
    assigned: set[str] = set()
    reads: set[str] = set()
    for statement in tree.body:
        loads = {n.id for n in ast.walk(statement) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        reads |= loads - assigned
        assigned |= {n.id for n in ast.walk(statement) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return reads


def _is_print(statement: ast.stmt) -> bool:
    return (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)
            and isinstance(statement.value.func, ast.Name) and statement.value.func.id == "print")


def _assigns_result(statement: ast.stmt) -> bool:
    return any(isinstance(n, ast.Name) and n.id == "result" and isinstance(n.ctx, ast.Store)
               for n in ast.walk(statement))


def with_result(code: str) -> str:
    """The step with top-level ``print(...)`` calls dropped and its output named ``result``: small models
    often print their answer or leave it in a variable. When no top-level statement assigns ``result``,
    the last bare expression, the last printed value or the last assigned name becomes it. Code that does
    not parse, or has nothing to name, is returned unchanged."""
    try:
        tree = _parse(code)
    except SyntaxError:
        return code
    body: list[ast.stmt] = []
    printed: ast.expr | None = None
    for statement in tree.body:
        if _is_print(statement):
            call = statement.value  # type: ignore[attr-defined]
            printed = call.args[0] if len(call.args) == 1 and not call.keywords else printed
            continue
        body.append(statement)
    if not any(_assigns_result(statement) for statement in body):
        last = body[-1] if body else None
        if isinstance(last, ast.Expr):
            body[-1] = ast.Assign(targets=[ast.Name("result", ast.Store())], value=last.value)
        elif printed is not None:
            body.append(ast.Assign(targets=[ast.Name("result", ast.Store())], value=printed))
        elif isinstance(last, ast.Assign) and len(last.targets) == 1 and isinstance(last.targets[0], ast.Name):
            body.append(ast.Assign(targets=[ast.Name("result", ast.Store())], value=ast.Name(last.targets[0].id)))
    if not body:
        return code
    tree.body = body
    try:
        return ast.unparse(ast.fix_missing_locations(tree))
    except _UNREADABLE:
        return code


def step_shape(code: str) -> StepShape:
    """The shape of one step; ``SyntaxError`` (also for code nested too deeply to read) propagates: the step
    is repaired like any failure."""
    tree = _parse(code)
    called = _called(tree)
    if called & AGGREGATIONS or "len" in called:
        kind: StepKind = "aggregate"
    elif called & JOINS:
        kind = "join"
    elif called & FILTERS or _masks(tree):
        kind = "filter"
    else:
        kind = "transform"
    return StepShape(kind, frozenset(_reads_before_writes(tree)), frozenset(_column_literals(tree)), "len" in called)


def outside_columns(shape: StepShape, allowed: Iterable[str], schema_columns: Iterable[str]) -> list[str]:
    """Column names the step uses that belong to the schema but not to the candidate column set (compared
    without case). Names that are neither (columns the trace computed itself) are allowed."""
    allowed_lower = {name.lower() for name in allowed}
    known_lower = {name.lower() for name in schema_columns}
    return sorted(name for name in shape.column_names
                  if name.lower() in known_lower and name.lower() not in allowed_lower)


def outside_tables(shape: StepShape, loaded: Iterable[str], schema_tables: Iterable[str]) -> list[str]:
    """Schema tables the step reads by name that were not loaded (they are outside the candidate set)."""
    loaded_set = set(loaded)
    return sorted(name for name in shape.reads if name in set(schema_tables) and name not in loaded_set)


def rows_in(shape: StepShape, previous_rows: int | None, table_rows: Mapping[str, int]) -> int | None:
    """The size of the step's input state: the largest of the frames it reads that have a known size (the
    previous step's ``result`` and the tables), None when it reads none of them."""
    sizes = [table_rows[name] for name in shape.reads if name in table_rows]
    if "result" in shape.reads and previous_rows is not None:
        sizes.append(previous_rows)
    return max(sizes) if sizes else None


def sanity_problem(shape: StepShape, before: int | None, after: int) -> str | None:
    """Why a step's output is implausible for its kind, or None. ``before`` is ``rows_in``."""
    if shape.kind == "filter":
        if before is not None and after > before:
            return f"a filter step must not add rows, but it went from {before} to {after} rows"
        if after == 0:
            return ("the filter left no rows: check the stored values (look at the column's distinct values) "
                    "and the condition")
    if shape.kind == "aggregate" and before is not None and before > 1 and after >= before:
        return (f"an aggregation must reduce the rows, but it went from {before} to {after} rows: group by a "
                "column with repeated values, or aggregate the whole frame")
    return None
