"""The engine registry (``verifiedsql.backends``): one module per engine, and every list of engines reads it."""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
import types
from pathlib import Path

import pytest
import sqlalchemy as sa
from backends import DIALECTS

import verifiedsql.dbapi as dbapi
from verifiedsql import backends
from verifiedsql.backends import Backend, TestConfig, backend_for, backend_for_driver
from verifiedsql.bench import engines as bench_engines
from verifiedsql.errors import ConfigurationError, UnknownBackendError
from verifiedsql.guard import readonly, statements, transactions
from verifiedsql.profiles import all_profiles

KNOWN = {"sqlite", "duckdb", "postgresql", "snowflake"}
ROOT = Path(__file__).resolve().parents[1]
HOSTILE = ROOT / "tests" / "hostile"


def test_the_four_known_engines_are_registered() -> None:
    assert set(backends.names()) == KNOWN
    assert {b.driver for b in backends.registry().values()} == {"sqlite3", "duckdb", "psycopg", "snowflake"}


@pytest.mark.parametrize("name", backends.names())
def test_every_backend_has_every_fact(name: str) -> None:
    backend = backend_for(name)
    assert isinstance(backend, Backend) and backend.name == name
    assert backend.drivers and all(isinstance(d, str) and d for d in backend.drivers)
    assert sa.make_url(backend.dbapi_url).get_backend_name() in backend.profile.sqlalchemy_names
    assert callable(backend.read_only) and callable(backend.in_transaction) and callable(backend.statement_parser)
    assert statements.COMMON_STATEMENT_KEYWORDS <= backend.statement_keywords
    assert backend.scratch_dialect in backends.names()
    assert isinstance(backend.spider_bench, bool)
    test = backend.test
    assert isinstance(test, TestConfig) and callable(test.make_engine) and test.catalog_queries
    assert test.server_fixture is None or isinstance(test.server_fixture, str)
    assert test.emulator is None or callable(test.emulator)
    assert test.raw_connection is None or callable(test.raw_connection)
    # its profile (dialects/<name>.toml) names its engine guard, and the parser reads plain SQL
    assert backend.profile.read_only_strategy == name
    assert statements.classify("SELECT 1", name).kind == "sql"


def test_every_profile_has_a_backend_and_no_driver_is_claimed_twice() -> None:
    assert set(all_profiles()) == set(backends.names())
    drivers = [d for b in backends.registry().values() for d in b.drivers]
    assert len(drivers) == len(set(drivers))


def test_backends_are_frozen() -> None:
    with pytest.raises(AttributeError):
        backend_for("sqlite").dbapi_url = "x"  # type: ignore[misc]


def test_lookups_by_driver() -> None:
    assert backend_for_driver("sqlite3").name == "sqlite"
    assert backend_for_driver("_duckdb").name == backend_for_driver("duckdb").name == "duckdb"
    assert backend_for_driver("psycopg").name == "postgresql"
    assert backend_for_driver("fakesnow").name == backend_for_driver("snowflake").name == "snowflake"


def test_unknown_engine_and_driver_raise_a_typed_error_naming_the_supported_ones() -> None:
    with pytest.raises(UnknownBackendError, match="'oracle'.*duckdb, postgresql, snowflake, sqlite") as caught:
        backend_for("oracle")
    assert isinstance(caught.value, ConfigurationError)
    with pytest.raises(UnknownBackendError, match="'pymysql'.*sqlite3"):
        backend_for_driver("pymysql")


# --------------------------------------------------------------------------- an unregistered driver


class _FakeConnection:
    """A DB-API connection from a driver no backend takes."""

    in_transaction = False

    def cursor(self) -> None:  # pragma: no cover - never reached
        raise AssertionError("an unregistered driver must not be used")


@pytest.fixture
def fake_driver() -> _FakeConnection:
    module = types.ModuleType("fakedriver_vsql")
    _FakeConnection.__module__ = module.__name__
    module.Connection = _FakeConnection  # type: ignore[attr-defined]
    sys.modules[module.__name__] = module
    yield _FakeConnection()
    del sys.modules[module.__name__]


def test_dbapi_refuses_a_connection_of_an_unregistered_driver(fake_driver: _FakeConnection) -> None:
    with pytest.raises(UnknownBackendError, match="fakedriver_vsql.*supported drivers") as caught:
        dbapi.connect(fake_driver, llm_api_key="x")
    assert isinstance(caught.value, dbapi.InterfaceError) and isinstance(caught.value, dbapi.UnsupportedDriverError)


def test_an_unregistered_driver_is_never_taken_for_idle(fake_driver: _FakeConnection) -> None:
    """It used to answer False (not in a transaction) for any driver it did not name."""
    with pytest.raises(UnknownBackendError, match="fakedriver_vsql"):
        dbapi._in_transaction(fake_driver, "fakedriver_vsql")
    with pytest.raises(UnknownBackendError):
        transactions.in_transaction(fake_driver)
    assert transactions.driver_of(fake_driver) is None


def test_a_registered_driver_is_asked_by_its_backend() -> None:
    raw = sqlite3.connect(":memory:")
    try:
        assert transactions.driver_of(raw) == "sqlite3"
        assert dbapi._in_transaction(raw, "sqlite3") is False
        raw.execute("BEGIN")
        assert dbapi._in_transaction(raw, "sqlite3") is True and transactions.in_transaction(raw)
    finally:
        raw.close()


# ------------------------------------------------------------------------- every list reads the registry


def test_the_lists_of_engines_are_the_registry() -> None:
    registry = backends.registry()
    assert dict(readonly.STRATEGIES) == {name: b.read_only for name, b in registry.items()}
    assert readonly.STRATEGIES["sqlite"] is readonly.sqlite and "oracle" not in readonly.STRATEGIES
    assert dict(statements.STATEMENT_KEYWORDS) == {name: b.statement_keywords for name, b in registry.items()}
    assert bench_engines.ENGINES == tuple(name for name, b in registry.items() if b.spider_bench)
    assert set(bench_engines.ENGINES) == {"sqlite", "duckdb", "postgresql"}  # Snowflake: no Spider loader
    assert tuple(DIALECTS) == backends.names()


def test_the_test_lists_are_the_registry() -> None:
    sys.path.insert(0, str(HOSTILE))
    try:
        import payloads
    finally:
        sys.path.remove(str(HOSTILE))
    assert tuple(payloads.DIALECTS) == backends.names()
    for path, name in ((HOSTILE / "test_sql_or_question.py", "ENGINES"),
                       (HOSTILE / "test_errors_and_secrets.py", "DIALECTS")):
        assert f"\n{name} = backends.names()" in path.read_text("utf-8"), path


_LITERAL = re.compile(r"[\(\[]([^()\[\]]*)[\)\]]")


def test_no_list_of_every_engine_is_written_out() -> None:
    """A tuple or list literal naming exactly the registered engines is a list the registry should give."""
    sources = (*(ROOT / "verifiedsql").rglob("*.py"), *(ROOT / "tests").rglob("*.py"),
               *(ROOT / "benchmarks").glob("*.py"))
    found = [
        f"{path.relative_to(ROOT)}: ({literal.strip()})"
        for path in sources
        for literal in _LITERAL.findall(path.read_text("utf-8"))
        if {a or b for a, b in re.findall(r"\"([^\"]*)\"|'([^']*)'", literal)} == set(backends.names())
    ]
    assert not found, "\n".join(found)


def test_a_statement_parser_for_an_unregistered_engine_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="no SQL parser for the 'oracle' engine"):
        statements.classify("SELECT 1", "oracle")


_IMPORT_ALONE = """
import sys, types
package = types.ModuleType("verifiedsql"); package.__path__ = ["verifiedsql"]; sys.modules["verifiedsql"] = package
import verifiedsql.backends
verifiedsql.backends.registry()
print(sorted(name for name in sys.modules if name.startswith(("verifiedsql.stages", "verifiedsql.pipeline",
                                                                "verifiedsql.llm", "verifiedsql.report"))))
"""


def test_the_registry_imports_no_stage_and_no_pipeline() -> None:
    """Every engine module loads without ``verifiedsql.stages``, the pipeline or the model client (the
    package's own ``__init__`` is left out: it imports the whole public API)."""
    done = subprocess.run([sys.executable, "-c", _IMPORT_ALONE], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_facts_refuses_an_unknown_fact() -> None:
    with pytest.raises(AttributeError):
        backends.facts("colour")
