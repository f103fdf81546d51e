"""Proposals and their runs: the repaired SQLs of a failing candidate, most likely first, and the loop that
runs them until one succeeds."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlglot import exp
from sqlglot.errors import ErrorLevel, SqlglotError

from ...db.schema import Schema
from ..common.catalog import Catalog
from .planner import plan
from .problems import COMPARISONS, READ_ERRORS
from .requote import requote

if TYPE_CHECKING:
    from ..generate import Execution

MAX_PROPOSALS = 4  # repaired SQLs tried per round
MAX_ROUNDS = 2  # a repair that fails with a new error is repaired once more
MAX_RUNS = 6  # queries run for one failing candidate, all rounds together
# longer SQL is left to the model: sqlglot's scopes take time in the square of a long OR chain's length
MAX_REPAIR_CHARS = 20_000


@dataclass(frozen=True)
class Proposal:
    """One repaired SQL and what changed, in words."""

    sql: str
    fixes: tuple[str, ...]


@dataclass(frozen=True)
class Repaired:
    """The repair that ran: its SQL, every change from the failing SQL, and its execution."""

    sql: str
    fixes: tuple[str, ...]
    execution: Execution


def repair_failure(schema: Schema, dialect: str, engine: str, sql: str, error: str,
                   run: Callable[[str], Execution], expired: Callable[[], bool] = lambda: False) -> Repaired | None:
    """Try the repairs of ``sql`` (which failed with ``error``) with ``run`` until one runs; None when none
    does. A repair that fails with another error is repaired once more (``MAX_ROUNDS``); at most
    ``MAX_RUNS`` queries are run in all. ``dialect``: sqlglot's name; ``engine``: the profile's name.
    ``expired``: whether the question's time is gone, asked before each round of proposals; SQL longer
    than ``MAX_REPAIR_CHARS`` is not repaired."""
    if len(sql) > MAX_REPAIR_CHARS or expired():
        return None
    tried = {sql}
    current, current_error = sql, error
    done: tuple[str, ...] = ()
    runs = 0
    for _ in range(MAX_ROUNDS):
        if expired():
            return None
        progress: tuple[Proposal, str] | None = None
        for proposal in proposals(schema, dialect, engine, current, current_error):
            if proposal.sql in tried or runs >= MAX_RUNS:
                continue
            tried.add(proposal.sql)
            runs += 1
            execution = run(proposal.sql)
            if execution.status == "ok":
                return Repaired(proposal.sql, done + proposal.fixes, execution)
            if execution.status == "timeout":
                return None  # a repair that runs too long, or the question's time is gone: leave it to the model
            if progress is None and execution.status == "error" and execution.error != current_error:
                progress = (proposal, execution.error or "")
        if progress is None:
            return None
        current, current_error, done = progress[0].sql, progress[1], done + progress[0].fixes
    return None


def proposals(schema: Schema, dialect: str, engine: str, sql: str, error: str = "") -> list[Proposal]:
    """The repaired SQLs for ``sql``, most likely first (at most ``MAX_PROPOSALS``): all first choices
    together, then each problem's second choice in turn. Schema names left bare where they need quotes are
    quoted first, and the other repairs start from the quoted SQL. Empty when the SQL does not parse (after
    quoting) or nothing applies."""
    catalog = Catalog(schema, engine)
    quoted = requote(catalog, dialect, sql)
    if quoted is None:
        return _planned(catalog, dialect, sql, error)
    # bare names that need quotes: quoted first, then the other repairs of the quoted SQL, which now parses
    base, quotes = quoted
    found = [Proposal(base, quotes), *(Proposal(p.sql, quotes + p.fixes) for p in _planned(catalog, dialect, base,
                                                                                            error))]
    return found[:MAX_PROPOSALS]


def _planned(catalog: Catalog, dialect: str, sql: str, error: str) -> list[Proposal]:
    """``proposals`` from the planner's repairs of ``sql`` as written."""
    first = plan(catalog, dialect, sql, error)
    if first is None or not first[1]:
        return []
    choices: list[dict[int, int]] = [{}]
    choices += [{index: 1} for index, problem in enumerate(first[1]) if len(problem.options) > 1]
    found: list[Proposal] = []
    for choice in choices:
        planned = first if not choice else plan(catalog, dialect, sql, error)
        if planned is None:
            continue
        tree, problems = planned
        fixes = []
        try:
            for index, problem in enumerate(problems):
                option = problem.options[min(choice.get(index, 0), len(problem.options) - 1)]
                if _attached(option.anchor, tree):  # an earlier fix may have replaced this node already
                    option.apply()
                    fixes.append(option.description)
            repaired = "" if _degenerate(tree) else _render(tree, dialect)
        except READ_ERRORS:
            continue
        if fixes and repaired and repaired != sql and all(p.sql != repaired for p in found):
            found.append(Proposal(repaired, tuple(fixes)))
        if len(found) >= MAX_PROPOSALS:
            break
    return found


def _degenerate(tree: exp.Expr) -> bool:
    """Whether the fixes made a comparison of a column with itself, a difference or a quotient of a column and
    itself (``t1.created_on - t1.created_on``, 0 on every row), or a join condition that no longer names the
    table joined: such a repair runs, but answers another question."""
    for node in tree.find_all(*COMPARISONS, exp.Sub, exp.Div):
        left, right = node.this, node.expression
        if isinstance(left, exp.Column) and isinstance(right, exp.Column) \
                and left.sql().lower() == right.sql().lower():
            return True
    for join in tree.find_all(exp.Join):
        on = join.args.get("on")
        if on is None or not isinstance(join.this, exp.Table):
            continue
        qualifiers = {c.table.lower() for c in on.find_all(exp.Column) if c.table}
        if qualifiers and join.this.alias_or_name.lower() not in qualifiers \
                and not any(c.table == "" for c in on.find_all(exp.Column)):
            return True
    return False


def _attached(node: exp.Expr, tree: exp.Expr) -> bool:
    while node.parent is not None:
        node = node.parent
    return node is tree


def _render(tree: exp.Expr, dialect: str) -> str:
    """The repaired SQL in ``dialect``; a construct the dialect lacks is written as sqlglot can, without a warning
    on the user's stderr (the engine then refuses it)."""
    try:
        return tree.sql(dialect=dialect, unsupported_level=ErrorLevel.IGNORE)
    except SqlglotError:
        return ""
