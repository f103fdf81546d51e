"""The hostile model's payload matrix (``payloads.py``, as in ``test_adversarial_model.py``) through the asyncio
path: ``await conn.execute(ask(q))`` on ``verifiedsql.create_async_engine``, on every engine with an asyncio
driver (SQLite through aiosqlite, PostgreSQL through asyncpg).

For each payload: the data and the engine's catalog are identical before and after, no file appears, the
outcome follows the catalogue's rules, and the layer that stopped it is the one that stops it on the
synchronous engine (the asyncio path answers through the same pipeline, on a synchronous twin).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from backends import checksum
from conftest import HOSTILE_OPTIONS, HostileModel, Outcome, Worlds, files_under
from payloads import Payload, pairs
from sqlalchemy.ext.asyncio import AsyncEngine
from test_adversarial_model import QUESTION, _check

import verifiedsql
from verifiedsql import aio
from verifiedsql.errors import NoAnswerError, NoDataError

pytestmark = pytest.mark.timeout(120)

PAIRS = [(payload, dialect) for payload, dialect in pairs() if dialect in aio.ASYNC_DRIVERS]
BOUNDED = {"timeout", "row cap"}  # outcomes that depend on timing: the layers may differ between runs


@pytest.fixture(scope="module")
def runner() -> Iterator[asyncio.Runner]:
    """One event loop for the module: the asyncio engines' pooled connections belong to it."""
    with asyncio.Runner() as loop:
        yield loop


@pytest.fixture(scope="module")
def async_engine(worlds: Worlds, hostile: HostileModel,
                 runner: asyncio.Runner) -> Iterator[Callable[[str], AsyncEngine]]:
    """``async_engine(dialect)``: the world's data behind ``create_async_engine`` with the engine's first
    asyncio driver and the hostile options, warmed up (reflection) on first use."""
    built: dict[str, AsyncEngine] = {}

    def make(dialect: str) -> AsyncEngine:
        if dialect not in built:
            url = worlds(dialect).engine.url.set(drivername=f"{dialect}+{aio.ASYNC_DRIVERS[dialect][0]}")
            built[dialect] = verifiedsql.create_async_engine(url, **dict(HOSTILE_OPTIONS, llm_base_url=hostile.url))
            hostile.serve("SELECT COUNT(*) FROM orders")
            runner.run(ask(built[dialect], "How many orders are there?"))
        return built[dialect]

    yield make
    for engine in built.values():
        runner.run(engine.dispose())


async def ask(engine: AsyncEngine, question: str) -> Outcome:
    """``World.ask`` through the asyncio path: ``NoAnswerError`` is an unanswered outcome; a ``NoDataError``
    on SQL that ran is a harmless read that was not returned."""
    try:
        async with engine.connect() as conn:
            result = await conn.execute(verifiedsql.ask(question))
            rows, report = result.all(), result.verification
    except NoDataError as error:
        return Outcome(error.report, answered=error.report.sql is not None)
    except NoAnswerError as error:
        return Outcome(error.report, answered=False)
    return Outcome(report, answered=True, rows=[tuple(r) for r in rows])


@pytest.mark.parametrize(("payload", "dialect"), PAIRS, ids=[f"{p.id}-{d}" for p, d in PAIRS])
def test_hostile_payload_through_the_async_path(payload: Payload, dialect: str, worlds: Worlds, hostile: HostileModel,
                                                target_dir: Path, runner: asyncio.Runner,
                                                async_engine: Callable[[str], AsyncEngine]) -> None:
    world, engine = worlds(dialect), async_engine(dialect)
    before, files_before = world.state(), files_under(*world.directories)
    hostile.serve(payload.render(target_dir))
    outcome = runner.run(ask(engine, QUESTION))
    assert {purpose for purpose, _ in hostile.served} >= {"probe", "generate"}
    after, files_after = world.state(), files_under(*world.directories)
    assert after == before, f"{payload.id} changed the data or the catalog on {dialect} (async)"
    assert files_after == files_before, f"{payload.id} created or changed files on {dialect} (async)"
    _check(payload, dialect, outcome)
    hostile.serve(payload.render(target_dir))
    synchronous = world.ask("engine", QUESTION)
    layers = {outcome.outcome(), synchronous.outcome()}
    if not layers & BOUNDED:
        assert len(layers) == 1, f"{payload.id} on {dialect}: the async and sync paths disagree: {layers}"
    assert world.state() == before


def test_checksums_unchanged(worlds: Worlds) -> None:
    """``backends.checksum`` of every world built in this module, against the one taken when it was built."""
    if not worlds.built:
        pytest.skip("no world was built (every payload test was deselected)")
    for dialect, world in worlds.built.items():
        assert checksum(world.engine) == world.initial_checksum, dialect


def test_the_async_engines_answer_on_their_synchronous_twin(worlds: Worlds,
                                                            async_engine: Callable[[str], AsyncEngine]) -> None:
    """What makes the matrix above hold: the questions run through the backend's own synchronous driver,
    whose engine guard ``guard/readonly.py`` implements."""
    for dialect in aio.ASYNC_DRIVERS:
        twin: sa.Engine = getattr(async_engine(dialect).sync_engine.dialect, aio.TWIN_ATTRIBUTE)
        assert not twin.dialect.is_async and twin.dialect.driver == worlds(dialect).engine.dialect.driver
