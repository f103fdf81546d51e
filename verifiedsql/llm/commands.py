"""``verifiedsql llm install`` and ``verifiedsql llm serve``: manage the embedded local model."""

from __future__ import annotations

import argparse
import subprocess
import sys
from typing import Any

from ..errors import ConfigurationError, ModelInstallError
from .local import default_threads, require_llama_cpp, server_command
from .models import DEFAULT_MODEL, MODELS, install_model


def add_llm_commands(subparsers: argparse._SubParsersAction[Any]) -> argparse.ArgumentParser:
    """Add the ``llm`` command (with ``install`` and ``serve``) to a CLI's subparsers."""
    llm = subparsers.add_parser("llm", help="install or serve the embedded local model")
    actions = llm.add_subparsers(dest="llm_command", required=True)
    install = actions.add_parser("install", help="download, join and verify the model; print its path")
    serve = actions.add_parser("serve", help="serve the model in the foreground (OpenAI-compatible API)")
    rescore = actions.add_parser("rescore", help="add token log-probabilities to a record/replay cache's replies "
                                 "recorded without them (resumable; the replies stay as recorded)")
    rescore.add_argument("cache", help="the cache file (llm-cache.sqlite)")
    rescore.add_argument("--purposes", default="generate,refine",
                         help="which requests' replies to score (default generate,refine)")
    rescore.add_argument("--limit", type=int, default=None, help="stop after this many replies")
    rescore.add_argument("--threads", type=int, default=None, help="CPU threads (default: the cores, at most 8)")
    for sub in (install, serve, rescore):
        sub.add_argument("--model", choices=sorted(MODELS), default=DEFAULT_MODEL,
                         help=f"which Qwen2.5-Coder model (default {DEFAULT_MODEL})")
    serve.add_argument("--port", type=int, default=8080, help="port on 127.0.0.1 (default 8080)")
    serve.add_argument("--threads", type=int, default=None, help="CPU threads (default: the cores, at most 8)")
    llm.set_defaults(handler=run_llm_command)
    return llm


def run_llm_command(args: argparse.Namespace) -> int:
    """Run ``llm install`` or ``llm serve``; returns the process exit code."""
    spec = MODELS[args.model]
    try:
        if args.llm_command == "install":
            print(install_model(spec.name))
            return 0
        if args.llm_command == "rescore":
            from .rescore import Scorer, rescore_cache

            scored = rescore_cache(args.cache, spec.name, tuple(args.purposes.split(",")), limit=args.limit,
                                   scorer=Scorer(spec.name, args.threads))
            print(f"{scored} replies scored")
            return 0
        require_llama_cpp()
        path = install_model(spec.name)
        url = f"http://127.0.0.1:{args.port}/v1"
        print(f"serving {spec.alias} on {url} (Ctrl-C stops it). Use it with:\n"
              f"  export VERIFIEDSQL_LLM_BASE_URL={url} VERIFIEDSQL_LLM_MODEL={spec.alias}", file=sys.stderr)
        # The shim makes the server exit with this process, however this process ends.
        server = subprocess.Popen(server_command(path, spec.alias, args.port, args.threads or default_threads()),
                                  stdin=subprocess.PIPE)
        try:
            return server.wait()
        except KeyboardInterrupt:
            server.terminate()
            server.wait(timeout=10)
            return 0
    except (ModelInstallError, ConfigurationError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
