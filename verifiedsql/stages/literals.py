"""Literal checks (``check_literals``, on by default): each string or date literal that a candidate compares
with a column (``col = 'x'``, ``'x' = col``, ``col <> 'x'``, ``col IN ('x', 'y')``, ``col LIKE 'x'``
without a wildcard) is looked up in that column, by small read-only queries built on sqlglot's AST and run
through ``ctx.query`` (both safety layers, capped by the time left):

- **found** as written: nothing against the candidate;
- absent, but a **variant** is stored (the same after lower case and trimming, or, for literals of 5
  characters or more, within 2 edits): the SQL is repaired with the stored value and run again; the repair
  is recorded as the schema repair records its own (``candidate.attempts``, ``candidate.fixes``);
- absent, but stored in a text column of a table **linked** to the column's table by a key (Spider's
  ``flights.Airline = 'United Airlines'``, where ``flights.Airline`` holds airline ids and the name is in
  ``airlines.Airline``): evidence against the candidate, and a hint on it (``candidate.literal_hints``).
  When the compared column itself holds the key, the comparison is rewritten through it
  (``flights.Airline IN (SELECT uid FROM airlines WHERE Airline = 'United Airlines')``) and kept if it runs;
- **absent** everywhere: a neutral note, since an absent value can be the answer (a count of 0).

Each check is a ``LiteralCheck`` on ``candidate.literals``; ``stages/evidence.py`` turns the chosen
candidate's into the ``literals`` evidence. At most ``MAX_LITERALS`` literals per candidate, identical
lookups made once per question, and none when less than ``MIN_LEFT_S`` of the question's time is left.
No model is involved, and no prompt changes.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal as Kind

from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.scope import Scope, traverse_scope

from ..config import Options
from ..db.schema import Column, Table
from ..errors import QueryError, QueryTimeoutError, QuestionTimeoutError, UnsafeSQLError
from ..guard.safety import parse_one_query
from ..report import Candidate, LiteralCheck, LiteralOutcome
from .common.catalog import Catalog, Source, distance, has, own_nodes, sources
from .common.facts import date_like
from .common.values import LOOKUP_TIMEOUT_S, SCAN_ROWS, distinct_scan, holds_text, unaliased
from .context import QuestionContext
from .generate import CandidateRun, Execution, execute_candidate

MAX_LITERALS = 6  # distinct (column, literal) lookups per candidate
MAX_LINKED = 6  # linked tables searched for one literal
MAX_LINKED_COLUMNS = 12  # text columns of one linked table searched
MIN_LEFT_S = 2.0  # with less of the question's time left, no literal is looked up
VARIANT_ROWS = 20  # distinct values that a trimmed, lower-case lookup returns
NEAR_VALUES = 200  # distinct values of the column held against the literal for near misses
NEAR_LENGTH = 5  # literals at least this long may be matched within NEAR_EDITS edits
NEAR_EDITS = 2

# what reading an odd tree can raise: the candidate is then left as it is
_READ_ERRORS = (SqlglotError, RecursionError, ValueError, KeyError, AttributeError, TypeError, IndexError)
_LOOKUP_ERRORS = (QueryError, QueryTimeoutError, UnsafeSQLError)

Op = Kind["=", "like"]


@dataclass(frozen=True)
class _Link:
    """A key between two tables, written in its own direction: ``source.column -> target.key``."""

    source: Table
    column: str
    target: Table
    key: str
    declared: bool  # a declared foreign key (else the key's naming: ``<table>_id``)


@dataclass(frozen=True)
class _Lookup:
    """What the database holds for one literal: its outcome, and the stored value and where it is."""

    outcome: LiteralOutcome
    stored: str | None = None
    table: Table | None = None  # elsewhere: the linked table that holds it
    column: str | None = None  # elsewhere: its column
    link: _Link | None = None  # elsewhere: how that table is reached
    why: str = ""  # unchecked: why not


@dataclass
class _Comparison:
    """One comparison of a column with string literals in the candidate's SQL."""

    node: exp.Expr  # the EQ / NEQ / In / Like node
    side: exp.Expr  # the compared side as written: a column, or a cast of one
    column: exp.Column
    literals: list[exp.Expr]  # each a string literal, or a cast of one (DATE '2020-01-01')
    op: Op
    source: Source  # the table read, with its node in the FROM
    table: Table
    schema_column: Column
    keys: list[tuple[str, ...]] = field(default_factory=list)  # the lookup key of each literal


class LiteralChecks:
    """Context stage (option ``check_literals``): registers the literal check of every candidate
    (``LiteralChecker.check``, a candidate check)."""

    name = "literals"

    def enabled(self, options: Options) -> bool:
        return options.check_literals

    def run(self, ctx: QuestionContext) -> None:
        ctx.candidate_checks.append(LiteralChecker(ctx).check)


class LiteralChecker:
    """The literal checks of one question's candidates; a lookup made once is kept for the question, and so
    is the run of a repaired SQL."""

    def __init__(self, ctx: QuestionContext) -> None:
        self.ctx = ctx
        self.profile = ctx.database.profile
        self.dialect = self.profile.sqlglot_dialect
        self.catalog = Catalog(ctx.schema, self.profile.name)
        self.lookups: dict[tuple[str, ...], _Lookup] = {}
        self.runs: dict[str, Execution] = {}
        self.short_of_time = False

    # --------------------------------------------------------------------------------- the check

    def check(self, run: CandidateRun) -> CandidateRun:
        """The run as it was, with each literal's check recorded on its candidate; or, when a stored variant
        or a key rewrite applies and the repaired SQL runs, the repaired run."""
        if run.result is None:
            return run
        if self.ctx.deadline.remaining() < MIN_LEFT_S:
            if not self.short_of_time:
                self.short_of_time = True
                self.ctx.note("literal checks skipped: too little of the question's time is left")
            return run
        candidate = run.candidate
        try:
            tree = parse_one_query(candidate.sql, self.profile)
            comparisons = self._comparisons(tree)
            found = self._look_up(comparisons)
        except (QuestionTimeoutError, UnsafeSQLError, *_READ_ERRORS):  # out of time, or SQL it cannot read
            return run
        try:
            fixes = self._apply(comparisons, found)
            if self.profile.name == "sqlite":
                fixes += never_matching(tree, self.dialect)
        except _READ_ERRORS:
            fixes = []
        repaired = self._rerun(candidate, tree, fixes) if fixes else None
        candidate.literals = [self._record(key, lookup, repaired is not None) for key, lookup in found.items()]
        return repaired or run

    def _rerun(self, candidate: Candidate, tree: exp.Expr, fixes: list[str]) -> CandidateRun | None:
        """Run the repaired SQL; when it runs it becomes the candidate's SQL (the one before goes to its
        attempts, what changed to its fixes, as the schema repair records its own). None when it does not."""
        try:
            sql = tree.sql(dialect=self.dialect)
        except _READ_ERRORS:
            return None
        if sql == candidate.sql:
            return None
        if sql not in self.runs:
            self.runs[sql] = execute_candidate(self.ctx, sql, explain=self.ctx.options.verify)
        execution = self.runs[sql]
        if execution.status != "ok" or execution.result is None:
            self.ctx.note(f"candidate {candidate.index}: the literal repair did not run ({execution.status}): "
                          f"{execution.error}")
            return None
        candidate.attempts.append(candidate.sql)
        candidate.sql = sql
        candidate.fixes = [*candidate.fixes, *fixes]
        candidate.checks = [*execution.checks, "repair"]
        candidate.row_count, candidate.truncated = execution.result.row_count, execution.result.truncated
        return CandidateRun(candidate, execution.result, execution.ordered)

    # --------------------------------------------------------------------------- the comparisons

    def _comparisons(self, tree: exp.Expr) -> list[_Comparison]:
        """Every comparison of a schema column with string literals, in the order written."""
        found: list[_Comparison] = []
        for scope in traverse_scope(tree):
            for node in own_nodes(scope):
                parts = _compared(node)
                if parts is None:
                    continue
                side, literals, op = parts
                column = side if isinstance(side, exp.Column) else side.this
                assert isinstance(column, exp.Column)
                resolved = self._resolve(scope, column)
                if resolved is not None:
                    source, schema_column = resolved
                    assert source.table is not None
                    found.append(_Comparison(node, side, column, literals, op, source, source.table, schema_column))
        return found

    def _resolve(self, scope: Scope, column: exp.Column) -> tuple[Source, Column] | None:
        """The table of the scope (or of an enclosing one) that ``column`` reads, and its schema column."""
        ident = column.this
        if not isinstance(ident, exp.Identifier):
            return None
        current: Scope | None = scope
        while current is not None:
            named = sources(current, self.catalog)
            if column.table:
                source = named.get(column.table.lower())
                if source is None:
                    current = current.parent
                    continue
            else:
                answers = [(s, has(self.catalog, s, ident)) for s in named.values()]
                holders = [s for s, held in answers if held]
                if len(holders) > 1 or (not holders and any(held is None for _, held in answers)):
                    return None  # ambiguous, or read from a source whose columns are unknown
                if not holders:
                    current = current.parent
                    continue
                source = holders[0]
            if source.table is None or source.node is None:
                return None
            schema_column = self.catalog.column(source.table, ident)
            return (source, schema_column) if schema_column is not None else None
        return None

    # ------------------------------------------------------------------------------- the lookups

    def _look_up(self, comparisons: list[_Comparison]) -> dict[tuple[str, ...], _Lookup]:
        """Each distinct literal's lookup (at most MAX_LITERALS; the rest unchecked), by its key."""
        found: dict[tuple[str, ...], _Lookup] = {}
        for comparison in comparisons:
            for literal in comparison.literals:
                key = self._key(comparison, literal)
                comparison.keys.append(key)
                if key in found:
                    continue
                if len(found) >= MAX_LITERALS:
                    found[key] = _Lookup("unchecked", why=f"not looked up (at most {MAX_LITERALS} per candidate)")
                    continue
                if key not in self.lookups:
                    self.lookups[key] = self._lookup(comparison, literal)
                found[key] = self.lookups[key]
        return found

    def _key(self, comparison: _Comparison, literal: exp.Expr) -> tuple[str, ...]:
        side = _bare(comparison.side).sql(dialect=self.dialect)
        return (comparison.table.name, comparison.schema_column.name, side, comparison.op,
                literal.sql(dialect=self.dialect), _value(literal))

    def _lookup(self, comparison: _Comparison, literal: exp.Expr) -> _Lookup:
        """Where the literal is: in the column as written, as a variant there, in a linked table, or nowhere."""
        value = _value(literal)
        table_node = self._table_node(comparison.source)
        test: exp.Expr = (exp.Like if comparison.op == "like" else exp.EQ)(
            this=_bare(comparison.side), expression=literal.copy())
        try:
            if self._rows(exp.select(exp.Literal.number(1)).from_(table_node).where(test).limit(1)):
                return _Lookup("found")
            plain = isinstance(literal, exp.Literal)
            if plain and holds_text(comparison.schema_column) and (
                    stored := self._variant(table_node, comparison.column.this, value)) is not None:
                return _Lookup("variant", stored)
            if plain and not date_like(value):
                for link, target in self._linked(comparison):
                    if (hit := self._in_table(target, comparison.source, value)) is not None:
                        return _Lookup("elsewhere", hit[1], target, hit[0], link)
        except (*_LOOKUP_ERRORS, *_READ_ERRORS) as error:
            return _Lookup("unchecked", why=f"the lookup failed ({type(error).__name__})")
        return _Lookup("absent")

    def _variant(self, table_node: exp.Table, column: exp.Identifier, value: str) -> str | None:
        """The one stored value of ``column`` equal to ``value`` after trimming and lower case, else the one
        nearest within NEAR_EDITS edits (for literals of NEAR_LENGTH characters or more); None when there is
        none, or more than one."""
        wanted = exp.Literal.string(value)
        same = distinct_scan(column, table_node, VARIANT_ROWS,
                             exp.EQ(this=_folded(exp.column("v")), expression=_folded(wanted)))
        hits = sorted({row[0] for row in self._rows(same) if isinstance(row[0], str) and row[0] != value})
        if hits:
            return hits[0] if len(hits) == 1 else None
        target = value.strip().lower()
        if len(target) < NEAR_LENGTH:
            return None
        stored = distinct_scan(column, table_node, NEAR_VALUES, exp.Not(this=exp.Is(
            this=exp.column("v"), expression=exp.Null())))
        scored: dict[int, set[str]] = {}
        for (held,) in self._rows(stored):
            if isinstance(held, str) and held != value:
                if (edits := distance(held.strip().lower(), target, NEAR_EDITS)) <= NEAR_EDITS:
                    scored.setdefault(edits, set()).add(held)
        if not scored:
            return None
        best = scored[min(scored)]
        return next(iter(best)) if len(best) == 1 else None

    def _linked(self, comparison: _Comparison) -> Iterator[tuple[_Link, Table]]:
        """The tables linked to the comparison's table by a key, each once (at most MAX_LINKED): the
        table its compared column references first, then the others it references, then those that
        reference it."""
        table, name = comparison.table, comparison.schema_column.name.lower()
        links: list[tuple[_Link, Table]] = []
        edges = self.catalog.edges_from(table)
        for own, target, key in sorted(edges, key=lambda edge: edge[0].lower() != name):
            links.append((_Link(table, own, target, key, self.catalog.declared(table, own, target)), target))
        for key, other, own in self.catalog.edges_to(table):
            links.append((_Link(other, own, table, key, self.catalog.declared(other, own, table)), other))
        seen: set[str] = set()
        for link, target in links:
            if target.name not in seen and len(seen) < MAX_LINKED:
                seen.add(target.name)
                yield link, target

    def _in_table(self, table: Table, near: Source, value: str) -> tuple[str, str] | None:
        """(column, stored value) of a text column of ``table`` that holds ``value`` (after trimming and
        lower case; as written first), read in a bounded scan; None when none does."""
        columns = [c.name for c in table.columns if holds_text(c)][:MAX_LINKED_COLUMNS]
        if not columns:
            return None
        node = self._table_node(near, table)
        wanted = _folded(exp.Literal.string(value))
        inner = exp.select(*(exp.alias_(exp.column(self.catalog.ident(c)), f"v{i}") for i, c in enumerate(columns)))
        inner = inner.from_(node).limit(SCAN_ROWS)
        tests = [exp.EQ(this=_folded(exp.column(f"v{i}")), expression=wanted.copy()) for i in range(len(columns))]
        query = exp.select(*(exp.column(f"v{i}") for i in range(len(columns)))).from_(inner.subquery("s")) \
            .where(exp.or_(*tests)).limit(VARIANT_ROWS)
        rows = self._rows(query)
        for same in (lambda held: held == value, lambda held: held.strip().lower() == value.strip().lower()):
            for row in rows:
                for column, held in zip(columns, row):
                    if isinstance(held, str) and same(held):
                        return column, held
        return None

    def _rows(self, query: exp.Expr) -> tuple[tuple[object, ...], ...]:
        return self.ctx.query(query.sql(dialect=self.dialect), timeout_s=LOOKUP_TIMEOUT_S,
                              doing="a literal lookup").rows

    def _table_node(self, source: Source, table: Table | None = None) -> exp.Table:
        """The FROM of a lookup: the source's table as the candidate wrote it (its schema qualifier kept), or
        ``table`` in the same schema."""
        assert source.node is not None
        return unaliased(source.node, None if table is None else self.catalog.ident(self.catalog.bare(table)))

    # ----------------------------------------------------------------------------- the outcomes

    def _label(self, table: Table, column: str) -> str:
        return f"{self.catalog.bare(table)}.{column}"

    def _reach(self, link: _Link) -> str:
        """``the foreign key a.b -> c.d``, or ``a.b -> c.d (a key by its name)`` where none is declared."""
        arrow = f"{self._label(link.source, link.column)} -> {self._label(link.target, link.key)}"
        return f"the foreign key {arrow}" if link.declared else f"{arrow} (a key by its name)"

    def _record(self, key: tuple[str, ...], lookup: _Lookup, repaired: bool) -> LiteralCheck:
        """The check of one literal, in words; ``repaired``: the SQL with its stored variant ran."""
        table, column, value = key[0], key[1], key[-1]
        where = self._label(self.catalog.table(table) or Table(table, ()), column)
        shown = _shown(value)
        if lookup.outcome == "found":
            return LiteralCheck(value, where, "found", f"{shown} is in {where}")
        if lookup.outcome == "variant":
            stored = _shown(lookup.stored or "")
            if repaired:
                return LiteralCheck(value, where, "repaired",
                                    f"{shown} is not in {where}; {stored} is, and the SQL now compares with it")
            return LiteralCheck(value, where, "variant", f"{shown} is not in {where}; {stored} is (the SQL "
                                "with it did not run)")
        if lookup.outcome == "elsewhere":
            assert lookup.table is not None and lookup.link is not None and lookup.column is not None
            held = "" if lookup.stored == value else f" as {_shown(lookup.stored or '')}"
            return LiteralCheck(value, where, "elsewhere",
                                f"{shown} is not in {where}; it is in {self._label(lookup.table, lookup.column)}"
                                f"{held} (reached by {self._reach(lookup.link)})")
        if lookup.outcome == "absent":
            return LiteralCheck(value, where, "absent",
                                f"{shown} is in no column compared with it ({where}, nor a text column of a "
                                "table linked to it by a key)")
        return LiteralCheck(value, where, "unchecked", f"{shown} in {where}: {lookup.why}")

    def _apply(self, comparisons: list[_Comparison], found: dict[tuple[str, ...], _Lookup]) -> list[str]:
        """Apply the repairs to the tree in place: a comparison whose literals are all held in one column of
        the table its compared column references is rewritten through that key; else each literal with a
        stored variant takes that value. Returns what changed, in words."""
        fixes: list[str] = []
        for comparison in comparisons:
            lookups = [found[key] for key in comparison.keys]
            if (fix := self._through_key(comparison, lookups)) is not None:
                fixes.append(fix)
                continue
            for literal, lookup in zip(comparison.literals, lookups):
                if lookup.outcome == "variant" and lookup.stored is not None:
                    before = literal.sql(dialect=self.dialect)
                    stored = exp.Literal.string(lookup.stored)
                    literal.replace(stored)
                    fixes.append(f"{before} -> {stored.sql(dialect=self.dialect)} (the value stored in "
                                 f"{self._label(comparison.table, comparison.schema_column.name)})")
        return list(dict.fromkeys(fixes))  # the same change in two places is said once

    def _through_key(self, comparison: _Comparison, lookups: list[_Lookup]) -> str | None:
        """``col = 'name'`` -> ``col IN (SELECT key FROM linked WHERE name_column = 'name')`` when every
        literal of the comparison is held in the same column of the table that ``col`` references."""
        first = lookups[0]
        link = first.link
        if link is None or first.column is None or first.table is not link.target \
                or link.source is not comparison.table \
                or link.column.lower() != comparison.schema_column.name.lower():
            return None
        if any(other.outcome != "elsewhere" or other.stored is None or other.link != link
               or other.column != first.column for other in lookups):
            return None
        named = exp.column(self.catalog.ident(first.column))
        values = [exp.Literal.string(other.stored or "") for other in lookups]
        test: exp.Expr
        if comparison.op == "like":
            test = exp.Like(this=named, expression=values[0])
        elif len(values) == 1:
            test = exp.EQ(this=named, expression=values[0])
        else:
            test = exp.In(this=named, expressions=values)
        query = exp.select(exp.column(self.catalog.ident(link.key))) \
            .from_(self._table_node(comparison.source, link.target)).where(test)
        rewritten: exp.Expr = exp.In(this=comparison.column.copy(), query=exp.Subquery(this=query))
        if isinstance(comparison.node, exp.NEQ):
            rewritten = exp.Not(this=rewritten)
        before = comparison.node.sql(dialect=self.dialect)
        comparison.node.replace(rewritten)
        held = ", ".join(_shown(other.stored or "") for other in lookups)
        verb = "is" if len(lookups) == 1 else "are"
        return (f"{before} -> {rewritten.sql(dialect=self.dialect)} ({held} {verb} in "
                f"{self._label(link.target, first.column)}, reached by {self._reach(link)})")


# SQLite functions whose value is text with no column affinity: compared with a number, it never matches
# (``strftime('%Y', d) = 2020`` is always false, since no conversion applies to either side).
_TEXT_VALUED: tuple[type[exp.Expr], ...] = (exp.TimeToStr, exp.Substring, exp.Trim, exp.Lower, exp.Upper)


def never_matching(tree: exp.Expr, dialect: str) -> list[str]:
    """On SQLite: each comparison of a text-valued function with a number literal, which can never match, gets
    the number as text (in place). Returns what changed, in words."""
    fixes: list[str] = []
    for node in tree.find_all(exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE):
        for side, other in ((node.this, node.expression), (node.expression, node.this)):
            if isinstance(side, _TEXT_VALUED) and isinstance(other, exp.Literal) and not other.is_string:
                before = node.sql(dialect=dialect)
                other.replace(exp.Literal.string(str(other.this)))
                fixes.append(f"{before} -> {node.sql(dialect=dialect)} (text compared with a number never "
                             "matches on SQLite)")
                break
    return fixes


def compared_values(tree: exp.Expr) -> list[str]:
    """The string values that ``tree`` compares with columns for equality (``=``, ``<>``, ``IN``, ``LIKE``
    without a wildcard), in order."""
    return [_value(literal) for node in tree.walk() if (found := _compared(node)) for literal in found[1]]


def _compared(node: exp.Expr) -> tuple[exp.Expr, list[exp.Expr], Op] | None:
    """(the compared column side, its string literals, the operator) when ``node`` compares a column (or a
    cast of one) with string literals for equality: =, <>, IN (...), or LIKE without a wildcard."""
    if isinstance(node, (exp.EQ, exp.NEQ)):
        for side, other in ((node.this, node.expression), (node.expression, node.this)):
            if _column_side(side) and _literal(other):
                return side, [other], "="
        return None
    if isinstance(node, exp.In):
        if node.args.get("query") is not None or node.args.get("unnest") is not None \
                or node.args.get("field") is not None or not _column_side(node.this):
            return None
        literals = [e for e in node.expressions if _literal(e)]
        return (node.this, literals, "=") if literals and len(literals) == len(node.expressions) else None
    if isinstance(node, exp.Like) and not isinstance(node.parent, exp.Escape):
        pattern = node.expression
        if _column_side(node.this) and isinstance(pattern, exp.Literal) and pattern.is_string \
                and not any(mark in pattern.this for mark in "%_"):
            return node.this, [pattern], "like"
    return None


def _column_side(node: exp.Expr) -> bool:
    if isinstance(node, exp.Cast):
        node = node.this
    return isinstance(node, exp.Column) and isinstance(node.this, exp.Identifier)


def _literal(node: exp.Expr) -> bool:
    """A string literal, or a string literal cast to a type (``DATE '2020-01-01'``)."""
    if isinstance(node, exp.Cast):
        node = node.this
    return isinstance(node, exp.Literal) and node.is_string


def _value(literal: exp.Expr) -> str:
    inner = literal.this if isinstance(literal, exp.Cast) else literal
    return str(inner.this)


def _bare(side: exp.Expr) -> exp.Expr:
    """A copy of the compared side with its columns unqualified (the lookup reads one table)."""
    copy = side.copy()
    for column in [copy] if isinstance(copy, exp.Column) else list(copy.find_all(exp.Column)):
        column.set("table", None)
        column.set("db", None)
        column.set("catalog", None)
    return copy


def _folded(node: exp.Expr) -> exp.Expr:
    """``LOWER(TRIM(node))``."""
    return exp.Lower(this=exp.Trim(this=node))


def _shown(value: str) -> str:
    return exp.Literal.string(value).sql()
