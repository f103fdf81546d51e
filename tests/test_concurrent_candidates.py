"""A question's candidate requests go out side by side (``concurrency``), against a real HTTP endpoint
(the scripted OpenAI-compatible server); the report and the record/replay cache stay in candidate order."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
import sqlalchemy as sa
from backends import load_shop
from fake_openai import Reply, completion
from fakes import fenced

import verifiedsql
from verifiedsql.config import Options
from verifiedsql.errors import ConfigurationError
from verifiedsql.llm.cache import RecordingChatModel

BRAZIL = "SELECT name FROM customers WHERE country = 'Brazil' ORDER BY name"
OTHER = "SELECT name FROM customers WHERE country = 'USA' ORDER BY name"
BROKEN = "SELECT nme FROM customers"
BY_SEED = {0: BRAZIL, 1: OTHER, 2: BRAZIL, 3: BROKEN, 4: BRAZIL}


class Endpoint:
    """Answers by seed; the greedy candidate is the slowest, so replies finish out of order. Counts the
    requests in flight at once."""

    def __init__(self, by_seed: dict[int, str], delay_s: float = 0.15) -> None:
        self.by_seed, self.delay_s = by_seed, delay_s
        self.lock = threading.Lock()
        self.in_flight = self.most_in_flight = 0

    def __call__(self, payload: dict[str, Any]) -> Reply:
        with self.lock:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            seed = payload.get("seed") or 0
            refine = seed > 0 and payload.get("temperature") == 0  # a sample's refinement: greedy decoding
            sql = BRAZIL if refine else self.by_seed[seed]
            time.sleep(self.delay_s * (3 if seed == 0 else 1))  # in flight while it "generates"
            return Reply(body=completion(fenced(sql)))
        finally:
            with self.lock:
                self.in_flight -= 1


@pytest.fixture
def shop_url(tmp_path) -> str:
    url = f"sqlite:///{tmp_path / 's.db'}"
    load_shop(sa.create_engine(url)).dispose()
    return url


def answer(url: str, model: Any, **options: Any):
    verified = verifiedsql.create_engine(url, llm=model, **options)
    try:
        with verified.connect() as conn:
            result = conn.execute(verifiedsql.ask("Who are the customers from Brazil?"))
            return [tuple(row) for row in result.all()], result.verification
    finally:
        verified.dispose()


def outline(report) -> tuple:
    """What must not depend on the order calls finish in."""
    return (report.sql, report.vote, report.confidence,
            [(c.index, c.sql, c.status, c.cluster, tuple(c.attempts)) for c in report.candidates],
            [(call.purpose, call.prompt_tokens) for call in report.llm_calls])


def test_candidates_are_requested_side_by_side_and_reported_in_order(server, shop_url):
    server.responder = sequential = Endpoint(BY_SEED)
    rows_one, one = answer(shop_url, server.model(), concurrency=1)
    assert sequential.most_in_flight == 1
    server.responder = side_by_side = Endpoint(BY_SEED)
    rows_four, four = answer(shop_url, server.model(), concurrency=4)
    assert side_by_side.most_in_flight == 4
    assert rows_one == rows_four and len(rows_four) == 2
    assert outline(one) == outline(four)
    assert [c.index for c in four.candidates] == [0, 1, 2, 3, 4]


def test_the_recorded_cache_replays_whatever_the_concurrency(server, shop_url, tmp_path):
    server.responder = Endpoint(BY_SEED, delay_s=0.05)
    cache = tmp_path / "cache.sqlite"
    recording = RecordingChatModel(server.model(), cache, mode="readwrite")
    _, recorded = answer(shop_url, recording, concurrency=5)
    recording.close()
    replaying = RecordingChatModel(server.model(), cache, mode="replay")
    _, replayed = answer(shop_url, replaying, concurrency=1)
    replaying.close()
    assert outline(recorded)[:4] == outline(replayed)[:4]
    assert all(call.cached for call in replayed.llm_calls)


def test_adaptive_sampling_sends_the_first_wave_together_and_stops(server, shop_url):
    server.responder = endpoint = Endpoint({i: BRAZIL for i in range(5)})
    _, report = answer(shop_url, server.model(), concurrency=4, adaptive=True)
    assert endpoint.most_in_flight == 3 and len(report.llm_calls) == 3 and len(report.candidates) == 3


def test_concurrency_must_be_positive():
    with pytest.raises(ConfigurationError, match="concurrency"):
        Options(concurrency=0)


def test_a_model_that_serves_one_request_at_a_time_gets_them_one_at_a_time(server, shop_url, tmp_path):
    """The embedded server (``LocalChatModel.max_concurrency = 1``) queues requests: they are sent one by
    one, also through the wrappers (deadline, record/replay cache) that hold it as ``inner``."""
    from verifiedsql.llm.local import LocalChatModel
    from verifiedsql.stages.calls import model_concurrency

    server.responder = endpoint = Endpoint(BY_SEED, delay_s=0.05)
    model = server.model()
    model.max_concurrency = 1  # type: ignore[attr-defined]
    cached = RecordingChatModel(model, tmp_path / "cache.sqlite", mode="readwrite")
    assert model_concurrency(cached) == 1 and LocalChatModel.max_concurrency == 1
    assert model_concurrency(server.model()) is None
    _, report = answer(shop_url, cached, concurrency=5)
    cached.close()
    assert endpoint.most_in_flight == 1 and len(report.candidates) == 5


def test_replies_in_are_used_while_later_requests_hang(server, shop_url):
    """Side by side, candidate 0 and 1 are run as soon as their replies are in; a sample that hangs past the
    question's budget ends generation there, and the answer comes from the candidates that ran."""
    def responder(payload: dict[str, Any]) -> Reply:
        seed = payload.get("seed") or 0
        return Reply(body=completion(fenced(BRAZIL)), delay_s=0.05 if seed < 2 else 10)

    server.responder = responder
    rows, report = answer(shop_url, server.model(), concurrency=5, question_timeout_s=2)
    assert len(rows) == 2 and [c.index for c in report.candidates] == [0, 1]
    assert report.vote == "unverified" and any("generation stopped before candidate 2" in n for n in report.notes)
