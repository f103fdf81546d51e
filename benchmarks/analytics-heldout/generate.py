"""The held-out date questions run over the analytics set's own databases: this module builds them with
``benchmarks/analytics/generate.py`` (the same bytes)."""

from __future__ import annotations

from pathlib import Path

from verifiedsql.bench.analytics import load_generator

build = load_generator(Path(__file__).resolve().parent.parent / "analytics").build
