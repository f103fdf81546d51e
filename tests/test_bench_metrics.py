"""Harness arithmetic: percentiles, gap closed, per-strategy summaries, breakdowns, and the EX rule."""

import pytest

from verifiedsql.bench.metrics import breakdown, gap_closed, percentile, summarize
from verifiedsql.bench.scoring import Gold, matches, run_gold
from verifiedsql.results import ResultSet


def rs(rows, columns=("a", "b")):
    return ResultSet(tuple(columns), tuple(tuple(r) for r in rows))


def record(strategy, qid, correct, pass_at_n, tokens=100, wall=1.0, live=0.8, est=1.5, db="d1", level="easy"):
    return {"strategy": strategy, "id": qid, "db_id": db, "hardness": level, "correct": correct,
            "pass_at_n": pass_at_n, "llm_calls": 1, "total_tokens": tokens, "prompt_tokens": tokens - 10,
            "completion_tokens": 10, "wall_seconds": wall, "own_seconds": wall - live,
            "estimated_seconds": est, "timings": {"generate": wall}, "status": "answered"}


def test_percentile_interpolates():
    assert percentile([1, 2, 3, 4], 50) == 2.5
    assert percentile([5], 95) == 5
    assert percentile([], 50) is None
    assert percentile(list(range(101)), 95) == pytest.approx(95)


def test_gap_closed():
    assert gap_closed(0.7, 0.6, 0.8) == pytest.approx(0.5)
    assert gap_closed(0.5, 0.6, 0.8) == pytest.approx(-0.5)
    assert gap_closed(0.6, 0.6, 0.6) is None


def test_summarize_rates_costs_and_gap_on_shared_questions():
    records = [
        record("self-consistency", 1, True, True), record("self-consistency", 2, False, True),
        record("self-consistency", 3, False, False), record("self-consistency", 4, False, True),
        record("greedy", 1, True, True, tokens=50), record("greedy", 2, True, True, tokens=50),
        record("greedy", 3, False, False, tokens=50), record("greedy", 4, True, True, tokens=50),
    ]
    summaries = summarize(records, ["greedy", "self-consistency"])
    sc, greedy = summaries["self-consistency"], summaries["greedy"]
    assert sc.ex == 0.25 and sc.pass_at_n == 0.75 and sc.gap_closed == 0.0
    assert greedy.ex == 0.75 and greedy.tokens == 50
    assert greedy.gap_closed == pytest.approx((0.75 - 0.25) / (0.75 - 0.25))
    assert greedy.own.p50 == pytest.approx(0.2)
    assert set(greedy.stages) == {"generate"}


def test_breakdown_counts_correct_and_total():
    records = [record("g", 1, True, True, level="easy"), record("g", 2, False, False, level="hard"),
               record("g", 3, True, True, level="hard")]
    assert breakdown(records, "hardness") == {"easy": {"g": (1, 1)}, "hard": {"g": (1, 2)}}


def test_ex_ignores_row_order_and_column_order_when_gold_does_not_order():
    gold = Gold(rs([(1, "x"), (2, "y")]), ordered=False)
    assert matches(rs([("y", 2), ("x", 1)], ("b", "a")), gold)
    assert not matches(rs([(1, "x")]), gold)
    assert not matches(None, gold)


def test_ex_needs_order_when_gold_orders():
    gold = Gold(rs([(1, "x"), (2, "y")]), ordered=True)
    assert matches(rs([(1, "x"), (2, "y")]), gold)
    assert not matches(rs([(2, "y"), (1, "x")]), gold)


def test_rows_the_gold_ranks_equal_may_come_in_any_order():
    import sqlite3

    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE people (name TEXT, age INT)")
    conn.executemany("INSERT INTO people VALUES (?, ?)", [("a", 30), ("b", 29), ("c", 29), ("d", 23), ("e", 29)])
    gold = run_gold(conn, "SELECT name FROM people ORDER BY age")
    assert gold.ties == (1, 3, 1)
    assert matches(rs([("d",), ("e",), ("b",), ("c",), ("a",)], ("name",)), gold)  # 29s in another order
    assert not matches(rs([("b",), ("d",), ("c",), ("e",), ("a",)], ("name",)), gold)  # a 29 before the 23
    assert not matches(rs([("d",), ("b",), ("c",), ("a",)], ("name",)), gold)
    # an alias as the key, and two columns in either order
    counted = run_gold(conn, "SELECT age, count(*) AS n FROM people GROUP BY age ORDER BY n, age")
    assert counted.ties == (1, 1, 1)
    by_count = run_gold(conn, "SELECT age, count(*) AS n FROM people GROUP BY age ORDER BY n")
    assert by_count.ties == (2, 1)
    assert matches(rs([(1, 30), (1, 23), (3, 29)], ("n", "age")), by_count)
    # LIMIT, DISTINCT and keys by position keep the strict order
    for sql in ("SELECT name FROM people ORDER BY age LIMIT 3", "SELECT DISTINCT age FROM people ORDER BY age",
                "SELECT name, age FROM people ORDER BY 2"):
        assert run_gold(conn, sql).ties is None, sql


def test_run_gold_reads_the_order_of_the_outermost_query():
    import sqlite3

    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (a INT)")
    conn.executemany("INSERT INTO t VALUES (?)", [(2,), (1,)])
    assert run_gold(conn, "SELECT a FROM t ORDER BY a").ordered
    assert not run_gold(conn, "SELECT a FROM (SELECT a FROM t ORDER BY a) s").ordered
    failed = run_gold(conn, "SELECT nope FROM t")
    assert failed.result is None and "gold query failed" in failed.error
    assert not matches(rs([(1,)], ("a",)), failed)
