"""The per-question time budget (``question_timeout_s``): one deadline that the stages check and that caps
every model call's and query's timeout, so a question never runs much past its budget."""

from __future__ import annotations

import math
import time
from dataclasses import replace

from ..errors import LLMError, QuestionTimeoutError
from ..llm.base import ChatModel, ChatRequest, ChatResponse
from .watchdog import run_within

MIN_WORK_S = 0.1  # with less time left than this, no model call or query is started


class Deadline:
    """``budget_s`` seconds from its creation (``math.inf``: never). ``exhausted`` becomes True once work
    was cut short for lack of time, so the answer can say it is unverified."""

    def __init__(self, budget_s: float = math.inf) -> None:
        self.budget_s = budget_s
        self.exhausted = False
        self._start = time.monotonic()

    def elapsed(self) -> float:
        return time.monotonic() - self._start

    def remaining(self) -> float:
        """Seconds left, never below 0."""
        return max(0.0, self.budget_s - self.elapsed())

    @property
    def expired(self) -> bool:
        return self.remaining() < MIN_WORK_S

    def cap(self, seconds: float | None) -> float:
        """``seconds`` (None: no limit of its own) shortened to the time left."""
        left = self.remaining()
        return left if seconds is None else min(seconds, left)

    def check(self, doing: str) -> None:
        """Raise ``QuestionTimeoutError`` when too little time is left for ``doing``."""
        if self.expired:
            raise self.error(doing)

    def error(self, doing: str) -> QuestionTimeoutError:
        """The error that says the budget ran out at ``doing`` (and marks the deadline exhausted)."""
        self.exhausted = True
        return QuestionTimeoutError(
            f"the question's time budget (question_timeout_s={self.budget_s:g}) ran out after "
            f"{self.elapsed():.1f} s, at {doing}; raise question_timeout_s, use a smaller or faster model, or "
            "ask for less work (fewer candidates or refinements, no probe/verify/dpc)."
        )

    def bind(self, llm: ChatModel) -> ChatModel:
        """``llm`` with every call held to this deadline (see ``DeadlineModel``)."""
        return DeadlineModel(llm, self)


class DeadlineModel:
    """A model under a deadline: each request's ``timeout_s`` is capped by the time left, no call starts
    once the time is up, and a call that fails because the time ran out raises ``QuestionTimeoutError``
    (not an ``LLMError``, which the stages would treat as a model failure). The call itself runs under a
    watchdog: a model that ignores ``timeout_s`` (a custom ``ChatModel``) is abandoned when the time is
    up plus ``watchdog.GRACE_S``, so the question still ends within its budget."""

    def __init__(self, inner: ChatModel, deadline: Deadline) -> None:
        self.inner = inner
        self.deadline = deadline

    @property
    def name(self) -> str:
        return self.inner.name

    def complete(self, request: ChatRequest) -> ChatResponse:
        doing = f"a {request.purpose!r} model call"
        self.deadline.check(doing)
        capped = replace(request, timeout_s=self.deadline.cap(request.timeout_s))
        try:
            return run_within(lambda: self.inner.complete(capped), self.deadline.remaining(),
                              lambda: self.deadline.error(doing), name="verifiedsql-model")
        except LLMError as error:
            if self.deadline.expired:
                raise self.deadline.error(doing) from error
            raise
