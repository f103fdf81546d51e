"""(a) Pass-through overhead: the same 10,000 plain statements through a raw SQLAlchemy engine and a
``verifiedsql.create_engine`` one, on SQLite and DuckDB.

Each round runs both engines back to back (alternating which goes first), so load from other
processes hits both alike; the ratio of the medians is stored in ``extra_info`` (see perf.md).
"""

from __future__ import annotations

import statistics
import time

import pytest
import sqlalchemy as sa

import verifiedsql

STATEMENTS = 10_000
ROWS = 1_000
ROUNDS = {"sqlite": 15, "duckdb": 3}


def _url(dialect: str, tmp_path) -> str:
    path = tmp_path / f"passthrough.{dialect}"
    engine = sa.create_engine(f"{dialect}:///{path}")
    with engine.begin() as conn:
        conn.execute(sa.text("CREATE TABLE items (id INTEGER PRIMARY KEY, name VARCHAR, price DOUBLE PRECISION)"))
        conn.execute(sa.text("INSERT INTO items VALUES (:id, :name, :price)"),
                     [{"id": i, "name": f"item {i}", "price": i * 0.25} for i in range(ROWS)])
    engine.dispose()
    return f"{dialect}:///{path}"


def _statements(engine: sa.Engine) -> float:
    statement = sa.text("SELECT id, name, price FROM items WHERE id = :i")
    start = time.perf_counter()
    with engine.connect() as conn:
        for i in range(STATEMENTS):
            conn.execute(statement, {"i": i % ROWS}).fetchall()
    return time.perf_counter() - start


@pytest.mark.parametrize("dialect", ["sqlite", "duckdb"])
def test_passthrough(benchmark, tmp_path, dialect):
    if dialect == "duckdb":
        pytest.importorskip("duckdb")
    url = _url(dialect, tmp_path)
    engines = {"raw": sa.create_engine(url), "verified": verifiedsql.create_engine(url)}
    times: dict[str, list[float]] = {"raw": [], "verified": []}
    order = ["raw", "verified"]

    def pair() -> None:
        order.reverse()
        for side in order:
            times[side].append(_statements(engines[side]))

    benchmark.group = "(a) pass-through"
    benchmark.pedantic(pair, rounds=ROUNDS[dialect], warmup_rounds=1)
    warm = {side: values[1:] for side, values in times.items()}  # the first pair is the warm-up
    raw, verified = statistics.median(warm["raw"]), statistics.median(warm["verified"])
    benchmark.extra_info.update(
        case=f"{dialect}: {STATEMENTS:,} statements on each engine, interleaved",
        passthrough=dialect, raw_median_s=raw, verified_median_s=verified,
        raw_min_s=min(warm["raw"]), verified_min_s=min(warm["verified"]), ratio=verified / raw,
    )
    for engine in engines.values():
        engine.dispose()
