"""A throw-away PostgreSQL 15 server on 127.0.0.1: ``tests/conftest.py``'s ``postgres_url``,
``benchmarks/test_perf_schema.py`` and the hostile suite's server that goes away start theirs here."""

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


class PostgresServer:
    """A server of its own in a new ``prefix`` folder (run as ``postgres``; initdb refuses root), initialised
    but not started; ``start``/``stop`` may be called again, as an administrator restarting it would."""

    def __init__(self, prefix: str = "verifiedsql-pg-") -> None:
        self.root = Path(tempfile.mkdtemp(prefix=prefix))
        shutil.chown(self.root, "postgres", "postgres")
        self.data, self.port = self.root / "data", _free_port()
        self.url = f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"
        _as_postgres(str(PG_BIN / "initdb"), "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8")

    def start(self) -> None:
        options = f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.root} -c fsync=off"
        _as_postgres(str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-o", options, "-l", str(self.root / "log"),
                     "-w", "start")

    def stop(self) -> None:
        """Shut down now: open sessions are terminated, as in a restart by an administrator."""
        _as_postgres(str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop")

    def remove(self) -> None:
        """Stop it if it runs, and delete its folder."""
        subprocess.run(["runuser", "-u", "postgres", "--", str(PG_BIN / "pg_ctl"), "-D", str(self.data),
                        "-m", "immediate", "stop"], capture_output=True, check=False)
        shutil.rmtree(self.root, ignore_errors=True)


def skip_without_postgres() -> None:
    """Skip the test where the server binaries (or ``runuser``) are missing."""
    if not (PG_BIN / "initdb").exists() or shutil.which("runuser") is None:
        pytest.skip(f"PostgreSQL binaries not found at {PG_BIN}; install Debian's 'postgresql' package")


@contextmanager
def throwaway_postgres(prefix: str = "verifiedsql-pg-") -> Iterator[str]:
    """Start a ``PostgresServer`` and give its URL; stop it and remove its folder after. Skips the test where
    the server binaries are missing."""
    skip_without_postgres()
    server = PostgresServer(prefix)
    try:
        server.start()
        yield server.url
    finally:
        server.remove()
