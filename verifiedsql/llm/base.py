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


@dataclass(frozen=True)
class ChatResponse:
    text: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    cached: bool = False
    finish_reason: str | None = None  # as the server said; not recorded by the cache

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
