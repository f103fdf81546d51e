"""The one interface every model backend implements: a chat completion with usage figures."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Sequence, TypedDict

from ..report import LLMPurpose


class Message(TypedDict):
    role: str  # "system", "user" or "assistant"
    content: str


@dataclass(frozen=True)
class ChatRequest:
    """Everything that determines an answer; the record/replay cache keys on all of it."""

    messages: tuple[Message, ...]
    temperature: float = 0.0
    max_tokens: int = 512
    seed: int | None = None
    stop: tuple[str, ...] = ()
    purpose: LLMPurpose = "generate"  # recorded in the report; not part of the cache key
    timeout_s: float | None = None  # caps this call's time budget (the question's time left); not in the key
    # ask for the tokens' log-probabilities where the endpoint gives them; not in the key (the answer is the same)
    logprobs: bool = False


TOP_LOGPROBS = 5  # alternatives asked for at each position; a token's entropy is over these, renormalised


@dataclass(frozen=True)
class TokenScores:
    """What the model thought of each token it wrote: the token's text, its log-probability, and the entropy
    (nats) of the top ``TOP_LOGPROBS`` alternatives at its position, renormalised (0 where none were given)."""

    tokens: tuple[str, ...]
    logprobs: tuple[float, ...]
    entropies: tuple[float, ...]

    def __post_init__(self) -> None:
        if not len(self.tokens) == len(self.logprobs) == len(self.entropies):
            raise ValueError("token scores need one log-probability and one entropy per token")


@dataclass(frozen=True)
class ChatResponse:
    text: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    cached: bool = False
    finish_reason: str | None = None  # as the server said; not recorded by the cache
    scores: TokenScores | None = None  # the tokens' log-probabilities, where asked for and given

    @property
    def truncated(self) -> bool:
        """Whether the reply was cut off at ``max_tokens`` (so any SQL in it may be incomplete)."""
        return self.finish_reason == "length"


class ChatModel(Protocol):
    """A chat model. Implementations raise ``LLMError`` (or a subclass) and nothing else."""

    @property
    def name(self) -> str: ...

    def complete(self, request: ChatRequest) -> ChatResponse: ...


def messages(system: str, user: str, history: Sequence[Message] = ()) -> tuple[Message, ...]:
    """Build a message tuple: a system prompt, optional earlier turns, then the user's turn."""
    return ({"role": "system", "content": system}, *history, {"role": "user", "content": user})
