"""A throw-away PostgreSQL 15 server on 127.0.0.1: ``tests/conftest.py``'s ``postgres_url``, the benchmarks'
``postgres_server`` (``benchmarks/conftest.py``) and the hostile suite's server that goes away start theirs
here. The server itself is ``verifiedsql.bench.pgserver``'s (``bench verify`` starts one too)."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import pytest

from verifiedsql.bench.pgserver import PG_BIN, PostgresServer, available

__all__ = ["PostgresServer", "skip_without_postgres", "throwaway_postgres"]


def skip_without_postgres() -> None:
    """Skip the test where the server binaries (or ``runuser``) are missing."""
    if not available():
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
