"""Token scores for replies recorded before the cache kept them (``verifiedsql llm rescore CACHE``).

The recorded reply is fed back to the embedded model after its prompt (teacher forcing) and each of its
tokens gets the log-probability the model gives it there, with the entropy of the top alternatives: the
numbers the server returns with ``"logprobs": true`` while it writes the reply (both read the model's raw
logits). The reply's text, and so every figure replayed from the cache, stays as recorded. Requests that
share a prompt (a question's candidates) read the prompt once. Resumable: only entries with no scores are
scored, and each is written as soon as it is done.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np

from ..errors import ConfigurationError
from .base import TOP_LOGPROBS, TokenScores
from .local import CONTEXT_TOKENS, default_threads, require_llama_cpp
from .models import install_model, model_spec
from .scores import dumps, top_entropy


class Scorer:
    """Teacher-forced token scores from one embedded model, loaded in this process."""

    def __init__(self, model: str, threads: int | None = None) -> None:
        require_llama_cpp()
        from llama_cpp import Llama
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        self._llm = Llama(str(install_model(model_spec(model).name)), n_ctx=CONTEXT_TOKENS, logits_all=True,
                          n_threads=threads or default_threads(), verbose=False)
        template = self._llm.metadata.get("tokenizer.chat_template")
        if not template:
            raise ConfigurationError(f"model {model!r} carries no chat template to score its replies with")
        eos = self._llm.detokenize([self._llm.token_eos()]).decode("utf-8", "replace")
        # the formatting the server applies to a chat request (its Jinja chat template from the weights' metadata)
        self._format = Jinja2ChatFormatter(template=template, eos_token=eos, bos_token="")

    def prompt_tokens(self, messages: Sequence[dict[str, str]]) -> list[int]:
        prompt = self._format(messages=[dict(m) for m in messages]).prompt  # type: ignore[misc]
        return self._llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)

    def score(self, prompt: list[int], reply: str) -> TokenScores | None:
        """The scores of ``reply``'s tokens after ``prompt``; None where the two do not fit the window."""
        llm = self._llm
        tokens = llm.tokenize(reply.encode("utf-8"), add_bos=False, special=False)
        if not tokens or len(prompt) + len(tokens) > CONTEXT_TOKENS:
            return None
        whole = [*prompt, *tokens]
        kept = 0  # the prefix already evaluated (a candidate's prompt after its sibling's)
        current = llm.input_ids[: llm.n_tokens].tolist()
        while kept < min(len(current), len(whole) - 1) and current[kept] == whole[kept]:
            kept += 1
        llm.n_tokens = kept
        llm.eval(whole[kept:])
        logits = np.asarray(llm.scores[len(prompt) - 1: len(whole) - 1], dtype=np.float64)
        logits -= logits.max(axis=1, keepdims=True)
        logprobs = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
        pieces: list[str] = []
        previous: list[int] = list(prompt)
        for token in tokens:
            pieces.append(llm.detokenize([token], prev_tokens=previous).decode("utf-8", "replace"))
            previous.append(token)
        chosen = [float(logprobs[i, token]) for i, token in enumerate(tokens)]
        top = np.sort(logprobs, axis=1)[:, -TOP_LOGPROBS:]
        return TokenScores(tuple(pieces), tuple(chosen), tuple(top_entropy(row.tolist()) for row in top))


def rescore_cache(path: str | Path, model: str, purposes: Sequence[str] = ("generate", "refine"), *,
                  limit: int | None = None, progress: Callable[[str], None] = print,
                  scorer: Scorer | None = None) -> int:
    """Score every entry of the cache at ``path`` for ``purposes`` that has no scores yet, prompt by prompt
    in the order recorded; returns how many were scored. ``limit`` stops after that many."""
    db = sqlite3.connect(str(path), timeout=30.0, isolation_level=None)
    try:
        columns = {row[1] for row in db.execute("PRAGMA table_info(responses)")}
        if not columns:
            raise ConfigurationError(f"{path} is not a verifiedsql LLM cache (no responses table)")
        if "scores" not in columns:
            db.execute("ALTER TABLE responses ADD COLUMN scores TEXT")
        todo = list(_unscored(db, purposes))
        scorer = scorer or Scorer(model)
        done, start = 0, time.monotonic()
        for prompt_json, entries in todo:
            prompt = scorer.prompt_tokens(json.loads(prompt_json))
            for key, text in entries:
                scores = scorer.score(prompt, text)
                # an entry that cannot be scored (over the window) is marked so, not tried again
                db.execute("UPDATE responses SET scores = ? WHERE key = ?", (dumps(scores) or "[]", key))
                done += 1
                if limit is not None and done >= limit:
                    return done
            progress(f"scored {done} replies in {time.monotonic() - start:.0f} s")
        return done
    finally:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db.close()


def _unscored(db: sqlite3.Connection, purposes: Sequence[str]) -> Iterator[tuple[str, list[tuple[str, str]]]]:
    """(the messages' JSON, [(key, reply text)]) for the entries with no scores, grouped by prompt."""
    marks = ",".join("?" * len(purposes))
    rows = db.execute(
        f"SELECT key, json_extract(request, '$.messages'), text FROM responses WHERE scores IS NULL "
        f"AND purpose IN ({marks}) ORDER BY created", tuple(purposes)).fetchall()
    grouped: dict[str, list[tuple[str, str]]] = {}
    for key, messages, text in rows:
        grouped.setdefault(messages, []).append((key, text))
    # prompts in the order first recorded (a benchmark's seeded question order), so that a run stopped early
    # has scored a prefix of its questions that a replay of the first N covers
    yield from grouped.items()

