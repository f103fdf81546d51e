"""Asyncio engines: ``await conn.execute(ask(q))`` on an ``AsyncConnection`` or ``AsyncSession``.

There is no second pipeline. ``Ask`` runs inside the greenlet that SQLAlchemy's asyncio layer spawns for
``execute`` (on the event loop's thread), and there it only hands the question to a worker thread
(``asyncio.to_thread``) and awaits it (``await_only``): the loop keeps running while the model is asked and
the candidates are run.

The worker answers exactly as a synchronous engine does, on the engine's *synchronous twin*: an engine on
the same database through the driver that the engine's backend guards (``sqlite3`` for ``sqlite+aiosqlite``,
psycopg for ``postgresql+asyncpg`` and ``postgresql+psycopg_async``: the driver of ``Backend.dbapi_url``).
So both safety layers, the bounds and the caller's-state rules are the synchronous path's own, and the
caller's asyncio connection and its transaction are never touched: the question runs on a connection of its
own, as on a synchronous engine with a pool of its own.
"""

from __future__ import annotations

import asyncio
from typing import Any

import sqlalchemy as sa
from sqlalchemy.util import await_only

from .backends import backend_for
from .db.database import SHARED_POOLS
from .errors import ConfigurationError
from .pipeline import Answer
from .session import VerifiedState

TWIN_ATTRIBUTE = "_verifiedsql_sync_engine"
# The asyncio drivers of each engine that has one in SQLAlchemy (each is tested: tests/test_async.py); the
# other engines (DuckDB, Snowflake) have none.
ASYNC_DRIVERS: dict[str, tuple[str, ...]] = {"sqlite": ("aiosqlite",), "postgresql": ("asyncpg", "psycopg_async")}

# URL query parameters that an asyncio driver reads and its database's synchronous driver names otherwise
# (a new name) or does not know (None): asyncpg's ``ssl`` is libpq's ``sslmode``; the rest are SQLAlchemy's
# asyncpg settings.
_ASYNC_ONLY_QUERY: dict[str, dict[str, str | None]] = {
    "asyncpg": {"ssl": "sslmode", "prepared_statement_cache_size": None, "prepared_statement_name_func": None},
}


def async_capable(url: sa.URL) -> bool:
    """Whether SQLAlchemy has an asyncio dialect for ``url`` (the one ``create_async_engine`` would load)."""
    try:
        return bool(getattr(url.get_dialect(_is_async=True), "is_async", False))
    except (sa.exc.ArgumentError, ImportError):
        return True  # an unknown dialect or driver: SQLAlchemy reports it itself


def not_async(url: sa.URL) -> ConfigurationError:
    """The typed error for ``create_async_engine`` on a driver that is not an asyncio one: the database's
    asyncio drivers, or (DuckDB, Snowflake: none exists) the way to ask from async code."""
    name = url.get_backend_name()
    drivers = ASYNC_DRIVERS.get(name)
    if drivers:
        return ConfigurationError(
            f"{url.drivername!r} is not an asyncio driver, so create_async_engine cannot use it; use "
            f"{' or '.join(f'{name}+{driver}://' for driver in drivers)}."
        )
    return ConfigurationError(
        f"{name!r} has no asyncio driver for SQLAlchemy, so create_async_engine cannot open {url.drivername!r}. "
        "From async code, use verifiedsql.create_engine(url) and ask in a worker thread: "
        "await asyncio.to_thread(lambda: conn.execute(verifiedsql.ask(question)).all())."
    )


def sync_twin(engine: sa.Engine, given: sa.Engine | None = None) -> sa.Engine:
    """The synchronous engine that an asyncio ``engine``'s questions are answered on: ``given`` (checked),
    else one made from the URL with the driver of the engine's backend. Engine arguments such as
    ``connect_args`` are not carried over; pass ``sync_engine=`` where the URL alone does not connect."""
    dialect = engine.dialect
    if given is not None:
        if given.dialect.is_async or given.dialect.name != dialect.name:
            raise ConfigurationError(
                f"sync_engine must be a synchronous engine on the same {dialect.name} database, not a "
                f"{given.dialect.name}+{given.dialect.driver} engine."
            )
        return given
    drivername = sa.make_url(backend_for(dialect.name).dbapi_url).drivername
    renamed = _ASYNC_ONLY_QUERY.get(dialect.driver, {})
    query: dict[str, str | tuple[str, ...]] = {}
    for key, value in engine.url.query.items():
        name = renamed.get(key, key)
        if name is not None:
            query[name] = value
    twin = sa.create_engine(engine.url.set(drivername=drivername, query=query))
    if isinstance(twin.pool, SHARED_POOLS):  # one connection per database: another connection is another one
        twin.dispose()
        raise ConfigurationError(
            f"{engine.url.render_as_string()!r} is an in-memory database: it lives inside the one asyncio "
            "connection, where verifiedsql's synchronous engine guard cannot reach it. Use a database file "
            f"({dialect.name}+{dialect.driver}:///shop.db), or verifiedsql.create_engine with asyncio.to_thread."
        )
    return twin


def attach(engine: sa.Engine, given: sa.Engine | None) -> None:
    """Give an asyncio ``engine`` its synchronous twin; a twin made here is disposed with the engine."""
    twin = sync_twin(engine, given)
    setattr(engine.dialect, TWIN_ATTRIBUTE, twin)
    if twin is not given:
        sa.event.listen(engine, "engine_disposed", lambda _engine: twin.dispose())


def answer(engine: sa.Engine, state: VerifiedState, question: Any) -> Answer:
    """Answer ``question`` for the asyncio ``engine`` in a worker thread, from inside the greenlet of
    ``AsyncConnection.execute`` / ``AsyncSession.execute``: the event loop runs on while it is answered."""
    twin: sa.Engine = getattr(engine.dialect, TWIN_ATTRIBUTE)
    answered: Answer = await_only(asyncio.to_thread(state.answer, twin, question))
    return answered
