"""Per-engine state: the options, the shared model client, and one Database per engine."""

from __future__ import annotations

import threading
from typing import Any

import sqlalchemy as sa

from .config import Options
from .db.database import Database
from .llm import chat_model_for
from .llm.base import ChatModel
from .pipeline import Answer, Pipeline


class VerifiedState:
    """Everything a wrapped engine (or DB-API connection) needs to answer questions.

    The model client and the reflected schema are created on the first question, not before, so
    wrapping an engine costs nothing until a question is asked.
    """

    def __init__(self, options: Options, llm: ChatModel | None = None) -> None:
        self.options = options
        self._llm = llm
        self._owns_llm = llm is None  # a model the caller passed in is the caller's to close
        self._databases: dict[int, Database] = {}
        self._lock = threading.Lock()

    @property
    def llm(self) -> ChatModel:
        with self._lock:
            if self._llm is None:
                self._llm = chat_model_for(self.options)
            return self._llm

    def close(self) -> None:
        """Release the model client this state created (e.g. the record/replay cache file); a later
        question creates a new one. Called when the engine is disposed."""
        with self._lock:
            llm, self._llm = (self._llm, None) if self._owns_llm else (None, self._llm)
        close = getattr(llm, "close", None)
        if callable(close):
            close()

    def database(self, engine: sa.Engine) -> Database:
        key = id(getattr(engine, "_proxied", engine))
        with self._lock:
            database = self._databases.get(key)
            if database is None:
                database = self._databases[key] = Database(engine, self.options)
            return database

    def pipeline(self, engine: sa.Engine) -> Pipeline:
        return Pipeline(self.database(engine), self.llm, self.options)

    def answer(self, engine: sa.Engine, question: Any, connection: sa.Connection | None = None) -> Answer:
        """Answer ``question``; ``connection`` is the one it was asked on, if any (see Database.asked_on)."""
        pipeline = self.pipeline(engine)
        with pipeline.database.asked_on(connection):
            return pipeline.answer(question)
