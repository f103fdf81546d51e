"""``verifiedsql ask``: every option is a flag that reaches the engine, the question goes through the public
engine path, and the exit statuses, ``--json``, ``--html`` and the progress lines, with a scripted model on
a real SQLite database."""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from backends import load_shop
from fakes import ScriptedChatModel, fenced

import verifiedsql.engine
import verifiedsql.llm
from verifiedsql import cli
from verifiedsql.config import LLMSettings, Options
from verifiedsql.engine import OPTION_NAMES, state_of
from verifiedsql.errors import ConfigurationError

ROOT = Path(__file__).resolve().parents[1]
BRAZIL = "SELECT name FROM customers WHERE country = 'Brazil' ORDER BY name"
QUESTION = "Which customers are from Brazil?"


@pytest.fixture
def shop_url(tmp_path) -> str:
    engine = load_shop(sa.create_engine(f"sqlite:///{tmp_path / 'shop.db'}"))
    engine.dispose()
    return str(engine.url)


def brazil(url: str) -> list[list[Any]]:
    """The rows BRAZIL gives, asked directly."""
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return [list(row) for row in conn.execute(sa.text(BRAZIL))]
    finally:
        engine.dispose()


@pytest.fixture
def model(monkeypatch) -> dict[str, Any]:
    """The model factory patched: every question gets a scripted model answering ``seen["sql"]`` (per seed
    when a dict); ``seen["options"]`` holds the options the factory was given."""
    seen: dict[str, Any] = {"sql": BRAZIL, "options": []}

    def script(request) -> str:
        sql = seen["sql"]
        return fenced(sql[request.seed or 0] if isinstance(sql, dict) else sql)

    def factory(options: Options) -> ScriptedChatModel:
        seen["options"].append(options)
        seen["model"] = ScriptedChatModel(script)
        return seen["model"]

    monkeypatch.setattr(verifiedsql.llm, "chat_model_for", factory)
    return seen


def parse(*argv: str) -> argparse.Namespace:
    return cli.build_parser().parse_args(["ask", *argv])


def engine_options(args: argparse.Namespace) -> Options:
    engine = cli.open_engine(args, ScriptedChatModel([]))
    try:
        return state_of(engine).options
    finally:
        engine.dispose()


# ------------------------------------------------------------------------------------------ option flags

FLAGS = {option.name: option for option in cli.option_flags()}
SETTING = {cli.llm_keyword(f.name): f.name for f in dataclasses.fields(LLMSettings)}  # keyword -> LLMSettings


def test_every_option_of_the_engine_is_a_flag():
    assert set(FLAGS) == OPTION_NAMES - {"llm", "cache"}  # llm: its settings' keywords; cache: --cache
    assert {f.name for f in dataclasses.fields(Options)} - {"llm"} <= set(FLAGS)
    assert set(SETTING) <= set(FLAGS)


def test_the_help_comes_from_the_readme_table(capsys):
    """Each flag's help is the first clause of its row (tests/test_readme_tables.py checks that every option
    has one); an option that shares the row of a switch is a setting of that switch."""
    rows = cli.readme_option_help()
    assert rows["max_refinements"].meaning == "self-repairs of a candidate that fails, each fed the database's error"
    assert rows["require"].meaning.startswith("the lowest confidence tier to accept (doubtful, probable or verified;")
    with pytest.raises(SystemExit):
        cli.main(["ask", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--dpc, --no-dpc when the candidates disagree" in text and "(default: off)" in text
    assert "--dpc-votes N a setting of --dpc (README, Options) (default: 1)" in text
    assert "--require {unverified,doubtful,probable,verified}" in text
    assert "--local-model {1.5b,0.5b}, --model {1.5b,0.5b}" in text


def valid_other_value(name: str, option: cli.OptionFlag, tmp_path: Path) -> tuple[Any, list[str]]:
    """A value of the option other than its default that the options accept, and the argv that gives it."""
    flag = option.flags[0]
    if option.kind is bool:
        return (not option.default), [flag if not option.default else f"--no-{flag[2:]}"]
    choices = cli.FLAG_CHOICES.get(name) or getattr(option.kind, "__args__", None)
    if choices:
        tries: list[Any] = list(choices)
    elif option.kind is Path:
        tries = [tmp_path / "cache.sqlite"]
    elif option.kind is str:
        tries = ["http://127.0.0.1:9/v1" if name.endswith("_url") else "reader"]
    elif option.kind is int:
        tries = [(option.default or 0) + 1, 2]
    else:
        base = option.default or 0.0
        tries = [base / 2, base + (1 - base) / 2, 0.25, base + 1]
    for value in tries:
        if value == option.default:
            continue
        extra = ["--cache-path", str(tmp_path / "c.sqlite")] if name == "cache_mode" else []
        try:
            Options.build({name: value, **({"cache_path": tmp_path / "c.sqlite"} if extra else {})})
        except ConfigurationError:
            continue
        return value, [flag, str(value), *extra]
    raise AssertionError(f"no valid value other than the default for {name}")


@pytest.mark.parametrize("name", sorted(FLAGS))
def test_each_option_reaches_the_engine(name, shop_url, tmp_path):
    value, argv = valid_other_value(name, FLAGS[name], tmp_path)
    options = engine_options(parse(shop_url, QUESTION, *argv))
    received = getattr(options.llm, SETTING[name]) if name in SETTING else getattr(options, name)
    assert received == value
    given = {name: value, **({"cache_path": tmp_path / "c.sqlite"} if name == "cache_mode" else {})}
    assert options == Options.build(given)  # and nothing else changed


def test_no_flag_leaves_the_defaults_and_the_environment(shop_url, monkeypatch):
    monkeypatch.setenv("VERIFIEDSQL_LOCAL_MODEL", "0.5b")
    assert engine_options(parse(shop_url, QUESTION)) == Options.build({})
    assert engine_options(parse(shop_url, QUESTION)).llm.local_model == "0.5b"


def test_the_short_flags_of_before_still_work(shop_url, tmp_path):
    options = engine_options(parse(shop_url, QUESTION, "--model", "0.5b", "--cache", str(tmp_path / "c.sqlite"),
                                   "--scope-check", "--candidates", "3"))
    assert options.llm.local_model == "0.5b" and options.scope_check and options.candidates == 3
    assert options.cache_mode == "readwrite" and options.cache_path == tmp_path / "c.sqlite"
    with pytest.raises(SystemExit):
        parse(shop_url, QUESTION, "--model", "7b")


# ------------------------------------------------------------------------------------------ asking


def test_ask_answers_through_create_engine(shop_url, model, monkeypatch, capsys):
    calls: list[dict[str, Any]] = []
    real = verifiedsql.engine.create_engine

    def spy(url, **kwargs):
        calls.append(kwargs)
        return real(url, **kwargs)

    monkeypatch.setattr(verifiedsql.engine, "create_engine", spy)
    assert cli.main(["ask", shop_url, QUESTION, "--candidates", "2", "--dpc"]) == 0
    (kwargs,) = calls
    assert kwargs["candidates"] == 2 and kwargs["dpc"] is True and kwargs["llm"].inner is model["model"]
    assert model["options"][0] == Options.build({"candidates": 2, "dpc": True})
    out, err = capsys.readouterr()
    rows = brazil(shop_url)
    assert rows[0][0] in out and f"({len(rows)} rows)" in out and "confidence: " in out
    assert "model call 1: generate" in err and "answered" in err  # progress on stderr


def test_quiet_leaves_stderr_empty(shop_url, model, capsys):
    assert cli.main(["ask", shop_url, QUESTION, "--candidates", "1", "--quiet"]) == 0
    assert capsys.readouterr().err == ""


def readme_json_keys() -> list[str]:
    """The top-level keys of the ``--json`` example on the command-line page, in order."""
    block = re.search(r"```json\n(\{.*?)```", (ROOT / "docs" / "usage" / "cli.md").read_text(), re.DOTALL)
    assert block, "docs/usage/cli.md has no --json example"
    return re.findall(r'^  "(\w+)":', block.group(1), re.MULTILINE)


def ask_json(*argv: str) -> tuple[int, dict[str, Any]]:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = cli.main(["ask", *argv, "--json", "--quiet"])
    return status, json.loads(out.getvalue())


def test_json_is_the_documented_object(shop_url, model):
    status, payload = ask_json(shop_url, QUESTION, "--candidates", "2")
    assert status == 0 and list(payload) == readme_json_keys()
    assert payload["status"] == "answered" and payload["question"] == QUESTION and payload["error"] is None
    assert payload["sql"] == BRAZIL and payload["columns"] == ["name"]
    assert payload["rows"] == brazil(shop_url) and len(payload["rows"]) > 1
    assert payload["confidence"] == payload["report"]["confidence"] in ("probable", "verified")
    assert payload["truncated"] is False
    assert payload["report"]["sql"] == BRAZIL and len(payload["report"]["candidates"]) == 2


def test_require_below_the_tier_exits_3_with_the_best_answer(shop_url, model, capsys):
    model["sql"] = {0: BRAZIL, 1: "SELECT name FROM customers ORDER BY name"}  # a split vote
    assert cli.main(["ask", shop_url, QUESTION, "--candidates", "2", "--require", "verified"]) == 3
    out, err = capsys.readouterr()
    assert "UnverifiedAnswer" not in err and "error:" in err and "confidence:" in out and "row" in out
    status, payload = ask_json(shop_url, QUESTION, "--candidates", "2", "--require", "verified")
    assert status == 3 and payload["status"] == "unverified" and payload["rows"]
    assert payload["error"]["type"] == "UnverifiedAnswerError" and payload["confidence"] != "verified"


def test_no_data_exits_4_and_no_answer_2(shop_url, model):
    model["sql"] = "SELECT 'Bonjour' AS greeting"
    status, payload = ask_json(shop_url, "How do you say hello in French?", "--candidates", "1")
    assert status == 4 and payload["status"] == "no_data" and payload["error"]["type"] == "NoDataError"
    assert payload["report"]["candidates"] and payload["rows"] == []
    model["sql"] = "SELECT name FROM customers QUALIFY id > 1"
    status, payload = ask_json(shop_url, QUESTION, "--candidates", "1", "--max-refinements", "0")
    assert status == 2 and payload["status"] == "no_answer" and payload["error"]["type"] == "NoAnswerError"


def test_errors_before_the_question_are_json_too(tmp_path, shop_url, model):
    status, payload = ask_json(f"sqlite:///{tmp_path / 'missing.db'}", QUESTION)
    assert status == 2 and payload["status"] == "error" and payload["report"] is None
    assert "no SQLite database" in payload["error"]["message"] and not (tmp_path / "missing.db").exists()
    status, payload = ask_json(shop_url, QUESTION, "--candidates", "0")
    assert status == 2 and payload["error"]["type"] == "ConfigurationError" and model["options"] == []


def test_html_writes_the_report(shop_url, model, tmp_path):
    page = tmp_path / "report.html"
    assert cli.main(["ask", shop_url, QUESTION, "--candidates", "1", "--html", str(page), "--quiet"]) == 0
    text = page.read_text(encoding="utf-8")
    assert text.lstrip().lower().startswith("<!doctype html") and "customers" in text
