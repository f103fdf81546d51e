"""Reading model replies: the one place that finds code fences, SQL, Python and JSON in what a model wrote,
and that builds the follow-up turn answering a reply. Every stage reads replies through these functions,
so one reply parses the same way whichever method asked for it.

- Fences: ``fences`` is the only fence scanner. A fence opens at three backticks with an optional language
  tag alone on its line, and closes at the next three backticks; an unterminated last fence (a reply cut
  off inside it) runs to the end and is marked open. ``inline=True`` is the reading SQL extraction has
  always used: any three backticks open a fence, and the code may start on the opening line.
- SQL: ``extract_sql`` (the first fence, else a query that starts a line in prose); ``sql_blocks`` (every
  closed SQL or untagged fence).
- Python: ``extract_python`` (the first ```python fence, else the first untagged one).
- JSON: ``read_json`` / ``first_json`` is the only JSON scanner: ```json and untagged fences first, then the
  whole text; in each, every balanced top-level ``{...}`` or ``[...]`` (brackets inside strings ignored),
  read as JSON, else as a Python literal (single quotes, None, True). Both parsers only read data.
- Turns: ``follow_up`` (the first turn, the reply, then feedback) and ``error_tail`` (the end of an error,
  where its cause is).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from .base import Message, messages
from .portable import portable_tail

ERROR_TAIL_CHARS = 1500  # of a traceback or a database error shown to the model

# --- fences --------------------------------------------------------------------------------------

# A fence opens with its tag alone on the line ("```sql", "``` python", "```"): three backticks followed by
# more words on the line are prose ("in a ```sql block:") and open nothing. The body runs to the next three
# backticks or, for a reply cut off inside a block, to the end. (The empty first group keeps the groups
# in step with _INLINE_FENCE's.)
_FENCE = re.compile(r"```[ \t\r]*()([A-Za-z0-9_+-]*)[ \t\r]*\n(.*?)(```|\Z)", re.DOTALL)
# Inline: any three backticks open a fence. The tag is a word alone on the line, else the word right after
# the backticks, with the code going on on the same line ("```sql SELECT 1```", "in a ```sql block:").
_INLINE_FENCE = re.compile(
    r"```(?:[ \t]*([A-Za-z0-9_+-]+)[ \t\r]*\n|([A-Za-z0-9_+-]*)[ \t\r]*\n?)(.*?)(```|\Z)", re.DOTALL
)
PYTHON_TAGS = ("python", "py", "python3")


@dataclass(frozen=True)
class Fence:
    """One fenced block: its language tag (lower case, "" when untagged), its body, whether it was closed,
    and where it lies in the reply (``start`` at the opening backticks, ``end`` after the closing ones)."""

    tag: str
    body: str
    closed: bool
    start: int
    end: int


def fences(text: str, *, inline: bool = False) -> list[Fence]:
    """Every fenced block of a reply, in order; an unterminated last block runs to the end (``closed`` False).
    ``inline``: any three backticks open a block (see ``_INLINE_FENCE``), as SQL extraction reads them."""
    return [
        Fence((m.group(1) or m.group(2) or "").lower(), m.group(3), bool(m.group(4)), m.start(), m.end())
        for m in (_INLINE_FENCE if inline else _FENCE).finditer(text)
    ]


def has_closed_fence(text: str) -> bool:
    """Whether the reply's first fenced block (read as ``extract_sql`` reads it) is closed: a reply cut off
    inside its first block is not."""
    found = fences(text, inline=True)
    return bool(found) and found[0].closed


def without_fences(text: str) -> str:
    """The reply with every fenced block (backticks and body, any three backticks opening one) taken out:
    the prose around the code."""
    kept, at = [], 0
    for fence in fences(text, inline=True):
        kept.append(text[at:fence.start])
        at = fence.end
    return "".join(kept) + text[at:]


# --- SQL -----------------------------------------------------------------------------------------

_CODE_START = re.compile(r"\b(SELECT|WITH)\b", re.IGNORECASE)
# In prose a query must begin a line or follow a colon, so "select" or "with" in a sentence is no SQL.
_PROSE_START = re.compile(r"(?:^|\n|:[ \t]*)[ \t]*(SELECT\b|WITH\s+\w+\s+AS\s*\()", re.IGNORECASE)
_TAG_LINE = re.compile(r"^[a-zA-Z]*\n")


def _statement(sql: str) -> str | None:
    sql = sql.strip().rstrip(";").strip()
    return sql or None


def extract_sql(text: str) -> str | None:
    """The SQL in a model reply: the whole first fenced block (whatever statement it holds, so the
    safety guard can name it), else the text from the first SELECT/WITH that starts a line.

    Returns None when the reply holds no query at all (prose, refusal, empty output). Fences are read
    ``inline`` (the reading the recorded benchmark runs were made with).
    """
    found = fences(text, inline=True)
    if found and found[0].closed:
        return _statement(found[0].body)
    if found:  # cut off inside the block: the query from its first SELECT/WITH
        body, pattern = _TAG_LINE.sub("", text[found[0].start + 3:], count=1), _CODE_START
    else:
        body, pattern = text, _PROSE_START
    start = pattern.search(body)
    if not start:
        return None
    return _statement(body[start.start(1):].strip().split("\n\n\n")[0])


def sql_blocks(text: str) -> list[str]:
    """The statement of every closed fenced block tagged as SQL (``sql``, ``sqlite``, ...) or untagged, in
    order; empty blocks are left out."""
    found = (_statement(f.body) for f in fences(text) if f.closed and (not f.tag or "sql" in f.tag))
    return [sql for sql in found if sql]


# --- Python --------------------------------------------------------------------------------------


def extract_python(text: str) -> str | None:
    """The code of the first ```python block, else of the first untagged block; None when there is none."""
    blocks = fences(text)
    for wanted in (PYTHON_TAGS, ("",)):
        code = next((f.body.strip() for f in blocks if f.tag in wanted and f.body.strip()), None)
        if code:
            return code
    return None


# --- JSON ----------------------------------------------------------------------------------------

_OPENERS: dict[type, str] = {dict: "{", list: "["}
_CLOSERS = {"{": "}", "[": "]"}
_KIND_NAMES: dict[type, str] = {dict: "object", list: "list"}


def _spans(text: str, opener: str) -> Iterator[tuple[int, str]]:
    """(start, text) of every top-level balanced span opening with ``opener`` (``{`` or ``[``); the other
    kind of bracket is ignored, and so are brackets inside quoted strings (double or single quotes)."""
    closer = _CLOSERS[opener]
    depth, start, quote, escaped = 0, -1, "", False
    for i, ch in enumerate(text):
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = ""
        elif ch in "\"'" and depth:
            quote = ch
        elif ch == opener:
            depth, start = depth + 1, i if depth == 0 else start
        elif ch == closer and depth:
            depth -= 1
            if depth == 0:
                yield start, text[start : i + 1]


def loads_json(text: str) -> Any:
    """``json.loads`` for model text: JSON nested too deeply to parse raises ``ValueError``, like bad JSON."""
    try:
        return json.loads(text)
    except RecursionError as error:
        raise ValueError("the JSON is nested too deeply to read") from error


def _loads(span: str) -> Any:
    """JSON, else a Python literal (single quotes, None/True): both parsers only read data."""
    try:
        return loads_json(span)
    except ValueError as json_error:
        try:
            return ast.literal_eval(span)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            raise json_error from None


def _kinds(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def read_json(text: str, kind: type | tuple[type, ...] = (dict, list)) -> Any:
    """The first JSON value of ``kind`` (``dict``, ``list`` or both) in a model reply: the bodies of ```json
    and untagged fences first, then the whole text; in each, the balanced top-level spans of that kind in
    order, each read as JSON, else as a Python literal. An object inside a list (or the reverse) is found
    too, since each kind of bracket is balanced on its own.

    Raises ``ValueError`` (with the parser's complaint about the first span that did not parse) when no
    value of ``kind`` can be read.
    """
    kinds = _kinds(kind)
    chunks = [f.body for f in fences(text) if f.tag in ("json", "")] + [text]
    first_error: ValueError | None = None
    for chunk in chunks:
        spans = sorted((start, span) for k in kinds for start, span in _spans(chunk, _OPENERS[k]))
        for _, span in spans:
            try:
                value = _loads(span)
            except ValueError as error:
                first_error = first_error or error
                continue
            if isinstance(value, kinds):
                return value
    if first_error is not None:
        raise ValueError(f"the JSON could not be parsed: {first_error}")
    raise ValueError(f"the reply holds no JSON {' or '.join(_KIND_NAMES[k] for k in kinds)}")


def first_json(text: str, kind: type | tuple[type, ...] = (dict, list)) -> Any:
    """``read_json``, with None when the reply holds no readable value of ``kind``."""
    try:
        return read_json(text, kind)
    except ValueError:
        return None


def extract_json_object(text: str) -> dict[str, Any]:
    """The first JSON object in a reply (``read_json`` for objects); ``ValueError`` when there is none."""
    value: dict[str, Any] = read_json(text, dict)
    return value


# --- short answers -------------------------------------------------------------------------------

_WORD = re.compile(r"[A-Za-z]+")
_YES_NO = {"yes": True, "y": True, "no": False, "n": False}


def yes_no(text: str) -> bool | None:
    """True for a reply whose first word is YES (or Y), False for NO (or N), None for anything else."""
    word = _WORD.search(text)
    return None if word is None else _YES_NO.get(word.group(0).lower())


# --- turns ---------------------------------------------------------------------------------------


def error_tail(error: str) -> str:
    """The end of a traceback or error message, where the cause is: its last ``ERROR_TAIL_CHARS``, with the
    environment's path counted at a fixed width (``portable_tail``), so it is cut alike in every checkout."""
    error = error.strip()
    tail = portable_tail(error, ERROR_TAIL_CHARS)
    return error if tail is None else "..." + tail


def follow_up(first: tuple[Message, ...], reply: str, feedback: str) -> tuple[Message, ...]:
    """The first turn, the model's latest reply, then the feedback on it (earlier rounds are dropped)."""
    return messages(first[0]["content"], feedback, [first[1], {"role": "assistant", "content": reply}])


def sql_answer(sql: str) -> str:
    """A query written as the model's answer in a follow-up turn: in one ```sql block."""
    return f"```sql\n{sql}\n```"
