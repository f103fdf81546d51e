"""The tenth set of held-out date questions (written on 2026-11-29, at the start of the thirtieth session, before
any of its changes) reads the analytics set's databases: ``build`` is that set's generator."""

from __future__ import annotations

from pathlib import Path

from verifiedsql.bench.analytics import load_generator

build = load_generator(Path(__file__).resolve().parent.parent / "analytics").build
