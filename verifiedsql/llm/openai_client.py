"""A ``ChatModel`` for any OpenAI-compatible endpoint (OpenAI, vLLM, Ollama, llama.cpp server).

Each attempt runs under a total deadline (``watchdog.run_within``), not only the client's read timeout, which a
server that trickles its reply byte by byte never trips. Retries are done here, not by the ``openai``
package, so that one call never outlives its time budget:
connection errors, timeouts, HTTP 429 (honouring ``Retry-After``) and 5xx, and malformed or empty
answers are retried with exponential backoff and jitter; anything else fails at once. Every failure
surfaces as ``LLMError`` with a hint on what to do.
"""

from __future__ import annotations

import email.utils
import random
import re
import time
from typing import Any

import openai

from ..errors import LLMError, ModelTimeoutError, PromptTooLongError
from ..guard.redact import secrets as scrub_secrets
from ..guard.redact import split_credentials, url_secrets, url_without_credentials
from ..guard.watchdog import run_within
from .base import TOP_LOGPROBS, ChatRequest, ChatResponse
from .scores import from_openai

MAX_RETRY_AFTER_S = 30.0
_MIN_ATTEMPT_S = 0.05


class _TotalTimeout(Exception):
    """The attempt had no complete answer when its time was up (a server that trickles its reply never
    trips a read timeout); the request is abandoned and ends in the background."""


class _Retryable(Exception):
    """One failed attempt that may succeed if tried again; ``wait_s`` is a server-requested delay."""

    def __init__(self, message: str, hint: str, wait_s: float | None = None, timed_out: bool = False) -> None:
        super().__init__(message)
        self.hint = hint
        self.wait_s = wait_s
        self.timed_out = timed_out  # the answer did not come in time (not a refusal or a broken answer)


class OpenAIChatModel:
    """Chat completions from an OpenAI-compatible server; ``timeout_s`` bounds a whole call, retries included
    (a request's own ``timeout_s`` may shorten it: the time left of the question's budget).

    ``use_env_proxy=False`` ignores HTTP(S)_PROXY settings (for servers on this machine)."""

    def __init__(
        self,
        base_url: str | None,
        model: str,
        api_key: str | None = None,
        timeout_s: float = 180.0,
        max_retries: int = 3,
        *,
        backoff_s: float = 0.5,
        max_backoff_s: float = 8.0,
        use_env_proxy: bool = True,
    ) -> None:
        self._model = model
        # Credentials written into the URL (user:password@) travel as HTTP basic auth, as httpx would send
        # them, so the URL that errors and HTTP logs show never holds them.
        self.base_url = url_without_credentials(base_url)
        self._secrets = (api_key, *url_secrets(base_url))
        self.timeout_s = float(timeout_s)
        self.max_retries = max(0, int(max_retries))
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self._logprobs = True  # whether to ask for log-probabilities (off once the endpoint refuses them)
        self._client = openai.OpenAI(
            base_url=split_credentials(base_url)[0], api_key=api_key or "not-needed", timeout=self.timeout_s,
            max_retries=0, http_client=_http_client(split_credentials(base_url)[1], use_env_proxy),
        )

    @property
    def name(self) -> str:
        return self._model

    def complete(self, request: ChatRequest) -> ChatResponse:
        """One answer within ``timeout_s``, or ``request.timeout_s`` when that is shorter."""
        start = time.monotonic()
        budget = self.timeout_s if request.timeout_s is None else min(self.timeout_s, max(0.0, request.timeout_s))
        deadline = start + budget
        attempt = 0
        slow = False  # whether the last attempt made ran out of time
        while True:
            attempt += 1
            remaining = deadline - time.monotonic()
            try:
                if remaining < _MIN_ATTEMPT_S:
                    raise _Retryable(f"no time left of the {budget:g} s budget", self._timeout_hint(budget),
                                     timed_out=slow)
                return self._attempt(request, remaining, start, budget)
            except _Retryable as err:
                slow = err.timed_out
                delay = self._delay(attempt, err.wait_s)
                left = deadline - time.monotonic()
                if attempt > self.max_retries or delay >= left - _MIN_ATTEMPT_S:
                    failure = ModelTimeoutError if err.timed_out else LLMError
                    raise failure(scrub_secrets(
                        f"LLM call to {self.base_url or 'api.openai.com'} (model {self._model!r}) failed "
                        f"after {attempt} attempt(s) in {time.monotonic() - start:.1f} s: {err}. {err.hint}",
                        self._secrets)) from err
                time.sleep(delay)

    def _attempt(self, request: ChatRequest, timeout: float, start: float, budget: float) -> ChatResponse:
        kwargs: dict[str, Any] = {
            "model": self._model,
            "messages": [dict(m) for m in request.messages],
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
        }
        if request.seed is not None:
            kwargs["seed"] = request.seed
        if request.stop:
            kwargs["stop"] = list(request.stop)
        if request.logprobs and self._logprobs:
            kwargs["logprobs"], kwargs["top_logprobs"] = True, TOP_LOGPROBS
        sent = time.monotonic()
        try:  # the client's timeout is per read; the watchdog ends the whole attempt at ``timeout``
            completion = run_within(lambda: self._client.chat.completions.create(timeout=timeout, **kwargs),
                                    timeout, _TotalTimeout, grace_s=0.0, name="verifiedsql-llm")
        except _TotalTimeout as exc:
            raise _Retryable(f"no complete answer within {timeout:.1f} s (the server answers too slowly)",
                             self._timeout_hint(budget), timed_out=True) from exc
        except openai.APITimeoutError as exc:
            raise _Retryable("the request timed out", self._timeout_hint(budget), timed_out=True) from exc
        except openai.APIConnectionError as exc:
            raise _Retryable(f"cannot connect ({exc.__cause__ or exc})", self._connect_hint()) from exc
        except openai.APIStatusError as exc:
            if "logprobs" in kwargs and exc.status_code in (400, 422) and "logprob" in (exc.message or "").lower():
                self._logprobs = False  # this endpoint refuses them: ask again without, and never ask again
                return self._attempt(request, timeout - (time.monotonic() - sent), start, budget)
            raise self._status_error(exc) from exc
        except (openai.OpenAIError, ValueError, TypeError, KeyError) as exc:
            raise _Retryable(f"unusable answer ({type(exc).__name__}: {exc})", _MALFORMED_HINT) from exc
        except RecursionError as exc:  # a body of JSON nested deeper than Python's parser goes
            raise _Retryable("unusable answer (JSON nested too deeply to read)", _MALFORMED_HINT) from exc
        try:
            return self._response(completion, request, time.monotonic() - start)
        except RecursionError as exc:
            raise _Retryable("unusable answer (nested too deeply to read)", _MALFORMED_HINT) from exc

    def _response(self, completion: Any, request: ChatRequest, seconds: float) -> ChatResponse:
        choices = getattr(completion, "choices", None)
        if not choices:
            raise _Retryable("the answer has no choices", _MALFORMED_HINT)
        message = getattr(choices[0], "message", None)
        text = getattr(message, "content", None)
        if not isinstance(text, str):
            raise _Retryable("the answer has no text content", _MALFORMED_HINT)
        usage = getattr(completion, "usage", None)
        prompt_tokens = getattr(usage, "prompt_tokens", None)
        completion_tokens = getattr(usage, "completion_tokens", None)
        if not isinstance(prompt_tokens, int):
            prompt_tokens = estimate_tokens(" ".join(m["content"] for m in request.messages))
        if not isinstance(completion_tokens, int):
            completion_tokens = estimate_tokens(text)
        return ChatResponse(
            text=text,
            model=getattr(completion, "model", None) or self._model,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            seconds=seconds,
            finish_reason=getattr(choices[0], "finish_reason", None),
            scores=from_openai(getattr(choices[0], "logprobs", None)) if request.logprobs else None,
        )

    def _status_error(self, exc: openai.APIStatusError) -> Exception:
        status = exc.status_code
        detail = f"HTTP {status}: {_short(exc.message)}"
        if status == 429:
            return _Retryable(detail, "The server is rate-limiting; wait or raise llm_max_retries.",
                              _retry_after(exc.response.headers))
        if status >= 500 or status == 408:
            return _Retryable(detail, "The server is failing; check its logs or try again later.",
                              _retry_after(exc.response.headers))
        if status in (400, 413) and _TOO_LONG.search(exc.message or ""):
            return PromptTooLongError(scrub_secrets(
                f"LLM call to {self.base_url or 'api.openai.com'} (model {self._model!r}) failed: {detail}. "
                "The prompt, mostly the schema, does not fit the model's context window: turn on "
                "compress_schema=True (it keeps the tables the question needs, within prompt_budget_tokens), name "
                "fewer tables with schema=, or use a model with a longer context.", self._secrets),
                context_tokens=_window(exc.message or ""))
        if status in (401, 403):
            hint = "Check the API key (VERIFIEDSQL_LLM_API_KEY or OPENAI_API_KEY)."
        elif status == 404:
            hint = ("Check the base URL (it usually ends in /v1, set VERIFIEDSQL_LLM_BASE_URL) and the "
                    "model name (VERIFIEDSQL_LLM_MODEL).")
        else:
            hint = "The server refused the request; check that the model supports chat completions."
        return LLMError(scrub_secrets(
            f"LLM call to {self.base_url or 'api.openai.com'} (model {self._model!r}) failed: {detail}. {hint}",
            self._secrets))

    def _delay(self, attempt: int, wait_s: float | None) -> float:
        if wait_s is not None:
            return min(max(wait_s, 0.0), MAX_RETRY_AFTER_S)
        base = min(self.backoff_s * 2 ** (attempt - 1), self.max_backoff_s)
        return base * random.uniform(0.5, 1.0)

    def _connect_hint(self) -> str:
        return (f"Check the URL {self.base_url or 'https://api.openai.com/v1'}, start the server "
                "(`verifiedsql llm serve` for the local model), or set VERIFIEDSQL_LLM_BASE_URL.")

    def _timeout_hint(self, budget: float) -> str:
        return (f"The model did not answer within the {budget:g} s budget; raise llm_timeout_s "
                "(or question_timeout_s), lower max_tokens, or use a faster model.")


# how servers word a prompt over the context window (OpenAI, llama.cpp, vLLM, and others that copy them)
_TOO_LONG = re.compile(r"context (length|window|size)|maximum context|too many tokens|prompt is too long|"
                       r"exceeds?\b[^.]{0,40}\bcontext", re.IGNORECASE)

_WINDOW = re.compile(r"(?:context (?:length|window|size)|maximum context)\D{0,30}?(\d[\d,]*) tokens", re.IGNORECASE)


def _window(message: str) -> int | None:
    """The context window's size that the server's refusal states ("maximum context length is 4096 tokens")."""
    found = _WINDOW.search(message)
    return int(found.group(1).replace(",", "")) if found else None


_MALFORMED_HINT = ("The server's answer is not an OpenAI-compatible chat completion; check that the URL "
                   "points at an OpenAI-compatible endpoint (usually ending in /v1).")


def _http_client(auth: tuple[str, str] | None, trust_env: bool) -> Any:
    """The SDK's HTTP client, sending ``auth`` (the URL's user and password) as basic auth and ignoring
    proxy settings unless ``trust_env``; None where the SDK's own default does the same."""
    if trust_env and auth is None:
        return None
    return openai.DefaultHttpxClient(trust_env=trust_env, auth=auth)


def estimate_tokens(text: str) -> int:
    """A rough token count (about four characters a token) for servers that report no usage."""
    return max(1, (len(text) + 3) // 4) if text else 0


def _retry_after(headers: Any) -> float | None:
    """Seconds from ``Retry-After-Ms`` / ``Retry-After`` (seconds or an HTTP date), or None."""
    try:
        if headers.get("retry-after-ms"):
            return float(headers["retry-after-ms"]) / 1000
        value = headers.get("retry-after")
        if not value:
            return None
        try:
            return float(value)
        except ValueError:
            parsed = email.utils.parsedate_to_datetime(value)
            return parsed.timestamp() - time.time()
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
