"""The embedded default model's server: llama-cpp-python's OpenAI-compatible server on 127.0.0.1.

The server runs in a child process; a process-wide registry (``_SERVERS``, guarded by a lock) keeps one
server per model, and it is the only global state in verifiedsql. Servers stop at interpreter exit, and
also when this process dies without running exit handlers (the child watches a pipe from the parent
and exits on EOF). The weights come from ``models.install_model``.
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

from ..config import LLMSettings
from ..errors import LLMError, ModelInstallError
from .base import ChatRequest, ChatResponse
from .models import install_model, model_home, model_spec, say
from .openai_client import OpenAIChatModel

# The child runs llama_cpp.server exactly as ``python -m llama_cpp.server ARGS`` would, and exits as
# soon as its stdin (a pipe from this process) closes, i.e. when this process goes away in any manner.
_BOOTSTRAP = (
    "import os, runpy, sys, threading\n"
    "threading.Thread(target=lambda: (sys.stdin.buffer.read(), os._exit(0)), daemon=True).start()\n"
    "sys.argv[0] = 'llama_cpp.server'\n"
    "runpy.run_module('llama_cpp.server', run_name='__main__', alter_sys=True)\n"
)


# The server's context window. A longer prompt is refused (``PromptTooLongError``) and the pipeline compresses the
# schema to fit it: on a CPU, a prompt of many thousand tokens would take minutes to read.
CONTEXT_TOKENS = 4_096
_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # the server is on 127.0.0.1
_MAX_LOG_BYTES = 5_000_000


def server_command(model: Path, alias: str, port: int, threads: int, *, host: str = "127.0.0.1",
                   watch_parent: bool = True) -> list[str]:
    """The command line that serves ``model`` as ``alias`` (optionally with the parent-watching shim)."""
    head = [sys.executable, "-c", _BOOTSTRAP] if watch_parent else [sys.executable, "-m", "llama_cpp.server"]
    return [*head, "--model", str(model), "--model_alias", alias, "--host", host, "--port", str(port),
            "--n_threads", str(threads), "--n_ctx", str(CONTEXT_TOKENS)]


def require_llama_cpp() -> None:
    if importlib.util.find_spec("llama_cpp") is None:
        raise ModelInstallError(
            "the embedded local model needs llama-cpp-python, which is not installed. Run scripts/setup.sh, "
            "or: CMAKE_ARGS=\"-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF "
            "-DLLAMA_BUILD_EXAMPLES=OFF\" pip install --no-cache-dir 'verifiedsql[local]'. "
            "Or point verifiedsql at an OpenAI-compatible server with VERIFIEDSQL_LLM_BASE_URL."
        )


def default_threads() -> int:
    return max(1, min(os.cpu_count() or 2, 8))


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


class LocalServer:
    """One llama-cpp-python server process for one model on 127.0.0.1; ``start()`` is idempotent."""

    def __init__(self, model_path: Path, alias: str, *, threads: int | None = None,
                 startup_timeout_s: float = 180.0) -> None:
        self.model_path = Path(model_path)
        self.alias = alias
        self.threads = threads or default_threads()
        self.startup_timeout_s = startup_timeout_s
        self.port: int | None = None
        self.log_path = model_home() / "logs" / f"server-{alias}.log"
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()

    @property
    def base_url(self) -> str:
        if self.port is None:
            raise ModelInstallError(f"the {self.alias} server is not started; call start() first.")
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def is_running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> LocalServer:
        """Start the server unless it runs already, and wait until it answers ``/v1/models``."""
        with self._lock:
            if self.is_running():
                return self
            require_llama_cpp()
            self.port = free_port()
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            if self.log_path.exists() and self.log_path.stat().st_size > _MAX_LOG_BYTES:
                os.replace(self.log_path, self.log_path.with_name(self.log_path.name + ".1"))
            log = self.log_path.open("ab")
            offset = log.tell()
            log.write(f"--- {time.ctime()} pid {os.getpid()} port {self.port}\n".encode())
            log.flush()
            started = time.monotonic()
            try:
                self._proc = subprocess.Popen(
                    server_command(self.model_path, self.alias, self.port, self.threads),
                    stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT,
                )
            except OSError as exc:
                raise ModelInstallError(f"cannot start the local model server: {exc}.") from exc
            finally:
                log.close()
            atexit.register(self.stop)
            self._wait_ready(offset)
            say(f"local model {self.alias} serving on {self.base_url} "
                 f"(started in {time.monotonic() - started:.1f} s; log {self.log_path})")
            return self

    def _wait_ready(self, log_offset: int) -> None:
        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            if self._proc is None or self._proc.poll() is not None:
                code = self._proc.returncode if self._proc else None
                self._fail(f"the local model server exited with code {code} while starting", log_offset)
            try:
                with _NO_PROXY.open(f"{self.base_url}/models", timeout=2) as reply:
                    if reply.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.25)
        self.stop()
        self._fail(f"the local model server did not answer within {self.startup_timeout_s:g} s", log_offset)

    def _fail(self, what: str, log_offset: int) -> None:
        raise ModelInstallError(f"{what}. {self.crash_hint()} Server output:\n{self._log_tail(log_offset)}")

    def _log_tail(self, offset: int = 0) -> str:
        try:
            with self.log_path.open("rb") as handle:
                handle.seek(offset)
                return handle.read().decode("utf-8", "replace")[-3000:]
        except OSError:
            return ""

    def crash_hint(self) -> str:
        """What to do about a server that died, judged by how it died; names the full log."""
        code = self._proc.returncode if self._proc is not None else None
        if code == -signal.SIGILL:
            why = ("It died of an illegal instruction: llama-cpp-python was built for CPU features this machine "
                   "lacks (for example -DGGML_AVX_VNNI=ON on a CPU without avx_vnni). Rebuild it with "
                   "scripts/setup.sh, using -DGGML_NATIVE=OFF and only the flags /proc/cpuinfo lists.")
        elif code == -signal.SIGSEGV:
            why = ("It crashed (SIGSEGV); the default llama-cpp-python build does so on some CPUs. Rebuild it "
                   "with scripts/setup.sh (CMAKE_ARGS=-DGGML_NATIVE=OFF ...).")
        else:
            why = "If it crashed, rebuild llama-cpp-python with scripts/setup.sh."
        return f"{why} Full log: {self.log_path}."

    def failure(self) -> str | None:
        """None while the server runs; else how it ended and what to do (used after a failed request)."""
        if self._proc is None or self._proc.poll() is None:
            return None
        return (f"the local model server {self.alias} exited with code {self._proc.returncode}. "
                f"{self.crash_hint()} Last output:\n{self._log_tail()[-1500:]}")

    def stop(self) -> None:
        """Terminate the server (kill it if it lingers); safe to call twice."""
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
        finally:
            if proc.stdin is not None:
                proc.stdin.close()


_SERVERS: dict[str, LocalServer] = {}
_SERVERS_LOCK = threading.Lock()


def shared_server(name: str, threads: int | None = None) -> LocalServer:
    """The process's one server for model ``name``: installed and started on first use, then reused."""
    spec = model_spec(name)
    with _SERVERS_LOCK:
        server = _SERVERS.get(spec.name)
        if server is None:
            require_llama_cpp()
            server = _SERVERS[spec.name] = LocalServer(install_model(spec.name), spec.alias, threads=threads)
        return server.start()


class LocalChatModel(OpenAIChatModel):
    """An ``OpenAIChatModel`` on the embedded server that, when a call fails because the server died,
    says so (exit signal, what to do, the log's tail) instead of reporting a refused connection."""

    # The embedded server answers one request at a time: requests sent side by side only queue there, their
    # timeouts running while they wait (measured: no faster; docs/benchmarks/speed.md).
    max_concurrency = 1
    context_tokens = CONTEXT_TOKENS

    def __init__(self, server: LocalServer, settings: LLMSettings) -> None:
        super().__init__(server.base_url, server.alias, "local", settings.timeout_s, settings.max_retries,
                         use_env_proxy=False)
        self.server = server

    def complete(self, request: ChatRequest) -> ChatResponse:
        try:
            return super().complete(request)
        except LLMError as error:
            failure = self.server.failure()
            if failure is None:
                raise
            raise LLMError(failure) from error


def embedded_chat_model(settings: LLMSettings) -> LocalChatModel:
    """A chat model backed by the embedded local model (installing and starting it if needed)."""
    spec = model_spec(settings.local_model)
    return LocalChatModel(shared_server(spec.name, settings.local_threads), settings)
