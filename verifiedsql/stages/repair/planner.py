"""The planner: one parsed SQL, its problems found by every family in turn, each with its fixes."""

from __future__ import annotations

import sqlglot
from sqlglot import exp
from sqlglot.optimizer.scope import traverse_scope

from ..common.catalog import Catalog
from ..common.catalog import sources as _sources
from .clauses import UNGROUPED, ClauseRepairs
from .columns import ColumnRepairs
from .date_math import DateMathRepairs, is_day_unit_argument
from .dialect import FunctionRepairs
from .identifiers import TableRepairs
from .problems import READ_ERRORS, Problem, own_columns
from .types import TypeRepairs


def plan(catalog: Catalog, dialect: str, sql: str, error: str) -> tuple[exp.Expr, list[Problem]] | None:
    """A fresh parse of ``sql`` and its problems, each with its fixes (not applied yet); None when the SQL
    cannot be read."""
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
        if tree is None:
            return None
        problems = Planner(catalog, dialect, tree, error).problems()
    except READ_ERRORS:
        return None
    return tree, [p for p in problems if p.options]


class Planner(ColumnRepairs, TableRepairs, TypeRepairs, DateMathRepairs, FunctionRepairs, ClauseRepairs):
    """Finds the problems of one parsed SQL and the ways to fix each. Fixes are applied later, in the
    order found: tables, columns, types, date arithmetic, functions, then clauses; each builds its new nodes when
    applied, so it keeps what the fixes before it changed."""

    def problems(self) -> list[Problem]:
        scopes = traverse_scope(self.tree)
        self.scopes = {id(scope.expression): scope for scope in scopes}
        found = self._unknown_tables()
        for scope in scopes:
            sources = _sources(scope, self.catalog)
            groups: dict[tuple[str, str], list[exp.Column]] = {}
            for column in own_columns(scope):
                if isinstance(column.this, exp.Identifier) and not is_day_unit_argument(column):
                    groups.setdefault((column.table.lower(), column.name.lower()), []).append(column)
            for columns in groups.values():
                if (problem := self._column_problem(scope, sources, columns)) is not None:
                    found.append(problem)
        for scope in scopes:
            found += self._type_problems(scope)
        found += self._date_math_problems()
        found += self._function_problems()
        for scope in scopes:
            if (option := self._aggregate_in_where(scope)) is not None:
                found.append(Problem([option]))
        if UNGROUPED.search(self.error):
            found += [Problem([option]) for scope in scopes if (option := self._ungrouped(scope)) is not None]
        return found
