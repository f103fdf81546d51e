"""SQLAlchemy integration: ``create_engine``, the ``verifiedsql`` engine plugin, and ``ask()``.

Plain SQL is untouched: the plugin adds no events and no wrappers to the engine; it only records
the options. A question is an ``Ask`` executable, which SQLAlchemy dispatches to
``Ask._execute_on_connection``; it answers through the pipeline and returns an ordinary
``Result`` (``VerifiedResult``) with the report attached as ``.verification``. On an asyncio engine
(``create_async_engine``) the same ``Ask`` answers in a worker thread on a synchronous twin of the engine
(``verifiedsql.aio``), so ``await conn.execute(ask(q))`` returns the same result without blocking the loop.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.dialects import plugins
from sqlalchemy.engine import CreateEnginePlugin
from sqlalchemy.engine.result import IteratorResult, SimpleResultMetaData
from sqlalchemy.sql.base import Executable
from sqlalchemy.sql.elements import ClauseElement

from . import aio
from .config import Options
from .errors import ConfigurationError, NotConfiguredError
from .llm.base import ChatModel
from .pipeline import Answer
from .report import VerificationReport
from .session import VerifiedState

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

PLUGIN_NAME = "verifiedsql"
STATE_ATTRIBUTE = "_verifiedsql_state"
OPTION_NAMES = frozenset(Options.__dataclass_fields__) | {
    "llm_base_url", "llm_model", "llm_api_key", "local_model", "llm_timeout_s", "llm_max_retries",
    "local_threads", "cache",
}


class VerifiedResult(IteratorResult):
    """An ordinary SQLAlchemy ``Result`` over the answer's rows, plus ``verification``."""

    verification: VerificationReport

    @classmethod
    def from_answer(cls, answer: Answer) -> VerifiedResult:
        result = cls(SimpleResultMetaData(list(answer.result.columns)), iter(answer.result.rows))
        result.verification = answer.report
        return result


class Ask(Executable, ClauseElement):
    """A natural-language question that ``Connection.execute`` / ``Session.execute`` can run."""

    __visit_name__ = "verifiedsql_ask"
    inherit_cache = False

    def __init__(self, question: str) -> None:
        self.question = question

    def __repr__(self) -> str:
        return f"ask({self.question!r})"

    def _execute_on_connection(  # type: ignore[override]  # a Result, not a CursorResult: no cursor
        self, connection: sa.Connection, distilled_params: Any, execution_options: Any
    ) -> VerifiedResult:
        engine = connection.engine
        state = state_of(engine)
        if engine.dialect.is_async:  # inside AsyncConnection.execute's greenlet: answered off the event loop
            if execution_options.get("stream_results"):  # AsyncConnection.stream() needs a server-side cursor
                raise ConfigurationError("an answer is a buffered result with no cursor to stream: use "
                                         "await conn.execute(verifiedsql.ask(...)) instead of conn.stream(...).")
            return VerifiedResult.from_answer(aio.answer(engine, state, self.question))
        return VerifiedResult.from_answer(state.answer(engine, self.question, connection))


def ask(question: str) -> Ask:
    """A question to pass to ``conn.execute``, ``session.execute`` or ``pandas.read_sql``; on an asyncio
    engine, ``await conn.execute(...)`` or ``await session.execute(...)``."""
    return Ask(question)


def state_of(engine: sa.Engine) -> VerifiedState:
    """The verifiedsql state of an engine created with the plugin; a typed error otherwise."""
    state = getattr(engine.dialect, STATE_ATTRIBUTE, None)
    if state is None:
        raise NotConfiguredError(
            "this engine was not created by verifiedsql: use verifiedsql.create_engine(url) or "
            "sqlalchemy.create_engine(url, plugins=['verifiedsql'])."
        )
    return state


def _options_from(value: Any) -> Options:
    if isinstance(value, Options):
        return value
    return Options.build(dict(value or {}))


def _refuse_asyncio(url: sa.URL) -> None:
    """A typed error for an asyncio driver (``sqlite+aiosqlite``, ``postgresql+asyncpg``) behind the synchronous
    ``create_engine``, which would fail later with ``MissingGreenlet``."""
    try:
        dialect = url.get_dialect()
    except (sa.exc.ArgumentError, ImportError):
        return  # an unknown dialect or driver: SQLAlchemy reports it itself
    if getattr(dialect, "is_async", False):
        raise ConfigurationError(
            f"{url.drivername!r} is an asyncio driver, and create_engine makes a synchronous engine. Use "
            "verifiedsql.create_async_engine(url) (or sqlalchemy.ext.asyncio.create_async_engine(url, "
            "plugins=['verifiedsql'])) and await conn.execute(verifiedsql.ask(...)), or the synchronous driver "
            "of the same database (sqlite://, postgresql+psycopg://) with verifiedsql.create_engine."
        )


class VerifiedPlugin(CreateEnginePlugin):
    """Registered as the ``verifiedsql`` plugin; takes its options from ``verifiedsql={...}``, a ready model
    from ``verifiedsql_llm`` and, for an asyncio engine, the synchronous engine its questions run on from
    ``verifiedsql_sync_engine`` (``verifiedsql.aio``; made from the URL when not given)."""

    def __init__(self, url: sa.URL, kwargs: dict[str, Any]) -> None:
        if kwargs.get("_is_async"):  # create_async_engine: refuse a database with no asyncio driver up front
            if not aio.async_capable(url):
                raise aio.not_async(url)
        else:
            _refuse_asyncio(url)
        super().__init__(url, kwargs)
        self.options = _options_from(kwargs.pop("verifiedsql", None))
        self.llm: ChatModel | None = kwargs.pop("verifiedsql_llm", None)
        self.sync_engine: sa.Engine | None = kwargs.pop("verifiedsql_sync_engine", None)

    def update_url(self, url: sa.URL) -> sa.URL:
        return url

    def engine_created(self, engine: sa.Engine) -> None:
        state = VerifiedState(self.options, self.llm)
        if engine.dialect.is_async:  # create_async_engine (also "postgresql+psycopg://": SQLAlchemy swaps it)
            aio.attach(engine, self.sync_engine)
        setattr(engine.dialect, STATE_ATTRIBUTE, state)
        sa.event.listen(engine, "engine_disposed", lambda _engine: state.close())


plugins.register(PLUGIN_NAME, __name__, "VerifiedPlugin")


def create_engine(url: str | sa.URL, *, llm: ChatModel | None = None, **kwargs: Any) -> sa.Engine:
    """``sqlalchemy.create_engine`` plus verification. verifiedsql options (see ``Options``) and
    SQLAlchemy's own keyword arguments may be mixed; ``llm`` injects a ready model client."""
    return sa.create_engine(url, **_with_plugin(kwargs, llm))


def create_async_engine(url: str | sa.URL, *, llm: ChatModel | None = None, sync_engine: sa.Engine | None = None,
                        **kwargs: Any) -> AsyncEngine:
    """``sqlalchemy.ext.asyncio.create_async_engine`` plus verification: ``await conn.execute(ask(q))``.
    Options as for ``create_engine``; ``sync_engine``: a ready synchronous engine on the same database for
    the questions to run on, where the URL alone does not connect (``connect_args``, an SSL context);
    by default one is made from the URL with the database's synchronous driver (``verifiedsql.aio``)."""
    from sqlalchemy.ext.asyncio import create_async_engine as sa_create_async_engine

    return sa_create_async_engine(url, verifiedsql_sync_engine=sync_engine, **_with_plugin(kwargs, llm))


def _with_plugin(kwargs: dict[str, Any], llm: ChatModel | None) -> dict[str, Any]:
    """SQLAlchemy's keyword arguments, with verifiedsql's options (mixed in ``kwargs``) moved to the plugin's."""
    ours = {k: kwargs.pop(k) for k in list(kwargs) if k in OPTION_NAMES}
    plugin_list = [*kwargs.pop("plugins", []), PLUGIN_NAME]
    return {**kwargs, "plugins": plugin_list, "verifiedsql": Options.build(ours), "verifiedsql_llm": llm}
