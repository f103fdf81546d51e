"""Shared fixtures: a throw-away PostgreSQL 15 server and the ``shop`` dataset on every backend."""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Iterator

import pytest
import sqlalchemy as sa
from backends import DIALECTS, enter_emulator, load_shop, make_engine, server_url
from fake_openai import FakeServer

PG_BIN = Path("/usr/lib/postgresql/15/bin")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _as_postgres(*command: str) -> subprocess.CompletedProcess:
    return subprocess.run(["runuser", "-u", "postgres", "--", *command], check=True, capture_output=True, text=True)


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A PostgreSQL 15 server on 127.0.0.1 for this session (run as ``postgres``; initdb refuses root)."""
    if not (PG_BIN / "initdb").exists():
        pytest.skip(f"PostgreSQL binaries not found at {PG_BIN}; install Debian's 'postgresql' package")
    root = Path(tempfile.mkdtemp(prefix="verifiedsql-pg-"))
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


@pytest.fixture
def engine_factory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator:
    """``engine_factory(dialect)`` gives an empty engine; an engine's emulator (fakesnow) stays entered for
    the test (``verifiedsql.backends``: its ``TestConfig``)."""
    engines: list[sa.Engine] = []
    patches: dict[str, Any] = {}

    def factory(dialect: str) -> sa.Engine:
        url = server_url(dialect, request)
        if dialect not in patches:
            patches[dialect] = enter_emulator(dialect)
        engine = make_engine(dialect, tmp_path, url)
        engines.append(engine)
        return engine

    yield factory
    for engine in engines:
        engine.dispose()
    for patch in reversed(list(patches.values())):
        if patch is not None:
            patch.__exit__(None, None, None)


@pytest.fixture(params=DIALECTS)
def shop_engine(request: pytest.FixtureRequest, engine_factory) -> sa.Engine:
    """An engine per dialect with ``customers`` and ``orders`` loaded (see ``backends.load_shop``)."""
    return load_shop(engine_factory(request.param))


@pytest.fixture
def server() -> Iterator[FakeServer]:
    """A scripted OpenAI-compatible server on 127.0.0.1 for one test."""
    fake = FakeServer()
    yield fake
    fake.httpd.shutdown()
    fake.httpd.server_close()
