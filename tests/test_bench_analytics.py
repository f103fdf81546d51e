"""The analytics question set (benchmarks/analytics) and ``bench analytics``: the set is large, tagged and split
by seed; its generator is deterministic; every gold SQL runs on SQLite and PostgreSQL with the same, non-trivial
result; the harness grades, records and replays it with a scripted model."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest
import sqlalchemy as sa
from fakes import ScriptedChatModel, fenced

from verifiedsql.bench.analytics import (
    CLASSES,
    AnalyticsConfig,
    AnalyticsQuestion,
    load_generator,
    load_set,
    run_analytics,
    split,
)
from verifiedsql.bench.engines import load_postgres
from verifiedsql.bench.scoring import integers_read, matches, run_gold
from verifiedsql.bench.stages import load_records, stage_rows
from verifiedsql.cli import main
from verifiedsql.errors import ConfigurationError
from verifiedsql.llm.base import ChatRequest
from verifiedsql.llm.cache import RecordingChatModel
from verifiedsql.llm.models import MODELS
from verifiedsql.results import ResultSet, results_equivalent

SET = Path(__file__).resolve().parents[1] / "benchmarks" / "analytics"
# date questions written after the rules, over the same databases, each before the rule changes its answers led to
HELD_OUT = tuple(SET.parent / name for name in
                 ("analytics-heldout", "analytics-heldout-2", "analytics-heldout-3", "analytics-heldout-4",
                  "analytics-heldout-5", "analytics-heldout-6", "analytics-heldout-7",
                  "analytics-heldout-8", "analytics-heldout-9", "analytics-heldout-10"))


@pytest.fixture(scope="module")
def questions() -> list[AnalyticsQuestion]:
    return load_set(SET)


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    return load_generator(SET).build(tmp_path_factory.mktemp("analytics"))


def test_the_set_is_large_tagged_and_split_by_seed(questions):
    assert len(questions) >= 80 and len({q.id for q in questions}) == len(questions)
    kinds = Counter(q.kind for q in questions)
    assert set(kinds) == set(CLASSES) and min(kinds.values()) >= 5
    assert len({q.db_id for q in questions}) == 4
    halves = split(questions, 0)
    assert halves == split(questions, 0) and halves != split(questions, 1)
    for kind in CLASSES:  # each class is halved (the odd one out is reported)
        counted = Counter(halves[q.id] for q in questions if q.kind == kind)
        assert counted["reported"] - counted["fit"] in (0, 1)
    assert any("case-insensitively" in q.question for q in questions if q.kind == "instruction")


def test_the_generator_is_deterministic(data, tmp_path):
    again = load_generator(SET).build(tmp_path / "again")
    for dump in sorted((data / "postgres").glob("*.sql")):
        assert dump.read_bytes() == (again / "postgres" / dump.name).read_bytes()
    for db in ("retail", "hr", "dining", "saas"):
        paths = [root / "database" / db / f"{db}.sqlite" for root in (data, again)]
        dumps = ["\n".join(sqlite3.connect(path).iterdump()) for path in paths]
        assert dumps[0] == dumps[1] and "INSERT INTO" in dumps[0]


def _rows(conn: sa.Connection, sql: str) -> ResultSet:
    result = conn.exec_driver_sql(sql)
    return ResultSet(tuple(result.keys()), tuple(tuple(row) for row in result))


@pytest.mark.parametrize("folder", HELD_OUT, ids=lambda folder: folder.name)
def test_a_held_out_set_reads_the_same_databases(folder):
    held_out = load_set(folder)
    assert len(held_out) >= 14 and {q.kind for q in held_out} == {"date"}
    others = [load_set(SET), *(load_set(f) for f in HELD_OUT if f != folder)]
    assert not {q.id for q in held_out} & {q.id for other in others for q in other}
    assert load_generator(folder).build.__code__.co_code == load_generator(SET).build.__code__.co_code


def test_every_gold_runs_on_sqlite_and_postgresql_alike(questions, data, postgres_url):
    questions = [*questions, *(q for folder in HELD_OUT for q in load_set(folder))]
    admin = sa.create_engine(postgres_url, poolclass=sa.NullPool)
    for db in sorted({q.db_id for q in questions}):
        load_postgres(admin, data / "postgres" / f"{db}.sql", db)
    admin.dispose()
    for db in sorted({q.db_id for q in questions}):
        lite = sqlite3.connect(data / "database" / db / f"{db}.sqlite")
        engine = sa.create_engine(postgres_url, connect_args={"options": f"-c search_path={db}"})
        with engine.connect() as conn:
            for question in (q for q in questions if q.db_id == db):
                gold = run_gold(lite, question.gold_for("sqlite"))
                assert gold.result is not None, (question.id, gold.error)
                cells = [v for row in gold.result.rows for v in row]
                # non-trivial: rows, and not only NULLs and zeros
                assert gold.result.rows and any(v not in (None, 0) for v in cells), question.id
                on_postgres = _rows(conn, question.gold_for("postgresql"))
                assert results_equivalent(on_postgres, gold.result, ordered=gold.ordered), question.id
        engine.dispose()
        lite.close()


def test_a_year_as_a_number_matches_the_gold_s_text_only_where_the_gold_says_so(data):
    lite = sqlite3.connect(data / "database" / "dining" / "dining.sqlite")
    gold = run_gold(lite, "SELECT SUBSTR(CAST(opened_on AS TEXT), 1, 4), COUNT(*) FROM restaurants "
                          "GROUP BY SUBSTR(CAST(opened_on AS TEXT), 1, 4)")
    as_numbers = ResultSet(("year", "n"), tuple((int(y), n) for y, n in gold.result.rows))
    assert not matches(as_numbers, gold)  # Spider's grading: values as they are
    lenient = replace(gold, text_integers=True)
    assert matches(as_numbers, lenient) and matches(gold.result, lenient)
    off_by_one = ResultSet(("year", "n"), tuple((int(y) + 1, n) for y, n in gold.result.rows))
    assert not matches(off_by_one, lenient)
    assert integers_read(ResultSet(("a",), (("03",), ("2023-01",), ("x1",), (4.5,)))).rows == \
        ((3,), ("2023-01",), ("x1",), (4.5,))


def test_a_malformed_set_is_refused(tmp_path):
    with pytest.raises(ConfigurationError, match="no question set"):
        load_set(tmp_path)
    row = {"id": 1, "db_id": "retail", "question": "q", "gold": "SELECT 1", "class": "ratio"}
    for rows in ([{**row, "class": "vibes"}], [row, row], [{k: v for k, v in row.items() if k != "gold"}]):
        (tmp_path / "questions.json").write_text(json.dumps(rows))
        with pytest.raises(ConfigurationError):
            load_set(tmp_path)


# Three questions of the set, and what the scripted model writes for each: two mistakes the constraint repair
# undoes (a ratio times 100, a count of rows for different customers) and one right answer.
PICKED = {
    1: "SELECT SUM(CASE WHEN status = 'cancelled' THEN 1 ELSE 0 END) * 100.0 / "
       "SUM(CASE WHEN status = 'delivered' THEN 1 ELSE 0 END) FROM orders",
    15: "SELECT COUNT(*) FROM orders WHERE order_date BETWEEN '2024-01-01' AND '2024-12-31'",
    9: None,  # the gold itself
}


@pytest.fixture
def small_set(tmp_path, questions) -> Path:
    folder = tmp_path / "set"
    folder.mkdir()
    shutil.copy(SET / "generate.py", folder / "generate.py")
    rows = [{"id": q.id, "db_id": q.db_id, "question": q.question, "gold": q.gold, "class": q.kind}
            for q in questions if q.id in PICKED]
    (folder / "questions.json").write_text(json.dumps(rows))
    return folder


def scripted(questions: list[AnalyticsQuestion], name: str = "scripted-model") -> ScriptedChatModel:
    by_text = {q.question: PICKED[q.id] or q.gold for q in questions if q.id in PICKED}

    def script(request: ChatRequest) -> str:
        asked = next(m["content"] for m in request.messages if "Question: " in m["content"])
        return fenced(by_text[asked.rsplit("Question: ", 1)[1]])

    return ScriptedChatModel(script, name=name)


def test_the_harness_grades_records_and_replays(small_set, questions, tmp_path):
    cache = tmp_path / "cache.sqlite"
    model = RecordingChatModel(scripted(questions), cache)
    config = AnalyticsConfig(set_dir=small_set, out_dir=tmp_path / "out", cache_path=None)
    run = run_analytics(config, llm=model, progress=lambda line: None)
    by_key = {(r["strategy"], r["id"]): r for r in run.records}
    assert len(run.records) == 6
    assert [by_key["default-constraints", i]["correct"] for i in (1, 15, 9)] == [False, False, True]
    assert all(by_key["default", i]["correct"] for i in (1, 15, 9))
    assert by_key["default", 1]["candidates"][0]["fixes"]
    assert {r["class"] for r in run.records} == {"ratio", "distinct", "period"}
    assert all(r["split"] in ("fit", "reported") for r in run.records)
    # the repair asks the model nothing: both strategies share the five candidate requests of each question
    assert len(model.inner.requests) == 5 * len(PICKED)
    assert run.summary["default-constraints"]["all"]["correct"] == 1 and run.summary["default"]["all"]["ex"] == 1.0
    assert {p.name for p in run.outputs.values()} == {"analytics-sqlite-scripted-model.json",
                                                      "analytics-sqlite-scripted-model.md"}
    assert "| default | all | 3 | 100.0% |" in run.outputs["md"].read_text()
    rows = stage_rows(load_records(tmp_path / "out" / "analytics-sqlite-scripted-model.jsonl"))
    assert [row.stage for row in rows] == ["constraint_repair"]
    replayed = run_analytics(AnalyticsConfig(set_dir=small_set, out_dir=tmp_path / "replayed", cache_path=None),
                             llm=RecordingChatModel(None, cache, "replay", model_name="scripted-model"),
                             progress=lambda line: None)
    assert [(r["sql"], r["correct"]) for r in replayed.records] == [(r["sql"], r["correct"]) for r in run.records]


def test_the_command_line_summarises_stored_records(small_set, questions, tmp_path, capsys):
    """``--report-only`` reads the records of the run named after the model (no model is loaded)."""
    out = tmp_path / "out"
    run_analytics(AnalyticsConfig(set_dir=small_set, out_dir=out, cache_path=None, strategies=["default"]),
                  llm=scripted(questions, MODELS["1.5b"].alias), progress=lambda line: None)
    assert main(["bench", "analytics", "--set", str(small_set), "--out", str(out), "--strategies", "default",
                 "--report-only", "--quiet", "--model", "1.5b"]) == 0
    printed = capsys.readouterr().out
    assert "all 3/3" in printed and f"analytics-sqlite-{MODELS['1.5b'].alias}.md" in printed


def test_two_processes_loading_one_database_at_once_both_find_it(data, postgres_url):
    # bench verify replays several PostgreSQL runs in parallel: each loads the same dumps into one server
    import threading

    engines = [sa.create_engine(postgres_url, poolclass=sa.NullPool) for _ in range(3)]
    with engines[0].begin() as conn:
        conn.execute(sa.text("DROP SCHEMA IF EXISTS saas CASCADE"))
    errors: list[BaseException] = []

    def load(engine: sa.Engine) -> None:
        try:
            load_postgres(engine, data / "postgres" / "saas.sql", "saas")
        except BaseException as error:  # noqa: BLE001
            errors.append(error)
    threads = [threading.Thread(target=load, args=(engine,)) for engine in engines]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    with engines[0].connect() as conn:
        accounts = conn.execute(sa.text("SELECT COUNT(*) FROM saas.accounts")).scalar()
    for engine in engines:
        engine.dispose()
    assert not errors and accounts == 200
