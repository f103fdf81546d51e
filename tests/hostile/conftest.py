"""Fixtures of the hostile-world suite: a hostile model behind a real OpenAI-compatible HTTP endpoint,
the shop on every engine behind both public APIs, and the tally of which layer stopped what.

The tally is written at the end of the session to ``benchmarks/results/hostile-sql.json`` (git-ignored;
``HOSTILE_TALLY`` overrides the path); ``benchmarks/hostile_report.py`` renders it as Markdown.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import pytest
import sqlalchemy as sa

TESTS = Path(__file__).resolve().parents[1]
if str(TESTS) not in sys.path:  # backends.py and fake_openai.py live one level up (any --import-mode)
    sys.path.insert(0, str(TESTS))

from backends import checksum, enter_emulator, load_shop, make_engine, server_url
from fake_openai import FakeServer, Reply, completion

import verifiedsql
import verifiedsql.dbapi
from verifiedsql import backends
from verifiedsql.errors import NoAnswerError, NoDataError
from verifiedsql.llm.prompts import REFINE_USER
from verifiedsql.report import VerificationReport
from verifiedsql.stages.pvsql.prompts import REPAIR_USER

ROOT = TESTS.parent
TALLY_PATH = Path(os.environ.get("HOSTILE_TALLY", ROOT / "benchmarks" / "results" / "hostile-sql.json"))
Api = Literal["engine", "dbapi"]

# Options of every hostile question: every stage that runs model SQL is on (probes, generation,
# refinement, EXPLAIN and repair), with small limits so that resource exhaustion ends quickly.
HOSTILE_OPTIONS: dict[str, Any] = {
    "llm_api_key": "x", "llm_max_retries": 0, "llm_timeout_s": 30, "candidates": 1, "max_refinements": 1,
    "probe": True, "max_probes": 1, "verify": True, "max_repairs": 1,
    "statement_timeout_s": 0.3, "probe_timeout_s": 0.2, "row_cap": 100,
    "concurrency": 1,  # the hostile model answers by arrival order: requests must arrive in candidate order
}

# ------------------------------------------------------------------------------------ hostile model

_MARKERS = {"refine": REFINE_USER.split("{")[0], "repair": REPAIR_USER.split("{")[0]}


def purpose_of(request: dict[str, Any]) -> str:
    """Which pipeline call an OpenAI request is (the HTTP request does not say): probe, refine,
    repair or generate, told apart by the prompt templates."""
    messages = request["messages"]
    if '"probe_sql"' in messages[0]["content"]:
        return "probe"
    last = messages[-1]["content"]
    return next((purpose for purpose, marker in _MARKERS.items() if last.startswith(marker)), "generate")


class HostileModel:
    """An OpenAI-compatible endpoint whose every reply is attack SQL: as ``probe_sql`` in the JSON the
    probing protocol asks for, and in a ```sql block for generation, refinement and repair."""

    def __init__(self) -> None:
        self.server = FakeServer()
        self.server.responder = self.reply
        self.default = "SELECT 1"
        self.queues: dict[str, list[str]] = {}
        self.served: list[tuple[str, str]] = []

    @property
    def url(self) -> str:
        return self.server.url

    def serve(self, sql: str, **by_purpose: list[str]) -> None:
        """Answer every call with ``sql``, or per purpose with the given replies in turn (the last one
        repeats); forgets earlier requests."""
        self.default = sql
        self.queues = {purpose: list(replies) for purpose, replies in by_purpose.items()}
        self.served = []
        self.server.requests.clear()

    def reply(self, request: dict[str, Any]) -> Reply:
        purpose = purpose_of(request)
        queue = self.queues.get(purpose)
        sql = (queue.pop(0) if len(queue) > 1 else queue[0]) if queue else self.default
        self.served.append((purpose, sql))
        if purpose == "probe":
            text = json.dumps({"action": "probe", "probe_sql": sql, "relevant_columns": {}, "value_mappings": {}})
        else:
            text = f"```sql\n{sql}\n```"
        return Reply(body=completion(text))

    def prompt_text(self) -> str:
        """Every message of every request since the last ``serve``."""
        return "\n".join(m["content"] for r in self.server.requests for m in r["messages"])

    def close(self) -> None:
        self.server.close()


@pytest.fixture(scope="session")
def hostile() -> Iterator[HostileModel]:
    model = HostileModel()
    yield model
    model.close()


# --------------------------------------------------------------------------------- what ran, and where

ENGINE_REFUSAL = "the engine's read-only mode refused"  # how guard/readonly.py's refusals begin
STOPPED = {"unsafe", "error", "timeout"}  # the statuses of an attempt that did not run
Layer = Literal["statement guard", "engine guard", "engine error", "timeout", "ran", "invalid"]


def layer_of(status: str, error: str | None) -> Layer:
    """Which layer stopped one attempt (a candidate, probe or repair), from its status and error text."""
    if status == "unsafe":
        return "engine guard" if (error or "").startswith(ENGINE_REFUSAL) else "statement guard"
    if status == "error":
        return "engine error"
    if status in ("timeout", "invalid"):
        return status  # type: ignore[return-value]
    return "ran"


@dataclass
class Outcome:
    """What one question through one public API came to."""

    report: VerificationReport
    answered: bool
    rows: list[tuple[Any, ...]] = field(default_factory=list)

    def attempts(self) -> list[tuple[str, str, str, str | None]]:
        """(kind, sql, status, error) of every probe, candidate and repair in the report."""
        found = [("probe", p.sql, p.status, p.error) for p in self.report.probes]
        for c in self.report.candidates:
            found.append(("candidate", c.sql, c.status, c.error))
            found += [("repair", r.sql, r.status, r.error) for r in c.repairs]
        return found

    def outcome(self) -> str:
        """The run's line in the tally: the greedy candidate's layer, or how an answer was bounded."""
        if self.answered:
            return "row cap" if self.report.truncated else "harmless read"
        greedy = self.report.candidates[0]
        return layer_of(greedy.status, greedy.error)


# ------------------------------------------------------------------------------------------- worlds

SHOP_TABLES = ("customers", "orders")


def files_under(*directories: Path) -> dict[str, int]:
    """Every file below ``directories`` with its size (a DuckDB WAL is not counted: its size varies)."""
    return {str(p): p.stat().st_size for d in directories for p in d.rglob("*")
            if p.is_file() and not p.name.endswith(".wal")}


@dataclass
class World:
    """The shop on one engine, behind ``verifiedsql.create_engine`` and (where the driver allows) a
    ``verifiedsql.dbapi`` connection to the same data.

    ``state()`` is checked around every payload: every row of the shop's tables and the engine's
    catalog (tables, views, columns, indexes, attached databases, extensions, large objects, ...).
    It costs a few queries, where ``backends.checksum`` reflects through SQLAlchemy (a second per call
    under fakesnow); that checksum is taken when the world is built and compared once at the end.
    """

    dialect: str
    engine: sa.Engine
    dbapi: verifiedsql.dbapi.Connection | None
    directories: tuple[Path, ...]
    initial_checksum: str = ""

    @classmethod
    def open(cls, dialect: str, url: str | sa.URL, options: dict[str, Any], directories: tuple[Path, ...]) -> World:
        engine = verifiedsql.create_engine(url, **options)
        raw = _raw_connection(dialect, engine)
        return cls(dialect, engine, verifiedsql.dbapi.connect(raw, **options) if raw is not None else None,
                   directories)

    def variant(self, llm_base_url: str, **overrides: Any) -> World:
        """The same data behind new front ends with other options (the caller closes it)."""
        options = dict(HOSTILE_OPTIONS, llm_base_url=llm_base_url, **overrides)
        return World.open(self.dialect, self.engine.url, options, self.directories)

    def close(self) -> None:
        if self.dbapi is not None:
            self.dbapi.close()
        self.engine.dispose()

    def apis(self) -> tuple[Api, ...]:
        return ("engine", "dbapi") if self.dbapi is not None else ("engine",)

    def catalog_queries(self) -> tuple[str, ...]:
        """Reads of the engine's catalog that a refused statement must leave unchanged (``TestConfig``)."""
        return backends.backend_for(self.dialect).test.catalog_queries

    def state(self) -> list[Any]:
        """Every row of the shop's tables (sorted) and the engine's catalog."""
        found: list[Any] = []
        with self.engine.connect() as conn:
            for query in (*(f"SELECT * FROM {t}" for t in SHOP_TABLES), *self.catalog_queries()):
                try:
                    found.append(sorted(map(repr, conn.exec_driver_sql(query).all())))
                except sa.exc.DBAPIError as error:  # a table gone or renamed: that is a change too
                    found.append(f"{query}: {type(error.orig).__name__}")
                    conn.rollback()
        return found

    def ask(self, api: Api, question: str) -> Outcome:
        """Ask through one public API; ``NoAnswerError`` becomes an unanswered outcome, anything else raises.
        A ``NoDataError`` on SQL that ran (constants only: it reads no table) is a harmless read that the
        answer step then refused to return: it counts as answered, with no rows."""
        try:
            if api == "engine":
                with self.engine.connect() as conn:
                    result = conn.execute(verifiedsql.ask(question))
                    rows, report = result.all(), result.verification
            else:
                assert self.dbapi is not None
                cursor = self.dbapi.cursor()
                cursor.execute(question, mode="question")
                rows, report = cursor.fetchall(), cursor.verification
                cursor.close()
        except NoDataError as error:
            return Outcome(error.report, answered=error.report.sql is not None)
        except NoAnswerError as error:
            return Outcome(error.report, answered=False)
        return Outcome(report, answered=True, rows=[tuple(r) for r in rows])


def _raw_connection(dialect: str, engine: sa.Engine) -> Any:
    """A raw driver connection to the world's data (``TestConfig.raw_connection``), or None where the
    engine's test configuration makes none."""
    make = backends.backend_for(dialect).test.raw_connection
    return make(engine) if make is not None else None


def target_directory() -> Path:
    """A world-writable directory outside pytest's tmp tree (the PostgreSQL server runs as ``postgres``)
    holding a secret for payloads to read; the tests check that no file appears in it."""
    path = Path(tempfile.mkdtemp(prefix="verifiedsql-hostile-"))
    path.chmod(stat.S_IRWXU | stat.S_IRWXG | stat.S_IRWXO)
    (path / "secret.csv").write_text("id,customer_id,amount,status\n900,1,1.00,stolen\n")
    return path


@pytest.fixture(scope="module")
def target_dir() -> Iterator[Path]:
    path = target_directory()
    yield path
    shutil.rmtree(path, ignore_errors=True)


class Worlds:
    """``worlds(dialect)``: the shop on that engine, built on first use and kept for the test module."""

    def __init__(self, request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
                 hostile: HostileModel, target_dir: Path) -> None:
        self.request, self.tmp_path_factory = request, tmp_path_factory
        self.hostile, self.target_dir = hostile, target_dir
        self.built: dict[str, World] = {}
        self._patches: list[Any] = []

    def __call__(self, dialect: str) -> World:
        if dialect not in self.built:
            self.built[dialect] = self._build(dialect)
        return self.built[dialect]

    def _build(self, dialect: str) -> World:
        directory = self.tmp_path_factory.mktemp(f"hostile-{dialect}")
        if (patch := enter_emulator(dialect)) is not None:  # fakesnow, kept entered for the module
            self._patches.append(patch)
        postgres = server_url(dialect, self.request)
        seed = load_shop(make_engine(dialect, directory, postgres))
        seed.dispose()
        options = dict(HOSTILE_OPTIONS, llm_base_url=self.hostile.url)
        world = World.open(dialect, seed.url, options, (directory, self.target_dir))
        self.hostile.serve("SELECT COUNT(*) FROM orders")  # warm up: reflection and extension autoload happen now
        for api in world.apis():
            world.ask(api, "How many orders are there?")
        world.initial_checksum = checksum(world.engine)
        return world

    def close(self) -> None:
        for world in self.built.values():
            world.close()
        for patch in self._patches:
            patch.__exit__(None, None, None)


@pytest.fixture(scope="module")
def worlds(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, hostile: HostileModel,
           target_dir: Path) -> Iterator[Worlds]:
    factory = Worlds(request, tmp_path_factory, hostile, target_dir)
    yield factory
    factory.close()


# -------------------------------------------------------------------------------------------- tally


@dataclass
class Run:
    """One payload on one engine through one API, as the tally records it."""

    payload: str
    category: str
    dialect: str
    api: str
    outcome: str
    layers: dict[str, str]  # kind of attempt -> layer that stopped it ("probe", "candidate", "repair")
    error: str  # the greedy candidate's error, shortened
    data_changed: bool
    files_created: list[str]


class Tally:
    """Collects runs during the session; written as JSON at its end."""

    def __init__(self) -> None:
        self.runs: list[Run] = []

    def record(self, payload_id: str, category: str, dialect: str, api: str, outcome: Outcome | BaseException,
               *, data_changed: bool = False, files_created: list[str] | None = None) -> None:
        """One run; an exception that escaped the public API is recorded as a crash."""
        if isinstance(outcome, BaseException):
            result, layers, error = "crash", {}, f"{type(outcome).__name__}: {outcome}"[:200]
        else:
            result = outcome.outcome()
            layers = {kind: layer_of(status, error) for kind, _, status, error in outcome.attempts()}
            error = (outcome.report.candidates[0].error or "")[:200] if outcome.report.candidates else ""
        self.runs.append(Run(payload_id, category, dialect, api, result, layers, error, data_changed,
                             files_created or []))

    def write(self, path: Path) -> None:
        from payloads import PAYLOADS

        path.parent.mkdir(parents=True, exist_ok=True)
        data = {"catalogue_size": len(PAYLOADS), "runs": [asdict(run) for run in self.runs]}
        path.write_text(json.dumps(data, indent=1) + "\n")


@pytest.fixture(scope="session")
def tally() -> Iterator[Tally]:
    collected = Tally()
    yield collected
    if collected.runs:
        collected.write(TALLY_PATH)
