"""The Spider harness end to end on a tiny Spider-shaped folder, with a scripted model."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter

import pytest
import sqlalchemy as sa
from fakes import ScriptedChatModel, fenced

from verifiedsql.bench.data import Example, load_examples, stratified_sample
from verifiedsql.bench.spider import SpiderConfig, run_spider
from verifiedsql.errors import LLMError
from verifiedsql.llm.base import ChatRequest
from verifiedsql.llm.cache import RecordingChatModel

QUESTIONS = [
    ("shop", "How many items are there?", "SELECT count(*) FROM items"),
    ("shop", "List item names by price.", "SELECT name FROM items ORDER BY price"),
    ("shop", "What is the most expensive item?", "SELECT name FROM items ORDER BY price DESC LIMIT 1"),
    ("zoo", "How many animals are there?", "SELECT count(*) FROM animals"),
    ("zoo", "Which species are there?", "SELECT DISTINCT species FROM animals"),
]
WRONG = "SELECT 42 FROM {table} LIMIT 1"  # runs, reads the table, and is wrong (an answer of constants is no data)


def make_spider(root):
    """dev.json plus database/<db>/<db>.sqlite, like ../shared/data/spider_dev."""
    for db, ddl, rows in (
        ("shop", "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, price REAL)",
         [(1, "pen", 2.5), (2, "book", 12.0), (3, "mug", 6.0)]),
        ("zoo", "CREATE TABLE animals (id INTEGER PRIMARY KEY, species TEXT, age INTEGER)",
         [(1, "cat", 3), (2, "dog", 5), (3, "cat", 1)]),
    ):
        folder = root / "database" / db
        folder.mkdir(parents=True)
        conn = sqlite3.connect(folder / f"{db}.sqlite")
        conn.execute(ddl)
        conn.executemany(f"INSERT INTO {ddl.split()[2]} VALUES (?, ?, ?)", rows)
        conn.commit()
        conn.close()
    (root / "postgres").mkdir()
    (root / "postgres" / "shop.sql").write_text(
        "CREATE SCHEMA IF NOT EXISTS shop;\n"
        "CREATE TABLE shop.items (id BIGINT, name TEXT, price DOUBLE PRECISION, PRIMARY KEY (id));\n"
        "INSERT INTO shop.items (id, name, price) VALUES (1, 'pen', 2.5), (2, 'book', 12.0), (3, 'mug', 6.0);\n"
        "CREATE TABLE shop.sales (id BIGINT PRIMARY KEY, item_id BIGINT);\n"
        "INSERT INTO shop.sales (id, item_id) VALUES (1, 1), (2, 3);\n"
        "-- Foreign key constraints (added after data load)\n"
        "ALTER TABLE shop.sales\n    ADD CONSTRAINT sold_item FOREIGN KEY (item_id) REFERENCES shop.items (id);\n"
        "ALTER TABLE shop.items ADD CONSTRAINT broken FOREIGN KEY (id) REFERENCES shop.nowhere (id);\n")
    dev = [{"id": i, "db_id": db, "question": q, "query": sql} for i, (db, q, sql) in enumerate(QUESTIONS)]
    (root / "dev.json").write_text(json.dumps(dev))
    return root


def pool_model(plan):
    """Per question, candidate k (the request's seed) answers ``plan[question][k]`` ('gold' or 'wrong')."""

    def script(request: ChatRequest) -> str:
        question = next(m["content"] for m in request.messages if "Question: " in m["content"])
        question = question.rsplit("Question: ", 1)[1]
        gold = next(sql for _, q, sql in QUESTIONS if q == question)
        choice = plan.get(question, ["gold"] * 5)[request.seed or 0]
        return fenced(gold if choice == "gold" else WRONG.format(table=gold.split(" FROM ")[1].split()[0]))

    return ScriptedChatModel(script, name="pool-model", prompt_tokens=100, completion_tokens=10, seconds=0.5)


def failing_model():
    return ScriptedChatModel(lambda request: LLMError("the model is down"), name="pool-model")


@pytest.fixture
def spider(tmp_path):
    return make_spider(tmp_path / "spider")


def config(spider, tmp_path, **kw):
    return SpiderConfig(data_dir=spider, n=None, out_dir=tmp_path / "out", cache_path=None, **kw)


# Question 1: greedy wrong, the majority right. Question 2: greedy right, the majority wrong.
PLAN = {
    QUESTIONS[1][1]: ["wrong", "gold", "gold", "gold", "wrong"],
    QUESTIONS[2][1]: ["gold", "wrong", "wrong", "wrong", "wrong"],
}


def test_sample_is_seeded_and_stratified():
    examples = [Example(i, f"db{i % 3}" if i < 60 else "db3", "q", "SELECT 1") for i in range(100)]
    sample = stratified_sample(examples, 20, seed=7)
    assert sample == stratified_sample(examples, 20, seed=7)
    assert sample != stratified_sample(examples, 20, seed=8)
    assert len(sample) == 20 and len({e.id for e in sample}) == 20
    counts = Counter(e.db_id for e in sample)
    totals = Counter(e.db_id for e in examples)
    for db, total in totals.items():  # each database gets floor or ceil of its proportional share
        assert abs(counts[db] - 20 * total / 100) < 1
    assert stratified_sample(examples, 500) == sorted(examples, key=lambda e: e.id)


def test_run_grades_strategies_on_a_shared_pool(spider, tmp_path):
    model = RecordingChatModel(pool_model(PLAN), tmp_path / "cache.sqlite")
    run = run_spider(config(spider, tmp_path), llm=model, progress=lambda line: None)
    by_key = {(r["strategy"], r["id"]): r for r in run.records}
    assert len(run.records) == 10
    assert not by_key["greedy", 1]["correct"] and by_key["self-consistency", 1]["correct"]
    assert by_key["greedy", 2]["correct"] and not by_key["self-consistency", 2]["correct"]
    assert by_key["self-consistency", 2]["pass_at_n"]
    assert [c["correct"] for c in by_key["self-consistency", 1]["candidates"]] == [False, True, True, True, False]
    sc, greedy = run.summaries["self-consistency"], run.summaries["greedy"]
    assert sc.ex == greedy.ex == 0.8 and sc.pass_at_n == 1.0
    assert greedy.gap_closed == 0.0
    # greedy's only request is self-consistency's candidate 0: 5 model calls per question, not 6
    assert len(model.inner.requests) == 5 * len(QUESTIONS)
    assert by_key["greedy", 0]["hardness"] == "easy"
    assert sc.tokens == 5 * 110 and sc.llm_calls == 5
    assert {p.name for p in run.outputs.values()} == {f"spider-sqlite-pool-model.{x}" for x in ("json", "md", "png")}
    for path in run.outputs.values():
        assert path.exists()
    payload = json.loads(run.outputs["json"].read_text())
    assert len(payload["records"]) == 10 and "self-consistency" in payload["summaries"]
    assert "| greedy |" in run.outputs["markdown"].read_text()


def test_replay_needs_no_model_and_gives_the_same_answers(spider, tmp_path):
    cache = tmp_path / "cache.sqlite"
    first = run_spider(config(spider, tmp_path), llm=RecordingChatModel(pool_model(PLAN), cache),
                       progress=lambda line: None)
    replayed = run_spider(SpiderConfig(data_dir=spider, n=None, out_dir=tmp_path / "replayed", cache_path=None),
                          llm=RecordingChatModel(None, cache, "replay", model_name="pool-model"),
                          progress=lambda line: None)
    assert [r["sql"] for r in replayed.records] == [r["sql"] for r in first.records]
    # replayed calls carry the seconds recorded when the cache was filled; none were live
    assert all(r["cached_calls"] == r["llm_calls"] and r["live_model_seconds"] == 0 for r in replayed.records)
    assert all(r["estimated_seconds"] >= r["model_seconds"] for r in replayed.records)


def test_resume_skips_finished_records_and_retries_cut_lines(spider, tmp_path):
    cfg = config(spider, tmp_path, strategies=["greedy"])
    run_spider(cfg, llm=pool_model(PLAN), progress=lambda line: None)
    jsonl = cfg.out_dir / f"{cfg.run_name('pool-model')}.jsonl"
    lines = jsonl.read_text().splitlines()
    assert len(lines) == 5
    jsonl.write_text("\n".join(lines[:3]) + "\n" + lines[3][:40])  # killed while writing record 4
    model = pool_model(PLAN)
    run = run_spider(cfg, llm=model, progress=lambda line: None)
    assert len(model.requests) == 2  # questions 3 and 4 only
    assert sorted(r["id"] for r in run.records) == [0, 1, 2, 3, 4]
    assert len(run_spider(cfg, llm=failing_model(), progress=lambda line: None).records) == 5


def test_model_failures_are_recorded_and_retried(spider, tmp_path):
    cfg = config(spider, tmp_path, strategies=["greedy"])
    failed = run_spider(cfg, llm=failing_model(), progress=lambda line: None)
    assert {r["status"] for r in failed.records} == {"llm_error"}
    assert failed.summaries["greedy"].llm_errors == 5 and failed.summaries["greedy"].questions == 0
    model = pool_model(PLAN)
    again = run_spider(cfg, llm=model, progress=lambda line: None)
    assert len(model.requests) == 5 and {r["status"] for r in again.records} == {"answered"}


def test_no_answer_is_graded_wrong_with_candidates_kept(spider, tmp_path):
    broken = ScriptedChatModel(lambda request: fenced("SELECT nope FROM nowhere"), name="pool-model",
                               prompt_tokens=1, completion_tokens=1)
    run = run_spider(config(spider, tmp_path, strategies=["greedy"]), llm=broken, progress=lambda line: None)
    record = run.records[0]
    assert record["status"] == "no_answer" and not record["correct"] and not record["pass_at_n"]
    assert record["candidates"][0]["status"] == "error"


def test_duckdb_engine_answers_from_a_copy(spider, tmp_path):
    pytest.importorskip("duckdb")
    run = run_spider(config(spider, tmp_path, engine="duckdb", strategies=["greedy"]), llm=pool_model({}),
                     progress=lambda line: None)
    assert all(r["correct"] for r in run.records), [r["error"] for r in run.records]
    assert (tmp_path / "out" / "engines" / "duckdb" / "shop.duckdb").exists()


def test_loading_reports_a_missing_folder(tmp_path):
    from verifiedsql.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="--data"):
        load_examples(tmp_path / "nowhere")


@pytest.mark.postgres
def test_postgresql_engine_loads_the_dump_into_a_schema(spider, tmp_path, postgres_url):
    cfg = config(spider, tmp_path, engine="postgresql", pg_url=postgres_url, strategies=["greedy"])
    cfg.n = None
    import verifiedsql.bench.spider as harness

    shop_only = [e for e in harness.load_examples(spider) if e.db_id == "shop"]
    original = harness.load_examples
    harness.load_examples = lambda data_dir: shop_only
    try:
        run = run_spider(cfg, llm=pool_model({}), progress=lambda line: None)
        again = run_spider(cfg, llm=failing_model(), progress=lambda line: None)  # loaded once, all done
    finally:
        harness.load_examples = original
    assert [r["correct"] for r in run.records] == [True, True, True], [r["error"] for r in run.records]
    assert len(again.records) == 3
    # every key the data allows is loaded, the first one under the dump's comment line too; the broken one is not
    inspector = sa.inspect(sa.create_engine(postgres_url, poolclass=sa.NullPool))
    assert [fk["name"] for fk in inspector.get_foreign_keys("sales", schema="shop")] == ["sold_item"]
    assert inspector.get_foreign_keys("items", schema="shop") == []


def test_postgresql_needs_a_url(spider, tmp_path):
    from verifiedsql.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="--pg-url"):
        run_spider(config(spider, tmp_path, engine="postgresql"), llm=pool_model({}), progress=lambda line: None)


def test_report_only_summarises_stored_records_without_asking(spider, tmp_path):
    cfg = config(spider, tmp_path, strategies=["greedy"])
    first = run_spider(cfg, llm=pool_model({}), progress=lambda line: None)
    idle = pool_model({})
    cfg.report_only = True
    report = run_spider(cfg, llm=idle, progress=lambda line: None)
    assert idle.requests == [] and len(report.records) == len(first.records)
    assert report.summaries["greedy"].ex == first.summaries["greedy"].ex


def test_questions_run_in_a_seeded_shuffled_order(spider, tmp_path):
    model = pool_model({})
    run_spider(config(spider, tmp_path, strategies=["greedy"]), llm=model, progress=lambda line: None)
    asked = [m["content"].rsplit("Question: ", 1)[1]
             for r in model.requests for m in r.messages if "Question: " in m["content"]]
    assert sorted(asked) == sorted(q for _, q, _ in QUESTIONS) and asked != [q for _, q, _ in QUESTIONS]
