"""The record/replay cache: hits, misses, key sensitivity and concurrent use of one file."""

from __future__ import annotations

import dataclasses
import itertools
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from fakes import ScriptedChatModel

from verifiedsql.config import LLMSettings, Options
from verifiedsql.errors import ConfigurationError, LLMError, ModelTimeoutError, ReplayMissError
from verifiedsql.llm import ChatRequest, RecordingChatModel, chat_model_for, messages


def counting_model(name: str = "fake") -> ScriptedChatModel:
    """A scripted model whose answer names the call number, so a cached answer is recognisable
    (``len(model.requests)`` counts the calls)."""
    calls = itertools.count(1)  # next() on a count is atomic: concurrent calls get distinct numbers
    return ScriptedChatModel(lambda request: f"answer {next(calls)}: {request.messages[-1]['content']}", name=name,
                             prompt_tokens=5, completion_tokens=2, seconds=0.25)


REQUEST = ChatRequest(messages=messages("You write SQL.", "Count users"), temperature=0.7, seed=1)


def test_readwrite_records_then_hits(tmp_path: Path) -> None:
    inner = counting_model()
    cache = RecordingChatModel(inner, tmp_path / "llm.sqlite", "readwrite")
    first = cache.complete(REQUEST)
    second = cache.complete(REQUEST)
    assert len(inner.requests) == 1 and not first.cached and second.cached
    assert (second.text, second.model, second.prompt_tokens, second.completion_tokens, second.seconds) == (
        first.text, first.model, first.prompt_tokens, first.completion_tokens, first.seconds)
    assert len(cache) == 1


def test_replay_hits_recorded_answers_without_a_model(tmp_path: Path) -> None:
    path = tmp_path / "llm.sqlite"
    recorded = RecordingChatModel(counting_model(), path, "readwrite").complete(REQUEST)
    replay = RecordingChatModel(None, path, "replay", model_name="fake")
    assert replay.complete(REQUEST).text == recorded.text
    assert replay.complete(dataclasses.replace(REQUEST, purpose="other label")).cached


def test_replay_miss_raises_with_a_hint(tmp_path: Path) -> None:
    inner = counting_model()
    replay = RecordingChatModel(inner, tmp_path / "llm.sqlite", "replay")
    with pytest.raises(ReplayMissError, match="readwrite"):
        replay.complete(REQUEST)
    assert len(inner.requests) == 0


@pytest.mark.parametrize("change", [
    {"seed": 2}, {"seed": None}, {"temperature": 0.0}, {"max_tokens": 99}, {"stop": (";",)},
    {"messages": messages("You write SQL.", "Count orders")},
    {"messages": messages("You write SQLite SQL.", "Count users")},
])
def test_key_depends_on_everything_that_shapes_the_answer(tmp_path: Path, change: dict) -> None:
    inner = counting_model()
    cache = RecordingChatModel(inner, tmp_path / "llm.sqlite", "readwrite")
    cache.complete(REQUEST)
    assert not cache.complete(dataclasses.replace(REQUEST, **change)).cached
    assert len(inner.requests) == 2


def test_key_depends_on_the_model_name(tmp_path: Path) -> None:
    path = tmp_path / "llm.sqlite"
    RecordingChatModel(counting_model("a"), path, "readwrite").complete(REQUEST)
    with pytest.raises(ReplayMissError):
        RecordingChatModel(None, path, "replay", model_name="b").complete(REQUEST)


def test_threads_share_one_file(tmp_path: Path) -> None:
    inner = counting_model()
    path = tmp_path / "llm.sqlite"
    cache = RecordingChatModel(inner, path, "readwrite")
    requests = [dataclasses.replace(REQUEST, seed=i % 20) for i in range(200)]
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(cache.complete, requests))
    assert len(cache) == 20 and 20 <= len(inner.requests) <= 200
    again = RecordingChatModel(None, path, "replay", model_name="fake")
    with ThreadPoolExecutor(8) as pool:
        replayed = list(pool.map(again.complete, requests))
    assert all(r.cached for r in replayed)
    assert {r.text for r in replayed} <= {a.text for a in answers}


def test_misconfiguration_is_typed(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError):
        RecordingChatModel(None, tmp_path / "x.sqlite", "readwrite")
    with pytest.raises(ConfigurationError):
        RecordingChatModel(None, tmp_path / "x.sqlite", "replay")


def test_replay_with_the_embedded_default_needs_no_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import verifiedsql.llm as llm

    def forbidden(*args: object) -> None:
        raise AssertionError("the local model must not be installed or started in replay mode")

    monkeypatch.setattr(llm, "embedded_chat_model", forbidden)
    options = Options(llm=LLMSettings(local_model="0.5b"), cache_path=tmp_path / "c.sqlite", cache_mode="replay")
    model = chat_model_for(options)
    assert isinstance(model, RecordingChatModel) and model.inner is None
    assert model.name == "qwen2.5-coder-0.5b"


def test_configured_endpoint_is_used_and_wrapped(tmp_path: Path) -> None:
    settings = LLMSettings(base_url="http://127.0.0.1:9/v1", model="m1")
    assert chat_model_for(Options(llm=settings)).name == "m1"
    wrapped = chat_model_for(Options(llm=settings, cache_path=tmp_path / "c.sqlite", cache_mode="readwrite"))
    assert isinstance(wrapped, RecordingChatModel) and wrapped.name == "m1"
    assert chat_model_for(Options(llm=LLMSettings(api_key="k"))).name == "gpt-4o-mini"


def test_the_key_masks_the_virtual_environment_path(monkeypatch):
    """A traceback that names the checkout's virtual environment keys the same in another checkout."""
    import sys

    from verifiedsql.llm.base import ChatRequest
    from verifiedsql.llm.cache import request_key

    def key_under(prefix: str) -> str:
        monkeypatch.setattr(sys, "prefix", prefix)
        monkeypatch.setattr(sys, "base_prefix", "/usr")
        text = f'File "{prefix}/lib/python3.11/site-packages/pandas/core/frame.py", line 1\nKeyError: x'
        return request_key("m", ChatRequest(messages=({"role": "user", "content": text},)))[0]

    assert key_under("/work/main/.venv") == key_under("/srv/other/.venv")
    monkeypatch.setattr(sys, "prefix", "/usr")  # outside a venv nothing is masked
    plain = request_key("m", ChatRequest(messages=({"role": "user", "content": "/usr/lib"},)))
    assert plain[0] != request_key("m", ChatRequest(messages=({"role": "user", "content": "/opt/lib"},)))[0]


@pytest.mark.parametrize("frames", [10, 11, 12, 13, 40])
def test_a_long_traceback_is_cut_alike_under_any_environment_path(monkeypatch, frames):
    """The tail of a traceback shown to the model (``error_tail``) counts the environment's path at a fixed
    width, so a traceback too long to show whole keys the same under a short and a long path."""
    import sys

    from verifiedsql.llm.cache import request_key
    from verifiedsql.llm.replies import ERROR_TAIL_CHARS, error_tail

    def key_under(prefix: str) -> tuple[str, str]:
        monkeypatch.setattr(sys, "prefix", prefix)
        monkeypatch.setattr(sys, "base_prefix", "/usr")
        frame = f'  File "{prefix}/lib/python3.11/site-packages/pandas/core/frame.py", line 4330, in get\n    x = y\n'
        shown = error_tail("Traceback (most recent call last):\n" + frame * frames + "KeyError: 'age'")
        return shown, request_key("m", ChatRequest(messages=({"role": "user", "content": shown},)))[0]

    short, long = key_under("/work/main/.venv"), key_under("/check/a/much/longer/checkout/path/main/.venv")
    assert short[1] == long[1]
    assert short[0].endswith("KeyError: 'age'") and len(short[0]) <= ERROR_TAIL_CHARS + 3


def test_a_path_as_long_as_the_fixed_width_cuts_where_plain_slicing_does():
    """Under a path of ``PREFIX_WIDTH`` characters (the committed caches' /work/main/.venv) the tail is the
    plain last characters, so the prompts those caches recorded are unchanged; under a longer path the tail
    is the same text with the path swapped, wherever the cut falls outside a path."""
    import random

    from verifiedsql.llm.portable import PREFIX_WIDTH, portable_tail

    recorded, other = "/work/main/.venv", "/a/much/longer/checkout/.venv"
    assert len(recorded) == PREFIX_WIDTH
    pick = random.Random(7)
    for _ in range(2000):
        parts = ["".join(pick.choice("ab\n ") for _ in range(pick.randint(0, 40))) for _ in range(pick.randint(1, 6))]
        text, chars = recorded.join(parts), pick.randint(1, 150)
        tail = portable_tail(text, chars, recorded)
        assert tail == (None if len(text) <= chars else text[-chars:])
        moved = portable_tail(other.join(parts), chars, other)
        if tail is None or moved is None:
            assert tail is None and moved is None
        elif not any(tail.startswith(recorded[cut:]) for cut in range(1, PREFIX_WIDTH)):
            assert moved.replace(other, recorded) == tail


def test_a_request_that_timed_out_replays_as_the_same_timeout(tmp_path: Path) -> None:
    path = tmp_path / "llm.sqlite"
    endless = ScriptedChatModel([ModelTimeoutError("no complete answer within 180.0 s"), "SELECT 1"], name="fake")
    with pytest.raises(ModelTimeoutError):
        RecordingChatModel(endless, path, "readwrite").complete(REQUEST)
    replay = RecordingChatModel(None, path, "replay", model_name="fake")
    with pytest.raises(ModelTimeoutError, match="180.0 s.*recorded run met this too"):
        replay.complete(REQUEST)
    with pytest.raises(ReplayMissError):  # another request was never recorded: still a miss
        replay.complete(dataclasses.replace(REQUEST, seed=2))
    # a read-write cache asks again, and the answer it then records is what a replay gives
    assert RecordingChatModel(endless, path, "readwrite").complete(REQUEST).text == "SELECT 1"
    assert replay.complete(REQUEST).text == "SELECT 1"


def test_only_a_timeout_is_kept_as_a_failure(tmp_path: Path) -> None:
    path = tmp_path / "llm.sqlite"
    with pytest.raises(LLMError):
        RecordingChatModel(ScriptedChatModel([LLMError("cannot connect")], name="fake"), path,
                           "readwrite").complete(REQUEST)
    with pytest.raises(ReplayMissError):
        RecordingChatModel(None, path, "replay", model_name="fake").complete(REQUEST)


def test_a_cache_recorded_before_failures_were_kept_replays_and_is_left_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "llm.sqlite"
    RecordingChatModel(counting_model(), path, "readwrite").complete(REQUEST)
    import sqlite3
    with sqlite3.connect(path) as db:
        db.execute("DROP TABLE failures")
    replay = RecordingChatModel(None, path, "replay", model_name="fake")
    assert replay.complete(REQUEST).cached
    with pytest.raises(ReplayMissError):
        replay.complete(dataclasses.replace(REQUEST, seed=2))
    with sqlite3.connect(path) as db:
        assert not db.execute("SELECT name FROM sqlite_master WHERE name = 'failures'").fetchall()
