"""Shared fixtures: a throw-away PostgreSQL 15 server and the ``shop`` dataset on every backend."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pytest
import sqlalchemy as sa
from backends import DIALECTS, enter_emulator, load_shop, make_engine, server_url
from fake_openai import FakeServer
from pg_server import throwaway_postgres


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A PostgreSQL 15 server on 127.0.0.1 for this session (``pg_server``)."""
    with throwaway_postgres() as url:
        yield url


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
