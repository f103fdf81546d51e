"""DPC: dual-paradigm selection on a minimal distinguishing database (docs/papers.md: DPC, section 3 and
appendices A.1-A.3).

Options ``dpc``, ``dpc_votes``, ``dpc_margin``, ``mdd_max_rows``; report ``dpc``; stage
``DualParadigmTesting`` (a pool stage, also run on a tie that consensus enforcement left). The slice
(``slicer`` in stages/common, ``model_slicer.py``), the distinguishing database (``mdd.py``: deterministic
search, ``mdd_model.py``: the model tester), the pandas solver (``solver.py``), their types (``data.py``)
and prompts (``prompts.py``).
"""

from .stage import DualParadigmTesting

__all__ = ["DualParadigmTesting"]
