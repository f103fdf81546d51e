"""The lexical shape of a text handed to ``cursor.execute``: is it built like SQL or like a sentence?

A small lexer splits the text the way SQL does (string literals, quoted identifiers, comments, dollar
quotes, placeholders, numbers, words, symbols) and reports two kinds of evidence, both taken only from
outside literals, quoted names and comments:

* **SQL structure**: a string literal, a quoted identifier, a placeholder (``?``, ``:name``, ``%s``), a
  qualified name (``a.b``), a stage reference (``@stage``), or one of ``* = < > ( ) [ ] ; :: || !=``.
  Commas, full stops, colons, ``+ - / %``, numbers and ``$1`` (``$50`` in a sentence) are common in
  English and do not count.
* **English marks**: ``?`` or ``!`` right after a word (``Brazil?``, ``orders!``; ``!=`` is an
  operator), an apostrophe inside a word (``don't``, ``customer's``), a typographic apostrophe or an
  inverted or full-width mark (``’ ¿ ¡ ？ ！ ， 。 、``), or an English function word that no SQL dialect
  uses as a keyword (``the``, ``me``, ``my``, ``what``, ``which``, ``how``, ``please``, ...).

``statements.classify`` combines this with what the engine's own parser says.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# English function words (articles, pronouns, determiners, question words, auxiliaries) that are not SQL
# keywords in SQLite, DuckDB, PostgreSQL or Snowflake. Short words that are common column names or
# aliases (``a``, ``i``, ``may``) are left out on purpose.
ENGLISH_WORDS = frozenset(
    "the an me my mine our ours your yours us we you he she him his hers they them their theirs it its "
    "this that these those there here what which who whom whose why how please are was were am been "
    "does did has have had can could would should will shall must than very much many every anyone "
    "anything someone something everyone everything nobody just whether because".split()
)
_PROSE_PUNCTUATION = frozenset("’‘¿¡？！，。、；：")
_STRUCTURE_SYMBOLS = frozenset("*=<>()[];{}")
_STRING_PREFIXES = frozenset("exbnr")
_WORD = re.compile(r"[^\W\d]\w*(?:\$\w*)*")
_NUMBER = re.compile(r"(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?", re.IGNORECASE)
_PLACEHOLDER = re.compile(r"%(?:\(\w+\))?s|\$\d+|\?\d*|[:$][^\W\d]\w*|@(?:~|%\w+|[^\W\d][\w.$]*)")
_DOLLAR_QUOTE = re.compile(r"\$(?:[^\W\d]\w*)?\$")


@dataclass
class Shape:
    """What the lexer saw in one text."""

    words: list[str] = field(default_factory=list)  # unquoted words, in order, as written
    first_word: str | None = None  # the first word, after leading comments and parentheses
    structure: list[str] = field(default_factory=list)  # the SQL structure found (for messages and tests)
    english: list[str] = field(default_factory=list)  # the English marks found
    pyformat: list[tuple[int, int]] = field(default_factory=list)  # spans of %s / %(name)s placeholders
    tokens: int = 0  # tokens outside comments
    last: str = ""  # the last token outside comments (semicolons aside), lower case
    semicolons: list[int] = field(default_factory=list)  # positions of ; outside literals and comments

    @property
    def has_structure(self) -> bool:
        return bool(self.structure)

    @property
    def is_english(self) -> bool:
        return bool(self.english)


def shape_of(text: str) -> Shape:
    """Lex ``text`` and collect its SQL structure and its English marks."""
    shape = Shape()
    i, n = 0, len(text)
    previous_end = -1  # end of the last word or number, to see glued punctuation
    leading = True  # still before the first word (comments and parentheses skipped)
    while i < n:
        ch = text[i]
        if ch.isspace() or (not ch.isprintable() and ch not in _PROSE_PUNCTUATION):
            i += 1
            continue
        if (after := skip_comment(text, i)) is not None:
            i = after
            continue
        shape.tokens += 1
        glued = previous_end == i
        if ch != ";":
            shape.last = _last_token(text, i)
        if ch in "'\"`":
            i = skip_quoted(text, i, ch)
            shape.structure.append("string literal" if ch == "'" else "quoted identifier")
            leading = False
            continue
        if ch == "$" and (match := _DOLLAR_QUOTE.match(text, i)):
            end = text.find(match.group(), match.end())
            i = n if end < 0 else end + len(match.group())
            shape.structure.append("dollar-quoted string")
            leading = False
            continue
        if (match := _WORD.match(text, i)) is not None:
            word, i = match.group(), match.end()
            if i < n and text[i] == "'" and (word.lower() in _STRING_PREFIXES):
                continue  # E'...', X'...', U&'...': the literal is lexed next
            while i + 1 < n and text[i] == "'" and text[i + 1].isalpha() and len(word) >= 2:
                shape.english.append(f"apostrophe in {word}'{text[i + 1]}")  # don't, customer's
                more = _WORD.match(text, i + 1)
                word, i = word + "'" + (more.group() if more else ""), (more.end() if more else i + 1)
            shape.words.append(word)
            if leading:
                shape.first_word, leading = word.lower(), False
            if word.lower() in ENGLISH_WORDS:
                shape.english.append(f"the word {word!r}")
            if i < n and text[i] == "." and _WORD.match(text, i + 1):
                shape.structure.append("qualified name")
            previous_end = i
            continue
        if (match := _NUMBER.match(text, i)) is not None and (ch.isdigit() or ch == "."):
            i = previous_end = match.end()
            leading = False
            continue
        if ch in "?!" and glued:
            shape.english.append(f"{ch!r} after a word")
            i += 1
            continue
        if ch == "!" and not text.startswith("!=", i):
            shape.english.append("'!'")
            i += 1
            continue
        if (match := _PLACEHOLDER.match(text, i)) is not None:
            if match.group().startswith("%"):
                shape.pyformat.append(match.span())
            if not match.group()[1:].isdigit() or ch != "$":  # $50 is money in a sentence, $1 rarely alone
                shape.structure.append(f"placeholder {match.group()}" if ch != "@" else f"stage {match.group()}")
            i = match.end()
            leading = False
            continue
        if ch in _PROSE_PUNCTUATION:
            shape.english.append(f"{ch!r}")
            i += 1
            continue
        if ch == "(" and leading:
            i += 1
            continue  # (SELECT 1) UNION ...: the statement starts inside
        if ch == ";":
            shape.semicolons.append(i)
        if ch in _STRUCTURE_SYMBOLS or text.startswith(("::", "||", "!=", "@"), i):
            shape.structure.append(f"{text[i:i + 2] if text.startswith(('::', '||', '!='), i) else ch!r}")
            i += 2 if text.startswith(("::", "||", "!="), i) else 1
            leading = False
            continue
        i += 1  # , . : + - / % and other neutral punctuation
        leading = False
    return shape


def _last_token(text: str, start: int) -> str:
    """The token that starts at ``start``, roughly (a word, a number or one character), lower case."""
    match = _WORD.match(text, start) or _NUMBER.match(text, start)
    return (match.group() if match else text[start]).lower()


def skip_comment(text: str, start: int) -> int | None:
    """The index after the ``--`` or ``/* */`` comment that opens at ``start`` (an unterminated one runs to
    the end of the text); None when no comment opens there."""
    if text.startswith("--", start):
        end = text.find("\n", start)
        return len(text) if end < 0 else end + 1
    if text.startswith("/*", start):
        end = text.find("*/", start + 2)
        return len(text) if end < 0 else end + 2
    return None


def skip_quoted(text: str, start: int, quote: str) -> int:
    """The index after the literal or quoted name opened at ``start`` (doubled quotes escape; an
    unterminated one runs to the end of the text)."""
    i = start + 1
    escapes = (quote == "'" and start > 0 and text[start - 1] in "eE"  # PostgreSQL E'...' strings
               and (start == 1 or not text[start - 2].isalnum()))
    while i < len(text):
        if text[i] == quote:
            if i + 1 < len(text) and text[i + 1] == quote:
                i += 2
                continue
            return i + 1
        if text[i] == "\\" and escapes:
            i += 2
            continue
        i += 1
    return i


def with_placeholders(text: str, shape: Shape, replacement: str) -> str:
    """``text`` with every ``%s`` / ``%(name)s`` placeholder replaced (for parsers that lack pyformat)."""
    for start, end in reversed(shape.pyformat):
        text = text[:start] + replacement + text[end:]
    return text


def one_typo_apart(word: str, keyword: str) -> bool:
    """True when ``word`` is ``keyword`` with one letter added, dropped, changed or two swapped."""
    if word == keyword or abs(len(word) - len(keyword)) > 1:
        return False
    if len(word) == len(keyword):
        diffs = [k for k in range(len(word)) if word[k] != keyword[k]]
        return len(diffs) == 1 or (
            len(diffs) == 2 and diffs[1] == diffs[0] + 1
            and word[diffs[0]] == keyword[diffs[1]] and word[diffs[1]] == keyword[diffs[0]]
        )
    short, long = sorted((word, keyword), key=len)
    return any(long[:k] + long[k + 1:] == short for k in range(len(long)))


