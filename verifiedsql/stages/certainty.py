"""How sure the model was of the SQL it wrote: its token log-probabilities over the SQL's span of the reply,
overall and over the tokens that name schema objects or hold literals (``report.Certainty``)."""

from __future__ import annotations

from collections.abc import Sequence
from statistics import fmean

from sqlglot import Dialect, TokenType
from sqlglot.errors import SqlglotError

from ..llm.base import ChatResponse
from ..report import Certainty

_NAMES = {TokenType.VAR, TokenType.IDENTIFIER}
_LITERALS = {TokenType.STRING, TokenType.NUMBER, TokenType.NATIONAL_STRING}


def certainty(reply: ChatResponse, sql: str | None, dialect: str | None) -> Certainty | None:
    """The certainty features of ``sql`` as written in ``reply``; None where the reply has no token scores.
    Where the SQL cannot be located in the reply (the tokens do not spell the text), the whole reply counts."""
    scores = reply.scores
    if scores is None or not scores.tokens:
        return None
    starts, offset = [], 0
    for token in scores.tokens:
        starts.append(offset)
        offset += len(token)
    spelled = "".join(scores.tokens) == reply.text
    begin = reply.text.find(sql) if (sql and spelled) else -1
    if begin < 0:
        return _features(scores.logprobs, scores.entropies, [], [])
    end = begin + len(sql or "")
    inside = [i for i, start in enumerate(starts) if start < end and start + len(scores.tokens[i]) > begin]
    if not inside:
        return None
    names, literals = _spans(sql or "", dialect)
    named = [i for i in inside if _overlaps(starts[i] - begin, len(scores.tokens[i]), names)]
    literal = [i for i in inside if _overlaps(starts[i] - begin, len(scores.tokens[i]), literals)]
    return _features([scores.logprobs[i] for i in inside], [scores.entropies[i] for i in inside],
                     [scores.logprobs[i] for i in named], [scores.logprobs[i] for i in literal])


def _features(logprobs: Sequence[float], entropies: Sequence[float], names: Sequence[float],
              literals: Sequence[float]) -> Certainty:
    return Certainty(tokens=len(logprobs), mean=round(fmean(logprobs), 5), low=round(min(logprobs), 5),
                     total=round(sum(logprobs), 5), names=round(fmean(names), 5) if names else None,
                     literals=round(fmean(literals), 5) if literals else None,
                     entropy=round(fmean(entropies), 5) if entropies else 0.0)


def _spans(sql: str, dialect: str | None) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """The character spans (start, end exclusive) of the SQL's schema names and of its literals."""
    try:
        tokens = Dialect.get_or_raise(dialect).tokenize(sql)
    except (SqlglotError, ValueError):
        return [], []
    names = [(t.start, t.end + 1) for t in tokens if t.token_type in _NAMES]
    literals = [(t.start, t.end + 1) for t in tokens if t.token_type in _LITERALS]
    return names, literals


def _overlaps(start: int, length: int, spans: Sequence[tuple[int, int]]) -> bool:
    return any(start < end and start + length > begin for begin, end in spans)
