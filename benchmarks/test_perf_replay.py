"""(e) A question answered from the replay cache: the model is recorded once (a scripted model that
implements the ChatModel protocol), then replayed, so only the library's own work is timed."""

from __future__ import annotations

import sqlite3

import pytest

import verifiedsql
from verifiedsql.llm.base import ChatRequest, ChatResponse
from verifiedsql.llm.cache import RecordingChatModel

QUESTION = "How many orders does each country have?"
# five candidates: three agree, one differs, one fails first and is refined
REPLIES = {
    0: "SELECT c.country, COUNT(*) FROM customers c JOIN orders o ON o.customer_id = c.id GROUP BY c.country",
    1: "SELECT country, COUNT(o.id) FROM orders o JOIN customers c ON c.id = o.customer_id GROUP BY country",
    2: "SELECT c.country, COUNT(*) AS n FROM customers c JOIN orders o ON o.customer_id = c.id GROUP BY 1",
    3: "SELECT country, COUNT(*) FROM customers GROUP BY country",
    4: "SELECT country, COUNT(*) FROM orderz GROUP BY country",
}


class ScriptedModel:
    @property
    def name(self) -> str:
        return "scripted"

    def complete(self, request: ChatRequest) -> ChatResponse:
        sql = REPLIES[0] if request.purpose == "refine" else REPLIES[request.seed or 0]
        return ChatResponse(f"```sql\n{sql}\n```", "scripted", prompt_tokens=400, completion_tokens=40, seconds=1.0)


@pytest.fixture
def shop_url(tmp_path) -> str:
    path = tmp_path / "shop.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT, country TEXT)")
    conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customers(id), "
                 "amount REAL, status TEXT)")
    countries = ["Brazil", "Germany", "USA", "France", "Japan"]
    conn.executemany("INSERT INTO customers VALUES (?, ?, ?)", [(i, f"c{i}", countries[i % 5]) for i in range(50)])
    conn.executemany("INSERT INTO orders VALUES (?, ?, ?, ?)",
                     [(i, i % 50, i * 1.5, "shipped" if i % 3 else "pending") for i in range(500)])
    conn.commit()
    conn.close()
    return f"sqlite:///{path}"


def test_question_from_replay_cache(benchmark, shop_url, tmp_path):
    cache = tmp_path / "llm-cache.sqlite"
    recorder = verifiedsql.create_engine(shop_url, llm=RecordingChatModel(ScriptedModel(), cache), candidates=5)
    with recorder.connect() as conn:
        conn.execute(verifiedsql.ask(QUESTION)).all()
    replay = RecordingChatModel(None, cache, "replay", model_name="scripted")
    engine = verifiedsql.create_engine(shop_url, llm=replay, candidates=5)

    def ask():
        with engine.connect() as conn:
            result = conn.execute(verifiedsql.ask(QUESTION))
            return result.all(), result.verification

    benchmark.group = "(e) own overhead per question"
    benchmark.extra_info.update(case="replayed question, 5 candidates, 2 tables (engine.execute(ask(...)))",
                                target_s=0.05)
    rows, report = benchmark.pedantic(ask, rounds=20, warmup_rounds=1)
    assert len(rows) == 5 and all(call.cached for call in report.llm_calls)
    benchmark.extra_info["llm_calls"] = len(report.llm_calls)
