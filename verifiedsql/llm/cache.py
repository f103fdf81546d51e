"""Record and replay model answers in one SQLite file, so runs can be repeated without a model.

The key is the SHA-256 of everything that determines an answer: the model name, the messages,
temperature, max_tokens, seed and stop sequences (``purpose`` is only a label and is left out). Where the
messages name the Python environment the library runs in (a sandboxed traceback's
``<venv>/lib/python3.11/site-packages/pandas/...``), that prefix is hashed as ``<python-prefix>``, so a cache
recorded in one checkout replays in another.

A request that timed out while recording (``ModelTimeoutError``: an endless reply, mostly) is kept too, in a
table of its own, so that a replay meets the same failure the recorded run met instead of a miss; a read-write
cache asks the model again for it.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Literal, TypeGuard

from ..errors import ConfigurationError, LLMError, ModelTimeoutError, ReplayMissError
from . import scores
from .base import ChatModel, ChatRequest, ChatResponse
from .portable import portable

RecordMode = Literal["readwrite", "replay"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    request TEXT NOT NULL,
    text TEXT NOT NULL,
    response_model TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    seconds REAL NOT NULL,
    purpose TEXT,
    created REAL NOT NULL,
    scores TEXT
)
"""

_FAILURES = """
CREATE TABLE IF NOT EXISTS failures (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    request TEXT NOT NULL,
    error TEXT NOT NULL,
    purpose TEXT,
    created REAL NOT NULL
)
"""


def request_key(model: str, request: ChatRequest) -> tuple[str, str]:
    """The cache key of ``request`` sent to ``model``, and the canonical JSON it hashes."""
    payload = json.dumps(
        {
            "model": model,
            "messages": [{"role": m["role"], "content": m["content"]} for m in request.messages],
            "temperature": float(request.temperature),
            "max_tokens": int(request.max_tokens),
            "seed": request.seed,
            "stop": list(request.stop),
        },
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(portable(payload).encode("utf-8")).hexdigest(), payload


class RecordingChatModel:
    """Wraps a model with a record/replay cache.

    ``readwrite``: a hit returns the recorded answer (``cached=True``, with the recorded ``seconds``);
    a miss calls ``inner`` and records the answer, or the ``ModelTimeoutError`` it raised. ``replay``: a
    request recorded as timed out raises ``ModelTimeoutError`` again, a miss raises ``ReplayMissError``, and
    ``inner`` is never called (it may be None; then ``model_name`` must say which model was recorded).
    Safe to share between threads; several processes may use the same file (WAL journal).
    """

    def __init__(
        self,
        inner: ChatModel | None,
        path: str | Path,
        mode: RecordMode = "readwrite",
        *,
        model_name: str | None = None,
        context_tokens: int | None = None,
    ) -> None:
        if mode not in ("readwrite", "replay"):
            raise ConfigurationError(f"cache mode {mode!r}: use 'readwrite' or 'replay'.")
        if inner is None and mode != "replay":
            raise ConfigurationError("a read-write cache needs a model to call on a miss.")
        if inner is None and model_name is None:
            raise ConfigurationError("a replay cache without a model needs model_name=<recorded model>.")
        self.inner = inner
        self.context_tokens = context_tokens  # the recorded model's window, for a replay with no model to ask
        self.path = Path(path)
        self.mode = mode
        self._name = model_name or inner.name  # type: ignore[union-attr]
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, timeout=30.0, check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(_SCHEMA)
            if mode == "readwrite":
                self._db.execute(_FAILURES)
            tables = {row[0] for row in self._db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            self._has_failures = "failures" in tables
            columns = {row[1] for row in self._db.execute("PRAGMA table_info(responses)")}
            if "scores" not in columns and mode == "readwrite":  # a cache recorded before scores were kept
                self._db.execute("ALTER TABLE responses ADD COLUMN scores TEXT")
            self._has_scores = "scores" in columns or mode == "readwrite"
        except sqlite3.Error as exc:
            raise ConfigurationError(f"cannot open the LLM cache {self.path}: {exc}; check the path.") from exc

    @property
    def name(self) -> str:
        return self._name

    def complete(self, request: ChatRequest) -> ChatResponse:
        key, payload = request_key(self._name, request)
        hit = self._lookup(key)
        if hit is not None:
            return hit
        if self.mode == "replay" or self.inner is None:
            failure = self._failure(key)
            if failure is not None:
                raise ModelTimeoutError(f"{failure} (replayed from {self.path}: the recorded run met this too)")
            raise ReplayMissError(
                f"replay cache {self.path} has no answer recorded for this {request.purpose!r} request "
                f"to model {self._name!r} (key {key[:12]}). Record it first with cache_mode='readwrite' "
                "(the same model, prompts, seeds and options), or turn replay off."
            )
        try:
            response = self.inner.complete(request)
        except ModelTimeoutError as exc:
            self._store_failure(key, payload, request, str(exc))
            raise
        self._store(key, payload, request, response)
        return response

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _execute(self, doing: str, sql: str, parameters: tuple[object, ...]) -> tuple[object, ...] | None:
        """Run one statement on the cache file under the lock; its first row, if any. A SQLite failure is an
        ``LLMError`` that says what was being done (``read``, ``write``)."""
        try:
            with self._lock:
                row = self._db.execute(sql, parameters).fetchone()
        except sqlite3.Error as exc:
            raise LLMError(f"cannot {doing} the LLM cache {self.path}: {exc}.") from exc
        return tuple(row) if row is not None else None

    def _lookup(self, key: str) -> ChatResponse | None:
        row = self._execute("read", "SELECT text, response_model, prompt_tokens, completion_tokens, seconds, "
                            f"{'scores' if self._has_scores else 'NULL'} FROM responses WHERE key = ?", (key,))
        if row is None:
            return None
        text, model, prompt_tokens, completion_tokens, seconds = row[:5]
        if not (isinstance(text, str) and isinstance(model, str) and _count(prompt_tokens)
                and _count(completion_tokens) and isinstance(seconds, (int, float))):
            raise LLMError(f"the LLM cache {self.path} holds a malformed entry (key {key[:12]}): its text, model, "
                           "token counts or seconds are not of the types it records. The file was edited or is "
                           "not a verifiedsql cache: record it again, or delete that entry.")
        return ChatResponse(
            text=text, model=model, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
            seconds=seconds, cached=True, scores=scores.loads(row[5]),
        )

    def _store(self, key: str, payload: str, request: ChatRequest, response: ChatResponse) -> None:
        self._execute("write", "INSERT OR REPLACE INTO responses (key, model, request, text, response_model, "
                      "prompt_tokens, completion_tokens, seconds, purpose, created, scores) "
                      "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                      (key, self._name, payload, response.text, response.model, response.prompt_tokens,
                       response.completion_tokens, response.seconds, request.purpose, time.time(),
                       scores.dumps(response.scores)))

    def _failure(self, key: str) -> str | None:
        """The error recorded for the request ``key`` when it timed out, or None."""
        if not self._has_failures:
            return None
        row = self._execute("read", "SELECT error FROM failures WHERE key = ?", (key,))
        return str(row[0]) if row is not None else None

    def _store_failure(self, key: str, payload: str, request: ChatRequest, error: str) -> None:
        self._execute("write", "INSERT OR REPLACE INTO failures (key, model, request, error, purpose, created) "
                      "VALUES (?, ?, ?, ?, ?, ?)", (key, self._name, payload, error, request.purpose, time.time()))


def _count(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
