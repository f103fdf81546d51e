"""Token log-probabilities: read from an OpenAI-compatible reply, stored in the record/replay cache, and
the entropy of a position's top alternatives. One shape (``TokenScores``) whichever way they came."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from .base import TOP_LOGPROBS, TokenScores


def top_entropy(logprobs: Sequence[float]) -> float:
    """The entropy (nats) of the alternatives whose log-probabilities are given, renormalised to sum to one."""
    finite = [value for value in logprobs if math.isfinite(value)]
    if len(finite) < 2:
        return 0.0
    top = max(finite)
    weights = [math.exp(value - top) for value in finite]
    total = sum(weights)
    return -sum(w / total * math.log(w / total) for w in weights if w > 0)


def from_openai(logprobs: Any) -> TokenScores | None:
    """The scores in a chat completion choice's ``logprobs`` (``content``: token, logprob, top_logprobs), or
    None where the server gave none or something else."""
    content = getattr(logprobs, "content", None) if not isinstance(logprobs, dict) else logprobs.get("content")
    if not isinstance(content, list) or not content:
        return None
    tokens: list[str] = []
    values: list[float] = []
    entropies: list[float] = []
    for item in content:
        token, value, top = (_field(item, "token"), _field(item, "logprob"), _field(item, "top_logprobs"))
        if not isinstance(token, str) or not isinstance(value, (int, float)) or isinstance(value, bool):
            return None
        tokens.append(token)
        values.append(float(value))
        alternatives = [_field(alt, "logprob") for alt in top] if isinstance(top, list) else []
        entropies.append(top_entropy([float(a) for a in alternatives[:TOP_LOGPROBS]
                                      if isinstance(a, (int, float)) and not isinstance(a, bool)]))
    return TokenScores(tuple(tokens), tuple(values), tuple(entropies))


def _field(item: Any, name: str) -> Any:
    return item.get(name) if isinstance(item, dict) else getattr(item, name, None)


def dumps(scores: TokenScores | None) -> str | None:
    """The cache's text for ``scores`` (None stays None)."""
    if scores is None:
        return None
    return json.dumps([scores.tokens, [round(v, 5) for v in scores.logprobs],
                       [round(v, 5) for v in scores.entropies]], ensure_ascii=False, separators=(",", ":"))


def loads(text: object) -> TokenScores | None:
    """The scores the cache stored as ``text``; None where there are none or the text is not what ``dumps``
    writes (a cache edited by hand answers as one with no scores)."""
    if not isinstance(text, str):
        return None
    try:
        tokens, values, entropies = json.loads(text)
        return TokenScores(tuple(str(t) for t in tokens), tuple(float(v) for v in values),
                           tuple(float(e) for e in entropies))
    except (ValueError, TypeError, RecursionError):
        return None
