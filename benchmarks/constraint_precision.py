"""Constraint-extraction precision on Spider dev: the share of gold queries that satisfy every constraint
extracted from their question (PV-SQL reports 99.39% on its rules). No model, no database: it parses.

    .venv/bin/python benchmarks/constraint_precision.py [--data /work/shared/data/spider_dev/dev.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from verifiedsql.stages.pvsql.constraints import (
    Constraint,
    ConstraintType,
    Violation,
    check_constraints,
    extract_constraints,
)

DEFAULT_DATA = Path("/work/shared/data/spider_dev/dev.json")


@dataclass(frozen=True)
class FalsePositive:
    question: str
    gold: str
    violations: tuple[Violation, ...]


@dataclass
class PrecisionReport:
    questions: int = 0
    with_constraints: int = 0
    passed: int = 0
    extracted: Counter[ConstraintType] = field(default_factory=Counter)
    satisfied: Counter[ConstraintType] = field(default_factory=Counter)
    false_positives: list[FalsePositive] = field(default_factory=list)

    @property
    def precision(self) -> float:
        """Share of gold queries that satisfy every constraint extracted from their question."""
        return self.passed / self.questions if self.questions else 1.0

    @property
    def coverage(self) -> float:
        """Share of questions with at least one constraint extracted."""
        return self.with_constraints / self.questions if self.questions else 0.0


def measure(examples: list[dict[str, str]], dialect: str = "sqlite") -> PrecisionReport:
    """Check each gold ``query`` against the constraints extracted from its ``question``."""
    report = PrecisionReport()
    for example in examples:
        constraints: list[Constraint] = extract_constraints(example["question"])
        violations = check_constraints(example["query"], constraints, dialect) if constraints else []
        failed = {violation.constraint for violation in violations}
        report.questions += 1
        report.with_constraints += bool(constraints)
        report.passed += not violations
        for constraint in constraints:
            report.extracted[constraint.type] += 1
            report.satisfied[constraint.type] += constraint not in failed
        if violations:
            report.false_positives.append(FalsePositive(example["question"], example["query"], tuple(violations)))
    return report


def render(report: PrecisionReport) -> str:
    lines = [
        f"precision: {report.passed}/{report.questions} = {report.precision:.2%} of gold queries satisfy every "
        "extracted constraint",
        f"coverage:  {report.with_constraints}/{report.questions} = {report.coverage:.2%} of questions have "
        "at least one constraint",
        "",
        f"{'type':<12} {'extracted':>9} {'satisfied':>9}",
    ]
    for kind in ConstraintType:
        lines.append(f"{kind.value:<12} {report.extracted[kind]:>9} {report.satisfied[kind]:>9}")
    lines += ["", f"false positives ({len(report.false_positives)}):"]
    for fp in report.false_positives:
        lines.append(f"- Q: {fp.question}\n  gold: {fp.gold}")
        lines += [f"  {v.constraint.type.value}: {v.message}" for v in fp.violations]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="Spider-format JSON (question, query)")
    parser.add_argument("--min-precision", type=float, default=0.99, help="exit 1 below this precision")
    args = parser.parse_args(argv)
    report = measure(json.loads(args.data.read_text("utf-8")))
    print(render(report))
    return 0 if report.precision >= args.min_precision else 1


if __name__ == "__main__":
    sys.exit(main())
