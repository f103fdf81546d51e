"""End to end with the real embedded model (Qwen2.5-Coder-0.5B-Instruct) on a Spider dev database.

These tests install the model on first use (about 0.5 GB, SHA-256 checked) and run in CI.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa

import verifiedsql
import verifiedsql.dbapi
from verifiedsql.results import ResultSet, results_equivalent

# one worker runs them all (scripts/test.sh: --dist loadgroup), so one embedded model server serves them
pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("embedded-model")]

SPIDER = Path(os.environ.get("VERIFIEDSQL_SPIDER_DIR", Path(__file__).parents[2] / "shared" / "data" / "spider_dev"))
MODEL = {"local_model": "0.5b", "llm_base_url": None, "llm_api_key": None}


@pytest.fixture
def concert_singer(tmp_path):
    source = SPIDER / "database" / "concert_singer" / "concert_singer.sqlite"
    if not source.exists():
        pytest.fail(f"Spider dev data not found at {SPIDER}; set VERIFIEDSQL_SPIDER_DIR")
    path = tmp_path / "concert_singer.sqlite"
    shutil.copy(source, path)
    return path


def gold(path, sql):
    with sa.create_engine(f"sqlite:///{path}").connect() as conn:
        result = conn.execute(sa.text(sql))
        return ResultSet(tuple(result.keys()), tuple(tuple(r) for r in result))


@pytest.fixture(autouse=True)
def no_configured_endpoint(monkeypatch):
    for name in ("VERIFIEDSQL_LLM_BASE_URL", "VERIFIEDSQL_LLM_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def test_engine_answers_a_spider_question_with_the_local_model(concert_singer):
    engine = verifiedsql.create_engine(f"sqlite:///{concert_singer}", local_model="0.5b")
    with engine.connect() as conn:
        result = conn.execute(verifiedsql.ask("How many singers do we have?"))
        rows = result.all()
    report = result.verification
    expected = gold(concert_singer, "SELECT count(*) FROM singer")
    assert results_equivalent(ResultSet(("n",), tuple(rows)), expected), report.summary()
    assert len(report.candidates) == 5 and report.total_tokens > 0
    assert all(call.model.startswith("qwen2.5-coder-0.5b") for call in report.llm_calls)
    assert report.vote in ("unanimous", "majority", "unverified")


def test_dbapi_question_with_the_local_model(concert_singer):
    import sqlite3

    conn = verifiedsql.dbapi.connect(sqlite3.connect(concert_singer), local_model="0.5b", candidates=1)
    cur = conn.cursor()
    cur.execute("What are the names of the stadiums with capacity above 5000?")
    rows = cur.fetchall()
    expected = gold(concert_singer, "SELECT name FROM stadium WHERE capacity > 5000")
    assert results_equivalent(ResultSet(("name",), tuple(rows)), expected), cur.verification.summary()


def test_cli_prints_rows_and_a_summary(concert_singer):
    completed = subprocess.run(
        [sys.executable, "-m", "verifiedsql.cli", "ask", f"sqlite:///{concert_singer}",
         "How many concerts are there?", "--model", "0.5b", "--candidates", "3"],
        capture_output=True, text=True, timeout=600,
        env={k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "VERIFIEDSQL_LLM"))},
    )
    assert completed.returncode == 0, completed.stderr
    assert "(1 row)" in completed.stdout and "confidence:" in completed.stdout
    assert "model call 1: generate" in completed.stderr


def test_probe_and_verify_with_the_local_model(concert_singer):
    """Probing and verify-and-repair run with the real model: probe calls are made and recorded, every
    probe that ran is bounded, and the answer's SQL passed the EXPLAIN syntax check. Replies are capped at 256
    tokens: the small model's probe replies ramble, and each token costs a tenth of a second on 2 busy cores."""
    engine = verifiedsql.create_engine(f"sqlite:///{concert_singer}", local_model="0.5b", candidates=1,
                                       probe=True, verify=True, max_probes=2, max_tokens=256)
    with engine.connect() as conn:
        result = conn.execute(verifiedsql.ask("How many singers do we have?"))
        rows = result.all()
    report = result.verification
    assert results_equivalent(ResultSet(("n",), tuple(rows)), gold(concert_singer, "SELECT count(*) FROM singer"))
    assert any(call.purpose == "probe" for call in report.llm_calls), report.summary()
    assert all(p.sql.upper().rstrip().endswith(("LIMIT 20",)) or "LIMIT" in p.sql.upper()
               for p in report.probes if p.status == "ok")
    assert report.candidates[0].checks[:3] == ["parse", "explain", "run"]


def test_execution_tracing_with_the_local_model(concert_singer):
    """VET with the real model: pandas steps are asked for at temperature 0 and run in the sandbox, and the
    trace ends in a recorded outcome; an accepted SQL matched the trace's output and joined the pool. Two steps of
    one repair each are enough for this question, replies are capped at 256 tokens, the question at 150 s, and
    the scope check (not under test here) stays off: on 2 busy cores each call can take minutes."""
    engine = verifiedsql.create_engine(f"sqlite:///{concert_singer}", local_model="0.5b", candidates=1, vet=True,
                                       vet_steps=2, vet_step_repairs=1, scope_check=False, max_tokens=256,
                                       question_timeout_s=150)
    with engine.connect() as conn:
        result = conn.execute(verifiedsql.ask("How many singers do we have?"))
        rows = result.all()
    engine.dispose()
    report, trace = result.verification, result.verification.trace
    assert trace is not None and trace.steps and trace.outcome in ("accepted", "rejected", "failed"), report.summary()
    assert "singer" in trace.columns
    assert all(call.purpose != "vet-step" or call.prompt_tokens > 0 for call in report.llm_calls)
    if trace.outcome == "accepted":
        assert trace.consistent and report.candidates[-1].origin == "vet"
    assert results_equivalent(ResultSet(("n",), tuple(rows)), gold(concert_singer, "SELECT count(*) FROM singer"))


def test_the_embedded_model_gives_token_scores_and_rescoring_recovers_them(concert_singer, tmp_path):
    """The embedded server answers with log-probabilities; the cache keeps them; `llm rescore` (teacher forcing,
    for caches recorded without them) gives the same numbers for the same reply, within the noise of batching."""
    from verifiedsql.llm.cache import RecordingChatModel
    from verifiedsql.llm.rescore import rescore_cache

    cache = tmp_path / "cache.sqlite"
    engine = verifiedsql.create_engine(f"sqlite:///{concert_singer}", local_model="0.5b", candidates=2,
                                       cache_path=cache, cache_mode="readwrite")
    with engine.connect() as conn:
        result = conn.execute(verifiedsql.ask("How many singers do we have?"))
    report = result.verification
    live = [c.certainty for c in report.candidates]
    assert all(c is not None and c.tokens > 0 and c.mean <= 0 for c in live), report.summary()
    assert report.features and report.features["scored"] == 1.0
    engine.dispose()
    import sqlite3
    db = sqlite3.connect(cache)
    recorded = dict(db.execute("SELECT key, scores FROM responses WHERE purpose = 'generate'").fetchall())
    db.execute("UPDATE responses SET scores = NULL")
    db.commit()
    db.close()
    assert rescore_cache(cache, "0.5b", ("generate",), progress=lambda line: None) == len(recorded)
    db = sqlite3.connect(cache)
    from verifiedsql.llm.scores import loads
    for key, scores in db.execute("SELECT key, scores FROM responses WHERE purpose = 'generate'"):
        again, first = loads(scores), loads(recorded[key])
        assert again is not None and first is not None and again.tokens == first.tokens
        gaps = [abs(a - b) for a, b in zip(again.logprobs, first.logprobs)]
        assert sum(gaps) / len(gaps) < 0.15, gaps
    db.close()
    replay = RecordingChatModel(None, cache, "replay", model_name="qwen2.5-coder-0.5b")
    assert len(replay) >= 1
