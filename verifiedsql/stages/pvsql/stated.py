"""The question's stated constraints (PV-SQL's rules: a ratio, a percentage, top-k, a count, distinct, ...)
checked on a chosen SQL's tree, as evidence for the calibrated confidence: no model call, whether or not
``verify``'s repair is on."""

from __future__ import annotations

from ...errors import UnsafeSQLError
from ...report import Evidence
from .constraints import check_constraints, extract_constraints


def stated_constraints(question: str, sql: str, dialect: str) -> Evidence | None:
    """``for`` when the SQL meets every constraint the question states, ``against`` with what it misses; None
    when the question states none or the SQL cannot be read."""
    constraints = extract_constraints(question)
    if not constraints:
        return None
    try:
        violations = check_constraints(sql, constraints, dialect)
    except UnsafeSQLError:
        return None
    if violations:
        return Evidence("constraints", "against", "; ".join(v.message for v in violations))
    return Evidence("constraints", "for", "every constraint the question states is met")
