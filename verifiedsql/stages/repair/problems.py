"""What every repair family shares: a fix (``Option``) and the problem it fixes (``Problem``), the
planner's state and lookups (``PlannerBase``), and small readers of a scope."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.scope import Scope

from ..common.catalog import Catalog, Source
from ..common.catalog import own_walk as _own_walk
from ..common.catalog import sources as _sources

# what reading or rewriting an odd tree can raise: the SQL is then left to the model, never a crash
READ_ERRORS = (SqlglotError, RecursionError, ValueError, KeyError, AttributeError, TypeError, IndexError)

COMPARISONS: tuple[type[exp.Expr], ...] = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE)


@dataclass
class Option:
    description: str
    apply: Callable[[], object]
    anchor: exp.Expr  # the node the fix changes: skipped when an earlier fix has replaced it


@dataclass
class Problem:
    options: list[Option] = field(default_factory=list)


def own_columns(scope: Scope) -> list[exp.Column]:
    """The scope's column references outside its subqueries."""
    own = {id(node) for node in _own_walk(scope.expression) if isinstance(node, exp.Column)}
    return [c for c in scope.columns if id(c) in own]


def has_loose(source: Source, name: str) -> str | None:
    """The column's name in ``source`` in any case."""
    if source.table is not None:
        column = source.table.column(name)
        return column.name if column else None
    if source.outputs is not None:
        return next((o for o in source.outputs if o.lower() == name.lower()), None)
    return None


def column_names(source: Source) -> list[str]:
    if source.table is not None:
        return [c.name for c in source.table.columns]
    return list(source.outputs or ())


def aggregates(node: exp.Expr, select: exp.Expr) -> bool:
    """Whether ``node`` holds an aggregate of ``select`` itself (not of a subquery)."""
    return any(isinstance(agg, exp.AggFunc) for agg in _own_walk(select, node))


def unique_options(options: list[Option]) -> list[Option]:
    seen: set[str] = set()
    kept = []
    for option in options:
        if option.description not in seen:
            seen.add(option.description)
            kept.append(option)
    return kept


def select_aliases(scope: Scope) -> list[str]:
    select = scope.expression
    if not isinstance(select, exp.Select):
        return []
    return [e.alias for e in select.expressions if isinstance(e, exp.Alias)]


def table_aliases(select: exp.Select) -> list[str]:
    return [table.alias_or_name for table in select.find_all(exp.Table)]


class PlannerBase:
    """The planner's state and the lookups every family uses; the families add the problems they find
    (``planner.Planner`` puts them together)."""

    def __init__(self, catalog: Catalog, dialect: str, tree: exp.Expr, error: str) -> None:
        self.catalog = catalog
        self.dialect = dialect
        self.engine = catalog.engine
        self.tree = tree
        self.error = error
        self.joins: dict[tuple[int, str, str], str] = {}  # (select id, from alias, link) -> joined alias
        self.scopes: dict[int, Scope] = {}  # id of a SELECT -> its scope

    def _sources_up(self, scope: Scope) -> Iterator[tuple[Scope, dict[str, Source]]]:
        current: Scope | None = scope
        while current is not None:
            yield current, _sources(current, self.catalog)
            current = current.parent

    def _find_source(self, scope: Scope, qualifier: str) -> Source | None:
        for _, sources in self._sources_up(scope):
            if (source := sources.get(qualifier.lower())) is not None:
                return source
        return None

    def _ident(self, name: str) -> exp.Identifier:
        """An identifier the engine resolves to exactly ``name`` (quoted where case or characters need it)."""
        return self.catalog.ident(name)

    def _label(self, source: Source) -> str:
        return self.catalog.bare(source.table) if source.table is not None else source.alias
