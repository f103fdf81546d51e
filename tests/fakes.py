"""The one scripted chat model of the tests, and the one way to ask it a question through the public API.
For unit tests of pipeline logic: never a default, never behind a figure."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import sqlalchemy as sa

import verifiedsql
from verifiedsql.db.database import Database
from verifiedsql.guard.deadline import Deadline
from verifiedsql.llm.base import ChatModel, ChatRequest, ChatResponse, TokenScores
from verifiedsql.report import VerificationReport
from verifiedsql.stages.context import QuestionContext

Reply = str | BaseException  # an exception is raised instead of answered (an LLMError plays a failing model)
Script = Callable[[ChatRequest], Reply]


class ScriptedChatModel:
    """A ``ChatModel`` (``verifiedsql.llm.base``) whose replies are scripted: a list answered in order, or a
    function of the request. Records every request it saw (``requests``, in order; thread-safe). Usage figures
    are the same for every reply."""

    def __init__(self, script: Script | Sequence[Reply], *, name: str = "scripted", prompt_tokens: int = 10,
                 completion_tokens: int = 5, seconds: float = 0.0,
                 logprob: Callable[[ChatRequest, str], float] | None = None) -> None:
        self._lock = threading.Lock()
        if not callable(script):
            replies = list(script)

            def script(request: ChatRequest) -> Reply:
                with self._lock:
                    if not replies:
                        raise IndexError(f"no scripted reply left for a {request.purpose!r} request")
                    return replies.pop(0)

        self.script: Script = script
        self.requests: list[ChatRequest] = []
        self._name = name
        self.usage = (prompt_tokens, completion_tokens, seconds)
        # token scores where the request asks for them: every character of the reply a token, with this
        # log-probability (a function of the request and the reply), as a server that gives logprobs would
        self.logprob = logprob

    @property
    def name(self) -> str:
        return self._name

    def complete(self, request: ChatRequest) -> ChatResponse:
        with self._lock:
            self.requests.append(request)
        reply = self.script(request)
        if isinstance(reply, BaseException):
            raise reply
        prompt_tokens, completion_tokens, seconds = self.usage
        scores = None
        if self.logprob is not None and request.logprobs and reply:
            value = self.logprob(request, reply)
            scores = TokenScores(tuple(reply), (value,) * len(reply), (0.5,) * len(reply))
        return ChatResponse(text=reply, model=self._name, prompt_tokens=prompt_tokens,
                            completion_tokens=completion_tokens, seconds=seconds, scores=scores)

    def purposes(self) -> list[str]:
        """The purpose of every request, in order."""
        return [request.purpose for request in self.requests]


def purposes(model: ScriptedChatModel) -> list[str]:
    return model.purposes()


def ask(target: sa.Engine | sa.URL | str, question: str,
        replies: ScriptedChatModel | Script | Sequence[Reply],
        **options: Any) -> tuple[list[tuple[Any, ...]], VerificationReport, ScriptedChatModel]:
    """Ask ``question`` through the public API: a verified engine on ``target`` (an engine's URL, or a URL)
    with ``options`` and a scripted model (``replies``: the model itself, a script or a list of replies),
    disposed afterwards. Returns the rows (as tuples), the verification report and the model."""
    model = replies if isinstance(replies, ScriptedChatModel) else ScriptedChatModel(replies)
    url = target.url if isinstance(target, sa.Engine) else target
    verified = verifiedsql.create_engine(url, llm=model, **options)
    try:
        with verified.connect() as conn:
            result = conn.execute(verifiedsql.ask(question))
            rows = [tuple(row) for row in result.all()]
    finally:
        verified.dispose()
    return rows, result.verification, model


def fenced(sql: str) -> str:
    return f"Here you go:\n```sql\n{sql}\n```"


def by_seed(replies: dict[int, str], refine: str | None = None) -> Script:
    """Generation replies chosen by seed (candidate index); refinements answered with ``refine``."""

    def script(request: ChatRequest) -> str:
        if request.purpose == "refine":
            return fenced(refine) if refine else "I cannot fix it."
        return fenced(replies[request.seed or 0])

    return script


def context(database: Database, question: str = "a question", model: ChatModel | None = None,
            budget_s: float = float("inf")) -> QuestionContext:
    """One question's context on ``database`` (a scripted model with no replies unless given), with a
    ``budget_s`` time budget: for tests of a single stage or of the context's own caps."""
    return QuestionContext.open(question, database, model or ScriptedChatModel([]), database.options,
                                deadline=Deadline(budget_s))
