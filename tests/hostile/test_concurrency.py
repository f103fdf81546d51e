"""Hostile world, concurrency: 16 threads x 25 questions on ONE verifiedsql engine (SQLite file, DuckDB file,
PostgreSQL), with the model's answers recorded once from the scripted OpenAI-compatible server and then
replayed from the record/replay cache, or in read-write mode against the one shared server. Every answer
and report must belong to its own question, nothing may deadlock (a watchdog dumps every stuck thread's
stack), and nothing may be left behind: processes, file descriptors, threads, temporary files, scratch
databases. Also: one shared embedded-model server for concurrent callers, sandboxed solvers in parallel,
and asyncio engines (coroutines on one ``create_async_engine``; a sync engine in ``asyncio.to_thread``).

Pool size: each asking thread holds a connection of its own and verifiedsql takes a second one from the
same pool for its queries, so 16 concurrent askers starve SQLAlchemy's default QueuePool (5 + 10
overflow): every thread waits for a second connection until ``pool_timeout``. The engines here are sized
for two connections per thread.
"""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
import sys
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
import sqlalchemy as sa
from backends import checksum, load_shop
from fake_openai import FakeServer, Reply, completion
from fakes import ScriptedChatModel, fenced
from host_state import HostState, descendants, record_temp_paths, settled  # noqa: F401  (a fixture)
from test_local_model import _fake_server
from test_solver import MDD_TABLES, QUESTION, SLICE

import verifiedsql
from verifiedsql.config import LLMSettings
from verifiedsql.guard.sandbox import Sandbox
from verifiedsql.llm import local
from verifiedsql.report import VerificationReport
from verifiedsql.stages.dpc.prompts import SOLVER_SYSTEM
from verifiedsql.stages.dpc.solver import solve

pytestmark = [pytest.mark.timeout(600), pytest.mark.usefixtures("record_temp_paths")]

THREADS, QUESTIONS, CANDIDATES = 16, 25, 3
DISPUTED = 8  # every 8th question's candidates disagree, so the dual-paradigm test runs for it (3 of 25)
WATCHDOG_S = 240.0
_MARK = re.compile(r"\[q(\d+)\]")
T = TypeVar("T")


def question(k: int) -> str:
    return f"[q{k:02d}] How many customers have a country?"


def disputed(k: int) -> bool:
    return k % DISPUTED == DISPUTED - 1


def reply_for(payload: dict[str, Any]) -> Reply:
    """The scripted model, from the request alone (safe under concurrency): question k's SQL returns
    (k, 10); a disputed question's seed-1 candidate counts distinct countries instead, (k, 6). The DPC
    solver never writes code, so the test runs slice, scratch database and MDD but no sandbox."""
    found = _MARK.search(next(m["content"] for m in payload["messages"] if m["role"] == "user"))
    assert found is not None, payload
    k = int(found.group(1))
    if payload["messages"][0]["content"] == SOLVER_SYSTEM:
        return Reply(body=completion("I cannot write that."))
    count = "COUNT(DISTINCT country)" if disputed(k) and payload.get("seed") == 1 else "COUNT(country)"
    return Reply(body=completion(fenced(f"SELECT {k} AS q, {count} AS n FROM customers")))


@pytest.fixture
def model_server() -> Iterator[FakeServer]:
    server = FakeServer()
    server.responder = reply_for
    yield server
    server.close()


def run_threads(work: Callable[[int], T], n: int, timeout_s: float = WATCHDOG_S) -> list[T]:
    """``work(i)`` for i < n in daemon threads released together, results in order. Threads still running
    after ``timeout_s`` fail the test with their stacks (daemons: a deadlock cannot hang pytest's exit)."""
    barrier = threading.Barrier(n)
    results: list[Any] = [None] * n
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            barrier.wait(timeout_s)
            results[i] = work(i)
        except BaseException as error:  # noqa: BLE001  (re-raised in the caller's thread)
            errors.append(error)

    threads = [threading.Thread(target=run, args=(i,), name=f"worker-{i}", daemon=True) for i in range(n)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + timeout_s
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    stuck = [t for t in threads if t.is_alive()]
    if stuck:
        frames = sys._current_frames()
        stacks = "".join(f"--- {t.name}\n{''.join(traceback.format_stack(frames[t.ident]))}"
                         for t in stuck if t.ident in frames)
        pytest.fail(f"{len(stuck)} of {n} threads still running after {timeout_s:g} s (deadlock?)\n{stacks}")
    if errors:
        raise errors[0]
    return results


@dataclass(frozen=True)
class Asked:
    k: int
    rows: list[tuple[Any, ...]]
    report: VerificationReport


def verified_engine(url: sa.URL, server: FakeServer, cache: Path, mode: str) -> sa.Engine:
    """The one engine all threads share: the model behind ``server``, through the cache, DPC on."""
    return verifiedsql.create_engine(
        url, llm_base_url=server.url, llm_model="fake-model", llm_api_key="key", llm_max_retries=0,
        cache=cache, cache_mode=mode, candidates=CANDIDATES, dpc=True,
        pool_size=2 * THREADS, max_overflow=0, pool_timeout=WATCHDOG_S)


def ask_all(engine: sa.Engine, threads: int = THREADS) -> list[Asked]:
    """Every thread asks every question on a connection of its own, thread t starting at question t."""

    def work(t: int) -> list[Asked]:
        asked = []
        with engine.connect() as conn:
            for j in range(QUESTIONS):
                k = (t + j) % QUESTIONS
                result = conn.execute(verifiedsql.ask(question(k)))
                asked.append(Asked(k, [tuple(row) for row in result.all()], result.verification))  # type: ignore[attr-defined]
        return asked

    return [a for batch in run_threads(work, threads) for a in batch]


def assert_own_answers(asked: list[Asked], *, replayed: bool) -> None:
    """No crosstalk: each answer, report, candidate and DPC record is its own question's."""
    assert Counter(a.k for a in asked) == {k: len(asked) // QUESTIONS for k in range(QUESTIONS)}
    for a in asked:
        report, own = a.report, f"SELECT {a.k} AS q, "
        assert report.question == question(a.k) and a.rows == [(a.k, 10)], (a.k, a.rows, report.question)
        assert report.sql is not None and report.sql.startswith(own), (a.k, report.sql)
        assert len(report.candidates) == CANDIDATES and all(c.sql.startswith(own) for c in report.candidates)
        dpc = report.dpc
        assert dpc is not None
        if disputed(a.k):
            assert (dpc.status, dpc.reason) == ("fallback", "the pandas solver produced no result"), dpc
            results = (dpc.champion_result, dpc.challenger_result)  # on the distinguishing database
            assert results[0] != results[1] and results[0][0][0] == results[1][0][0] == a.k, dpc
            assert dpc.mdd_method == "deterministic" and dpc.solver_attempts == 4
        else:
            assert dpc.status == "unanimous", dpc
        if replayed:
            assert report.llm_calls and all(call.cached for call in report.llm_calls), report.llm_calls


def close_model(engine: sa.Engine) -> None:
    """Dispose of the engine: that also closes the model client verifiedsql made, and with it the
    cache's SQLite file (the leak checks below would see it open otherwise, on PostgreSQL too, whose
    dialect outlives the engine in SQLAlchemy's caches)."""
    engine.dispose()


def record(url: sa.URL, server: FakeServer, cache: Path) -> int:
    """Ask each question once (one thread, read-write): the cache then holds every answer. Returns how
    many requests the server got."""
    before = len(server.requests)
    engine = verified_engine(url, server, cache, "readwrite")
    assert_own_answers(ask_all(engine, threads=1), replayed=False)
    close_model(engine)
    return len(server.requests) - before


def stored(cache: Path) -> int:
    """How many answers the cache file holds."""
    db = sqlite3.connect(cache)
    try:
        return int(db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])
    finally:
        db.close()


def files_beside(path: Path) -> set[str]:
    """The files next to a database file, minus the cache (where scratch databases would show up)."""
    return {p.name for p in path.parent.iterdir() if not p.name.startswith("cache.sqlite")}


def temp_tables(engine: sa.Engine) -> int:
    """Temporary tables of every session of the server (PostgreSQL's scratch databases)."""
    with engine.connect() as conn:
        return conn.exec_driver_sql("SELECT count(*) FROM pg_class WHERE relpersistence = 't'").scalar_one()


def shop(engine_factory: Callable[[str], sa.Engine], dialect: str) -> sa.Engine:
    engine = load_shop(engine_factory(dialect))
    engine.dispose()
    return engine


def hammer(shop_engine: sa.Engine, server: FakeServer, cache: Path, mode: str) -> list[Asked]:
    """16 x 25 questions on one engine; checks the data, the database's directory and (PostgreSQL) the
    server's temporary tables before and after, and that the host holds nothing new."""
    url, data = shop_engine.url, checksum(shop_engine)
    database = Path(url.database or "") if shop_engine.dialect.name != "postgresql" else None
    files = files_beside(database) if database else set()
    before = HostState.now()
    engine = verified_engine(url, server, cache, mode)
    started = time.monotonic()
    asked = ask_all(engine)
    seconds = time.monotonic() - started
    close_model(engine)
    del engine
    leaks = settled(before)
    assert not leaks, f"left behind: {leaks}"
    assert checksum(shop_engine) == data
    if database:
        assert files_beside(database) == files, "a scratch database file was left next to the data"
    else:
        assert temp_tables(shop_engine) == 0, "a scratch (temporary) table outlived its question"
    print(f"{shop_engine.dialect.name} {mode}: {THREADS} threads x {QUESTIONS} questions in {seconds:.1f} s")
    return asked


@pytest.mark.parametrize("dialect", ["sqlite", "duckdb", "postgresql"])
def test_replayed_answers_under_16_threads(dialect: str, engine_factory: Callable[[str], sa.Engine],
                                           model_server: FakeServer, tmp_path: Path) -> None:
    shop_engine = shop(engine_factory, dialect)
    cache = tmp_path / "cache.sqlite"
    recorded = record(shop_engine.url, model_server, cache)
    assert recorded == stored(cache), "a request was not recorded"
    asked = hammer(shop_engine, model_server, cache, "replay")
    assert len(model_server.requests) == recorded, "replay mode called the model"
    assert_own_answers(asked, replayed=True)


def test_read_write_cache_under_16_threads_and_one_server(engine_factory: Callable[[str], sa.Engine],
                                                          model_server: FakeServer, tmp_path: Path) -> None:
    """Cache misses race: every thread may call the one server for the same request; each answer must
    still be its own, and each distinct request stored exactly once."""
    shop_engine = shop(engine_factory, "sqlite")
    cache = tmp_path / "cache.sqlite"
    asked = hammer(shop_engine, model_server, cache, "readwrite")
    assert_own_answers(asked, replayed=False)
    distinct = {json.dumps([r["messages"], r.get("seed"), r["temperature"]]) for r in model_server.requests}
    assert stored(cache) == len(distinct) <= len(model_server.requests), "a concurrent cache write was lost"


@pytest.mark.skipif(not Sandbox().available(), reason="bubblewrap (bwrap) cannot run a jail here")
def test_sandboxed_solvers_in_parallel_keep_their_own_results() -> None:
    before = HostState.now()

    def work(i: int) -> tuple[Any, ...]:
        llm = ScriptedChatModel([f"```python\nresult = pd.DataFrame({{'n': [{i}], 'rows': [len(orders)]}})\n```"])
        outcome = solve(llm, VerificationReport(QUESTION, "sqlite"), Sandbox(), SLICE, MDD_TABLES, QUESTION)
        assert outcome.result is not None, outcome.errors
        return outcome.result.rows

    assert run_threads(work, 8) == [((i, len(MDD_TABLES["orders"])),) for i in range(8)]
    assert not settled(before), "a jail, pipe or work directory outlived its run"


def test_one_shared_local_model_server_for_concurrent_callers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The real ``shared_server`` registry and ``LocalServer`` process handling; the model is not loaded:
    the server command is test_local_model's stand-in (a static HTTP server answering /v1/models)."""
    _fake_server(tmp_path, monkeypatch)
    command, commands = local.server_command, []

    def counted(*args: Any, **kwargs: Any) -> list[str]:
        commands.append(args)
        return command(*args, **kwargs)

    monkeypatch.setattr(local, "server_command", counted)
    monkeypatch.setattr(local, "install_model", lambda name: tmp_path / f"{name}.gguf")
    monkeypatch.setattr(local, "_SERVERS", {})
    before = HostState.now()
    models = run_threads(lambda i: local.embedded_chat_model(LLMSettings(local_model="0.5b")), THREADS)
    server = models[0].server
    try:
        assert all(m.server is server and m.base_url == server.base_url for m in models)
        assert len(commands) == 1 and server.is_running() and local._SERVERS == {"0.5b": server}
        assert len(descendants() - before.processes) == 1
    finally:
        server.stop()
    del models
    assert not settled(before)


def test_coroutines_asking_one_asyncio_engine_get_their_own_answers(tmp_path: Path) -> None:
    """16 coroutines ask one ``verifiedsql.create_async_engine`` at once (each question in a worker thread,
    on the engine's synchronous twin: ``verifiedsql.aio``): every answer and report is its own question's."""
    load_shop(sa.create_engine(f"sqlite:///{tmp_path / 'shop.db'}")).dispose()

    def reply(request: Any) -> str:
        found = _MARK.search(request.messages[-1]["content"])
        assert found is not None
        return fenced(f"SELECT {int(found.group(1))} AS q, COUNT(country) AS n FROM customers")

    async def ask(engine: Any, k: int) -> tuple[list[Any], VerificationReport]:
        async with engine.connect() as conn:
            result = await conn.execute(verifiedsql.ask(question(k)))
            return list(result.all()), result.verification

    async def main() -> list[tuple[list[Any], VerificationReport]]:
        engine = verifiedsql.create_async_engine(f"sqlite+aiosqlite:///{tmp_path / 'shop.db'}",
                                                 llm=ScriptedChatModel(reply), candidates=2)
        try:
            return await asyncio.gather(*(ask(engine, k) for k in range(THREADS)))
        finally:
            await engine.dispose()

    for k, (rows, report) in enumerate(asyncio.run(main())):
        assert rows == [(k, 10)] and report.question == question(k) and f"SELECT {k} AS q" in (report.sql or "")


def test_async_code_asks_a_sync_engine_in_worker_threads(tmp_path: Path) -> None:
    """The supported way from asyncio: ``asyncio.to_thread`` over a synchronous verified engine."""
    load_shop(sa.create_engine(f"sqlite:///{tmp_path / 'shop.db'}")).dispose()
    llm = ScriptedChatModel(lambda request: fenced("SELECT COUNT(*) FROM customers"))
    verified = verifiedsql.create_engine(f"sqlite:///{tmp_path / 'shop.db'}", llm=llm, candidates=1)

    def ask(text: str) -> list[Any]:
        with verified.connect() as conn:
            return list(conn.execute(verifiedsql.ask(text)).all())

    async def main() -> list[list[Any]]:
        return await asyncio.gather(*(asyncio.to_thread(ask, f"How many customers? ({i})") for i in range(4)))

    assert asyncio.run(main()) == [[(10,)]] * 4
    verified.dispose()
