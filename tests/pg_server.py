"""A throw-away PostgreSQL 15 server on 127.0.0.1: ``tests/conftest.py``'s ``postgres_url`` and
``benchmarks/test_perf_schema.py`` start theirs here."""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

PG_BIN = Path("/usr/lib/postgresql/15/bin")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _as_postgres(*command: str) -> subprocess.CompletedProcess:
    return subprocess.run(["runuser", "-u", "postgres", "--", *command], check=True, capture_output=True, text=True)


@contextmanager
def throwaway_postgres(prefix: str = "verifiedsql-pg-") -> Iterator[str]:
    """Start a server in a new ``prefix`` folder (run as ``postgres``; initdb refuses root) and give its URL;
    stop it and remove the folder after. Skips the test where the server binaries are missing."""
    if not (PG_BIN / "initdb").exists():
        pytest.skip(f"PostgreSQL binaries not found at {PG_BIN}; install Debian's 'postgresql' package")
    root = Path(tempfile.mkdtemp(prefix=prefix))
    shutil.chown(root, "postgres", "postgres")
    data, port = root / "data", _free_port()
    _as_postgres(str(PG_BIN / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8")
    options = f"-c listen_addresses=127.0.0.1 -p {port} -k {root} -c fsync=off"
    _as_postgres(str(PG_BIN / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(root / "log"), "-w", "start")
    try:
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres"
    finally:
        _as_postgres(str(PG_BIN / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop")
        shutil.rmtree(root, ignore_errors=True)
