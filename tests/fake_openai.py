"""A scripted OpenAI-compatible HTTP server on 127.0.0.1, for tests of the client and of the docs."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from verifiedsql.llm import OpenAIChatModel


@dataclass
class Reply:
    status: int = 200
    body: Any = None            # dict -> JSON, str/bytes -> raw
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    trickle_s: float = 0.0      # > 0: the body goes out one byte at a time, this many seconds apart


def completion(text: str = "SELECT 1", usage: bool = True) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "c1", "object": "chat.completion", "created": 0, "model": "fake-model",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
    }
    if usage:
        body["usage"] = {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14}
    return body


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # socketserver's default backlog of 5 resets connections of many concurrent clients


class FakeServer:
    """Answers POST /v1/chat/completions from a script; the last reply repeats once the script runs out.
    A ``responder`` (request payload -> Reply), when set, answers instead: safe for concurrent clients."""

    def __init__(self) -> None:
        self.script: list[Reply] = []
        self.responder: Callable[[dict[str, Any]], Reply] | None = None
        self.requests: list[dict[str, Any]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                payload = json.loads(self.rfile.read(int(self.headers["content-length"])))
                fake.requests.append(payload)
                if fake.responder is not None:
                    reply = fake.responder(payload)
                else:
                    reply = fake.script.pop(0) if len(fake.script) > 1 else fake.script[0]
                time.sleep(reply.delay_s)
                body = reply.body if reply.body is not None else completion()
                raw = json.dumps(body).encode() if isinstance(body, dict) else (
                    body.encode() if isinstance(body, str) else body)
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(raw)))
                    for key, value in reply.headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    if reply.trickle_s > 0:  # never idle long enough for a read timeout to fire
                        for i in range(len(raw)):
                            self.wfile.write(raw[i:i + 1])
                            self.wfile.flush()
                            time.sleep(reply.trickle_s)
                    else:
                        self.wfile.write(raw)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = _Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_port}/v1"
        threading.Thread(target=self.httpd.serve_forever, args=(0.02,), daemon=True).start()

    def close(self) -> None:
        """Stop serving and close the listening socket."""
        self.httpd.shutdown()
        self.httpd.server_close()

    def model(self, **kwargs: Any) -> OpenAIChatModel:
        kwargs.setdefault("timeout_s", 10.0)
        kwargs.setdefault("max_retries", 3)
        return OpenAIChatModel(self.url, "fake-model", "key", backoff_s=0.01, use_env_proxy=False, **kwargs)
