"""The one way stages call the model: every call lands in the report with its tokens and time, and in the
``verifiedsql.llm`` log at DEBUG (``logs``).

Independent requests (a question's candidates) may be sent side by side (``send_all``, up to the
``concurrency`` option). They are waited for and recorded in request order, whatever order they finish in,
so the report and the record/replay cache do not depend on which call returns first.

A reply longer than ``MAX_REPLY_CHARS`` is cut there when it is recorded, and read as a reply cut off at
``max_tokens`` (a report note says so): a model server that ignores ``max_tokens`` cannot make a stage parse,
scan or show megabytes."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from functools import partial

from .. import logs
from ..guard.contain import MAX_SQL_CHARS
from ..llm.base import ChatModel, ChatRequest, ChatResponse
from ..report import LLMCall, VerificationReport

MAX_REPLY_CHARS = 2 * MAX_SQL_CHARS  # a reply: the longest SQL the statement guard checks, and prose around it


@dataclass(frozen=True)
class Sent:
    """One request's outcome, not yet recorded: the response, or the exception the model raised."""

    request: ChatRequest
    response: ChatResponse | None
    error: Exception | None
    seconds: float


def send(llm: ChatModel, request: ChatRequest) -> Sent:
    """Send one request; what it raises is kept for ``record`` to raise."""
    start = time.perf_counter()
    try:
        return Sent(request, llm.complete(request), None, time.perf_counter() - start)
    except Exception as error:
        return Sent(request, None, error, time.perf_counter() - start)


def _declared(llm: ChatModel, attribute: str) -> int | None:
    """The integer ``attribute`` of ``llm``, or of the first model it wraps (``.inner``) that declares it."""
    model: object = llm
    while model is not None:
        if isinstance(value := getattr(model, attribute, None), int):
            return value
        model = getattr(model, "inner", None)
    return None


def model_concurrency(llm: ChatModel) -> int | None:
    """The most requests ``llm`` serves side by side, where it (or a model it wraps) says so
    (``max_concurrency``: the embedded server takes one at a time); None when it sets no limit."""
    return _declared(llm, "max_concurrency")


def context_window(llm: ChatModel) -> int | None:
    """The model's context window in its tokens, where it (or a model it wraps) says so (``context_tokens``:
    the embedded server's); None when unknown."""
    return _declared(llm, "context_tokens")


def send_all(llm: ChatModel, requests: Sequence[ChatRequest], concurrency: int) -> list[Callable[[], Sent]]:
    """Each request's outcome, to be waited for in request order: up to ``concurrency`` requests (and no more
    than the model serves side by side) are in flight at once, so the first reply can be used while later
    ones are still on their way. At a concurrency of 1 a request is sent only when its outcome is asked
    for, one after the other."""
    concurrency = min(concurrency, model_concurrency(llm) or concurrency)
    if concurrency <= 1 or len(requests) <= 1:
        return [partial(send, llm, request) for request in requests]
    pool = ThreadPoolExecutor(max_workers=min(concurrency, len(requests)), thread_name_prefix="verifiedsql-llm")
    futures = [pool.submit(send, llm, request) for request in requests]
    pool.shutdown(wait=False)  # the threads end with their requests (each capped by the question's time)
    return [future.result for future in futures]


def record(sent: Sent, report: VerificationReport) -> ChatResponse:
    """Log and record ``sent`` in the report; the model's exception (``LLMError``, a timeout) is raised here."""
    if sent.error is not None or sent.response is None:
        error = sent.error or RuntimeError("the model returned nothing")
        logs.model_call_failed(sent.request, sent.seconds, error)
        raise error
    response = sent.response
    if len(response.text) > MAX_REPLY_CHARS:  # no reading of the reply (fences, SQL, JSON) sees more than this
        report.notes.append(f"a {sent.request.purpose} reply was {len(response.text):,} characters long; only its "
                            f"first {MAX_REPLY_CHARS:,} were read, as a reply cut off at max_tokens")
        response = replace(response, text=response.text[:MAX_REPLY_CHARS], finish_reason="length")
    logs.model_call(sent.request, response, sent.seconds)
    report.llm_calls.append(
        LLMCall(
            purpose=sent.request.purpose,
            model=response.model,
            prompt_tokens=response.prompt_tokens,
            completion_tokens=response.completion_tokens,
            seconds=round(response.seconds, 4),
            cached=response.cached,
        )
    )
    return response


def call_model(llm: ChatModel, request: ChatRequest, report: VerificationReport) -> ChatResponse:
    """Send one request and record it; ``LLMError`` propagates to the caller."""
    return record(send(llm, request), report)
