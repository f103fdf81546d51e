"""Column exploration (ReFoRCE section 3.2.3) for consensus enforcement: when the candidates tie or all fail,
the model proposes up to ``max_explorations`` small exploration queries, from simple (one column's values
and formats) to complex (joins, filters, aggregates), in one reply.

Each query goes through both safety layers (the statement guard in ``bound_probe`` and the read-only
engine run), is bounded to ``PROBE_LIMIT`` rows and to ``probe_timeout_s``. A failing query gets up to
``MAX_CORRECTIONS`` self-corrections with the engine's error; after ``MAX_ERRORS_IN_A_ROW`` failed runs
in a row exploration stops (the paper's insight: one misreading tends to repeat in the queries that
follow). What ran becomes a preview block for the regeneration prompt.
"""

from __future__ import annotations

from typing import Any

from ...db.schema import Schema
from ...errors import (
    LLMError,
    QueryError,
    QueryTimeoutError,
    QuestionTimeoutError,
    UnsafeSQLError,
)
from ...llm.base import Message
from ...llm.replies import extract_sql, first_json, sql_blocks
from ...report import Exploration, LLMPurpose
from ..base import Stage
from ..common.probes import bound_probe, example_probe, preview
from .prompts import explore_fix_messages, explore_messages, render_explorations

MAX_CORRECTIONS = 3  # self-corrections of one failing exploration query
MAX_ERRORS_IN_A_ROW = 5  # failed exploration runs in a row that end exploration


def _json_list(text: str) -> list[Any] | None:
    """The first JSON list in ``text`` (or the first list inside the first JSON object), or None."""
    value = first_json(text, (list, dict))
    if isinstance(value, dict):
        return next((v for v in value.values() if isinstance(v, list)), None)
    return value if isinstance(value, list) else None


def parse_explorations(text: str, limit: int) -> list[str]:
    """At most ``limit`` distinct exploration queries from a reply: a JSON list of SQL strings (or of objects
    with a ``sql`` key), else every fenced SQL block. Trailing semicolons are dropped."""
    found = _json_list(text)
    if found is not None:
        items = [item.get("sql") if isinstance(item, dict) else item for item in found]
        sqls = [item for item in items if isinstance(item, str)]
    else:
        sqls = sql_blocks(text)
    unique: list[str] = []
    for sql in sqls:
        sql = sql.strip().rstrip(";").strip()
        if sql and sql not in unique:
            unique.append(sql)
    return unique[:limit]


class Explorer(Stage):
    """Runs the column-exploration loop for one question within the ``deadline`` and records every query in
    ``report.exploration``."""

    def explore(self, question: str, schema: Schema, schema_text: str, candidates: str, *, tie: bool) -> str:
        """Ask for exploration queries, run them (correcting failures), and return the results block ("" when
        nothing ran). ``candidates`` describes the tied or failing candidates for the model."""
        if self.options.max_explorations == 0:
            return ""
        profile = self.ctx.profile
        example = example_probe(profile, schema, question)
        first = explore_messages(profile, schema_text, question, example, candidates, tie=tie,
                                 count=self.options.max_explorations)
        reply = self._ask(first, "explore", 0)
        if reply is None:
            return ""
        proposals = parse_explorations(reply, self.options.max_explorations)
        if not proposals:
            self.report.notes.append("exploration: the model proposed no exploration query")
            return ""
        errors_in_a_row = 0
        for number, sql in enumerate(proposals):
            if self.deadline.expired:
                self.report.notes.append("exploration stopped: the question's time budget ran out")
                self.deadline.exhausted = True
                break
            for correction in range(MAX_CORRECTIONS + 1):
                entry = self._run(sql, correction)
                if entry.status == "ok":
                    errors_in_a_row = 0
                    break
                errors_in_a_row += 1
                if errors_in_a_row >= MAX_ERRORS_IN_A_ROW or correction == MAX_CORRECTIONS:
                    break
                fixed = self._ask(explore_fix_messages(profile, first, reply, entry.sql, entry.error or ""),
                                  "explore-fix", number * (MAX_CORRECTIONS + 1) + correction + 1)
                fixed_sql = extract_sql(fixed) if fixed is not None else None
                if fixed_sql is None or fixed_sql == sql or fixed_sql == entry.sql:
                    break  # no reply, no SQL, or the failing query again: no progress
                sql = fixed_sql
            if errors_in_a_row >= MAX_ERRORS_IN_A_ROW:
                self.report.notes.append(
                    f"exploration stopped after {MAX_ERRORS_IN_A_ROW} failed exploration queries in a row")
                break
        return render_explorations(self.report.exploration)

    def _ask(self, request_messages: tuple[Message, ...], purpose: LLMPurpose, seed: int) -> str | None:
        try:
            return self.ask(request_messages, purpose, seed=seed).text
        except (LLMError, QuestionTimeoutError) as error:
            self.report.notes.append(f"exploration stopped: {error}")
            return None

    def _run(self, sql: str, correction: int) -> Exploration:
        """Run one exploration query through both safety layers, bounded; record and return its entry."""
        entry = Exploration(sql, "ok", correction=correction)
        try:
            entry.sql = bound_probe(sql, self.database.profile)
            result = self.ctx.query(entry.sql, timeout_s=self.options.probe_timeout_s,
                                    doing="a column exploration query")
        except UnsafeSQLError as failure:
            entry.status, entry.error = "unsafe", str(failure)
        except QueryTimeoutError as failure:
            entry.status, entry.error = "timeout", str(failure)
        except QueryError as failure:
            entry.status, entry.error = "error", str(failure)
        else:
            entry.rows, entry.preview = result.row_count, preview(result)
        self.report.exploration.append(entry)
        return entry
