"""A linear lexical scan for function calls in SQL text or in an engine's deparsed plan expressions.

One regular expression walks the text once, left to right. Each match skips everything that is not
a call (string literals, quoted identifiers, comments, dollar-quoted strings, names not followed by
``(``, punctuation) and ends at one call: a name or dotted chain of names followed by ``(``, or at the
end of the text. Every repetition is possessive and every literal or comment that is not closed runs
to the end of the text (names are atomic groups), so no match fails after a long scan (which is what made the old scan
quadratic on a long word) and a one-million-character literal is one step. Between two calls the
GIL is released.

The scan never parses: it over-reports (a keyword before a parenthesis looks like a call), and
callers ignore names their engine does not know.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterator

_IDENT = r'(?>[^\W\d][\w$]*+|"[^"]*+(?:""[^"]*+)*+"?+)'
_CHAIN = rf"{_IDENT}(?:\s*+\.\s*+{_IDENT})*+"
_STRINGS = {False: r"'[^']*+(?:''[^']*+)*+'?+", True: r"'(?:[^'\\]++|\\.|'')*+'?+"}
_COMMENTS = r"|--[^\n]*+|//[^\n]*+|/\*(?:[^*]++|\*(?!/))*+(?:\*/)?+|\$\$(?:[^$]++|\$(?!\$))*+(?:\$\$)?+"
_SKIP = (
    r"(?:{string}{comments}"
    rf"|{_CHAIN}(?!\s*+\()"      # a name that is not called
    r"|\d[\w$]*+"                # a number
    r"|[^\w'\"/\-$]++"           # punctuation, parentheses, dots and spaces
    r"|[/\-$]"                   # what did not start a comment or a dollar-quoted string
    r")*+"
)
_SCANNERS = {
    (backslash, comments): re.compile(
        _SKIP.format(string=_STRINGS[backslash], comments=_COMMENTS if comments else "")
        + rf"(?:(?P<call>{_CHAIN})\s*+\(|\Z)",
        re.DOTALL,
    )
    for backslash in (False, True)
    for comments in (False, True)
}
_PART = re.compile(_IDENT)


@dataclass(frozen=True)
class Call:
    """A name followed by ``(``: ``name`` as the engine would resolve it (quotes removed, unquoted
    names lower-cased) and the dotted ``qualifier`` before it (``""`` when there is none)."""

    name: str
    qualifier: str = ""


def _identifier(text: str) -> str:
    if text.startswith('"'):
        return text[1:-1].replace('""', '"') if len(text) > 1 and text.endswith('"') else text[1:]
    return text.lower()


def function_calls(text: str, *, backslash_escapes: bool = False, comments: bool = False) -> Iterator[Call]:
    """Every distinct call-like ``name(`` in ``text``. ``backslash_escapes``: ``\\'`` does not end a
    string (Snowflake); ``comments``: ``--``, ``/* */``, ``//`` comments and ``$$`` strings are
    skipped (SQL text; a deparsed plan has none)."""
    chains = dict.fromkeys(match["call"] for match in _SCANNERS[(backslash_escapes, comments)].finditer(text))
    for chain in chains:
        if chain:
            parts = [_identifier(part) for part in _PART.findall(chain)]
            yield Call(parts[-1], ".".join(parts[:-1]))
