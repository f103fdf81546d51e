"""The engines verifiedsql answers on: one module per engine, and the registry that finds them.

Each module here (``sqlite.py``, ``duckdb.py``, ``postgresql.py``, ``snowflake.py``) defines ``BACKEND``, one
frozen ``Backend`` holding every fact about its engine that code needs: the DB-API drivers that
``verifiedsql.dbapi`` wraps, the SQLAlchemy URL it builds over one, the read-only engine guard
(``verifiedsql.guard.readonly``), how to tell whether a driver connection is inside a transaction, the engine's
own statement parser (``verifiedsql.guard.statements``), the reader of its catalog for reflection
(``verifiedsql.db.catalog_reflect``), the dialect of its scratch databases, and how the test suites make a
database of its kind (``TestConfig``). The declarative part of an engine (prompt hints, deny
lists, sqlglot dialect) is its TOML profile under ``dialects/`` (``verifiedsql.profiles``), of the same name.

Every list of engines reads this registry (``readonly.STRATEGIES``, ``dbapi``, ``transactions``,
``statements``, ``bench.engines.ENGINES``, the test suites): adding an engine is adding a module here.
Modules are found by listing the package (as sqlglot finds its dialects), and imported on first lookup,
so importing this package imports no engine module and no driver.
"""

from __future__ import annotations

import importlib
import pkgutil
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ContextManager

from ..errors import UnknownBackendError

if TYPE_CHECKING:
    import sqlalchemy as sa

    from ..db.catalog_reflect import CatalogReader
    from ..guard.readonly import Strategy
    from ..guard.sqlshape import Shape
    from ..guard.statements import Parse
    from ..profiles import DialectProfile

__all__ = ["Backend", "TestConfig", "backend_for", "backend_for_driver", "facts", "names", "registry"]

# Catalog reads shared by the test configurations of engines with an information schema.
INFORMATION_SCHEMA_COLUMNS = (
    "SELECT table_schema, table_name, column_name, data_type FROM information_schema.columns "
    "WHERE table_schema NOT IN ('information_schema', 'pg_catalog') ORDER BY 1, 2, 3"
)
INFORMATION_SCHEMA_TABLES = (
    "SELECT table_schema, table_name, table_type FROM information_schema.tables "
    "WHERE table_schema NOT IN ('information_schema', 'pg_catalog') ORDER BY 1, 2"
)


@dataclass(frozen=True)
class TestConfig:
    """How the test suites make a database of one engine (Ibis's per-backend test configuration)."""

    __test__ = False  # not a pytest test class

    # (directory, server URL or None) -> an engine on a new, empty database: a file in the directory, a
    # fresh database on the test server, or the emulator's database (while ``emulator`` is entered).
    make_engine: Callable[[Path, str | None], sa.Engine]
    # The pytest fixture that gives ``make_engine`` its server URL (a throw-away server); None: no server.
    server_fixture: str | None = None
    # A context manager kept entered while a test uses the engine (Snowflake: ``fakesnow.patch()``).
    emulator: Callable[[], ContextManager[Any]] | None = None
    # A raw DB-API connection (autocommit where the driver has it) to an engine's database, for the tests
    # of ``verifiedsql.dbapi``; None where the tests wrap none.
    raw_connection: Callable[[sa.Engine], Any] | None = None
    # Reads of the engine's catalog (tables, columns, extensions, ...) that a refused statement must leave
    # unchanged (the hostile suite).
    catalog_queries: tuple[str, ...] = ()


@dataclass(frozen=True)
class Backend:
    """Every per-engine fact in one place; see the module docstring."""

    name: str  # the engine: its profile (dialects/<name>.toml) and its SQLAlchemy dialect
    drivers: tuple[str, ...]  # root module names of the DB-API connections it takes; the first names the driver
    dbapi_url: str  # the SQLAlchemy URL ``dbapi.connect`` builds over a raw connection
    read_only: Strategy  # the engine guard: runs one statement read-only, bounded in time
    in_transaction: Callable[[Any], bool]  # raw connection -> inside a transaction? (never ends or joins it)
    statement_parser: Callable[[str, Shape], Parse]  # the engine's own parser: is this text SQL?
    statement_keywords: frozenset[str]  # words that begin a statement (a refused text may be malformed SQL)
    scratch_dialect: str  # the registered engine its scratch databases (MDDs) run on; Snowflake: DuckDB
    test: TestConfig
    spider_bench: bool = False  # the Spider benchmark runs on it (``verifiedsql.bench``)
    # Reads a namespace's tables, columns and keys in a few catalog queries (``verifiedsql.db.catalog_reflect``);
    # None, or any error it raises: SQLAlchemy's inspector reads them.
    bulk_catalog: CatalogReader | None = None

    def __post_init__(self) -> None:
        if not self.drivers:
            raise TypeError(f"backend {self.name!r} names no DB-API driver.")

    @property
    def driver(self) -> str:
        """The driver's name, as ``dbapi`` reports it (``sqlite3``, ``duckdb``, ``psycopg``, ``snowflake``)."""
        return self.drivers[0]

    @property
    def profile(self) -> DialectProfile:
        """The engine's declarative profile (``dialects/<name>.toml``)."""
        from ..profiles import all_profiles

        return all_profiles()[self.name]


_lock = threading.Lock()
_registry: dict[str, Backend] | None = None


def registry() -> Mapping[str, Backend]:
    """Every registered backend by name, in the order of their module names (imported on first call)."""
    global _registry
    if _registry is None:
        with _lock:
            if _registry is None:
                found: dict[str, Backend] = {}
                for module in sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_")):
                    backend = getattr(importlib.import_module(f"{__name__}.{module}"), "BACKEND", None)
                    if not isinstance(backend, Backend) or backend.name != module:
                        raise TypeError(f"verifiedsql/backends/{module}.py must define BACKEND = Backend(name="
                                        f"{module!r}, ...).")
                    found[module] = backend
                _registry = found
    return _registry


def names() -> tuple[str, ...]:
    """The names of the registered engines."""
    return tuple(registry())


def backend_for(name: str) -> Backend:
    """The backend of the engine ``name`` (``UnknownBackendError`` naming the supported ones)."""
    backend = registry().get(name)
    if backend is None:
        raise UnknownBackendError(
            f"verifiedsql has no backend for the {name!r} engine; supported: {', '.join(names())}. "
            "Add a module under verifiedsql/backends/ (and a profile under dialects/) to support it."
        )
    return backend


def backend_for_driver(module_root: str) -> Backend:
    """The backend whose DB-API driver lives in the top-level module ``module_root`` (``sqlite3``,
    ``psycopg``, ...; ``UnknownBackendError`` naming the supported drivers)."""
    for backend in registry().values():
        if module_root in backend.drivers:
            return backend
    supported = ", ".join(b.driver for b in registry().values())
    raise UnknownBackendError(
        f"verifiedsql supports no DB-API driver from the {module_root!r} module; supported drivers: {supported}."
    )


class _Facts(Mapping[str, Any]):
    """A read-only, live view of one fact of every backend, by engine name."""

    def __init__(self, attribute: str) -> None:
        self._attribute = attribute

    def __getitem__(self, name: str) -> Any:
        backend = registry().get(name)
        if backend is None:
            raise KeyError(name)
        return getattr(backend, self._attribute)

    def __iter__(self) -> Iterator[str]:
        return iter(registry())

    def __len__(self) -> int:
        return len(registry())

    def __repr__(self) -> str:
        return f"facts({self._attribute!r})"


def facts(attribute: str) -> Mapping[str, Any]:
    """``{engine name: backend.<attribute>}`` as a live view; safe to build at import time, since the
    registry is read only on first use."""
    if attribute not in Backend.__dataclass_fields__:
        raise AttributeError(f"a Backend has no fact {attribute!r}.")
    return _Facts(attribute)
