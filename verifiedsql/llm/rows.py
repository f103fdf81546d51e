"""Rows in prompts: the one renderer that writes a table's or a query result's rows as prompt text.

What differs between the prompts is a ``TableStyle`` (cell width, quoted text, a plain or a markdown header,
the line counting rows not shown) and the row limit; three styles are named after their use:

- ``DATA``: test data and results (DPC tester and solver, VET steps): text cells quoted, 60 characters.
- ``PREVIEW``: what a probe or an exploration query returned: plain cells, 40 characters.
- ``REVIEW``: an execution result for R3's reviewers: a markdown table, cells on one line, 40 characters.

A style is part of the prompt's bytes (and so of the record/replay cache key): change one only knowingly.
"""

from __future__ import annotations

import keyword
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..db.schema import Table

BEYOND_CAP = ", and more beyond the row cap"


@dataclass(frozen=True)
class TableStyle:
    """How rows look in one kind of prompt.

    ``cell_chars``: the longest cell text (longer ones are cut and end in "..."); ``quote_text``: strings as
    Python literals (``'it\\'s'``), else as they are; ``markdown``: ``| a | b |`` lines under a ``|---|``
    rule, with newlines and ``|`` in cells replaced, else ``a | b`` lines; ``more``: the line counting the
    rows not shown (``{n}``; ``{beyond}`` says when the row cap cut the result); ``no_columns``: the header
    of a plain table without columns."""

    cell_chars: int = 60
    quote_text: bool = True
    markdown: bool = False
    more: str = "... ({n} more rows{beyond})"
    no_columns: str = "(no columns)"


DATA = TableStyle()
PREVIEW = TableStyle(cell_chars=40, quote_text=False, more="({n} more rows{beyond})", no_columns="")
REVIEW = TableStyle(cell_chars=40, quote_text=False, markdown=True, more="({n} more rows{beyond})")


def cell_text(value: Any, style: TableStyle = DATA) -> str:
    """One cell as the model sees it: NULL, the (quoted) text, or the value, cut to the style's width."""
    if value is None:
        text = "NULL"
    elif style.quote_text and isinstance(value, str):
        text = repr(value)
    else:
        text = str(value)
    if style.markdown:
        text = text.replace("\n", " ").replace("|", "/")
    return text if len(text) <= style.cell_chars else text[: style.cell_chars - 3] + "..."


def render_rows(columns: Sequence[str], rows: Sequence[Sequence[Any]], limit: int | None = None,
                style: TableStyle = DATA, *, truncated: bool = False) -> str:
    """A small table as text: the header, one line per row (at most ``limit``), then a line counting the
    rows not shown (saying so when ``truncated``: the row cap cut the rows short), or ``(no rows)``."""
    shown = rows if limit is None else rows[:limit]
    if style.markdown:
        lines = ["| " + " | ".join(columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
        lines += ["| " + " | ".join(cell_text(v, style) for v in row) + " |" for row in shown]
    else:
        lines = [" | ".join(columns) or style.no_columns]
        lines += [" | ".join(cell_text(v, style) for v in row) for row in shown]
    if len(rows) > len(shown):
        lines.append(style.more.format(n=len(rows) - len(shown), beyond=BEYOND_CAP if truncated else ""))
    if not rows:
        lines.append("(no rows)")
    return "\n".join(lines)


def render_previews(shown: Sequence[tuple[str, str]]) -> str:
    """Queries that ran, each as a ``- `` line with the preview of its rows indented under it."""
    return "\n".join(f"- {sql}\n  " + preview.replace("\n", "\n  ") for sql, preview in shown)


# --- DataFrames (the pandas prompts of DPC's solver and VET) -------------------------------------


def frame_variable(name: str) -> str:
    """The expression that names a table's DataFrame in the pandas namespace."""
    plain = name.isidentifier() and not keyword.iskeyword(name) and name not in {"pd", "np", "tables", "result"}
    return name if plain else f"tables[{name!r}]"


def _column_notes(table: Table, column: str) -> list[str]:
    notes = ["primary key"] if column in table.primary_key else []
    for fk in table.foreign_keys:
        if column in fk.columns:
            parent = fk.referred_columns[fk.columns.index(column)]
            notes.append(f"references {fk.referred_table}.{parent}")
    return notes


def render_dataframe(table: Table, dtypes: Sequence[str], rows: Sequence[Sequence[Any]], *,
                     count_note: str = "") -> str:
    """One table as a DataFrame: its variable, each column with dtype, SQL type and keys, then ``rows``.
    ``count_note`` follows the row count in the heading (VET's "; 3 shown")."""
    lines = [f"DataFrame `{frame_variable(table.name)}` (table {table.name}, {len(rows)} rows{count_note}), "
             "columns:"]
    for column, dtype in zip(table.columns, dtypes):
        notes = ", ".join([column.type, *_column_notes(table, column.name)])
        lines.append(f"  {column.name}: {dtype} ({notes})")
    lines.append(render_rows([c.name for c in table.columns], rows))
    return "\n".join(lines)
