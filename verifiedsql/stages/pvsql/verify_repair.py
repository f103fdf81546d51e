"""Verify and repair (PV-SQL): a candidate that ran is checked against the question's constraints and for
an empty result; a violator is repaired with the violations listed, and every repaired SQL (the last one
too) is run and checked again. The best version (fewest problems; the original wins ties) is kept."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ...config import Options
from ...errors import LLMError, QuestionTimeoutError, UnsafeSQLError
from ...report import Repair
from ...results import ResultSet
from ..base import Stage
from ..context import QuestionContext
from ..generate import CandidateRun, execute_candidate, sql_of
from .constraints import Constraint, ConstraintType, check_constraints, extract_constraints
from .prompts import repair_messages

EMPTY_NOTE = "candidate {index} returned no rows"
EMPTY_PROBLEM = "the query returns no rows, but the question asks for rows: check filter values and joins"
# Questions whose answer is a list of rows (an empty answer is then a sign of a wrong filter).
_ASKS_FOR_ROWS = re.compile(r"^\s*(list|show|give|name|display|find|return|what are|who are|which)\b", re.IGNORECASE)
_ROW_TYPES = {ConstraintType.TOP_K, ConstraintType.EXTREME, ConstraintType.RANKING}


def implies_rows(question: str, constraints: Sequence[Constraint]) -> bool:
    """Whether an empty result cannot be the answer: the question lists things, or asks for a top-k,
    an extreme or a ranking."""
    return bool(_ASKS_FOR_ROWS.search(question)) or any(c.type in _ROW_TYPES for c in constraints)


@dataclass
class _Version:
    sql: str
    result: ResultSet
    ordered: bool
    problems: list[str]


class VerifyAndRepair:
    """Context stage (option ``verify``): the question's constraints go into ``report.constraints``, and
    every candidate is then checked and repaired (``Verifier.verify``, a candidate check)."""

    name = "verify"

    def enabled(self, options: Options) -> bool:
        return options.verify

    def run(self, ctx: QuestionContext) -> None:
        constraints = extract_constraints(ctx.question)
        # after the constraint repair's (which lists these too, and the question's rules)
        ctx.report.constraints = list(dict.fromkeys([*ctx.report.constraints, *(c.describe() for c in constraints)]))
        ctx.candidate_checks.append(Verifier(ctx, constraints).verify)


class Verifier(Stage):
    """Checks and repairs the candidates of one question, within its time budget; the prompt shows the
    schema text as it was when the verifier was made."""

    def __init__(self, ctx: QuestionContext, constraints: Sequence[Constraint]) -> None:
        super().__init__(ctx)
        self.question = ctx.question
        self.schema_text = ctx.schema_text
        self.constraints = list(constraints)
        self.rows_expected = implies_rows(ctx.question, constraints)

    def problems(self, sql: str, result: ResultSet) -> list[str]:
        """What ``sql`` (which ran and gave ``result``) fails to do."""
        try:
            found = [v.message for v in check_constraints(sql, self.constraints, self.database.profile)]
        except UnsafeSQLError:  # it ran, so the guard parsed it; a checker failure is no violation
            found = []
        if result.row_count == 0 and self.rows_expected:
            found.append(EMPTY_PROBLEM)
        return found

    def verify(self, run: CandidateRun) -> CandidateRun:
        """The run itself when it failed or meets every requirement; else the best of it and its repairs."""
        if run.result is None:
            return run
        candidate = run.candidate
        if run.result.row_count == 0:
            self.report.notes.append(EMPTY_NOTE.format(index=candidate.index))
        original = _Version(candidate.sql, run.result, run.ordered, self.problems(candidate.sql, run.result))
        best, current_sql, current_problems = original, original.sql, original.problems
        for _ in range(self.options.max_repairs):
            if not current_problems:
                break
            sql = self._repair(candidate.index, current_sql, current_problems)
            if sql is None or sql == current_sql:
                break
            execution = execute_candidate(self.ctx, sql, explain=True)
            if execution.result is None:
                current_problems = [f"the query failed: {execution.error}"]
                candidate.repairs.append(Repair(sql, execution.status, execution.error, current_problems))
            else:
                current_problems = self.problems(sql, execution.result)
                candidate.repairs.append(Repair(sql, "ok", None, current_problems, execution.result.row_count))
                if len(current_problems) < len(best.problems):
                    best = _Version(sql, execution.result, execution.ordered, current_problems)
            current_sql = sql
        candidate.violations = best.problems
        if not best.problems:
            candidate.checks.append("constraints")
        if best is original:
            return run
        candidate.attempts.append(original.sql)
        candidate.sql, candidate.row_count, candidate.truncated = best.sql, best.result.row_count, best.result.truncated
        return CandidateRun(candidate, best.result, best.ordered)

    def _repair(self, index: int, sql: str, problems: list[str]) -> str | None:
        """The model's repaired SQL, or None when it gave none (or could not be reached in time)."""
        messages = repair_messages(self.ctx.profile, self.schema_text, self.question, sql, problems)
        try:
            reply = self.ask(messages, "repair", seed=index)
        except (LLMError, QuestionTimeoutError) as error:
            self.report.notes.append(f"candidate {index} could not be repaired: {error}")
            return None
        return sql_of(reply)
