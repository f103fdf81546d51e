"""The literals of a question worth looking up (quoted strings, capitalised terms not at a sentence
start, numbers, dates), and which column types hold text: shared by value grounding, probing and
column exploration; whether the question names a value an answer compares with (evidence); and whether it
asks for a value per group (``ASKS_PER_GROUP``: the grouping doubt and the one-value repair)."""

from __future__ import annotations

import os
import re

MAX_TERMS = 8
TEXT_TYPE = re.compile(r"CHAR|TEXT|STRING|CLOB|VARCHAR", re.IGNORECASE)

# words that ask for a value per group, or for several rows; without them a question asks for one value
ASKS_PER_GROUP = re.compile(r"\b(?:each|every|per|by|for all|respective|respectively|list|show|group|groups|"
                            r"breakdown|across|what are)\b"
                            r"|(?<!\bin )(?<!\bon )(?<!\bat )(?<!\bof )(?<!\bduring )\bwhich\b",  # not "in which"
                            re.IGNORECASE)

_QUOTED = re.compile(r"""(?<!\w)(['"‘“])(.+?)(['"’”])(?!\w)""")
_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b|\b\d{1,2}/\d{1,2}/\d{4}\b")
_NUMBER = re.compile(r"(?<![\w.-])\d+(?:\.\d+)?(?![\w-])")
_CAPITALISED = re.compile(r"\b[A-Z][\w&.'-]*(?:\s+(?:of\s+|de\s+|the\s+)?[A-Z][\w&.'-]*)*")
_SENTENCE_START = re.compile(r"(?:^|[.?!:]\s+|\n\s*)$")
_STOP = {"I", "A", "SQL", "ID"}


def question_terms(question: str) -> list[str]:
    """The literals worth looking up, in question order, without duplicates (at most MAX_TERMS)."""
    found: list[str] = [m.group(2).strip() for m in _QUOTED.finditer(question)]
    rest = _QUOTED.sub(" ", question)
    found += _DATE.findall(rest)
    rest = _DATE.sub(" ", rest)
    for match in _CAPITALISED.finditer(rest):
        term = match.group(0).rstrip(".'-")
        words = term.split()
        if _SENTENCE_START.search(rest[: match.start()]):
            words = words[1:]  # the first word of a sentence is capitalised anyway
        if words and " ".join(words) not in _STOP:
            found.append(" ".join(words))
    found += _NUMBER.findall(rest)
    terms: list[str] = []
    for term in found:
        term = term.replace("\\", "").strip()
        if term and term.casefold() not in {t.casefold() for t in terms}:
            terms.append(term)
    return terms[:MAX_TERMS]


_WORD = re.compile(r"[^\W_]+")
MIN_STEM = 3  # two words of at least this many letters match when they differ only after their shorter one's end


def named_in(value: str, question: str) -> bool:
    """Whether ``question`` names ``value``: every word of it is a word of the question, case aside, or shares
    all but the last letter of the shorter one (``Europe``/``European``, ``amenity``/``amenities``). A value
    with no letter (a number, a date) counts as named: those are checked elsewhere."""
    words = [w.casefold() for w in _WORD.findall(value)]
    if not any(ch.isalpha() for w in words for ch in w):
        return True
    asked = [w.casefold() for w in _WORD.findall(question)]

    def stem_of(a: str, b: str) -> bool:
        shared = len(os.path.commonprefix([a, b]))
        return shared >= max(MIN_STEM, min(len(a), len(b)) - 1)
    return all(any(word == other or stem_of(word, other) for other in asked) for word in words)
