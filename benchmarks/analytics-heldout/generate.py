"""The first set of later date questions (held out until its answers were read; now a fit set) runs over the
analytics set's own databases: this module builds them with ``benchmarks/analytics/generate.py``."""

from __future__ import annotations

from pathlib import Path

from verifiedsql.bench.analytics import load_generator

build = load_generator(Path(__file__).resolve().parent.parent / "analytics").build
