"""(b) Result clustering of 8 candidates and (c) the result equivalence test, at several sizes."""

from __future__ import annotations

import random

import pytest

from verifiedsql.report import Candidate
from verifiedsql.results import ResultSet, results_equivalent
from verifiedsql.stages.cluster import cluster_runs
from verifiedsql.stages.dpc.softf1 import bipartite_soft_f1
from verifiedsql.stages.generate import CandidateRun

COLUMNS = ("id", "name", "amount", "bucket", "day")


def make_rows(n: int) -> list[tuple]:
    return [(i, f"name {i % 97}", i * 0.5, i % 7, f"2024-01-{i % 28 + 1:02d}") for i in range(n)]


def shuffled(rows: list[tuple], seed: int) -> list[tuple]:
    copy = [tuple(r) for r in rows]
    random.Random(seed).shuffle(copy)
    return copy


def perturbed(rows: list[tuple]) -> list[tuple]:
    copy = [tuple(r) for r in rows]
    middle = len(copy) // 2
    copy[middle] = (copy[middle][0], copy[middle][1], copy[middle][2] + 1, *copy[middle][3:])
    return copy


def result(rows: list[tuple], columns: tuple[str, ...] = COLUMNS) -> ResultSet:
    return ResultSet(columns, tuple(rows))


@pytest.mark.parametrize("rows", [100, 10_000, 100_000])
def test_cluster_8_candidates(benchmark, rows):
    base = make_rows(rows)
    swapped = [(r[1], r[0], *r[2:]) for r in base]
    results = [
        result(base), result(shuffled(base, 1)), result(shuffled(base, 2)), result(shuffled(base, 3)),
        result(swapped, ("name", "id", *COLUMNS[2:])),  # same answer, columns in another order
        result(perturbed(base)), result(perturbed(base)), result(base[: rows // 2]),
    ]
    runs = [CandidateRun(Candidate(index=i, origin="greedy" if i == 0 else "sample", sql=f"SELECT {i}"), r)
            for i, r in enumerate(results)]
    benchmark.group = "(b) clustering 8 candidates"
    benchmark.extra_info.update(case=f"8 x {rows:,} rows x 5 cols", target_s=1.0 if rows == 100_000 else None)
    clusters = benchmark.pedantic(cluster_runs, args=(runs,), rounds=3 if rows == 100_000 else 10,
                                  warmup_rounds=1)
    assert [len(c.members) for c in clusters] == [5, 2, 1]


def comparison_pair(benchmark, rows: int, kind: str, label: str) -> tuple[ResultSet, ResultSet]:
    """Two results of ``rows`` x 5: the same rows shuffled, or with one cell changed; labels the case."""
    base = make_rows(rows)
    other = shuffled(base, 7) if kind == "identical" else perturbed(shuffled(base, 7))
    benchmark.group = "(c) result comparison"
    benchmark.extra_info.update(case=f"{label}{rows:,} rows x 5 cols, {kind}",
                                target_s=0.2 if rows == 10_000 else None)
    return result(base), result(other)


@pytest.mark.parametrize("kind", ["identical", "perturbed"])
@pytest.mark.parametrize("rows", [10, 1_000, 10_000])
def test_results_equivalent(benchmark, rows, kind):
    a, b = comparison_pair(benchmark, rows, kind, "")
    assert benchmark(results_equivalent, a, b) == (kind == "identical")


@pytest.mark.parametrize("kind", ["identical", "perturbed"])
@pytest.mark.parametrize("rows", [10, 1_000, 10_000])
def test_bipartite_soft_f1(benchmark, rows, kind):
    a, b = comparison_pair(benchmark, rows, kind, "bs-f1: ")
    expected = 1.0 if kind == "identical" else 1 - 1 / (5 * rows)
    assert benchmark(bipartite_soft_f1, a, b) == pytest.approx(expected)
