"""The one way stages call the model: every call lands in the report with its tokens and time, and in the
``verifiedsql.llm`` log at DEBUG (``logs``)."""

from __future__ import annotations

import time

from .. import logs
from ..llm.base import ChatModel, ChatRequest, ChatResponse
from ..report import LLMCall, VerificationReport


def call_model(llm: ChatModel, request: ChatRequest, report: VerificationReport) -> ChatResponse:
    """Send one request and record it; ``LLMError`` propagates to the caller."""
    start = time.perf_counter()
    try:
        response = llm.complete(request)
    except Exception as error:
        logs.model_call_failed(request, time.perf_counter() - start, error)
        raise
    logs.model_call(request, response, time.perf_counter() - start)
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
