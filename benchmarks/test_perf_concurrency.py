"""(f) One question against a scripted OpenAI-compatible endpoint with a fixed delay per call: the candidates'
requests sent one at a time (``concurrency=1``) and side by side (``concurrency=5``, the default), alternately within
each round, so the wall-time ratio is measured side by side (stored in ``extra_info``; see perf.md)."""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path
from typing import Any

import sqlalchemy as sa

sys.path.insert(0, str(Path(__file__).parent.parent / "tests"))

from backends import load_shop  # noqa: E402
from fake_openai import FakeServer, Reply, completion  # noqa: E402

import verifiedsql  # noqa: E402

DELAY_S = 0.5  # per model call, like a remote endpoint's latency
ROUNDS = 3
SQL = {0: "SELECT name FROM customers WHERE country = 'Brazil'", 1: "SELECT name FROM customers WHERE country = 'USA'"}


def _answer(url: str, server: FakeServer, concurrency: int) -> float:
    verified = verifiedsql.create_engine(url, llm=server.model(), concurrency=concurrency)
    start = time.perf_counter()
    with verified.connect() as conn:
        conn.execute(verifiedsql.ask("Who are the customers from Brazil?")).all()
    elapsed = time.perf_counter() - start
    verified.dispose()
    return elapsed


def test_concurrent_candidates(benchmark: Any, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'shop.db'}"
    load_shop(sa.create_engine(url)).dispose()
    server = FakeServer()
    server.responder = lambda payload: Reply(body=completion(f"```sql\n{SQL[(payload.get('seed') or 0) % 2]}\n```"),
                                             delay_s=DELAY_S)
    times: dict[int, list[float]] = {1: [], 5: []}
    order = [1, 5]

    def pair() -> None:
        order.reverse()
        for concurrency in order:
            times[concurrency].append(_answer(url, server, concurrency))

    benchmark.group = "(f) concurrent candidates"
    benchmark.pedantic(pair, rounds=ROUNDS, warmup_rounds=0)
    server.close()
    one, five = statistics.median(times[1]), statistics.median(times[5])
    benchmark.extra_info.update(case=f"5 candidates, {DELAY_S:g} s per call: concurrency 1 and 5, alternately",
                                concurrency_1_median_s=one, concurrency_5_median_s=five, wall_ratio=five / one)


def test_concurrent_candidates_embedded(benchmark: Any, tmp_path: Path) -> None:
    """The same on the embedded 0.5B server: one question's five generation requests (greedy and four
    samples of the real prompt), sent one at a time and side by side, alternately."""
    import pytest

    from verifiedsql.config import Options
    from verifiedsql.db.database import Database
    from verifiedsql.db.schema import render_schema
    from verifiedsql.llm import MODELS, OpenAIChatModel, chat_model_for, model_home
    from verifiedsql.llm.base import ChatRequest
    from verifiedsql.llm.prompts import generation_messages
    from verifiedsql.stages.calls import send_all

    if not (model_home() / "models" / MODELS["0.5b"].filename).exists():
        pytest.skip("the embedded 0.5B model is not installed (scripts/setup.sh installs it)")
    url = f"sqlite:///{tmp_path / 'shop.db'}"
    engine = load_shop(sa.create_engine(url))
    options = Options.build({"local_model": "0.5b"})
    database = Database(engine, options)
    question = "Who are the customers from Brazil?"
    prompt = generation_messages(database.profile, render_schema(database.reflect()), question)
    requests = [ChatRequest(messages=prompt, temperature=0.0 if i == 0 else 0.7, max_tokens=128, seed=i,
                            purpose="generate") for i in range(5)]
    local = chat_model_for(options)
    # the server itself, not LocalChatModel (whose max_concurrency = 1 would send one at a time either way)
    model = OpenAIChatModel(local.server.base_url, local.name, "local", use_env_proxy=False)  # type: ignore[attr-defined]
    [wait() for wait in send_all(model, requests[:1], 1)]  # start the server and fill its prompt cache
    times: dict[int, list[float]] = {1: [], 5: []}
    order = [1, 5]

    def pair() -> None:
        order.reverse()
        for concurrency in order:
            start = time.perf_counter()
            [wait() for wait in send_all(model, requests, concurrency)]
            times[concurrency].append(time.perf_counter() - start)

    benchmark.group = "(f) concurrent candidates"
    benchmark.pedantic(pair, rounds=2, warmup_rounds=0)
    engine.dispose()
    one, five = statistics.median(times[1]), statistics.median(times[5])
    benchmark.extra_info.update(case="embedded 0.5B: one question's 5 generation requests, concurrency 1 and 5",
                                concurrency_1_median_s=one, concurrency_5_median_s=five, wall_ratio=five / one)
