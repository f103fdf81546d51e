"""The reflected schema as the SQL on it sees it, with the engine's name rules: tables and columns by name,
the many-to-one and one-to-many links between tables (declared foreign keys, and key naming), the sources
of a query scope, identifiers the engine resolves to a schema name, and the edit distance between names or
values. Shared by the deterministic repair (``stages/repair/``), the literal checks (``stages/literals.py``),
the scope check's value reads (``stages/scope_terms.py``) and value grounding (``stages/pvsql/grounding.py``)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from sqlglot import exp
from sqlglot.optimizer.scope import Scope

from ...db.schema import Column, ForeignKey, Schema, Table, reserved_words


class Catalog:
    """Schema lookups with the engine's name rules: PostgreSQL matches unquoted names folded to lower
    case and quoted names exactly; the others match names in any case."""

    def __init__(self, schema: Schema, engine: str) -> None:
        self.schema = schema
        self.engine = engine
        self.by_name: dict[str, Table] = {}
        for table in schema.tables:
            self.by_name.setdefault(self.bare(table).lower(), table)
        self.references: list[tuple[Table, ForeignKey]] = [
            (table, fk) for table in schema.tables for fk in table.foreign_keys if len(fk.columns) == 1
        ]
        self._by_key: dict[str, list[Table]] = {}  # a single-column primary key's name -> its tables
        for table in schema.tables:
            if len(table.primary_key) == 1:
                self._by_key.setdefault(table.primary_key[0].lower(), []).append(table)
        self._edges: dict[int, list[tuple[str, Table, str]]] | None = None

    def bare(self, table: Table) -> str:
        namespace = self.schema.namespace
        if namespace and table.name.startswith(namespace + "."):
            return table.name[len(namespace) + 1:]
        return table.name

    def table(self, name: str) -> Table | None:
        return self.by_name.get(name.lower()) or self.by_name.get(name.split(".")[-1].lower())

    def column(self, table: Table, ident: exp.Identifier | str) -> Column | None:
        """The column the engine finds for this identifier (None: the engine would not find it)."""
        name = ident if isinstance(ident, str) else ident.name
        if self.engine == "postgresql" and isinstance(ident, exp.Identifier):
            wanted = name if ident.quoted else name.lower()
            return next((c for c in table.columns if c.name == wanted), None)
        return table.column(name)

    def ident(self, name: str) -> exp.Identifier:
        """An identifier the engine resolves to exactly ``name`` (quoted where case, characters or one of the
        engine's reserved words need it: a table ``order`` is read as ``"order"``)."""
        plain = re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) is not None
        folded = name.lower() if self.engine == "postgresql" else name
        reserved = name.lower() in reserved_words(self.engine)
        return exp.to_identifier(name, quoted=not plain or folded != name or reserved)

    def table_node(self, table: Table) -> exp.Table:
        """``table`` as a FROM names it: its bare name, qualified by its namespace when it has one."""
        node = exp.Table(this=self.ident(self.bare(table)))
        if table.namespace:
            node.set("db", self.ident(table.namespace))
        return node

    def referenced(self, table: Table, fk: ForeignKey) -> Table | None:
        return self.table(fk.referred_table)

    def declared(self, table: Table, column: str, target: Table) -> bool:
        """Whether ``table.column`` -> ``target`` is a declared foreign key (not only the key's naming)."""
        return any(len(fk.columns) == 1 and fk.columns[0].lower() == column.lower()
                   and self.table(fk.referred_table) is target for fk in table.foreign_keys)

    def edges_from(self, table: Table) -> list[tuple[str, Table, str]]:
        """Many-to-one links of ``table``: (its column, the table referenced, that table's key column), from
        declared single-column foreign keys, and from a column named like another table's single-column
        primary key (``<x>_id`` in both; not ``id``, and not between tables with the same key)."""
        if self._edges is None:
            self._edges = {id(t): self._links(t) for t in self.schema.tables}
        return self._edges.get(id(table), [])

    def _links(self, table: Table) -> list[tuple[str, Table, str]]:
        found: list[tuple[str, Table, str]] = []
        seen: set[tuple[str, str]] = set()
        for fk in table.foreign_keys:
            target = self.table(fk.referred_table)
            if len(fk.columns) == 1 and target is not None and target is not table:
                if (fk.columns[0].lower(), target.name) not in seen:
                    seen.add((fk.columns[0].lower(), target.name))
                    found.append((fk.columns[0], target, fk.referred_columns[0]))
        own_key = table.primary_key[0].lower() if len(table.primary_key) == 1 else None
        for column in table.columns:
            lowered = column.name.lower()
            if lowered == "id" or lowered == own_key:
                continue
            for other in self._by_key.get(lowered, ()):
                if other is not table and (lowered, other.name) not in seen:
                    seen.add((lowered, other.name))
                    found.append((column.name, other, other.primary_key[0]))
            named = self._named(lowered[:-3]) if lowered.endswith("_id") else None
            if named is not None and named is not table and len(named.primary_key) == 1 \
                    and (lowered, named.name) not in seen:
                seen.add((lowered, named.name))  # customer_id -> customers.id
                found.append((column.name, named, named.primary_key[0]))
        return found

    def _named(self, stem: str) -> Table | None:
        """The table called ``stem`` or its plural (``customer``: ``customers``)."""
        for name in (stem, stem + "s", stem + "es", stem[:-1] + "ies" if stem.endswith("y") else stem):
            if (table := self.by_name.get(name)) is not None:
                return table
        return None

    def edges_to(self, table: Table) -> list[tuple[str, Table, str]]:
        """One-to-many links of ``table``: (its key column, a table that references it, that table's
        column), the reverse of ``edges_from``."""
        return [(key, other, own) for other in self.schema.tables if other is not table
                for own, target, key in self.edges_from(other) if target is table]


# -------------------------------------------------------------------------------------- sources

@dataclass
class Source:
    """A name in a scope's FROM: a schema table, or a derived table / CTE with its output names."""

    alias: str
    table: Table | None = None
    outputs: tuple[str, ...] | None = None  # derived: its column names; None with no table: unknown
    node: exp.Table | None = None

    @property
    def known(self) -> bool:
        return self.table is not None or self.outputs is not None

    def qualifier(self) -> exp.Identifier:
        """The name that qualifies this source's columns, quoted as the query wrote it (``"order"``, ``T1``)."""
        if self.node is not None:
            alias = self.node.args.get("alias")
            written = alias.this if alias is not None else self.node.this
            if isinstance(written, exp.Identifier):
                return written.copy()
        return exp.to_identifier(self.alias)


def sources(scope: Scope, catalog: Catalog) -> dict[str, Source]:
    """The scope's FROM names (lower case) and what each reads."""
    found: dict[str, Source] = {}
    for alias, source in scope.sources.items():
        if isinstance(source, exp.Table):
            found[alias.lower()] = Source(alias, catalog.table(source.name), None, source)
        elif isinstance(source, Scope):
            found[alias.lower()] = Source(alias, None, _outputs(source.expression))
    return found


def _outputs(expression: exp.Expr) -> tuple[str, ...] | None:
    select = expression
    while isinstance(select, exp.SetOperation):
        select = select.this
    if not isinstance(select, exp.Select):
        return None
    if any(isinstance(e, exp.Star) or (isinstance(e, exp.Column) and isinstance(e.this, exp.Star))
           for e in select.expressions):
        return None
    return tuple(select.named_selects)


def has(catalog: Catalog, source: Source, ident: exp.Identifier) -> bool | None:
    """Whether the engine finds ``ident`` in ``source`` (None: cannot tell)."""
    if source.table is not None:
        return catalog.column(source.table, ident) is not None
    if source.outputs is not None:
        return ident.name.lower() in {o.lower() for o in source.outputs}
    return None


def own_nodes(scope: Scope) -> list[exp.Expr]:
    """The scope's expressions outside its subqueries (a subquery's own node included, not what is inside it),
    in breadth-first order. One walk that stops at each nested query: linear, where asking every node for its
    enclosing query took time in the tree's depth per node (quadratic on a long ``OR`` chain)."""
    return list(own_walk(scope.expression))


def own_walk(root: exp.Expr, start: exp.Expr | None = None) -> Iterator[exp.Expr]:
    """The nodes under ``start`` (default: ``root``, not itself yielded) whose nearest enclosing query is
    ``root``, breadth first: a nested SELECT or set operation is yielded, and not entered."""
    def nested(node: exp.Expr) -> bool:
        return node is not root and isinstance(node, (exp.Select, exp.SetOperation))

    top = root if start is None else start
    for node in top.walk(prune=nested):
        if node is not root:
            yield node


# ---------------------------------------------------------------------------------- the distance

def distance(a: str, b: str, limit: int) -> int:
    """The edit distance of ``a`` and ``b`` (more than ``limit`` when their lengths differ by more)."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]
