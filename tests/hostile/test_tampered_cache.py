"""A record/replay cache edited by someone else: entries whose columns hold the wrong types are an LLMError that
says what to do, never a bare TypeError (finding 13 of round three)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import sqlalchemy as sa
from backends import load_shop
from fakes import ScriptedChatModel, fenced

import verifiedsql
from verifiedsql.errors import LLMError
from verifiedsql.llm.cache import RecordingChatModel

QUESTION = "Which customers are from Brazil?"
SQL = "SELECT name FROM customers WHERE country = 'Brazil' ORDER BY name"


def _recorded(tmp_path: Path) -> tuple[str, Path]:
    """A shop database and a cache holding the answers to QUESTION (one candidate)."""
    url = f"sqlite:///{tmp_path / 'shop.sqlite'}"
    load_shop(sa.create_engine(url)).dispose()
    cache = tmp_path / "cache.sqlite"
    model = RecordingChatModel(ScriptedChatModel([fenced(SQL)]), cache)
    _ask(url, model)
    model.close()
    return url, cache


def _ask(url: str, model) -> list:
    engine = verifiedsql.create_engine(url, llm=model, candidates=1)
    try:
        with engine.connect() as conn:
            return conn.execute(verifiedsql.ask(QUESTION)).all()
    finally:
        engine.dispose()


@pytest.mark.parametrize("tamper", [
    "UPDATE responses SET prompt_tokens = 'many', completion_tokens = 'few'",
    "UPDATE responses SET text = CAST(text AS BLOB)",
    "UPDATE responses SET seconds = 'slow'",
    "UPDATE responses SET scores = '[[1],[\"x\"],[null]]'",
], ids=["counts-as-text", "reply-as-blob", "seconds-as-text", "scores-junk"])
def test_a_tampered_entry_is_an_llm_error_or_ignored(tmp_path: Path, tamper: str) -> None:
    url, cache = _recorded(tmp_path)
    db = sqlite3.connect(cache)
    db.execute(tamper)
    db.commit()
    db.close()
    replay = RecordingChatModel(None, cache, "replay", model_name="scripted")
    if "scores" in tamper:  # junk token scores read as none: the answer is the recorded one
        assert len(_ask(url, replay)) == 2
        return
    with pytest.raises(LLMError, match="malformed entry.*record it again"):
        _ask(url, replay)
