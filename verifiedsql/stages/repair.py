"""Deterministic repair of a candidate the engine rejected, before any model refinement (``schema_repair``).

The failing SQL is read on its sqlglot AST and held against the reflected schema (column types, keys,
samples). Each repair is a new SQL with a short description of what changed; the caller runs it through
both safety layers, and the first one that runs replaces the candidate's SQL. Nothing here calls the model
or the database: ``proposals`` is a pure function of the schema, the dialect, the SQL and its error.

Repair classes, all from schema facts only:

- **quotes**: a schema name left bare where it needs quotes (spaces or signs, a reserved word, MySQL's
  backticks: ``FROM Customer Info``, ``FROM order``) is quoted as the schema names it (``stages/requote.py``);
  the other repairs are proposed on the quoted SQL, and a quoted SQL that fails anew is repaired next round.

- **columns**: an unknown or ambiguous column is resolved against the tables in scope. A qualifier moves to
  the joined table that has the column; a name that a foreign key (or the ``<table>_id``/``id`` naming of a
  single-column primary key) maps onto the qualified table's key becomes that key; a column held by no table
  in scope is reached through a many-to-one foreign key (a join is added, so no row is repeated), or the
  only table read is replaced by the one table that has every column the query names; an ambiguous column
  gets the qualifier that a join equality or a key makes equivalent.
- **identifiers**: case and quoting (PostgreSQL folds unquoted names), and near misses (underscores,
  plurals, one or two edits, abbreviations that leave no whole word out) of columns and tables, only when
  exactly one schema name is that close.
- **functions**: a function the engine does not know (MySQL habits such as ``YEAR()``, ``DATE_FORMAT``,
  ``CONCAT``, ``DATEDIFF``) is read as MySQL and written in the engine's dialect through sqlglot; on SQLite,
  ``YEAR``/``MONTH``/``DAY``/``EXTRACT`` become ``STRFTIME``.
- **types** (from the reflected types): a date function on an integer year column becomes the column
  (``EXTRACT(YEAR FROM year) = 2020`` -> ``year = 2020``), on text that holds dates or years a cast; a
  comparison or join of text with a number (a subquery's output included, ``IN (SELECT ...)`` too) casts the
  side whose sampled values all convert; ``LIKE`` and
  string functions on a non-text column cast it to text. SQLite converts types silently, so there only the
  date functions are repaired.
- **clauses**: a WHERE condition that holds an aggregate of its own query moves to HAVING, grouped by the
  selected columns when there is no GROUP BY; where the engine refuses a selected or ordering column that is
  not grouped (PostgreSQL, DuckDB, Snowflake; SQLite takes it from any row of the group), the column joins
  the GROUP BY, which keeps the groups when the grouped key determines it (an id and its name).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.scope import Scope, traverse_scope

from ..schema import Column, Schema, Table
from .common.catalog import Catalog as _Catalog
from .common.catalog import Source as _Source
from .common.catalog import distance as _distance
from .common.catalog import has as _has
from .common.catalog import own_nodes as _own_nodes
from .common.catalog import own_walk as _own_walk
from .common.catalog import sources as _sources
from .common.facts import as_number, date_like, holds_years, is_year_number
from .common.frames import column_kind
from .requote import requote

if TYPE_CHECKING:
    from .generate import Execution

MAX_PROPOSALS = 4  # repaired SQLs tried per round
MAX_ROUNDS = 2  # a repair that fails with a new error is repaired once more
MAX_RUNS = 6  # queries run for one failing candidate, all rounds together
# longer SQL is left to the model: sqlglot's scopes take time in the square of a long OR chain's length
MAX_REPAIR_CHARS = 20_000
# the engines' refusal of a column that is neither grouped nor aggregated (PostgreSQL, DuckDB, Snowflake)
_UNGROUPED = re.compile(r"must appear in the group by clause|is not a valid group by expression", re.IGNORECASE)

Kind = Literal["int", "num", "text", "date", "bool", "other"]
STRICT_TYPES = frozenset({"postgresql", "duckdb", "snowflake"})  # engines that refuse mixed-type comparisons

# what reading or rewriting an odd tree can raise: the SQL is then left to the model, never a crash
_READ_ERRORS = (SqlglotError, RecursionError, ValueError, KeyError, AttributeError, TypeError, IndexError)

_FUNCTION_ERRORS = (
    re.compile(r"no such function: (\w+)", re.IGNORECASE),
    re.compile(r"function (\w+)\(\) is not allowed .*not a function this database knows", re.IGNORECASE),
    re.compile(r"function (?:\w+\.)?(\w+)\([^)]*\) does not exist", re.IGNORECASE),
    re.compile(r"function with name \"?(\w+)\"? does not exist", re.IGNORECASE),
    re.compile(r"unknown function:? \"?(\w+)", re.IGNORECASE),
)


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
    catalog = _Catalog(schema, engine)
    quoted = requote(catalog, dialect, sql)
    if quoted is None:
        return _planned(catalog, dialect, sql, error)
    # bare names that need quotes: quoted first, then the other repairs of the quoted SQL, which now parses
    base, quotes = quoted
    found = [Proposal(base, quotes), *(Proposal(p.sql, quotes + p.fixes) for p in _planned(catalog, dialect, base,
                                                                                            error))]
    return found[:MAX_PROPOSALS]


def _planned(catalog: _Catalog, dialect: str, sql: str, error: str) -> list[Proposal]:
    """``proposals`` from the planner's repairs of ``sql`` as written."""
    first = _plan(catalog, dialect, sql, error)
    if first is None or not first[1]:
        return []
    choices: list[dict[int, int]] = [{}]
    choices += [{index: 1} for index, problem in enumerate(first[1]) if len(problem.options) > 1]
    found: list[Proposal] = []
    for choice in choices:
        planned = first if not choice else _plan(catalog, dialect, sql, error)
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
        except _READ_ERRORS:
            continue
        if fixes and repaired and repaired != sql and all(p.sql != repaired for p in found):
            found.append(Proposal(repaired, tuple(fixes)))
        if len(found) >= MAX_PROPOSALS:
            break
    return found


def _degenerate(tree: exp.Expr) -> bool:
    """Whether the fixes made a comparison of a column with itself, or a join condition that no longer
    names the table joined: such a repair runs, but answers another question."""
    for node in tree.find_all(*_COMPARISONS):
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
    try:
        return tree.sql(dialect=dialect)
    except SqlglotError:
        return ""


# -------------------------------------------------------------------------------------- sources

@dataclass
class _Option:
    description: str
    apply: Callable[[], object]
    anchor: exp.Expr  # the node the fix changes: skipped when an earlier fix has replaced it


@dataclass
class _Problem:
    options: list[_Option] = field(default_factory=list)


def _own_columns(scope: Scope) -> list[exp.Column]:
    """The scope's column references outside its subqueries."""
    own = {id(node) for node in _own_walk(scope.expression) if isinstance(node, exp.Column)}
    return [c for c in scope.columns if id(c) in own]


def _has_loose(source: _Source, name: str) -> str | None:
    """The column's name in ``source`` in any case."""
    if source.table is not None:
        column = source.table.column(name)
        return column.name if column else None
    if source.outputs is not None:
        return next((o for o in source.outputs if o.lower() == name.lower()), None)
    return None


def _names(source: _Source) -> list[str]:
    if source.table is not None:
        return [c.name for c in source.table.columns]
    return list(source.outputs or ())


# --------------------------------------------------------------------------------- near misses

def _norm(name: str) -> str:
    return re.sub(r"[\s_\-]", "", name.lower())


def _singular(name: str) -> str:
    for suffix, keep in (("ies", "y"), ("ses", "s"), ("s", "")):
        if name.endswith(suffix) and len(name) > len(suffix) + 2:
            return name[: -len(suffix)] + keep
    return name


def _closeness(wanted: str) -> tuple[Callable[[str], bool], ...]:
    """The tests a name passes when it is close to ``wanted``, strictest first."""
    target = _norm(wanted)
    return (
        lambda n: _norm(n) == target,
        lambda n: _singular(_norm(n)) == _singular(target),
        lambda n: len(target) >= 5 and _distance(_norm(n), target, 2) <= (2 if len(target) >= 12 else 1),
        lambda n: _abbreviates(*sorted((_norm(n), target), key=len)) and not _drops_words(n, wanted),
    )


def _near(wanted: str, names: list[str]) -> str | None:
    """The one name close to ``wanted``: equal without case, underscores and plural endings, else within one
    edit (two for names of 12 letters or more), else an abbreviation of it or it of ``wanted``
    (``independenceyear`` for ``IndepYear``); None when none or several are that close."""
    for same in _closeness(wanted):
        hits = sorted({n for n in names if same(n)})
        if len(hits) == 1:
            return hits[0]
        if len(hits) > 1:
            return None
    return None


def _words(name: str) -> set[str]:
    """The words of a name: split at underscores, spaces, dashes and lower-to-upper case changes."""
    return {w.lower() for w in re.findall(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])", name)}


def _drops_words(name: str, other: str) -> bool:
    """Whether one of the two names is the other with whole words left out (``feature_name`` and
    ``feature_type_name``): another column, not an abbreviation."""
    mine, theirs = _words(name), _words(other)
    return mine < theirs or theirs < mine


def _abbreviates(short: str, long: str) -> bool:
    """``short`` keeps ``long``'s first and last letters and at least half its letters, in order, and is not
    merely its start or end (``indepyear`` abbreviates ``independenceyear``; ``weight`` does not abbreviate
    ``weightrank``, which names something else)."""
    if len(short) < 4 or 2 * len(short) < len(long) or (short[0], short[-1]) != (long[0], long[-1]):
        return False
    if long.startswith(short) or long.endswith(short):
        return False
    letters = iter(long)
    return all(letter in letters for letter in short)


def resembles(wanted: str, names: Iterable[str]) -> bool:
    """Whether ``wanted`` is close to one of ``names`` (as ``_near`` finds, several matches included) or an
    abbreviation of one, or one of them of it: a misspelled name, not a name the schema lacks."""
    tests = _closeness(wanted)
    return any(same(name) for name in names for same in tests)


# ---------------------------------------------------------------------------------------- types

_FAMILY: dict[str, Kind] = {"int": "int", "float": "num", "bool": "bool", "date": "date", "timestamp": "date",
                            "time": "date", "text": "text", "any": "other"}


def kind_of(type_text: str) -> Kind:
    """The family of a reflected column type (``common.frames.column_kind``, with dates and times as one)."""
    return _FAMILY[column_kind(type_text)]


# ----------------------------------------------------------------------------------- the planner

_PARTS = {"YEAR": "%Y", "MONTH": "%m", "DAY": "%d"}
_STRING_FUNCTIONS: tuple[type[exp.Expr], ...] = tuple(
    getattr(exp, name) for name in (
        "Lower", "Upper", "Substring", "Length", "Trim", "Left", "Right", "StrPosition", "Initcap", "Reverse",
    ) if hasattr(exp, name)
)
_NUMBER_FUNCTIONS: tuple[type[exp.Expr], ...] = (exp.Avg, exp.Sum, exp.Stddev, exp.Variance, exp.Round, exp.Abs)
_COMPARISONS: tuple[type[exp.Expr], ...] = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE)


def _plan(catalog: _Catalog, dialect: str, sql: str, error: str) -> tuple[exp.Expr, list[_Problem]] | None:
    """A fresh parse of ``sql`` and its problems, each with its fixes (not applied yet); None when the SQL
    cannot be read."""
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
        if tree is None:
            return None
        problems = _Planner(catalog, dialect, tree, error).problems()
    except _READ_ERRORS:
        return None
    return tree, [p for p in problems if p.options]


class _Planner:
    """Finds the problems of one parsed SQL and the ways to fix each. Fixes are applied later, in the
    order found: tables, columns, types, functions, then clauses; each builds its new nodes when applied, so it
    keeps what the fixes before it changed."""

    def __init__(self, catalog: _Catalog, dialect: str, tree: exp.Expr, error: str) -> None:
        self.catalog = catalog
        self.dialect = dialect
        self.engine = catalog.engine
        self.tree = tree
        self.error = error
        self.joins: dict[tuple[int, str, str], str] = {}  # (select id, from alias, link) -> joined alias
        self.scopes: dict[int, Scope] = {}  # id of a SELECT -> its scope

    def problems(self) -> list[_Problem]:
        scopes = traverse_scope(self.tree)
        self.scopes = {id(scope.expression): scope for scope in scopes}
        found = self._unknown_tables()
        for scope in scopes:
            sources = _sources(scope, self.catalog)
            groups: dict[tuple[str, str], list[exp.Column]] = {}
            for column in _own_columns(scope):
                if isinstance(column.this, exp.Identifier):
                    groups.setdefault((column.table.lower(), column.name.lower()), []).append(column)
            for columns in groups.values():
                if (problem := self._column_problem(scope, sources, columns)) is not None:
                    found.append(problem)
        for scope in scopes:
            found += self._type_problems(scope)
        found += self._function_problems()
        for scope in scopes:
            if (option := self._aggregate_in_where(scope)) is not None:
                found.append(_Problem([option]))
        if _UNGROUPED.search(self.error):
            found += [_Problem([option]) for scope in scopes if (option := self._ungrouped(scope)) is not None]
        return found

    def _sources_up(self, scope: Scope) -> Iterator[tuple[Scope, dict[str, _Source]]]:
        current: Scope | None = scope
        while current is not None:
            yield current, _sources(current, self.catalog)
            current = current.parent

    def _find_source(self, scope: Scope, qualifier: str) -> _Source | None:
        for _, sources in self._sources_up(scope):
            if (source := sources.get(qualifier.lower())) is not None:
                return source
        return None

    # ----------------------------------------------------------------------------- the columns

    def _column_problem(self, scope: Scope, sources: dict[str, _Source], columns: list[exp.Column]) -> _Problem | None:
        column = columns[0]
        ident = column.this
        assert isinstance(ident, exp.Identifier)
        if column.table:
            source = self._find_source(scope, column.table)
            if source is not None and _has(self.catalog, source, ident) is not False:
                return None
            return _Problem(self._unknown_options(scope, sources, columns, source))
        if ident.name.lower() in {a.lower() for a in _select_aliases(scope)}:
            return None
        holders = [s for s in sources.values() if _has(self.catalog, s, ident)]
        if len(holders) == 1:
            return None
        if len(holders) > 1:
            return _Problem(self._ambiguous_options(scope, sources, columns, holders))
        if any(not s.known for s in sources.values()):
            return None
        for outer, outer_sources in self._sources_up(scope):
            if outer is not scope and any(_has(self.catalog, s, ident) is not False for s in outer_sources.values()):
                return None  # a correlated reference to an enclosing query
        return _Problem(self._unknown_options(scope, sources, columns, None))

    def _unknown_options(self, scope: Scope, sources: dict[str, _Source], columns: list[exp.Column],
                         source: _Source | None) -> list[_Option]:
        column = columns[0]
        name = column.name
        options: list[_Option] = []
        # case and quoting in the table named
        if source is not None and (loose := _has_loose(source, name)) is not None:
            options.append(self._rename(columns, source, loose, "the column's exact name"))
        # the key that a foreign key (or the key's naming) maps this name onto
        for candidate in [source] if source is not None else list(sources.values()):
            if candidate.table is not None and (key := self._key_for(candidate.table, name)) is not None:
                options.append(self._rename(columns, candidate, key[0], key[1]))
                break
        # the qualifier moved to the one other table in scope that has the column
        holders = [(s, hit) for s in sources.values() if s is not source and (hit := _has_loose(s, name))]
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
        return _unique(options)

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
            stems = {bare, _singular(bare)}
            forms = {"id"} | {f"{s}_id" for s in stems} | {f"{s}id" for s in stems}
            if name.lower() in forms and name.lower() != table.primary_key[0].lower():
                return table.primary_key[0], f"the primary key of {self.catalog.bare(table)}"
        return None

    def _near_in_scope(self, source: _Source | None, sources: list[_Source], name: str) -> tuple[_Source, str] | None:
        if source is not None and (hit := _near(name, _names(source))) is not None:
            return source, hit
        pairs = [(s, hit) for s in sources if (hit := _near(name, _names(s))) is not None]
        return pairs[0] if len(pairs) == 1 else None

    def _join_option(self, select: exp.Select, base: list[_Source], columns: list[exp.Column], *,
                     many: bool = False) -> _Option | None:
        """The column from a table outside the scope, through the one link of a table in scope to a table
        that has it: a many-to-one link (its foreign key to their key: no row is repeated), or with ``many``
        a one-to-many link (their foreign key to its key: a row per matching row there)."""
        name = columns[0].name
        in_scope = {s.table.name for s in base if s.table is not None}
        links: list[tuple[_Source, str, Table, str, str]] = []
        for source in base:
            assert source.table is not None
            edges = self.catalog.edges_to(source.table) if many else self.catalog.edges_from(source.table)
            for own, target, key in edges:
                if target.name in in_scope:
                    continue
                hit = target.column(name)
                found = hit.name if hit is not None else _near(name, [c.name for c in target.columns])
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
        return _Option(f"{columns[0].sql(dialect=self.dialect)} -> {label}.{found} ({kind} {label}, joined on "
                       f"{source.alias}.{own} = {label}.{key})", apply, columns[0])

    @staticmethod
    def _join_position(select: exp.Select, source: _Source, columns: list[exp.Column]) -> int | None:
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

    def _joined(self, select: exp.Select, source: _Source, own: str, target: Table, key: str,
                columns: list[exp.Column]) -> str:
        """The alias of ``target`` joined to ``select`` on ``source.own = target.key``, added once."""
        marker = (id(select), source.alias.lower(), f"{own.lower()}->{target.name}")
        if marker in self.joins:
            return self.joins[marker]
        self._qualify_all(select)
        taken = {a.lower() for a in _aliases(select)}
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
        aliases = {a.lower() for a in _select_aliases(scope)}
        for column in _own_columns(scope):
            ident = column.this
            if column.table or not isinstance(ident, exp.Identifier) or ident.name.lower() in aliases:
                continue
            holders = [s for s in sources.values() if _has(self.catalog, s, ident)]
            if len(holders) == 1:
                column.set("table", holders[0].qualifier())

    def _replace_option(self, scope: Scope, sources: dict[str, _Source], column: exp.Column) -> _Option | None:
        """With one table read, the one other table that has every column the query names from it."""
        if len(sources) != 1:
            return None
        source = next(iter(sources.values()))
        node = source.node
        if source.table is None or node is None:
            return None
        names = {c.name.lower() for c in _own_columns(scope) if isinstance(c.this, exp.Identifier)
                 and (not c.table or c.table.lower() == source.alias.lower())}
        names -= {a.lower() for a in _select_aliases(scope)}
        fits = [t for t in self.catalog.schema.tables
                if t is not source.table and all(t.column(n) is not None for n in names)]
        if len(fits) != 1:
            return None
        old, new = self.catalog.bare(source.table), self.catalog.bare(fits[0])

        def apply() -> None:
            if node.args.get("alias") is None:
                node.set("alias", exp.TableAlias(this=node.this.copy()))  # the old name, quoted as written
            node.set("this", self._ident(new))

        return _Option(f"FROM {old} -> FROM {new} (the table with every column the query names)", apply, node)

    def _ambiguous_options(self, scope: Scope, sources: dict[str, _Source], columns: list[exp.Column],
                           holders: list[_Source]) -> list[_Option]:
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
        return [self._rename(columns, chosen, _has_loose(chosen, name) or name, why)]

    @staticmethod
    def _self_comparison(columns: list[exp.Column], alias: str, name: str) -> bool:
        """Whether moving ``columns`` to ``alias.name`` would compare a column with itself."""
        for column in columns:
            parent = column.parent
            if not isinstance(parent, _COMPARISONS):
                continue
            other = parent.expression if parent.this is column else parent.this
            if isinstance(other, exp.Column) and other.table.lower() == alias.lower() \
                    and other.name.lower() == name.lower():
                return True
        return False

    def _rename(self, columns: list[exp.Column], source: _Source, name: str, why: str) -> _Option:
        """Every occurrence of the column becomes ``source.name``."""
        written = columns[0].sql(dialect=self.dialect)
        new = exp.column(self._ident(name), table=source.qualifier()).sql(dialect=self.dialect)

        def apply() -> None:
            for column in columns:
                column.set("this", self._ident(name))
                column.set("table", source.qualifier())

        return _Option(f"{written} -> {new} ({why})", apply, columns[0])

    def _ident(self, name: str) -> exp.Identifier:
        """An identifier the engine resolves to exactly ``name`` (quoted where case or characters need it)."""
        return self.catalog.ident(name)

    def _label(self, source: _Source) -> str:
        return self.catalog.bare(source.table) if source.table is not None else source.alias

    # ------------------------------------------------------------------------------- the tables

    def _unknown_tables(self) -> list[_Problem]:
        """A table name the schema does not have, with exactly one near miss there."""
        ctes = {cte.alias_or_name.lower() for cte in self.tree.find_all(exp.CTE)}
        names = [self.catalog.bare(t) for t in self.catalog.schema.tables]
        found: list[_Problem] = []
        for node in self.tree.find_all(exp.Table):
            if not node.name or isinstance(node.this, exp.Func) or node.name.lower() in ctes \
                    or self.catalog.table(node.name) is not None:
                continue
            if (hit := _near(node.name, names)) is not None:
                found.append(_Problem([self._table_rename(node, hit)]))
        return found

    def _table_rename(self, node: exp.Table, name: str) -> _Option:
        old = node.name

        def apply() -> None:
            if node.args.get("alias") is None:
                node.set("alias", exp.TableAlias(this=node.this.copy()))  # the old name, quoted as written
            node.set("this", self._ident(name))

        return _Option(f"table {old} -> {name} (the closest table name)", apply, node)

    # ---------------------------------------------------------------------------- the functions

    def _function_problems(self) -> list[_Problem]:
        """Functions the engine does not know, as the error names them: read as MySQL and written in the
        engine's dialect by sqlglot; on SQLite, date parts through STRFTIME."""
        named = {m.group(1).lower() for pattern in _FUNCTION_ERRORS for m in pattern.finditer(self.error)}
        if self.engine != "sqlite":
            named -= {"extract", "date_part"}  # on the others, a type error: see _type_problems
        if not named:
            return []
        found: list[_Problem] = []
        for node in list(self.tree.find_all(exp.Func)):
            name = (node.name if isinstance(node, exp.Anonymous) else node.sql_name()).lower()
            date_part = isinstance(node, (exp.Year, exp.Month, exp.Day, exp.Extract))
            if name in named or (self.engine == "sqlite" and date_part):
                if (option := self._translation(node)) is not None:
                    found.append(_Problem([option]))
        return found

    def _aggregate_in_where(self, scope: Scope) -> _Option | None:
        """A WHERE condition with an aggregate of its own query (``WHERE COUNT(*) > 2``): the conditions that
        hold one move to HAVING, grouped by the selected columns when the query has no GROUP BY."""
        select = scope.expression
        where = select.args.get("where") if isinstance(select, exp.Select) else None
        if where is None or not _aggregates(where.this, select):
            return None
        if any(isinstance(e.unalias(), exp.Star) for e in select.expressions):
            return None

        def apply() -> None:
            condition = select.args["where"].this
            conditions = list(condition.flatten()) if isinstance(condition, exp.And) else [condition]
            kept = [c.copy() for c in conditions if not _aggregates(c, select)]
            moved = [c.copy() for c in conditions if _aggregates(c, select)]
            if having := select.args.get("having"):
                moved.insert(0, having.this.copy())
            select.set("where", exp.Where(this=exp.and_(*kept)) if kept else None)
            select.set("having", exp.Having(this=exp.and_(*moved)))
            keys = [e.unalias().copy() for e in select.expressions if not _aggregates(e, select)]
            if not select.args.get("group") and keys:
                select.set("group", exp.Group(expressions=keys))
        return _Option(f"{where.this.sql(dialect=self.dialect)} -> HAVING (an aggregate in WHERE)", apply, where)

    def _ungrouped(self, scope: Scope) -> _Option | None:
        """The selected and ordering columns of a grouped query with an aggregate that are neither grouped nor
        inside an aggregate: they join the GROUP BY."""
        select = scope.expression
        group = select.args.get("group") if isinstance(select, exp.Select) else None
        if group is None or not group.expressions or not _aggregates(select, select):
            return None  # a GROUP BY with no aggregate and a column left out is a mistake of its own
        grouped = {e.sql(dialect=self.dialect).lower() for e in group.expressions}
        aliases = {a.lower() for a in _select_aliases(scope)}
        order = select.args.get("order")
        candidates = [e.unalias() for e in select.expressions]
        candidates += [o.this for o in order.expressions] if order is not None else []
        missing: dict[str, exp.Expr] = {}
        for node in candidates:
            if _aggregates(node, select) or isinstance(node, exp.Star) or not any(
                    isinstance(c, exp.Column) for c in _own_walk(select, node)):
                continue
            if isinstance(node, exp.Column) and not node.table and node.name.lower() in aliases:
                continue  # an ORDER BY on a selected alias
            key = node.sql(dialect=self.dialect).lower()
            if key not in grouped:
                missing.setdefault(key, node)
        if not missing:
            return None
        added = list(missing.values())

        def apply() -> None:
            group.set("expressions", [*group.expressions, *(node.copy() for node in added)])
        shown = ", ".join(node.sql(dialect=self.dialect) for node in added)
        return _Option(f"GROUP BY + {shown} (selected but not grouped)", apply, group)

    def _translation(self, node: exp.Func) -> _Option | None:
        before = node.sql(dialect="mysql")  # as a model with MySQL habits wrote it

        def translated() -> exp.Expr | None:
            replacement: exp.Expr | None = None
            if isinstance(node, exp.Anonymous):
                parsed = sqlglot.parse_one(node.sql(dialect="mysql"), read="mysql")
                if parsed is not None and not isinstance(parsed, exp.Anonymous):
                    replacement = parsed
            if self.engine == "sqlite":
                replacement = _sqlite_date_part(replacement or node) or replacement
            return replacement

        try:
            preview = translated()
            after = (preview or node).sql(dialect=self.dialect)
        except (SqlglotError, RecursionError, ValueError):
            return None
        if not after or after == before and preview is None:
            return None

        def apply() -> None:
            if (replacement := translated()) is not None:
                node.replace(replacement)

        return _Option(f"{before} -> {after} (written for {self.dialect})", apply, node)

    # -------------------------------------------------------------------------------- the types

    def _column_of(self, scope: Scope, node: exp.Expr) -> Column | None:
        """The schema column that ``node`` (a column reference) reads, when one table in scope has it."""
        if not isinstance(node, exp.Column) or not isinstance(node.this, exp.Identifier):
            return None
        if node.table:
            source = self._find_source(scope, node.table)
            holders = [source] if source is not None else []
        else:
            holders = [s for s in _sources(scope, self.catalog).values() if _has(self.catalog, s, node.this)]
        if len(holders) != 1 or holders[0].table is None:
            return None
        return self.catalog.column(holders[0].table, node.this) or holders[0].table.column(node.name)

    def _kind(self, scope: Scope, node: exp.Expr) -> Kind | None:
        """The type family of ``node``: a literal, a cast, a count or average, a subquery's one output, or a
        column of a table in scope; None when it cannot be told."""
        if isinstance(node, exp.Literal):
            return "text" if node.is_string else ("int" if node.is_int else "num")
        if isinstance(node, exp.Cast):
            return kind_of(node.to.sql())
        if isinstance(node, exp.Count):
            return "int"
        if isinstance(node, exp.Avg):
            return "num"
        if (inner := self._output(node)) is not None:
            return self._kind(*inner)
        column = self._column_of(scope, node)
        return kind_of(column.type) if column is not None else None

    def _output(self, node: exp.Expr) -> tuple[Scope, exp.Expr] | None:
        """The scope and the one output expression of a subquery that selects one thing."""
        if not isinstance(node, exp.Subquery) or not isinstance(node.this, exp.Select) \
                or len(node.this.expressions) != 1 or (inner := self.scopes.get(id(node.this))) is None:
            return None
        return inner, node.this.expressions[0].unalias()

    def _type_problems(self, scope: Scope) -> list[_Problem]:
        found: list[_Problem] = []
        for node in _own_nodes(scope):
            if (option := self._date_function(scope, node)) is not None:
                found.append(_Problem([option]))
            if self.engine not in STRICT_TYPES:
                continue
            compares = isinstance(node, _COMPARISONS) \
                or (isinstance(node, exp.In) and isinstance(node.args.get("query"), exp.Subquery))
            if compares and (options := self._comparison(scope, node)):
                found.append(_Problem(options))
            if isinstance(node, (exp.Like, exp.ILike, *_STRING_FUNCTIONS)) \
                    and (option := self._to_text(scope, node)) is not None:
                found.append(_Problem([option]))
            if isinstance(node, _NUMBER_FUNCTIONS) and (option := self._to_number(scope, node)) is not None:
                found.append(_Problem([option]))
        return found

    def _date_function(self, scope: Scope, node: exp.Expr) -> _Option | None:
        """A year, month or day taken from a column that is not a date: a year column itself, a text year
        cast to a number, or text holding dates cast to a date (on the engines that refuse text there)."""
        found = date_part(node)
        if found is None:
            return None
        part, argument = found
        column = self._column_of(scope, argument)
        if column is None or kind_of(column.type) == "date":
            return None
        kind = kind_of(column.type)
        samples = column.samples
        target: exp.Expr = node.parent if isinstance(node.parent, exp.Cast) else node
        build: Callable[[], exp.Expr]
        if part == "YEAR" and holds_years(column):
            def build() -> exp.Expr:
                return argument.copy()
            why = "holds years"
        elif part == "YEAR" and kind == "text" and samples and all(is_year_number(v) for v in samples):
            def build() -> exp.Expr:
                return exp.Cast(this=argument.copy(), to=exp.DataType.build("INT"))
            why = "text holding years"
        elif kind == "text" and self.engine in STRICT_TYPES and samples and all(date_like(v) for v in samples):
            to = "TIMESTAMP" if any(date_like(v) == "timestamp" for v in samples) else "DATE"
            target = argument

            def build() -> exp.Expr:
                return exp.Cast(this=argument.copy(), to=exp.DataType.build(to))
            why = "text holding dates"
        else:
            return None
        written = argument.sql(dialect=self.dialect)
        description = f"{target.sql(dialect=self.dialect)} -> {build().sql(dialect=self.dialect)} ({written} {why})"
        return _Option(description, lambda: target.replace(build()), target)

    def _comparison(self, scope: Scope, node: exp.Expr) -> list[_Option]:
        """Text compared with a number (by a comparison operator or ``IN (subquery)``): cast the text side when
        its sampled values all read as numbers, else the number side to text. A date compared with a year
        number: compare its year."""
        left = node.this
        right = node.args["query"] if isinstance(node, exp.In) else node.expression
        options: list[_Option] = []
        for text_side, number_side in ((left, right), (right, left)):
            text_kind, number_kind = self._kind(scope, text_side), self._kind(scope, number_side)
            if text_kind == "text" and number_kind in ("int", "num"):
                text_at, text_node = self._output(text_side) or (scope, text_side)
                number_at, number_node = self._output(number_side) or (scope, number_side)
                column = self._column_of(text_at, text_node)
                number_type = "BIGINT" if number_kind == "int" else "DOUBLE PRECISION"
                if (other := self._column_of(number_at, number_node)) is not None:
                    number_type = other.type
                if column is not None and column.samples and all(as_number(v) is not None for v in column.samples):
                    options.append(self._cast(text_node, number_type, "its values are numbers"))
                if isinstance(number_node, exp.Literal):
                    options.append(self._quote(number_node))
                elif other is not None:
                    options.append(self._cast(number_node, "TEXT", "compared with text"))
            if text_kind == "date" and isinstance(number_side, exp.Literal) and is_year_number(number_side.this) \
                    and not number_side.is_string:
                options.append(self._year_of(text_side))
        return options

    def _cast(self, node: exp.Expr, type_text: str, why: str) -> _Option:
        try:
            to = exp.DataType.build(type_text, dialect=self.dialect)
        except (SqlglotError, ValueError):
            to = exp.DataType.build("TEXT")
        preview = exp.Cast(this=node.copy(), to=to.copy()).sql(dialect=self.dialect)
        return _Option(f"{node.sql(dialect=self.dialect)} -> {preview} ({why})",
                       lambda: node.replace(exp.Cast(this=node.copy(), to=to.copy())), node)

    def _quote(self, literal: exp.Literal) -> _Option:
        return _Option(f"{literal.sql()} -> '{literal.this}' (compared with text)",
                       lambda: literal.replace(exp.Literal.string(str(literal.this))), literal)

    def _year_of(self, node: exp.Expr) -> _Option:
        def build() -> exp.Expr:
            return exp.Extract(this=exp.var("YEAR"), expression=node.copy())
        return _Option(f"{node.sql(dialect=self.dialect)} -> {build().sql(dialect=self.dialect)} "
                       "(a date compared with a year)", lambda: node.replace(build()), node)

    def _to_number(self, scope: Scope, node: exp.Expr) -> _Option | None:
        """AVG, SUM and the like of a text column whose sampled values are all numbers: cast it to a number."""
        argument = node.this
        column = self._column_of(scope, argument)
        if column is None or kind_of(column.type) != "text" or not column.samples \
                or not all(as_number(v) is not None for v in column.samples):
            return None
        return self._cast(argument, "NUMERIC", f"{node.key.upper()}() of text holding numbers")

    def _to_text(self, scope: Scope, node: exp.Expr) -> _Option | None:
        argument = node.this
        kind = self._kind(scope, argument)
        if kind is None or kind in ("text", "other") or isinstance(argument, exp.Literal):
            return None
        what = "LIKE" if isinstance(node, (exp.Like, exp.ILike)) else f"{node.key.upper()}()"
        return self._cast(argument, "TEXT", f"{what} on a {kind} column")


def _aggregates(node: exp.Expr, select: exp.Expr) -> bool:
    """Whether ``node`` holds an aggregate of ``select`` itself (not of a subquery)."""
    return any(isinstance(agg, exp.AggFunc) for agg in _own_walk(select, node))


def _unique(options: list[_Option]) -> list[_Option]:
    seen: set[str] = set()
    kept = []
    for option in options:
        if option.description not in seen:
            seen.add(option.description)
            kept.append(option)
    return kept


def _select_aliases(scope: Scope) -> list[str]:
    select = scope.expression
    if not isinstance(select, exp.Select):
        return []
    return [e.alias for e in select.expressions if isinstance(e, exp.Alias)]


def _aliases(select: exp.Select) -> list[str]:
    return [table.alias_or_name for table in select.find_all(exp.Table)]


def date_part(node: exp.Expr) -> tuple[str, exp.Expr] | None:
    """(YEAR/MONTH/DAY, the argument) of a date-part call: YEAR(x), EXTRACT(YEAR FROM x),
    DATE_PART('year', x), STRFTIME('%Y', x)."""
    for cls, part in ((exp.Year, "YEAR"), (exp.Month, "MONTH"), (exp.Day, "DAY")):
        if isinstance(node, cls):
            return part, _unwrap_date(node.this)
    if isinstance(node, exp.Extract):
        part = node.this.name.upper() if isinstance(node.this, (exp.Var, exp.Identifier, exp.Literal)) else ""
        return (part, _unwrap_date(node.expression)) if part in _PARTS else None
    if isinstance(node, exp.TimeToStr):
        pair = (node.args.get("format"), node.this)
        for fmt, argument in (pair, pair[::-1]):  # DuckDB's STRFTIME(x, fmt) written as SQLite's (fmt, x)
            if isinstance(fmt, exp.Literal) and argument is not None and not isinstance(argument, exp.Literal):
                named = next((p for p, f in _PARTS.items() if fmt.name == f), "")
                return (named, _unwrap_date(argument)) if named else None
        return None
    if isinstance(node, exp.Anonymous) and node.name.lower() in ("date_part", "datepart", "strftime") \
            and len(node.expressions) == 2:
        first, second = node.expressions
        if node.name.lower() == "strftime":
            part = next((p for p, f in _PARTS.items() if isinstance(first, exp.Literal) and first.name == f), "")
        else:
            part = first.name.upper() if isinstance(first, (exp.Literal, exp.Var, exp.Column)) else ""
        return (part, _unwrap_date(second)) if part in _PARTS else None
    return None


def _unwrap_date(node: exp.Expr) -> exp.Expr:
    """``x`` from the date conversions sqlglot wraps arguments in (``DATE(x)``, ``CAST(x AS DATE)``)."""
    while isinstance(node, (exp.TsOrDsToDate, exp.Date, exp.TsOrDsToTimestamp)) and node.this is not None:
        node = node.this
    return node


def _sqlite_date_part(node: exp.Expr) -> exp.Expr | None:
    """``CAST(STRFTIME('%Y', x) AS INTEGER)`` for a year, month or day part, on SQLite."""
    found = date_part(node)
    if found is None or isinstance(node, exp.TimeToStr) or isinstance(node, exp.Anonymous):
        return None
    part, argument = found
    call = exp.Anonymous(this="STRFTIME", expressions=[exp.Literal.string(_PARTS[part]), argument.copy()])
    return exp.Cast(this=call, to=exp.DataType.build("INTEGER"))
