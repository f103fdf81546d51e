"""Asyncio engines (``verifiedsql.aio``): ``await conn.execute(ask(q))`` on an ``AsyncConnection`` or
``AsyncSession`` answers through the synchronous pipeline, in a worker thread, on a synchronous twin of the
engine: the same result and report, the event loop never blocked, the caller's transaction left alone.
Every engine is either covered through its asyncio drivers here or refused with a typed error (no asyncio
driver exists for it), and the documented alternative for those works."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
import sqlalchemy as sa
from backends import load_shop
from fakes import ScriptedChatModel, by_seed, fenced
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, create_async_engine

import verifiedsql
from verifiedsql import aio, backends
from verifiedsql.errors import ConfigurationError, NoAnswerError
from verifiedsql.llm.base import ChatRequest

pytestmark = pytest.mark.timeout(120)

NO_ASYNC_DRIVER = tuple(name for name in backends.names() if name not in aio.ASYNC_DRIVERS)
CASES = [pytest.param(dialect, driver, id=driver) for dialect, drivers in aio.ASYNC_DRIVERS.items()
         for driver in drivers]
COUNT = "SELECT COUNT(*) FROM customers"
T = TypeVar("T")


def test_the_asyncio_drivers_are_asyncio_and_the_other_engines_have_none() -> None:
    assert set(aio.ASYNC_DRIVERS) <= set(backends.names()) and "duckdb" in NO_ASYNC_DRIVER
    for dialect, driver in [(d, v) for d, drivers in aio.ASYNC_DRIVERS.items() for v in drivers]:
        assert aio.async_capable(sa.make_url(f"{dialect}+{driver}://"))
    for dialect in NO_ASYNC_DRIVER:
        assert not aio.async_capable(sa.make_url(f"{dialect}://"))


def model(sql: str = COUNT, *, sleep_s: float = 0.0) -> ScriptedChatModel:
    def reply(request: ChatRequest) -> str:
        time.sleep(sleep_s)
        return fenced(sql)

    return ScriptedChatModel(reply)


def shop_url(engine_factory: Callable[[str], sa.Engine], dialect: str, driver: str) -> sa.URL:
    """The shop on ``dialect``, loaded through the synchronous driver; its URL with the asyncio ``driver``."""
    seed = load_shop(engine_factory(dialect))
    seed.dispose()
    return seed.url.set(drivername=f"{dialect}+{driver}")


def run(main: Callable[[AsyncEngine], Awaitable[T]], url: sa.URL | str, **options: Any) -> T:
    """``main(engine)`` on a new loop, with a verified asyncio engine on ``url``, disposed afterwards."""

    async def outer() -> T:
        engine = verifiedsql.create_async_engine(url, **options)
        try:
            return await main(engine)
        finally:
            await engine.dispose()

    return asyncio.run(outer())


# -------------------------------------------------------------------------------------- the same result


@pytest.mark.parametrize(("dialect", "driver"), CASES)
def test_async_connection_and_session_answer_with_a_report(dialect: str, driver: str, engine_factory) -> None:
    url = shop_url(engine_factory, dialect, driver)
    llm = model()

    async def main(engine: AsyncEngine) -> None:
        async with engine.connect() as conn:
            result = await conn.execute(verifiedsql.ask("How many customers are there?"))
            assert isinstance(result, verifiedsql.VerifiedResult)
            assert list(result.keys()) and result.all() == [(10,)]
            report = result.verification
            assert report.sql == COUNT and report.vote == "unanimous" and len(report.candidates) == 2
            assert (await conn.execute(verifiedsql.ask("How many?"))).scalar() == 10
            ran = await conn.run_sync(lambda sync: sync.execute(verifiedsql.ask("How many?")).all())
            assert ran == [(10,)]
            assert (await conn.execute(sa.text(COUNT))).scalar() == 10  # plain SQL: the driver's own path
        async with AsyncSession(engine) as session:
            result = await session.execute(verifiedsql.ask("How many customers are there?"))
            assert result.scalar() == 10 and result.verification.sql == COUNT

    run(main, url, llm=llm, candidates=2)
    assert llm.purposes().count("generate") == 8


def test_streaming_an_answer_is_a_typed_error(tmp_path: Path) -> None:
    """An answer is buffered; ``AsyncConnection.stream`` needs a server-side cursor."""
    url = f"sqlite:///{tmp_path / 'shop.db'}"
    load_shop(sa.create_engine(url)).dispose()
    llm = model()

    async def main(engine: AsyncEngine) -> None:
        async with engine.connect() as conn:
            with pytest.raises(ConfigurationError, match="instead of conn.stream"):
                await conn.stream(verifiedsql.ask("How many customers?"))
            assert (await conn.execute(verifiedsql.ask("How many customers?"))).scalar() == 10

    run(main, url.replace("sqlite:", "sqlite+aiosqlite:"), llm=llm, candidates=1)
    assert len(llm.requests) == 1


@pytest.mark.parametrize(("dialect", "driver"), CASES)
def test_the_plugin_on_sqlalchemys_create_async_engine(dialect: str, driver: str, engine_factory) -> None:
    url = shop_url(engine_factory, dialect, driver)
    llm = model()

    async def main() -> list[Any]:
        engine = create_async_engine(url, plugins=["verifiedsql"], verifiedsql={"candidates": 1},
                                     verifiedsql_llm=llm)
        try:
            async with engine.connect() as conn:
                return list((await conn.execute(verifiedsql.ask("How many customers?"))).all())
        finally:
            await engine.dispose()

    assert asyncio.run(main()) == [(10,)]


def test_create_async_engine_on_a_synchronous_psycopg_url(engine_factory) -> None:
    """SQLAlchemy swaps in psycopg's asyncio variant for ``postgresql+psycopg://`` under create_async_engine."""
    url = shop_url(engine_factory, "postgresql", "psycopg")

    async def main(engine: AsyncEngine) -> Any:
        assert engine.dialect.is_async and engine.dialect.driver == "psycopg"
        async with engine.connect() as conn:
            return (await conn.execute(verifiedsql.ask("How many customers?"))).scalar()

    assert run(main, url, llm=model(), candidates=1) == 10


def test_typed_errors_and_refused_sql_come_through_await(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'shop.db'}"
    load_shop(sa.create_engine(url)).dispose()
    llm = ScriptedChatModel(by_seed({0: "DELETE FROM customers"}, refine="DROP TABLE customers"))

    async def main(engine: AsyncEngine) -> None:
        async with engine.connect() as conn:
            with pytest.raises(NoAnswerError) as caught:
                await conn.execute(verifiedsql.ask("delete everyone"))
            assert caught.value.report.candidates[0].status == "unsafe"
            assert (await conn.execute(sa.text(COUNT))).scalar() == 10

    run(main, url.replace("sqlite:", "sqlite+aiosqlite:"), llm=llm, candidates=1)


# -------------------------------------------------------------------------------- the loop keeps running


def test_a_question_does_not_block_the_event_loop(tmp_path: Path) -> None:
    """Each model call sleeps 0.3 s; a ticker coroutine keeps ticking every 10 ms all through the question,
    and two questions asked at once overlap."""
    url = f"sqlite:///{tmp_path / 'shop.db'}"
    load_shop(sa.create_engine(url)).dispose()
    ticks: list[float] = []

    async def ticker() -> None:
        while True:
            ticks.append(time.monotonic())
            await asyncio.sleep(0.01)

    async def ask(engine: AsyncEngine, question: str) -> Any:
        async with engine.connect() as conn:
            return (await conn.execute(verifiedsql.ask(question))).scalar()

    async def main(engine: AsyncEngine) -> tuple[float, float, float]:
        await ask(engine, "warm up: reflection")
        ticking = asyncio.create_task(ticker())
        await asyncio.sleep(0.05)
        start = time.monotonic()
        assert await ask(engine, "How many customers?") == 10
        one = time.monotonic() - start
        start = time.monotonic()
        assert await asyncio.gather(ask(engine, "one"), ask(engine, "two")) == [10, 10]
        two = time.monotonic() - start
        ticking.cancel()
        during = [t for t in ticks if t >= start - one]
        gap = max(b - a for a, b in zip(during, during[1:]))
        return one, two, gap

    one, two, gap = run(main, url.replace("sqlite:", "sqlite+aiosqlite:"), llm=model(sleep_s=0.3), candidates=1)
    assert one >= 0.3
    assert gap < 0.2, f"the event loop stood still for {gap:.2f} s during a question"
    assert two < 2 * one, f"two questions at once took {two:.2f} s, one alone {one:.2f} s"


def test_cancelling_a_question_stops_the_wait_and_the_engine_goes_on(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'shop.db'}"
    load_shop(sa.create_engine(url)).dispose()

    async def ask(engine: AsyncEngine) -> Any:
        async with engine.connect() as conn:
            return (await conn.execute(verifiedsql.ask("How many customers?"))).scalar()

    async def main(engine: AsyncEngine) -> tuple[float, Any]:
        task = asyncio.create_task(ask(engine))
        await asyncio.sleep(0.1)
        start = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        waited = time.monotonic() - start
        return waited, await ask(engine)

    waited, after = run(main, url.replace("sqlite:", "sqlite+aiosqlite:"), llm=model(sleep_s=0.5), candidates=1)
    assert waited < 0.2 and after == 10


# ------------------------------------------------------------------------------- the caller's transaction


@pytest.mark.parametrize(("dialect", "driver"), CASES)
def test_question_inside_a_transaction_leaves_it_alone(dialect: str, driver: str, engine_factory) -> None:
    """As on the synchronous path (tests/hostile/test_user_state.py): the question runs on a connection of its
    own; the caller's open transaction keeps its pending row and commits it afterwards."""
    seed = engine_factory(dialect)
    with seed.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE t (x INTEGER)")
        conn.exec_driver_sql("INSERT INTO t VALUES (1)")
    seed.dispose()
    count = "SELECT COUNT(*) FROM t"

    async def main(engine: AsyncEngine) -> None:
        async with engine.connect() as conn:
            await conn.exec_driver_sql("INSERT INTO t VALUES (2)")
            assert conn.in_transaction()
            assert (await conn.execute(verifiedsql.ask("How many rows are there?"))).all() == [(1,)]
            assert conn.in_transaction() and (await conn.exec_driver_sql(count)).scalar() == 2
            await conn.commit()
        async with engine.connect() as conn:
            assert (await conn.exec_driver_sql(count)).scalar() == 2
        async with engine.begin() as conn:  # and a rolled-back transaction rolls back as always
            await conn.exec_driver_sql("INSERT INTO t VALUES (3)")
            await conn.execute(verifiedsql.ask("How many rows are there?"))
            await conn.rollback()
        async with engine.connect() as conn:
            assert (await conn.exec_driver_sql(count)).scalar() == 2

    run(main, seed.url.set(drivername=f"{dialect}+{driver}"), llm=model(count), candidates=1)


# -------------------------------------------------------------------------------------- the sync twin


def test_the_twin_uses_the_backends_driver_and_goes_with_the_engine(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'x.db'}"
    engine = verifiedsql.create_async_engine(url, llm=model())
    twin = getattr(engine.sync_engine.dialect, aio.TWIN_ATTRIBUTE)
    assert twin.dialect.driver == "pysqlite" and twin.url.database == str(tmp_path / "x.db")
    disposed: list[sa.Engine] = []
    sa.event.listen(twin, "engine_disposed", disposed.append)
    asyncio.run(engine.dispose())
    assert disposed == [twin]


def test_asyncpg_url_settings_become_psycopgs(engine_factory) -> None:
    url = shop_url(engine_factory, "postgresql", "asyncpg").update_query_dict(
        {"ssl": "disable", "prepared_statement_cache_size": "0"})

    async def main(engine: AsyncEngine) -> Any:
        twin = getattr(engine.sync_engine.dialect, aio.TWIN_ATTRIBUTE)
        assert twin.dialect.driver == "psycopg" and dict(twin.url.query) == {"sslmode": "disable"}
        async with engine.connect() as conn:
            return (await conn.execute(verifiedsql.ask("How many customers?"))).scalar()

    assert run(main, url, llm=model(), candidates=1) == 10


def test_a_given_sync_engine_is_used_and_left_open(tmp_path: Path) -> None:
    path = tmp_path / "shop.db"
    load_shop(sa.create_engine(f"sqlite:///{path}")).dispose()
    given = sa.create_engine(f"sqlite:///{path}")
    checkouts: list[Any] = []
    sa.event.listen(given, "checkout", lambda *args: checkouts.append(1))

    async def main(engine: AsyncEngine) -> Any:
        async with engine.connect() as conn:
            return (await conn.execute(verifiedsql.ask("How many customers?"))).scalar()

    assert run(main, f"sqlite+aiosqlite:///{path}", llm=model(), candidates=1, sync_engine=given) == 10
    assert checkouts, "the question did not run on the given engine"
    with given.connect() as conn:  # not disposed with the asyncio engine: the caller's
        assert conn.exec_driver_sql(COUNT).scalar() == 10
    given.dispose()


def test_a_sync_engine_of_another_kind_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="sync_engine must be a synchronous engine on the same sqlite"):
        verifiedsql.create_async_engine(f"sqlite+aiosqlite:///{tmp_path / 'x.db'}",
                                        sync_engine=sa.create_engine("duckdb:///:memory:"))


@pytest.mark.parametrize("url", ["sqlite+aiosqlite://", "sqlite+aiosqlite:///:memory:"])
def test_an_in_memory_database_behind_aiosqlite_is_refused(url: str) -> None:
    """Its data lives inside the one asyncio connection, out of the synchronous guard's reach."""
    with pytest.raises(ConfigurationError, match="in-memory database.*database file"):
        verifiedsql.create_async_engine(url)
    with pytest.raises(ConfigurationError, match="in-memory database"):
        create_async_engine(url, plugins=["verifiedsql"])


# ------------------------------------------------------------------------ refusals and the alternative


SYNC_DRIVER_REFUSED = r"is not an asyncio driver.*use (sqlite\+aiosqlite|postgresql\+asyncpg:// or postgresql\+psycopg_async)://"


@pytest.mark.parametrize("url", ["sqlite:///{tmp}/shop.db", "postgresql+psycopg2://u@127.0.0.1:9/db"])
def test_a_synchronous_driver_behind_create_async_engine_is_refused(url: str, tmp_path: Path) -> None:
    url = url.format(tmp=tmp_path)
    for make in (verifiedsql.create_async_engine, lambda u: create_async_engine(u, plugins=["verifiedsql"])):
        with pytest.raises(ConfigurationError, match=SYNC_DRIVER_REFUSED):
            make(url)


@pytest.mark.parametrize("url", ["sqlite+aiosqlite:///{tmp}/shop.db", "postgresql+psycopg_async://u@127.0.0.1:9/db",
                                 "postgresql+asyncpg://u@127.0.0.1:9/db"])
def test_an_asyncio_driver_behind_the_synchronous_create_engine_is_refused(url: str, tmp_path: Path) -> None:
    url = url.format(tmp=tmp_path)
    with pytest.raises(ConfigurationError, match="is an asyncio driver.*verifiedsql.create_async_engine"):
        verifiedsql.create_engine(url)
    with pytest.raises(ConfigurationError, match="is an asyncio driver"):
        sa.create_engine(f"{url}{'&' if '?' in url else '?'}plugin=verifiedsql")


@pytest.mark.parametrize("dialect", NO_ASYNC_DRIVER)
@pytest.mark.filterwarnings("ignore:verifiedsql could not reflect foreign keys")  # fakesnow's SHOW IMPORTED KEYS
def test_an_engine_without_an_asyncio_driver_is_refused_and_to_thread_works(dialect: str, engine_factory) -> None:
    """DuckDB (and Snowflake) have no asyncio driver for SQLAlchemy: create_async_engine is a typed error
    that names the alternative, a synchronous verified engine asked through ``asyncio.to_thread``."""
    url = load_shop(engine_factory(dialect)).url
    for make in (verifiedsql.create_async_engine, lambda u: create_async_engine(u, plugins=["verifiedsql"])):
        with pytest.raises(ConfigurationError, match="has no asyncio driver.*asyncio.to_thread"):
            make(url)
    verified = verifiedsql.create_engine(url, llm=model(sleep_s=0.2), candidates=1)
    ticks: list[float] = []

    def ask(question: str) -> list[Any]:
        with verified.connect() as conn:
            return list(conn.execute(verifiedsql.ask(question)).all())

    async def main() -> list[Any]:
        async def ticker() -> None:
            while True:
                ticks.append(time.monotonic())
                await asyncio.sleep(0.01)

        ticking = asyncio.create_task(ticker())
        try:
            return await asyncio.to_thread(ask, "How many customers?")
        finally:
            ticking.cancel()

    try:
        assert asyncio.run(main()) == [(10,)]
    finally:
        verified.dispose()
    assert len(ticks) >= 10
