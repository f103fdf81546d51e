"""PV-SQL: database probing and rule-checked repair (docs/papers.md: PV-SQL, sections 4.1 to 4.3).

- Value grounding (``grounding.py``): option ``ground_values``; report ``value_matches``; stage ``ValueGrounding``.
- Model probes (``probe.py``): options ``probe``, ``max_probes``, ``probe_timeout_s``; report ``probes`` and
  ``findings``; stage ``ModelProbing``.
- Verify and repair (``constraints.py``, ``verify.py``): options ``verify``, ``max_repairs``; report
  ``constraints`` and each candidate's ``repairs``/``violations``; stage ``VerifyAndRepair``.
Prompts: ``prompts.py``. All three are context stages.
"""

from .grounding import ValueGrounding
from .probe import ModelProbing
from .verify import VerifyAndRepair

__all__ = ["ModelProbing", "ValueGrounding", "VerifyAndRepair"]
