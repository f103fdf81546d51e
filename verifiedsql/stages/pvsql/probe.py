"""Model probes (PV-SQL section 4.1): before generation the model may run up to ``max_probes`` small,
read-only exploratory queries; what they show becomes grounding context for the generation prompt.

Every probe goes through both safety layers, is bounded to ``PROBE_LIMIT`` rows (a larger or missing
LIMIT is rewritten on the sqlglot AST in the engine's dialect) and to ``probe_timeout_s``. A failed
probe's error is shown to the model in the next step. Value mappings the model claims are kept only when a
probe actually returned the stored value, and relevant columns only when they exist, so a hallucinated
finding never reaches the prompt.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...config import Options
from ...db.schema import Schema
from ...errors import (
    LLMError,
    QueryError,
    QueryTimeoutError,
    QuestionTimeoutError,
    UnsafeSQLError,
)
from ...llm.replies import first_json
from ...report import Probe
from ..base import Stage
from ..common.probes import bound_probe, example_probe, preview
from ..context import QuestionContext
from .prompts import probe_messages, render_findings

MAX_INVALID_IN_A_ROW = 2  # a model that cannot answer in JSON twice running is not asked again


@dataclass(frozen=True)
class ProbeDecision:
    """One parsed probing reply."""

    action: str  # "probe" or "done"
    sql: str | None
    relevant_columns: dict[str, list[str]] = field(default_factory=dict)
    value_mappings: dict[str, str] = field(default_factory=dict)


def parse_decision(text: str) -> ProbeDecision | None:
    """A reply in the probing protocol, or None when it is not one (no JSON, unknown action, no SQL)."""
    data = first_json(text, dict)
    if not isinstance(data, dict):
        return None
    action = str(data.get("action", "")).strip().lower()
    sql = data.get("probe_sql")
    sql = sql.strip().rstrip(";").strip() if isinstance(sql, str) and sql.strip() else None
    if action not in ("probe", "done") or (action == "probe" and sql is None):
        return None
    columns = data.get("relevant_columns")
    relevant = {
        str(table): [str(c) for c in cols if isinstance(c, str)]
        for table, cols in (columns.items() if isinstance(columns, dict) else ())
        if isinstance(cols, list)
    }
    mappings = data.get("value_mappings")
    values = {
        str(term): str(value)
        for term, value in (mappings.items() if isinstance(mappings, dict) else ())
        if isinstance(value, (str, int, float)) and not isinstance(value, bool)
    }
    return ProbeDecision(action, sql, relevant, values)


class ModelProbing:
    """Context stage (option ``probe``): the model's probes and findings go into ``report.probes`` and
    ``report.findings``, and what they showed into the prompt."""

    name = "probe"

    def enabled(self, options: Options) -> bool:
        return options.probe

    def run(self, ctx: QuestionContext) -> None:
        ctx.add_context(Prober(ctx).explore(ctx.question, ctx.schema, ctx.schema_text))


class Prober(Stage):
    """Runs the probing loop for one question, within its time budget, and records probes and findings in
    the report."""

    def __init__(self, ctx: QuestionContext) -> None:
        super().__init__(ctx)
        self._seen_values: set[str] = set()
        self._asked: set[str] = set()

    def explore(self, question: str, schema: Schema, schema_text: str) -> str:
        """Probe, then return the grounding block for the generation prompt ("" when nothing was learned)."""
        example = example_probe(self.database.profile, schema, question)
        history: list[str] = []
        invalid_in_a_row = 0
        for step in range(self.options.max_probes):
            messages = probe_messages(self.ctx.profile, schema_text, question, example, "\n\n".join(history))
            try:
                reply = self.ask(messages, "probe", seed=step)
            except LLMError as error:
                self.report.notes.append(f"probing stopped: the model could not be reached ({error})")
                break
            except QuestionTimeoutError as error:
                self.report.notes.append(f"probing stopped: {error}")
                break
            decision = parse_decision(reply.text)
            if decision is None:
                invalid_in_a_row += 1
                self.report.probes.append(Probe(reply.text.strip()[:200], "invalid", "not a JSON probe decision"))
                history.append(f"Probe {step + 1}: your reply was not the JSON object asked for.")
                if invalid_in_a_row >= MAX_INVALID_IN_A_ROW:
                    self.report.notes.append("probing stopped: the model did not answer in the probe format")
                    break
                continue
            invalid_in_a_row = 0
            self._record(decision, schema)
            if decision.action == "done" or decision.sql is None:
                break
            if decision.sql in self._asked:
                self.report.notes.append("probing stopped: the model repeated a probe")
                break
            self._asked.add(decision.sql)
            history.append(self._run(step, decision.sql))
        self._keep_seen_mappings()
        return render_findings(self.report.probes, self.report.findings)

    def _run(self, step: int, sql: str) -> str:
        """Run one probe; its entry for the model's history."""
        status, error, result = "ok", None, None
        try:
            sql = bound_probe(sql, self.database.profile)
            result = self.ctx.query(sql, timeout_s=self.options.probe_timeout_s, doing="a probe")
        except UnsafeSQLError as failure:
            status, error = "unsafe", str(failure)
        except QueryTimeoutError as failure:
            status, error = "timeout", str(failure)
        except QueryError as failure:
            status, error = "error", str(failure)
        if result is None:
            self.report.probes.append(Probe(sql, status, error))  # type: ignore[arg-type]
            return f"Probe {step + 1}:\n{sql}\nError: {(error or '')[:400]}"
        self._seen_values.update(str(v) for row in result.rows for v in row if v is not None)
        shown = preview(result)
        self.report.probes.append(Probe(sql, "ok", None, result.row_count, shown))
        return f"Probe {step + 1}:\n{sql}\nResult ({result.row_count} rows):\n{shown}"

    def _record(self, decision: ProbeDecision, schema: Schema) -> None:
        findings = self.report.findings
        for table_name, columns in decision.relevant_columns.items():
            table = schema.table(table_name)
            if table is None:
                continue
            known = [c.name for name in columns if (c := table.column(name)) is not None]
            merged = findings.relevant_columns.setdefault(table.name, [])
            merged.extend(name for name in known if name not in merged)
        findings.value_mappings.update(decision.value_mappings)

    def _keep_seen_mappings(self) -> None:
        """Move the mappings whose value no probe returned to ``dropped_mappings``."""
        findings = self.report.findings
        for term, value in list(findings.value_mappings.items()):
            if value not in self._seen_values:
                findings.dropped_mappings[term] = findings.value_mappings.pop(term)
        findings.relevant_columns = {t: cols for t, cols in findings.relevant_columns.items() if cols}
