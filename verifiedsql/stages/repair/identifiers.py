"""Identifiers: near misses of a name (underscores, plurals, one or two edits, abbreviations), and a table
name the schema lacks renamed to its one near miss."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from sqlglot import exp

from ..common.catalog import distance as _distance
from .problems import Option, PlannerBase, Problem


def _norm(name: str) -> str:
    return re.sub(r"[\s_\-]", "", name.lower())


def singular(name: str) -> str:
    for suffix, keep in (("ies", "y"), ("ses", "s"), ("s", "")):
        if name.endswith(suffix) and len(name) > len(suffix) + 2:
            return name[: -len(suffix)] + keep
    return name


def _closeness(wanted: str) -> tuple[Callable[[str], bool], ...]:
    """The tests a name passes when it is close to ``wanted``, strictest first."""
    target = _norm(wanted)
    return (
        lambda n: _norm(n) == target,
        lambda n: singular(_norm(n)) == singular(target),
        lambda n: len(target) >= 5 and _distance(_norm(n), target, 2) <= (2 if len(target) >= 12 else 1),
        lambda n: _abbreviates(*sorted((_norm(n), target), key=len)) and not _drops_words(n, wanted),
    )


def closest_name(wanted: str, names: list[str]) -> str | None:
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
    """Whether ``wanted`` is close to one of ``names`` (as ``closest_name`` finds, several matches included) or an
    abbreviation of one, or one of them of it: a misspelled name, not a name the schema lacks."""
    tests = _closeness(wanted)
    return any(same(name) for name in names for same in tests)


class TableRepairs(PlannerBase):
    """A table the schema does not have."""

    def _unknown_tables(self) -> list[Problem]:
        """A table name the schema does not have, with exactly one near miss there."""
        ctes = {cte.alias_or_name.lower() for cte in self.tree.find_all(exp.CTE)}
        names = [self.catalog.bare(t) for t in self.catalog.schema.tables]
        found: list[Problem] = []
        for node in self.tree.find_all(exp.Table):
            if not node.name or isinstance(node.this, exp.Func) or node.name.lower() in ctes \
                    or self.catalog.table(node.name) is not None:
                continue
            if (hit := closest_name(node.name, names)) is not None:
                found.append(Problem([self._table_rename(node, hit)]))
        return found

    def _table_rename(self, node: exp.Table, name: str) -> Option:
        old = node.name

        def apply() -> None:
            if node.args.get("alias") is None:
                node.set("alias", exp.TableAlias(this=node.this.copy()))  # the old name, quoted as written
            node.set("this", self._ident(name))

        return Option(f"table {old} -> {name} (the closest table name)", apply, node)
