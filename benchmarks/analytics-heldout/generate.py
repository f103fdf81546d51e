"""The held-out date questions run over the analytics set's own databases: this module builds them with
``benchmarks/analytics/generate.py`` (the same bytes)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

_SOURCE = Path(__file__).resolve().parent.parent / "analytics" / "generate.py"
_NAME = "verifiedsql_analytics_heldout_source"
_spec = importlib.util.spec_from_file_location(_NAME, _SOURCE)
assert _spec is not None and _spec.loader is not None
_module = importlib.util.module_from_spec(_spec)
sys.modules[_NAME] = _module  # its dataclasses look their module up there
_spec.loader.exec_module(_module)
build = _module.build
