"""Columns: an unknown or ambiguous column resolved against the tables in scope (a qualifier moved, a key,
a near miss, a join, or the one table that has every column the query names)."""

from __future__ import annotations

from sqlglot import exp
from sqlglot.optimizer.scope import Scope

from ..common.catalog import Source
from ..common.catalog import has as _has
from .identifiers import closest_name
from .joins import JoinRepairs
from .problems import COMPARISONS, Option, Problem, column_names, has_loose, own_columns, select_aliases, unique_options


class ColumnRepairs(JoinRepairs):
    """Unknown and ambiguous columns."""

    def _column_problem(self, scope: Scope, sources: dict[str, Source], columns: list[exp.Column]) -> Problem | None:
        column = columns[0]
        ident = column.this
        assert isinstance(ident, exp.Identifier)
        if column.table:
            source = self._find_source(scope, column.table)
            if source is not None and _has(self.catalog, source, ident) is not False:
                return None
            return Problem(self._unknown_options(scope, sources, columns, source))
        if ident.name.lower() in {a.lower() for a in select_aliases(scope)}:
            return None
        holders = [s for s in sources.values() if _has(self.catalog, s, ident)]
        if len(holders) == 1:
            return None
        if len(holders) > 1:
            return Problem(self._ambiguous_options(scope, sources, columns, holders))
        if any(not s.known for s in sources.values()):
            return None
        for outer, outer_sources in self._sources_up(scope):
            if outer is not scope and any(_has(self.catalog, s, ident) is not False for s in outer_sources.values()):
                return None  # a correlated reference to an enclosing query
        return Problem(self._unknown_options(scope, sources, columns, None))

    def _unknown_options(self, scope: Scope, sources: dict[str, Source], columns: list[exp.Column],
                         source: Source | None) -> list[Option]:
        column = columns[0]
        name = column.name
        options: list[Option] = []
        # case and quoting in the table named
        if source is not None and (loose := has_loose(source, name)) is not None:
            options.append(self._rename(columns, source, loose, "the column's exact name"))
        # the key that a foreign key (or the key's naming) maps this name onto
        for candidate in [source] if source is not None else list(sources.values()):
            if candidate.table is not None and (key := self._key_for(candidate.table, name)) is not None:
                options.append(self._rename(columns, candidate, key[0], key[1]))
                break
        # the qualifier moved to the one other table in scope that has the column
        holders = [(s, hit) for s in sources.values() if s is not source and (hit := has_loose(s, name))]
        if len(holders) == 1 and not self._self_comparison(columns, holders[0][0].alias, holders[0][1]):
            options.append(self._rename(columns, holders[0][0], holders[0][1],
                                        f"column of {self._label(holders[0][0])}"))
        # a near miss within the tables in scope
        if (near := self._near_in_scope(source, list(sources.values()), name)) is not None \
                and not self._self_comparison(columns, near[0].alias, near[1]):
            options.append(self._rename(columns, near[0], near[1], f"closest column of {self._label(near[0])}"))
        # a table outside the scope: joined through a many-to-one key, or read instead of the only table
        select = scope.expression
        if isinstance(select, exp.Select):
            base = [s for s in sources.values() if s.table is not None and s.node is not None]
            if source is not None and source in base:
                base = [source]
            if (option := self._join_option(select, base, columns)) is not None:
                options.append(option)
            if (option := self._replace_option(scope, sources, column)) is not None:
                options.append(option)
            if (option := self._join_option(select, base, columns, many=True)) is not None:
                options.append(option)
        return unique_options(options)

    def _near_in_scope(self, source: Source | None, sources: list[Source], name: str) -> tuple[Source, str] | None:
        if source is not None and (hit := closest_name(name, column_names(source))) is not None:
            return source, hit
        pairs = [(s, hit) for s in sources if (hit := closest_name(name, column_names(s))) is not None]
        return pairs[0] if len(pairs) == 1 else None

    def _replace_option(self, scope: Scope, sources: dict[str, Source], column: exp.Column) -> Option | None:
        """With one table read, the one other table that has every column the query names from it."""
        if len(sources) != 1:
            return None
        source = next(iter(sources.values()))
        node = source.node
        if source.table is None or node is None:
            return None
        names = {c.name.lower() for c in own_columns(scope) if isinstance(c.this, exp.Identifier)
                 and (not c.table or c.table.lower() == source.alias.lower())}
        names -= {a.lower() for a in select_aliases(scope)}
        fits = [t for t in self.catalog.schema.tables
                if t is not source.table and all(t.column(n) is not None for n in names)]
        if len(fits) != 1:
            return None
        old, new = self.catalog.bare(source.table), self.catalog.bare(fits[0])

        def apply() -> None:
            if node.args.get("alias") is None:
                node.set("alias", exp.TableAlias(this=node.this.copy()))  # the old name, quoted as written
            node.set("this", self._ident(new))

        return Option(f"FROM {old} -> FROM {new} (the table with every column the query names)", apply, node)

    def _ambiguous_options(self, scope: Scope, sources: dict[str, Source], columns: list[exp.Column],
                           holders: list[Source]) -> list[Option]:
        """An unqualified column that several tables have: the first of those (FROM order) a join equality
        makes equal to another, else the one whose single-column primary key it is."""
        name = columns[0].name
        aliases = {h.alias.lower() for h in holders}
        equal: set[str] = set()
        for eq in scope.expression.find_all(exp.EQ):
            left, right = eq.this, eq.expression
            if isinstance(left, exp.Column) and isinstance(right, exp.Column) \
                    and left.name.lower() == name.lower() == right.name.lower() \
                    and left.table.lower() in aliases and right.table.lower() in aliases \
                    and left.table.lower() != right.table.lower():
                equal |= {left.table.lower(), right.table.lower()}
        chosen = next((s for s in sources.values() if s in holders and s.alias.lower() in equal), None)
        why = "equal to the others by the join"
        if chosen is None:
            keyed = [s for s in holders if s.table is not None and len(s.table.primary_key) == 1
                     and s.table.primary_key[0].lower() == name.lower()]
            if len(keyed) != 1:
                return []
            chosen, why = keyed[0], f"the primary key of {self._label(keyed[0])}"
        return [self._rename(columns, chosen, has_loose(chosen, name) or name, why)]

    @staticmethod
    def _self_comparison(columns: list[exp.Column], alias: str, name: str) -> bool:
        """Whether moving ``columns`` to ``alias.name`` would compare a column with itself."""
        for column in columns:
            parent = column.parent
            if not isinstance(parent, COMPARISONS):
                continue
            other = parent.expression if parent.this is column else parent.this
            if isinstance(other, exp.Column) and other.table.lower() == alias.lower() \
                    and other.name.lower() == name.lower():
                return True
        return False

    def _rename(self, columns: list[exp.Column], source: Source, name: str, why: str) -> Option:
        """Every occurrence of the column becomes ``source.name``."""
        written = columns[0].sql(dialect=self.dialect)
        new = exp.column(self._ident(name), table=source.qualifier()).sql(dialect=self.dialect)

        def apply() -> None:
            for column in columns:
                column.set("this", self._ident(name))
                column.set("table", source.qualifier())

        return Option(f"{written} -> {new} ({why})", apply, columns[0])

