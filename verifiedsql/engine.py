"""SQLAlchemy integration: ``create_engine``, the ``verifiedsql`` engine plugin, and ``ask()``.

Plain SQL is untouched: the plugin adds no events and no wrappers to the engine; it only records
the options. A question is an ``Ask`` executable, which SQLAlchemy dispatches to
``Ask._execute_on_connection``; it answers through the pipeline and returns an ordinary
``Result`` (``VerifiedResult``) with the report attached as ``.verification``.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import plugins
from sqlalchemy.engine import CreateEnginePlugin
from sqlalchemy.engine.result import IteratorResult, SimpleResultMetaData
from sqlalchemy.sql.base import Executable
from sqlalchemy.sql.elements import ClauseElement

from .config import Options
from .errors import ConfigurationError, NotConfiguredError
from .llm.base import ChatModel
from .pipeline import Answer
from .report import VerificationReport
from .session import VerifiedState

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
        state = state_of(connection.engine)
        return VerifiedResult.from_answer(state.answer(connection.engine, self.question, connection))


def ask(question: str) -> Ask:
    """A question to pass to ``conn.execute``, ``session.execute`` or ``pandas.read_sql``."""
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


def _refuse_asyncio(url: sa.URL, dialect: Any = None) -> None:
    """A typed error for an asyncio driver (``sqlite+aiosqlite``, ``postgresql+psycopg_async``, any URL
    behind ``create_async_engine``): the pipeline calls the driver synchronously, which would fail later
    with ``MissingGreenlet`` or never-awaited coroutines. ``dialect``: the engine's, once there is one."""
    if dialect is None:
        try:
            dialect = url.get_dialect()
        except (sa.exc.ArgumentError, ImportError):
            return  # an unknown dialect or driver: SQLAlchemy reports it itself
    if getattr(dialect, "is_async", False):
        raise ConfigurationError(
            f"verifiedsql needs a synchronous SQLAlchemy engine, and {url.drivername!r} runs here on the asyncio "
            f"driver {getattr(dialect, 'driver', '?')!r} (asyncio URLs and create_async_engine are not supported). "
            "Use the synchronous driver of the same database (sqlite://, postgresql+psycopg://) with "
            "verifiedsql.create_engine; from async code, ask in a worker thread with asyncio.to_thread."
        )


class VerifiedPlugin(CreateEnginePlugin):
    """Registered as the ``verifiedsql`` plugin; takes its options from ``verifiedsql={...}``.
    Refuses asyncio drivers (``ConfigurationError``)."""

    def __init__(self, url: sa.URL, kwargs: dict[str, Any]) -> None:
        _refuse_asyncio(url)
        super().__init__(url, kwargs)
        self.options = _options_from(kwargs.pop("verifiedsql", None))
        self.llm: ChatModel | None = kwargs.pop("verifiedsql_llm", None)

    def update_url(self, url: sa.URL) -> sa.URL:
        return url

    def engine_created(self, engine: sa.Engine) -> None:
        _refuse_asyncio(engine.url, engine.dialect)  # create_async_engine("postgresql+psycopg://...")
        state = VerifiedState(self.options, self.llm)
        setattr(engine.dialect, STATE_ATTRIBUTE, state)
        sa.event.listen(engine, "engine_disposed", lambda _engine: state.close())


plugins.register(PLUGIN_NAME, __name__, "VerifiedPlugin")


def create_engine(url: str | sa.URL, *, llm: ChatModel | None = None, **kwargs: Any) -> sa.Engine:
    """``sqlalchemy.create_engine`` plus verification. verifiedsql options (see ``Options``) and
    SQLAlchemy's own keyword arguments may be mixed; ``llm`` injects a ready model client."""
    ours = {k: kwargs.pop(k) for k in list(kwargs) if k in OPTION_NAMES}
    plugin_list = [*kwargs.pop("plugins", []), PLUGIN_NAME]
    return sa.create_engine(url, plugins=plugin_list, verifiedsql=Options.build(ours),
                            verifiedsql_llm=llm, **kwargs)
