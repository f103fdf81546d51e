"""What every model-using stage of one question holds, and its one way of asking the model a question at
temperature 0 (recorded in the report like every call)."""

from __future__ import annotations

from ..config import Options
from ..database import Database
from ..deadline import Deadline
from ..llm.base import ChatModel, ChatRequest, ChatResponse, Message
from ..report import VerificationReport
from .calls import call_model


class Stage:
    """The model, the database, the options, the question's report and its deadline (none: no limit)."""

    def __init__(self, llm: ChatModel, database: Database, options: Options, report: VerificationReport,
                 deadline: Deadline | None = None) -> None:
        self.llm = llm
        self.database = database
        self.options = options
        self.report = report
        self.deadline = deadline or Deadline()

    def ask(self, messages: tuple[Message, ...], purpose: str, *, seed: int = 0,
            max_tokens: int | None = None) -> ChatResponse:
        """One zero-temperature call (``max_tokens`` defaults to the option); ``LLMError`` propagates."""
        request = ChatRequest(messages=messages, temperature=0.0, max_tokens=max_tokens or self.options.max_tokens,
                              seed=seed, purpose=purpose)
        return call_model(self.llm, request, self.report)
