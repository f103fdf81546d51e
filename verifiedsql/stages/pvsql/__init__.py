"""PV-SQL: database probing and rule-checked repair (docs/papers.md: PV-SQL, sections 4.1 to 4.3).

- Value grounding (``grounding.py``): option ``ground_values``; report ``value_matches``; stage ``ValueGrounding``.
- Model probes (``probe.py``): options ``probe``, ``max_probes``, ``probe_timeout_s``; report ``probes`` and
  ``findings``; stage ``ModelProbing``.
- Verify and repair (``constraints.py``, ``verify_repair.py``): options ``verify``, ``max_repairs``; report
  ``constraints`` and each candidate's ``repairs``/``violations``; stage ``VerifyAndRepair``.
- Constraint repair without the model (``rules/``, ``rule_repair.py``): option ``constraint_repair``; the
  arithmetic the question's words ask for, repaired on the AST; report ``constraints`` and each candidate's
  ``fixes``/``violations``; stage ``ConstraintRepair``.
Prompts: ``prompts.py``. All four are context stages.
"""

from .grounding import ValueGrounding
from .probe import ModelProbing
from .rule_repair import ConstraintRepair
from .verify_repair import VerifyAndRepair

__all__ = ["ConstraintRepair", "ModelProbing", "ValueGrounding", "VerifyAndRepair"]
