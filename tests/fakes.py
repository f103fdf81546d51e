"""A scripted chat model for unit tests of pipeline logic. Never a default, never behind a figure."""

from __future__ import annotations

from typing import Callable

from verifiedsql.llm.base import ChatRequest, ChatResponse

Script = Callable[[ChatRequest], str]


class ScriptedChatModel:
    """Answers each request with ``script(request)``; records every request it saw."""

    def __init__(self, script: Script | list[str]) -> None:
        if isinstance(script, list):
            replies = list(script)
            script = lambda request: replies.pop(0)  # noqa: E731
        self.script = script
        self.requests: list[ChatRequest] = []

    @property
    def name(self) -> str:
        return "scripted"

    def complete(self, request: ChatRequest) -> ChatResponse:
        self.requests.append(request)
        return ChatResponse(text=self.script(request), model="scripted", prompt_tokens=10,
                            completion_tokens=5, seconds=0.0)


def fenced(sql: str) -> str:
    return f"Here you go:\n```sql\n{sql}\n```"


def by_seed(replies: dict[int, str], refine: str | None = None) -> Script:
    """Generation replies chosen by seed (candidate index); refinements answered with ``refine``."""

    def script(request: ChatRequest) -> str:
        if request.purpose == "refine":
            return fenced(refine) if refine else "I cannot fix it."
        return fenced(replies[request.seed or 0])

    return script
