"""VET: verifiable execution tracing (docs/papers.md: VET, sections 3.3 to 3.5).

Options ``vet``, ``vet_max_rows`` (and the trace's step limits); report ``trace``; stage
``ExecutionTracing`` (a pool stage) in ``stage.py``; the candidate tables and their rows in ``data.py``,
the step checks in ``steps.py``, prompts in ``prompts.py``.
"""

from .stage import ExecutionTracing

__all__ = ["ExecutionTracing"]
