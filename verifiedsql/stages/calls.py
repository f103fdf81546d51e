"""The one way stages call the model: every call lands in the report with its tokens and time."""

from __future__ import annotations

from ..llm.base import ChatModel, ChatRequest, ChatResponse
from ..report import LLMCall, VerificationReport


def call_model(llm: ChatModel, request: ChatRequest, report: VerificationReport) -> ChatResponse:
    """Send one request and record it; ``LLMError`` propagates to the caller."""
    response = llm.complete(request)
    report.llm_calls.append(
        LLMCall(
            purpose=request.purpose,
            model=response.model,
            prompt_tokens=response.prompt_tokens,
            completion_tokens=response.completion_tokens,
            seconds=round(response.seconds, 4),
            cached=response.cached,
        )
    )
    return response
