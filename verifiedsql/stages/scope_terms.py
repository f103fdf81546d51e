"""The question's words that name nothing in the database: no table or column name, and no value stored in a
text column. The scope check (``stages/scope.py``) ends a question on the model's NO only when at least
``Options.scope_unmatched_share`` of the question's content words are such words, so that a model that
says NO to questions it finds hard ("Which dogs are of the rarest breed?": every word names the data) does
not refuse them, while "Who painted the Mona Lisa?" of a concert database (painted, mona, lisa: nothing
stored) is still refused.

Words are matched loosely, so that a question's wording finds the schema's: the same word, the same stem
(``countries`` and ``country``), or a stem of four letters or more that begins the other (``nation`` and
``nationality``). Identifiers are split at underscores and case changes (``Song_release_year``,
``PetType``). Stored values are read only while some word is still unmatched, column by column, each by one
bounded read-only query through ``ctx.query`` (both safety layers, capped by the time left): at most
``SCAN_ROWS`` rows of a column and ``VALUE_DISTINCT`` distinct values, and at most ``VALUE_COLUMNS`` columns
a question. When a word is left unmatched and some column could not be read (a read failed, the cap or the
time left stopped the reads), the match is incomplete (``WordMatch.complete``), and the scope check does not
end the question on it: a word in an unread column would have matched.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ..db.schema import Schema
from ..errors import QueryError, QueryTimeoutError, UnsafeSQLError
from .common.catalog import Catalog
from .common.values import distinct_scan, holds_text
from .context import QuestionContext

VALUE_COLUMNS = 200  # text columns whose values one question may read
VALUE_DISTINCT = 2_000  # distinct values that one read returns
READ_TIMEOUT_S = 5.0  # one read (also capped by statement_timeout_s and the time left)
MIN_LEFT_S = 2.0  # with less of the question's time left, no value is read
MIN_WORD = 3  # shorter words are not content words
PREFIX_MIN = 4  # a stem this long may match a word it begins (or that begins it)

# Words that say how to ask, not what about: function words, question words, and the words of counting,
# ordering and listing that any question over any table may use. Not tuned to a database.
STOP_WORDS = frozenset("""
a an the of in on at to for from by with and or but not no nor is are was were be been being do does did have has
had having what which who whom whose where when why how many much there their them they it its this that these
those than then as each every all any some me my i we you your our us please tell show list give find return
display get also both either neither only just more most less least number numbers count total sum average avg
mean maximum minimum max min highest lowest largest smallest greatest biggest top first last different distinct
unique order ordered sorted sort ascending descending alphabetical alphabetically greater larger bigger smaller
fewer higher lower above below over under between into out up down about after before same other another such
whether if so can could would should will shall may might must one two three four five six seven eight nine ten
zero per along together respectively corresponding name names id ids information info details detail record
records value values type types kind kinds
""".split())

_WORD = re.compile(r"[a-z]+")
_CASE_CHANGE = re.compile(r"([a-z])([A-Z])")
_SUFFIXES = (("ies", "y"), ("ves", "f"), ("ses", "s"), ("es", ""), ("s", ""), ("ing", ""), ("ed", ""))
_READ_ERRORS = (QueryError, QueryTimeoutError, UnsafeSQLError)


def words_of(text: object) -> list[str]:
    """The lower-case words of ``text``, an identifier split at underscores and case changes."""
    return _WORD.findall(_CASE_CHANGE.sub(r"\1 \2", str(text)).lower())


def stem(word: str) -> str:
    """``word`` without one plural or verb ending, where at least three letters remain."""
    for suffix, replacement in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)] + replacement
    return word


def content_words(question: str) -> tuple[str, ...]:
    """The question's words that may name data, in order, repeats kept (a question's share counts each)."""
    return tuple(w for w in words_of(question) if len(w) >= MIN_WORD and w not in STOP_WORDS)


def _unmatched(words: Iterable[str], known: Iterable[str]) -> list[str]:
    """The ``words`` that match none of the ``known`` words: not the same word, not the same stem, and not a stem
    of PREFIX_MIN letters or more that begins the other. Matching is per known word, so a word's match
    against several batches of known words is its match against any one of them."""
    known = set(known)
    stems = {stem(k) for k in known}
    long = [k for k in known if len(k) >= PREFIX_MIN]

    def matches(word: str) -> bool:
        root = stem(word)
        if word in known or root in stems:
            return True
        return len(root) >= PREFIX_MIN and any(k.startswith(root) or root.startswith(k) for k in long)

    return [w for w in words if not matches(w)]


def schema_words(schema: Schema) -> Iterator[str]:
    """Every word of the schema's table and column names."""
    for table in schema.tables:
        yield from words_of(table.name.split(".")[-1])
        for column in table.columns:
            yield from words_of(column.name)


@dataclass(frozen=True)
class WordMatch:
    """The question's content words, those of them (in order, repeats kept) that matched no table or column name
    and no stored text value, and whether every text column's values could be read where a word was left."""

    words: tuple[str, ...]
    unmatched: tuple[str, ...]
    complete: bool


def unmatched_words(ctx: QuestionContext) -> WordMatch:
    """Match the question's content words against the schema's names, then its stored values."""
    words = content_words(ctx.question)
    left = _unmatched(dict.fromkeys(words), schema_words(ctx.schema))
    complete = True
    for values in _stored_words(ctx) if left else ():
        if values is None:
            complete = False
            continue
        left = _unmatched(left, values)  # each column's words once, against the words still left
        if not left:
            break
    return WordMatch(words, tuple(w for w in words if w in left), complete or not left)


def _stored_words(ctx: QuestionContext) -> Iterator[set[str] | None]:
    """The words of each text column's stored values, one column at a time; None for a column whose read failed,
    and a last None when the cap or the time left stops the reads."""
    profile = ctx.database.profile
    catalog = Catalog(ctx.schema, profile.name)
    read = 0
    for table in ctx.schema.tables:
        for column in table.columns:
            if not holds_text(column):
                continue
            if read >= VALUE_COLUMNS or ctx.deadline.remaining() < MIN_LEFT_S:
                yield None
                return
            read += 1
            query = distinct_scan(catalog.ident(column.name), catalog.table_node(table),
                                  VALUE_DISTINCT).sql(dialect=profile.sqlglot_dialect)
            try:
                rows = ctx.query(query, timeout_s=READ_TIMEOUT_S, doing="reading stored values (scope check)").rows
            except _READ_ERRORS:
                yield None
                continue
            yield {word for (value,) in rows if isinstance(value, str) for word in words_of(value)}
