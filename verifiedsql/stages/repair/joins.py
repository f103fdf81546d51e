"""Keys and joins: the key a name stands for, and a column reached through a key by joining its table."""

from __future__ import annotations

from sqlglot import exp
from sqlglot.optimizer.scope import traverse_scope

from ...db.schema import Table
from ..common.catalog import Source
from ..common.catalog import has as _has
from ..common.catalog import sources as _sources
from .identifiers import closest_name, singular
from .problems import Option, PlannerBase, own_columns, select_aliases, table_aliases


class JoinRepairs(PlannerBase):
    """Keys that a name maps onto, and joins that bring in the table holding a column."""

    def _key_for(self, table: Table, name: str) -> tuple[str, str] | None:
        """The key column of ``table`` that ``name`` stands for, and why: a foreign key elsewhere whose
        column is ``name`` and that references ``table``, or the ``<table>_id``/``id`` naming of its
        single-column primary key."""
        for owner, fk in self.catalog.references:
            if owner is not table and fk.columns[0].lower() == name.lower() \
                    and self.catalog.referenced(owner, fk) is table and table.column(fk.referred_columns[0]):
                return fk.referred_columns[0], f"{self.catalog.bare(owner)}.{fk.columns[0]} references it"
        if len(table.primary_key) == 1:
            bare = self.catalog.bare(table).lower()
            stems = {bare, singular(bare)}
            forms = {"id"} | {f"{s}_id" for s in stems} | {f"{s}id" for s in stems}
            if name.lower() in forms and name.lower() != table.primary_key[0].lower():
                return table.primary_key[0], f"the primary key of {self.catalog.bare(table)}"
        return None

    def _join_option(self, select: exp.Select, base: list[Source], columns: list[exp.Column], *,
                     many: bool = False) -> Option | None:
        """The column from a table outside the scope, through the one link of a table in scope to a table
        that has it: a many-to-one link (its foreign key to their key: no row is repeated), or with ``many``
        a one-to-many link (their foreign key to its key: a row per matching row there)."""
        name = columns[0].name
        in_scope = {s.table.name for s in base if s.table is not None}
        links: list[tuple[Source, str, Table, str, str]] = []
        for source in base:
            assert source.table is not None
            edges = self.catalog.edges_to(source.table) if many else self.catalog.edges_from(source.table)
            for own, target, key in edges:
                if target.name in in_scope:
                    continue
                hit = target.column(name)
                found = hit.name if hit is not None else closest_name(name, [c.name for c in target.columns])
                if found is not None:
                    links.append((source, own, target, key, found))
        if len({(link[0].alias, link[1].lower(), link[2].name) for link in links}) != 1:
            return None
        source, own, target, key, found = links[0]
        if self._join_position(select, source, columns) is None:
            return None
        label = self.catalog.bare(target)

        def apply() -> None:
            alias = self._joined(select, source, own, target, key, columns)
            for column in columns:
                column.set("table", self._ident(alias))
                column.set("this", self._ident(found))

        kind = "one row of" if not many else "each matching row of"
        return Option(f"{columns[0].sql(dialect=self.dialect)} -> {label}.{found} ({kind} {label}, joined on "
                       f"{source.alias}.{own} = {label}.{key})", apply, columns[0])

    @staticmethod
    def _join_position(select: exp.Select, source: Source, columns: list[exp.Column]) -> int | None:
        """Where a join to ``source`` goes: right after the join that brings ``source`` in (0 for the FROM
        table). None when a column to move sits in the ON clause of a join before that point, which
        could not see the new table."""
        joins = list(select.args.get("joins") or [])
        position = 0
        for index, join in enumerate(joins):
            if join.this is source.node:
                position = index + 1
        for join in joins[:position]:
            on = join.args.get("on")
            if on is not None and any(column is node for node in on.walk() for column in columns):
                return None
        return position

    def _joined(self, select: exp.Select, source: Source, own: str, target: Table, key: str,
                columns: list[exp.Column]) -> str:
        """The alias of ``target`` joined to ``select`` on ``source.own = target.key``, added once."""
        marker = (id(select), source.alias.lower(), f"{own.lower()}->{target.name}")
        if marker in self.joins:
            return self.joins[marker]
        self._qualify_all(select)
        taken = {a.lower() for a in table_aliases(select)}
        base = self.catalog.bare(target)
        alias = base if base.lower() not in taken else next(
            f"{base}_{n}" for n in range(1, 100) if f"{base}_{n}".lower() not in taken)
        table = exp.Table(this=self._ident(base))
        if source.node is not None and source.node.args.get("db") is not None:
            table.set("db", source.node.args["db"].copy())
        if alias != base:
            table.set("alias", exp.TableAlias(this=self._ident(alias)))
        condition = exp.EQ(this=exp.column(self._ident(own), table=source.qualifier()),
                           expression=exp.column(self._ident(key), table=self._ident(alias)))
        joins = list(select.args.get("joins") or [])
        position = self._join_position(select, source, columns)
        joins.insert(len(joins) if position is None else position, exp.Join(this=table, on=condition))
        select.set("joins", joins)
        self.joins[marker] = alias
        return alias

    def _qualify_all(self, select: exp.Select) -> None:
        """Qualify the unqualified columns of ``select`` that one table has, before a join adds a table
        (which could make them ambiguous)."""
        scope = next((s for s in traverse_scope(self.tree) if s.expression is select), None)
        if scope is None:
            return
        sources = _sources(scope, self.catalog)
        aliases = {a.lower() for a in select_aliases(scope)}
        for column in own_columns(scope):
            ident = column.this
            if column.table or not isinstance(ident, exp.Identifier) or ident.name.lower() in aliases:
                continue
            holders = [s for s in sources.values() if _has(self.catalog, s, ident)]
            if len(holders) == 1:
                column.set("table", holders[0].qualifier())
