"""Scrubbers for text that leaves verifiedsql: engine error messages (which may quote stored data) and
anything that may carry a credential (model URLs with ``user:pass@``, API keys, ``Authorization`` headers).

``engine_error`` is applied to every database error before it reaches a model prompt or a report. It first
cuts the message to ``ENGINE_ERROR_CHARS`` (``clip``: an engine may quote a value of any size, and no
regular expression here ever sees more than that), then only touches messages that quote data values
(failed conversions, out-of-range values, key and row details), so identifier errors such as ``no such
column: x`` or ``near "x": syntax error`` keep their exact bytes: the record/replay caches of recorded runs
stay valid. ``secrets`` is applied to every model-client error.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import quote, unquote, urlsplit, urlunsplit

VALUE = "<value>"
REDACTED = "<redacted>"
ENGINE_ERROR_CHARS = 4096  # an engine's error text is cut to this many characters before anything reads it
CUT = " [...]"  # what ends a message that ``clip`` cut

# A quoted string: '...' or "..." with SQL-style doubled quotes inside; one that a cut left open runs to the
# end of the text. Possessive repetitions: one step per run of characters, nothing to backtrack into.
_QUOTED = re.compile(r"'[^']*+(?:''[^']*+)*+'?+|\"[^\"]*+(?:\"\"[^\"]*+)*+\"?+")
# Engine messages whose quoted parts are data values (PostgreSQL, DuckDB, Snowflake, SQLite JSON). A
# message matching none of these is returned unchanged.
_DATA_MESSAGES = re.compile(
    r"invalid input (?:syntax|value)|could not convert|conversion error|is out of range|out of range for"
    r"|is not recognized|not a valid|invalid (?:date|time|timestamp|interval|value|escape)"
    r"|malformed|cannot be cast|can't be cast|could not cast|failed to cast|overflow|field value out of range"
    r"|for encoding|byte sequence|invalid byte|unrecognized (?:value|token|encoding)|bad value"
    r"|not recognized|encoding name|invalid size|in tsquery|jsonpath input|invalid type name|unknown timezone",
    re.IGNORECASE,
)
# Lines that quote whole rows or key values (PostgreSQL DETAIL, DuckDB/Snowflake row context).
_DETAIL_LINE = re.compile(r"^\s*(?:DETAIL|CONTEXT|Failing row|Key \().*$", re.IGNORECASE | re.MULTILINE)
# The query echoed back by the engine (PostgreSQL/DuckDB ``LINE 1: ...`` and the caret under it):
# the model's own SQL, kept as it is.
_ECHO_LINE = re.compile(r"^\s*(?:LINE \d+:|\^).*$", re.MULTILINE)
# Numbers in overflow messages: "Overflow in addition of INT32 (2147483647 + 1)!", "with value 300".
_OVERFLOW_OPERANDS = re.compile(r"(?i)(overflow in \w+ of \w+ )\([^)]*\)")
_UNQUOTED_TAIL = re.compile(r"(?i)(value out of range: )(?![\"'])\S.*$")  # "date field value out of range: 2020-13-01"
_WITH_VALUE = re.compile(r"(?i)\b(with value|value) (-?[\d.eE+]+)(?= (?:is|can't|cannot|out))")


def clip(text: str, limit: int = ENGINE_ERROR_CHARS) -> str:
    """``text`` cut to ``limit`` characters (marked with ``CUT``); shorter text comes back unchanged."""
    return text if len(text) <= limit else text[:limit] + CUT


def engine_error(message: str, *, data: bool = False) -> str:
    """``message`` cut to ``ENGINE_ERROR_CHARS``, with the data values it quotes replaced by ``<value>`` and
    DETAIL lines dropped.

    Only messages about values (failed casts, ranges, encodings) are rewritten; identifier and syntax
    errors come back byte for byte. ``data``: the error came while the query ran over stored rows, so every
    line but the engine's echo of the query is read as quoting values (PostgreSQL's ``syntax error at or
    near "..."`` about a stored value that is not a valid ``regtype``, a ``relation "..."`` from a
    ``regclass`` cast)."""
    message = clip(message)
    text = _DETAIL_LINE.sub("", message)
    if text != message:
        text = re.sub(r"\n{2,}", "\n", text).strip()
    lines = text.split("\n")
    if not data and not any(_DATA_MESSAGES.search(line) for line in lines if not _ECHO_LINE.match(line)):
        return text
    return "\n".join(line if _ECHO_LINE.match(line) else _mask_values(line, data) for line in lines)


def _mask_values(line: str, data: bool = False) -> str:
    if not data and not _DATA_MESSAGES.search(line):
        return line
    line = _QUOTED.sub(lambda m: f"{m.group(0)[0]}{VALUE}{m.group(0)[0]}", line)
    line = _OVERFLOW_OPERANDS.sub(rf"\1({VALUE})", line)
    line = _UNQUOTED_TAIL.sub(rf"\1{VALUE}", line)
    return _WITH_VALUE.sub(rf"\1 {VALUE}", line)


# ------------------------------------------------------------------------------------------ secrets

_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@:'\"]*(?::[^/\s@'\"]*)?@")
_BEARER = re.compile(r"(?i)\b(authorization\s*[:=]\s*['\"]?)(?:bearer|basic|token)?\s*[^\s'\",}]+")
_API_KEY_SHAPES = re.compile(r"\b(?:sk|pk|rk)-[A-Za-z0-9_\-]{8,}|\bBearer\s+[A-Za-z0-9._\-~+/=]{8,}")
_KEY_ASSIGNMENT = re.compile(
    r"(?i)\b((?:api[_-]?key|access[_-]?token|password|secret)\s*[=:]\s*['\"]?)[^\s'\",}&]+")
_MIN_SECRET_CHARS = 4  # shorter "secrets" (placeholders such as "x") would mangle ordinary words


def split_credentials(url: str | None) -> tuple[str | None, tuple[str, str] | None]:
    """``url`` without its ``user:password@`` part, and that user and password (percent-decoded); the
    second item is None when the URL holds none."""
    try:
        parts = urlsplit(url or "")
    except ValueError:
        return url, None
    userinfo, at, host = parts.netloc.rpartition("@")
    if not at:
        return url, None
    user, _, password = userinfo.partition(":")
    return urlunsplit(parts._replace(netloc=host)), (unquote(user), unquote(password))


def url_without_credentials(url: str | None) -> str | None:
    """``url`` with its ``user:password@`` part replaced by ``<redacted>@`` (None stays None)."""
    bare, credentials = split_credentials(url)
    if credentials is None or bare is None:  # none, or a URL too malformed to split: scrub by pattern
        return _URL_USERINFO.sub(rf"\1{REDACTED}@", url) if url else url
    parts = urlsplit(bare)
    return urlunsplit(parts._replace(netloc=f"{REDACTED}@{parts.netloc}"))


def url_secrets(url: str | None) -> list[str]:
    """The user name and password written into ``url`` (empty when it has none)."""
    return [value for value in split_credentials(url)[1] or () if value]


def secrets(text: str, known: Iterable[str | None] = ()) -> str:
    """``text`` with every credential replaced by ``<redacted>``: URL userinfo, ``Authorization`` header
    values, key-shaped tokens (``sk-...``, ``Bearer ...``), ``api_key=...`` assignments, and each
    ``known`` secret value (the configured API key, the URL's password), also URL-encoded."""
    values = sorted({v for v in known if v and len(v) >= _MIN_SECRET_CHARS}, key=len, reverse=True)
    for value in values:
        for form in dict.fromkeys((value, _percent_encoded(value))):
            text = text.replace(form, REDACTED)
    text = _URL_USERINFO.sub(rf"\1{REDACTED}@", text)
    text = _BEARER.sub(rf"\1{REDACTED}", text)
    text = _KEY_ASSIGNMENT.sub(rf"\1{REDACTED}", text)
    return _API_KEY_SHAPES.sub(REDACTED, text)


def _percent_encoded(value: str) -> str:
    return quote(value, safe="")
