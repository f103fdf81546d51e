"""OpenAIChatModel against a scripted fake OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import time
from typing import Any

import pytest
from fake_openai import FakeServer, Reply, completion

from verifiedsql.errors import LLMError, ModelTimeoutError, PromptTooLongError
from verifiedsql.llm import ChatRequest, OpenAIChatModel, messages
from verifiedsql.llm.local import free_port

REQUEST = ChatRequest(messages=messages("You write SQL.", "How many users?"))


def test_success_reports_text_usage_and_time(server: FakeServer) -> None:
    server.script = [Reply(body=completion("SELECT COUNT(*) FROM users"))]
    response = server.model().complete(REQUEST)
    assert response.text == "SELECT COUNT(*) FROM users"
    assert (response.prompt_tokens, response.completion_tokens) == (11, 3)
    assert response.model == "fake-model" and not response.cached and response.seconds > 0
    assert server.requests[0]["messages"][1] == {"role": "user", "content": "How many users?"}


def test_missing_usage_is_estimated(server: FakeServer) -> None:
    server.script = [Reply(body=completion("x" * 40, usage=False))]
    response = server.model().complete(REQUEST)
    assert response.completion_tokens == 10 and response.prompt_tokens > 0


def test_sampling_options_are_passed_through(server: FakeServer) -> None:
    server.script = [Reply()]
    request = ChatRequest(messages=REQUEST.messages, temperature=0.7, max_tokens=64, seed=42, stop=(";",))
    server.model().complete(request)
    sent = server.requests[0]
    assert (sent["temperature"], sent["max_tokens"], sent["seed"], sent["stop"]) == (0.7, 64, 42, [";"])
    assert sent["model"] == "fake-model"


def test_seed_is_omitted_when_none(server: FakeServer) -> None:
    server.script = [Reply()]
    server.model().complete(REQUEST)
    assert "seed" not in server.requests[0] and "stop" not in server.requests[0]


def test_429_honours_retry_after_then_succeeds(server: FakeServer) -> None:
    server.script = [Reply(429, {"error": {"message": "slow down"}}, {"retry-after": "0.4"}), Reply()]
    started = time.monotonic()
    response = server.model().complete(REQUEST)
    assert response.text == "SELECT 1" and len(server.requests) == 2
    assert time.monotonic() - started >= 0.4


def test_5xx_are_retried(server: FakeServer) -> None:
    server.script = [Reply(500, {"error": {"message": "boom"}}), Reply(503, {}), Reply()]
    assert server.model().complete(REQUEST).text == "SELECT 1"
    assert len(server.requests) == 3


def test_retries_exhausted_raise_llm_error(server: FakeServer) -> None:
    server.script = [Reply(500, {"error": {"message": "boom"}})]
    with pytest.raises(LLMError, match=r"after 3 attempt\(s\).*HTTP 500"):
        server.model(max_retries=2).complete(REQUEST)
    assert len(server.requests) == 3


def test_client_errors_are_not_retried(server: FakeServer) -> None:
    server.script = [Reply(401, {"error": {"message": "bad key"}})]
    with pytest.raises(LLMError, match="API key"):
        server.model().complete(REQUEST)
    assert len(server.requests) == 1


@pytest.mark.parametrize("message", [
    "This model's maximum context length is 4096 tokens. However, you requested 15878 tokens (15366 in the "
    "messages, 512 in the completion). Please reduce the length of the messages or completion.",
    "the request exceeds the available context size, try increasing it",
])
def test_a_prompt_over_the_context_window_is_a_typed_error_that_says_what_to_do(server: FakeServer,
                                                                              message: str) -> None:
    server.script = [Reply(400, {"error": {"message": message}})]
    with pytest.raises(PromptTooLongError, match="compress_schema=True") as raised:
        server.model().complete(REQUEST)
    assert isinstance(raised.value, LLMError) and len(server.requests) == 1
    assert raised.value.context_tokens == (4096 if "4096" in message else None)


def test_another_refused_request_is_not_a_prompt_too_long(server: FakeServer) -> None:
    server.script = [Reply(400, {"error": {"message": "unknown field: seed"}})]
    with pytest.raises(LLMError) as raised:
        server.model().complete(REQUEST)
    assert not isinstance(raised.value, PromptTooLongError)


@pytest.mark.parametrize("body", [
    "{\"choices\": [ not json",
    {"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": []},
    {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
     "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": None}}]},
    {"unexpected": True},
])
def test_malformed_answers_raise_llm_error_after_retries(server: FakeServer, body: Any) -> None:
    server.script = [Reply(200, body)]
    with pytest.raises(LLMError, match="OpenAI-compatible"):
        server.model(max_retries=2).complete(REQUEST)
    assert len(server.requests) == 3


def test_malformed_then_good_answer_succeeds(server: FakeServer) -> None:
    server.script = [Reply(200, {"choices": []}), Reply()]
    assert server.model().complete(REQUEST).text == "SELECT 1"


def test_connection_refused_raises_llm_error_with_hint() -> None:
    model = OpenAIChatModel(f"http://127.0.0.1:{free_port()}/v1", "m", None, timeout_s=5, max_retries=1,
                            backoff_s=0.01, use_env_proxy=False)
    with pytest.raises(LLMError, match="VERIFIEDSQL_LLM_BASE_URL") as info:
        model.complete(REQUEST)
    assert "cannot connect" in str(info.value) and not isinstance(info.value, ModelTimeoutError)


def test_slow_server_times_out_within_budget(server: FakeServer) -> None:
    server.script = [Reply(delay_s=3.0)]
    started = time.monotonic()
    with pytest.raises(ModelTimeoutError, match="timed out|within"):
        server.model(timeout_s=1.0, max_retries=5).complete(REQUEST)
    assert time.monotonic() - started < 2.0


def test_retry_after_beyond_budget_gives_up_early(server: FakeServer) -> None:
    server.script = [Reply(429, {"error": {"message": "later"}}, {"retry-after": "20"})]
    started = time.monotonic()
    with pytest.raises(LLMError, match="HTTP 429"):
        server.model(timeout_s=2.0).complete(REQUEST)
    assert time.monotonic() - started < 1.0 and len(server.requests) == 1
