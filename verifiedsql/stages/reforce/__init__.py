"""ReFoRCE: schema compression, column exploration and consensus enforcement (docs/papers.md: ReFoRCE,
sections 3.2.1 to 3.2.3).

- Schema compression (``compress.py``): options ``compress_schema``, ``prompt_budget_tokens``; report
  ``schema_compression``; stage ``SchemaCompression`` (a context stage).
- Consensus enforcement with column exploration (``consensus.py``, ``explore.py``): options ``consensus``,
  ``max_explorations``;
  report ``consensus`` and ``exploration``; stage ``ConsensusEnforcement`` (a pool stage).
Prompts: ``prompts.py``.
"""

from .compress import SchemaCompression
from .consensus import ConsensusEnforcement

__all__ = ["ConsensusEnforcement", "SchemaCompression"]
