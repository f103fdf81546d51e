"""The ``verifiedsql`` loggers (``verifiedsql/logs.py``), on a real SQLite database with the scripted model:
each stage's start and end, each model call and each query at DEBUG, exactly one INFO line per question,
nothing else at INFO or above, no credential in any message, and no handler added by the library."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest
from fakes import ScriptedChatModel, ask, by_seed, fenced

from verifiedsql import logs
from verifiedsql.errors import LLMError, NoAnswerError

SHOP = Path(__file__).parents[1] / "examples" / "shop.db"
BRAZIL = "SELECT name FROM customers WHERE country = 'Brazil' ORDER BY name"
QUESTION = "Which customers are from Brazil?"


@pytest.fixture
def shop_url(tmp_path: Path) -> str:
    path = tmp_path / "shop.db"
    shutil.copy(SHOP, path)
    return f"sqlite:///{path}"


def records(caplog: pytest.LogCaptureFixture, name: str) -> list[logging.LogRecord]:
    return [record for record in caplog.records if record.name == name]


def test_names_are_defined_once() -> None:
    assert (logs.ROOT, logs.QUESTION, logs.LLM, logs.SQL) == (
        "verifiedsql", "verifiedsql.question", "verifiedsql.llm", "verifiedsql.sql")
    assert logs.stage_logger("generate").name == "verifiedsql.stages.generate"
    assert logs.stage_logger("generate").parent is logging.getLogger("verifiedsql.stages")


def test_a_question_logs_its_stages_model_calls_and_queries_at_debug(shop_url, caplog) -> None:
    caplog.set_level(logging.DEBUG, logger="verifiedsql")
    rows, report, model = ask(shop_url, QUESTION, lambda r: fenced(BRAZIL), candidates=3)
    assert rows == [("Ana Souza",), ("Bruno Lima",), ("Carla Dias",)]

    for stage in report.timings:  # context, literals, generate, select: each starts and ends, in order
        lines = [r.getMessage() for r in records(caplog, f"verifiedsql.stages.{stage}")]
        assert len(lines) == 2 and all(r.levelno == logging.DEBUG
                                       for r in records(caplog, f"verifiedsql.stages.{stage}")), lines
        assert lines[0] == f"stage {stage}: start"
        assert lines[1].startswith(f"stage {stage}: end after ") and lines[1].endswith(" s")
    starts = [r.name.rsplit(".", 1)[1] for r in caplog.records if r.getMessage().endswith(": start")]
    assert starts == list(report.timings)

    calls = records(caplog, "verifiedsql.llm")
    assert len(calls) == len(report.llm_calls) == len(model.requests) == 3
    for record in calls:
        assert record.levelno == logging.DEBUG
        assert record.getMessage().startswith("model call generate: scripted, 10 prompt + 5 completion tokens, ")
        assert "cached" not in record.getMessage()

    queries = [r.getMessage() for r in records(caplog, "verifiedsql.sql")]
    assert all(r.levelno == logging.DEBUG for r in records(caplog, "verifiedsql.sql"))
    candidate_runs = [q for q in queries if "(running a candidate query)" in q]
    # three identical candidates share one run (README, Generate); the run is logged with its rows and time
    assert len(candidate_runs) == 1
    assert candidate_runs[0].startswith("query ok, 3 rows, ") and candidate_runs[0].endswith(f": {BRAZIL}")
    assert any("(a literal lookup)" in q for q in queries), queries  # the literal checks' queries too


def test_exactly_one_info_line_per_question_and_nothing_else_at_info(shop_url, caplog) -> None:
    caplog.set_level(logging.DEBUG)  # every logger, not only the library's
    _, report, _ = ask(shop_url, QUESTION, lambda r: fenced(BRAZIL), candidates=3)
    loud = [r for r in caplog.records if r.levelno >= logging.INFO]
    assert [r.name for r in loud] == ["verifiedsql.question"]
    line = loud[0].getMessage()
    assert loud[0].levelno == logging.INFO
    assert line.startswith(f"answered: tier={report.confidence} model_calls=3 tokens=45 seconds=")
    assert f"question={QUESTION!r}" in line and line.endswith(f"sql={BRAZIL}")
    assert "\n" not in line


def test_the_info_line_puts_multi_line_sql_on_one_line(shop_url, caplog) -> None:
    caplog.set_level(logging.INFO, logger="verifiedsql")
    sql = "SELECT name\n  FROM customers\n  WHERE country = 'Brazil'\n  ORDER BY name"
    ask(shop_url, QUESTION, lambda r: fenced(sql), candidates=1)
    (line,) = [r.getMessage() for r in records(caplog, "verifiedsql.question")]
    assert line.endswith(f"sql={BRAZIL}")


def test_failed_queries_are_logged_with_their_status(shop_url, caplog) -> None:
    caplog.set_level(logging.DEBUG, logger="verifiedsql")
    model = ScriptedChatModel(by_seed({0: "DELETE FROM customers"}, refine="SELECT nosuch_column FROM customers"))
    with pytest.raises(NoAnswerError) as caught:  # NoDataError: the column is nowhere in the schema
        ask(shop_url, "delete everyone", model, candidates=1, schema_repair=False)
    queries = [r.getMessage() for r in records(caplog, "verifiedsql.sql")]
    assert any(q.startswith("query unsafe, ") and "DELETE FROM customers" in q and "UnsafeSQLError" in q
               for q in queries), queries
    assert any(q.startswith("query error, ") and "nosuch_column" in q and "QueryError" in q
               for q in queries), queries
    # a question with no answer still has its one INFO line: the error, no tier, no SQL
    (line,) = [r.getMessage() for r in records(caplog, "verifiedsql.question")]
    assert line.startswith(f"{type(caught.value).__name__}: tier=- model_calls=3 tokens=45 ")
    assert line.endswith("sql=-")
    assert "question='delete everyone'" in line


def test_a_failed_model_call_is_logged_without_its_credentials(shop_url, caplog) -> None:
    caplog.set_level(logging.DEBUG, logger="verifiedsql")
    secret = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"
    failing = LLMError(f"the model at https://alice:hunter2hunter2@llm.example/v1 refused key {secret}")
    with pytest.raises(LLMError):
        ask(shop_url, QUESTION, [failing], candidates=1)
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "model call generate: failed after " in text and "LLMError" in text
    assert secret not in text and "hunter2" not in text and "<redacted>" in text


def test_nothing_is_built_when_the_loggers_are_off(shop_url, caplog, monkeypatch) -> None:
    caplog.set_level(logging.WARNING, logger="verifiedsql")

    def never(*args: object) -> str:
        raise AssertionError("a message was built for a level that is off")

    monkeypatch.setattr(logs, "one_line", never)
    monkeypatch.setattr(logs, "query_status", never)
    rows, _, _ = ask(shop_url, QUESTION, lambda r: fenced(BRAZIL), candidates=2)
    assert len(rows) == 3
    assert not [r for r in caplog.records if r.name.startswith("verifiedsql")]


def test_the_library_adds_no_handlers(shop_url) -> None:
    root = logging.getLogger()
    before = list(root.handlers), root.level
    ask(shop_url, QUESTION, lambda r: fenced(BRAZIL), candidates=2)
    assert (list(root.handlers), root.level) == before
    library = logging.getLogger("verifiedsql")
    assert len(library.handlers) <= 1 and all(isinstance(h, logging.NullHandler) for h in library.handlers)
    children = [logging.getLogger(name) for name in logging.root.manager.loggerDict
                if name.startswith("verifiedsql.")]
    assert children and all(not child.handlers and child.propagate for child in children)
