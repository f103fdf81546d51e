"""Deterministic constraint repair (option ``constraint_repair``): each candidate that ran is held against the
arithmetic its question asks for (``rules/``: a ratio or a percentage, the divisor of "A to B", no integer
division, days in the engine's date arithmetic, distinct counts). Where it breaks one, the SQL is repaired on
its sqlglot AST and run again through both safety layers (``execute_candidate``); when the repair runs, it
becomes the candidate's SQL and is recorded as the schema repair records its own (``candidate.attempts``,
``candidate.fixes``). No model is called and no prompt changes.

The rules left broken after repair become the candidate's ``violations``: the chosen candidate's are the
``constraints`` evidence. PV-SQL's other constraints (``constraints.py``) are not held against it here: on
analytics questions they misread "how many days" as a count and ``COUNT(*) / COUNT(DISTINCT ...)`` as no average,
and ``verify`` (whose repair prompts quote them) reads them as they are.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlglot import exp
from sqlglot.errors import SqlglotError

from ...config import Options
from ...errors import QueryError, QueryTimeoutError, UnsafeSQLError
from ...guard.safety import parse_one_query
from ..common.values import LOOKUP_TIMEOUT_S, distinct_scan
from ..context import QuestionContext
from ..generate import CandidateRun, Execution, execute_candidate
from .rules import Env, Rules, problems, read_rules, repair

# what reading or rewriting an odd tree can raise: the candidate is then left as it is
_READ_ERRORS = (SqlglotError, RecursionError, ValueError, KeyError, AttributeError, TypeError, IndexError)
STORED_VALUES = 50  # distinct values of a column a rule reads ("the ratio of A to B": the value B names)


class ConstraintRepair:
    """Context stage (option ``constraint_repair``): the question's rules go into ``report.constraints``, and
    every candidate goes through ``RuleRepairer.check``."""

    name = "constraints"

    def enabled(self, options: Options) -> bool:
        return options.constraint_repair

    def run(self, ctx: QuestionContext) -> None:
        rules = read_rules(ctx.question)
        ctx.report.constraints = rules.describe()
        ctx.candidate_checks.append(RuleRepairer(ctx, rules).check)


class RuleRepairer:
    """The rule repair of one question's candidates; a repaired SQL is run once for the question."""

    def __init__(self, ctx: QuestionContext, rules: Rules) -> None:
        self.ctx = ctx
        self.rules = rules
        profile = ctx.database.profile
        self.env = Env(profile.sqlglot_dialect, profile.name, ctx.schema, self._values)
        self.runs: dict[str, Execution] = {}
        self.read: dict[str, Sequence[object]] = {}

    def _values(self, table: exp.Table, column: exp.Identifier) -> Sequence[object]:
        """Up to STORED_VALUES distinct values of ``column`` (a bounded, read-only scan; none when it fails)."""
        sql = distinct_scan(column, table, STORED_VALUES).sql(dialect=self.env.dialect)
        if sql not in self.read:
            try:
                rows = self.ctx.query(sql, timeout_s=LOOKUP_TIMEOUT_S, doing="a constraint's value lookup").rows
            except (QueryError, QueryTimeoutError, UnsafeSQLError):
                rows = ()
            self.read[sql] = tuple(row[0] for row in rows)
        return self.read[sql]

    def check(self, run: CandidateRun) -> CandidateRun:
        """The run as it was, or its repair when one applies and runs; the candidate's violations are what its
        final SQL still breaks."""
        if run.result is None or not (self.rules.any or self.rules.shape):
            return run
        candidate = run.candidate
        try:
            tree: exp.Expr = parse_one_query(candidate.sql, self.ctx.database.profile)
        except UnsafeSQLError:  # it ran, so the guard read it once; nothing to hold against it
            return run
        try:
            repaired, fixes = repair(tree, self.rules, self.env)
            sql = repaired.sql(dialect=self.env.dialect) if fixes else candidate.sql
        except _READ_ERRORS:
            repaired, fixes, sql = tree, [], candidate.sql
        if fixes and sql != candidate.sql:
            run, tree = self._rerun(run, sql, fixes, tree, repaired)
        candidate.violations = self._violations(tree)
        if not candidate.violations and self.rules.any:
            candidate.checks.append("constraints")
        return run

    def _rerun(self, run: CandidateRun, sql: str, fixes: list[str], tree: exp.Expr,
               repaired: exp.Expr) -> tuple[CandidateRun, exp.Expr]:
        """Run the repaired SQL (once per question); when it runs, it becomes the candidate's SQL."""
        if sql not in self.runs:
            self.runs[sql] = execute_candidate(self.ctx, sql, explain=self.ctx.options.verify)
        execution = self.runs[sql]
        candidate = run.candidate
        if execution.status != "ok" or execution.result is None:
            self.ctx.note(f"candidate {candidate.index}: the constraint repair did not run ({execution.error}); "
                          "the SQL is kept as it was")
            return run, tree
        candidate.attempts.append(candidate.sql)
        candidate.sql = sql
        candidate.fixes = [*candidate.fixes, *fixes]
        candidate.checks = [*execution.checks, "repair"]
        candidate.row_count, candidate.truncated = execution.result.row_count, execution.result.truncated
        return CandidateRun(candidate, execution.result, execution.ordered), repaired

    def _violations(self, tree: exp.Expr) -> list[str]:
        """The rules ``tree`` still breaks."""
        try:
            return problems(tree, self.rules, self.env)
        except _READ_ERRORS:
            return []
