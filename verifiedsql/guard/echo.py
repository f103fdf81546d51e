"""Engine errors told about the SQL the model wrote, not about the statement the library sent.

The engine guard (``readonly``) sometimes sends a candidate inside a wrapper of its own: PostgreSQL plans
every query as ``EXPLAIN (VERBOSE, FORMAT JSON) <sql>``, and the syntax check of verify-and-repair sends
``EXPLAIN <sql>`` (DuckDB, Snowflake) or ``EXPLAIN QUERY PLAN <sql>`` (SQLite). An engine that echoes the
statement in its error (PostgreSQL's and DuckDB's ``LINE 1: ...`` with a caret, PostgreSQL's ``at
character N``, Snowflake's ``line 1 at position N``) would then show the model a statement it never
wrote, with the caret shifted by the wrapper. Every wrapper is a known prefix without a line break, so
``unwrapped`` moves each position back by exactly its length (offset arithmetic, never a guess): the
echoed line loses the wrapper's text and the caret moves with it; positions on later lines are the
candidate's already. An echo that does not match the statement sent is dropped rather than shown with
a position that may be wrong. SQLite's messages carry no position, and a message about a statement
sent as written is returned byte for byte.
"""

from __future__ import annotations

import re
import unicodedata

# An echoed line and its caret (libpq and DuckDB write them alike), with the line break before it:
# "\nLINE 3: <text>\n<spaces>^".
_ECHO = re.compile(r"(?P<before>\n?)^(?P<block>LINE (?P<line>\d+): (?P<body>.*)\n(?P<caret> *)\^)$", re.MULTILINE)
_SNOWFLAKE_POSITION = re.compile(r"\bline (\d+) at position (\d+)\b")
_DOTS = "..."
# libpq's reportErrorPosition (fe-protocol3.c): the echoed line is cut to this many screen columns, and
# when it is cut on the right, at least MIN_RIGHT_CUT of them are kept after the error.
_LIBPQ_DISPLAY_SIZE = 60
_LIBPQ_MIN_RIGHT_CUT = 10


def unwrapped(message: str, prefix: str | None, sql: str, *, position: int | None = None) -> str:
    """``message``, the engine's error for the statement ``prefix + sql``, with every position it gives
    relative to ``sql`` alone and no text of ``prefix`` in its echo.

    ``position`` is the 1-based character position of the error in the statement sent, where the driver
    reports it (PostgreSQL's ``statement_position``). ``prefix=""``: the statement was sent as written and
    the message is returned unchanged. ``prefix=None``: it was sent inside a wrapper whose exact text is
    not known here, so an echo of its first line and any character position are dropped.
    """
    if prefix == "":
        return message
    if prefix is None or "\n" in prefix or "\r" in prefix:
        text = _ECHO.sub(lambda m: m[0] if m["line"] != "1" else "", message)
        text = re.sub(r" at character \d+\b", "", text)
        return text.rstrip() if text != message else message
    sent = prefix + sql
    verified = _libpq_echo(sent, position) if position is not None else None

    def moved(match: re.Match[str]) -> str:
        block = _moved_echo(match, prefix, sent, sql, position if match["block"] == verified else None)
        return match["before"] + block if block else ""

    text = _ECHO.sub(moved, message)
    if position is not None:
        text = text.replace(f" at character {position}",
                            f" at character {position - len(prefix)}" if position > len(prefix) else "")
    text = _SNOWFLAKE_POSITION.sub(lambda m: _moved_snowflake(m, len(prefix)), text)
    return text.rstrip() if text != message else message


def _moved_echo(match: re.Match[str], prefix: str, sent: str, sql: str, position: int | None) -> str:
    """One echoed line and caret of ``sent`` (= ``prefix + sql``), told about ``sql``; "" when it cannot be."""
    if match["line"] != "1":  # the prefix holds no line break: a later line is the candidate's own
        return match["block"]
    if position is not None:  # libpq's own rendering, reproduced exactly: render the candidate's
        moved = position - len(prefix)
        return (_libpq_echo(sql, moved) or "") if moved >= 1 else ""
    return _shifted_echo(match["body"], len(match["caret"]), prefix, _first_line(sent))


def _shifted_echo(body: str, caret: int, prefix: str, line: str) -> str:
    """The echo ``LINE 1: <body>`` with its caret at column ``caret``, where ``body`` shows a stretch of
    ``line`` (the first line sent), maybe cut with "..." on either side: the stretch of the wrapper is
    taken out and the caret moved left by the columns taken out (the wrappers are ASCII)."""
    head = "LINE 1: "
    core = body[: -len(_DOTS)] if body.endswith(_DOTS) else body
    if line.startswith(core):
        cut_left, start = 0, 0
    elif core.startswith(_DOTS):
        core, cut_left = core[len(_DOTS):], len(_DOTS)
        inside = [s for s in range(1, len(prefix)) if line.startswith(core, s)]
        after = line.find(core, len(prefix)) >= 0
        if len(inside) + after != 1:
            return ""  # not an echo of this statement, or one that could sit in two places
        start = inside[0] if inside else len(prefix)
    else:
        return ""
    if start >= len(prefix):  # the stretch shown is the candidate's own
        return f"{head}{body}\n{' ' * caret}^"
    hidden = cut_left + len(prefix) - start  # columns of "..." and of the wrapper before the candidate
    if caret - len(head) < hidden:
        return ""  # the error is in the wrapper itself: there is nothing of the candidate to point at
    return f"{head}{body[hidden:]}\n{' ' * (caret - hidden)}^"


def _moved_snowflake(match: re.Match[str], shift: int) -> str:
    """Snowflake's ``line L at position P`` (P: 0-based column of line L), told about the candidate."""
    line, column = int(match[1]), int(match[2])
    if line != 1:
        return match[0]
    return f"line 1 at position {column - shift}" if column >= shift else "line 1"


def _first_line(text: str) -> str:
    return re.split(r"[\r\n]", text, maxsplit=1)[0]


def _libpq_width(char: str) -> int:
    """Screen columns of one character as libpq counts them in UTF-8: 2 for wide East Asian characters,
    1 for every other one (control and combining characters included; a tab is shown as a space)."""
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def _libpq_echo(query: str, position: int) -> str | None:
    """The ``LINE n: ...`` line and caret line libpq writes for an error at the 1-based character
    ``position`` of ``query`` (``reportErrorPosition`` of fe-protocol3.c), without the final line break;
    None where libpq writes none."""
    loc = position - 1
    if loc < 0 or loc > len(query):
        return None
    columns: list[int] = []  # the starting screen column of each character up to the end of loc's line
    column, line, begin, end = 0, 1, 0, len(query)
    for index, char in enumerate(query):
        columns.append(column)
        if char in "\r\n":
            if index >= loc:
                end = index
                break
            if char == "\r" or index == 0 or query[index - 1] != "\r":
                line += 1
            begin = index + 1
        column += 1 if char == "\t" else _libpq_width(char)
    else:
        columns.append(column)
    cut_begin = cut_end = False
    if columns[end] - columns[begin] > _LIBPQ_DISPLAY_SIZE:
        if columns[begin] + _LIBPQ_DISPLAY_SIZE >= columns[loc] + _LIBPQ_MIN_RIGHT_CUT:
            while columns[end] - columns[begin] > _LIBPQ_DISPLAY_SIZE:
                end -= 1
            cut_end = True
        else:
            while columns[loc] + _LIBPQ_MIN_RIGHT_CUT < columns[end]:
                end -= 1
                cut_end = True
            while columns[end] - columns[begin] > _LIBPQ_DISPLAY_SIZE:
                begin += 1
                cut_begin = True
    head = f"LINE {line}: " + (_DOTS if cut_begin else "")
    shown = query[begin:end].replace("\t", " ") + (_DOTS if cut_end else "")
    return f"{head}{shown}\n{' ' * (len(head) + columns[loc] - columns[begin])}^"
