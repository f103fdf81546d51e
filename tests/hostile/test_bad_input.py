"""Bad input through both public APIs (``ask()`` on an engine, and the DB-API wrapper): empty, huge, control
characters, invalid UTF-8, SQL where a question is expected, other languages; and a PostgreSQL server that
goes away in the middle of a question. Every case ends in an answer or a typed error, and the connection
still runs plain SQL afterwards."""

from __future__ import annotations

import sqlite3
import unicodedata
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from backends import load_shop
from fake_openai import FakeServer, Reply, completion
from fakes import ScriptedChatModel, fenced
from pg_server import PostgresServer, skip_without_postgres

import verifiedsql
import verifiedsql.dbapi
from verifiedsql.errors import QuestionError, VerifiedSQLError
from verifiedsql.llm.base import ChatModel, ChatRequest
from verifiedsql.report import VerificationReport

COUNT_SQL = "SELECT COUNT(*) FROM customers"
BRAZIL_SQL = "SELECT COUNT(*) FROM customers WHERE country = 'Brazil'"
APIS = ("engine", "dbapi")
OPTIONS: dict[str, Any] = {"candidates": 1, "max_refinements": 1}


@pytest.fixture(scope="module")
def shop_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("bad-input") / "shop.sqlite"
    load_shop(sa.create_engine(f"sqlite:///{path}")).dispose()
    return path


class Front:
    """One public API over the shop, on one connection: ``ask`` a question (or any text the DB-API is handed),
    ``count`` customers with plain SQL."""

    def __init__(self, api: str, path: Path, llm: ChatModel | None = None, **options: Any) -> None:
        self.api = api
        settings = {**OPTIONS, **options}
        if api == "engine":
            self.engine = verifiedsql.create_engine(f"sqlite:///{path}", llm=llm, **settings)
            self.conn: Any = self.engine.connect()
        else:
            self.conn = verifiedsql.dbapi.connect(sqlite3.connect(path), llm=llm, **settings)

    def ask(self, text: Any, mode: str = "auto") -> tuple[list[tuple[Any, ...]], VerificationReport | None]:
        if self.api == "engine":
            result = self.conn.execute(verifiedsql.ask(text))
            return [tuple(row) for row in result.all()], result.verification
        cursor = self.conn.cursor()
        cursor.execute(text, mode=mode)
        return [tuple(row) for row in cursor.fetchall()], cursor.verification

    def count(self) -> int:
        if self.api == "engine":
            return self.conn.execute(sa.text(COUNT_SQL)).scalar()
        cursor = self.conn.cursor()
        cursor.execute(COUNT_SQL)
        return cursor.fetchone()[0]

    def close(self) -> None:
        self.conn.close()


@pytest.fixture
def model() -> ScriptedChatModel:
    return ScriptedChatModel(lambda request: fenced(BRAZIL_SQL))


@pytest.fixture(params=APIS)
def front(request: pytest.FixtureRequest, shop_path: Path, model: ScriptedChatModel) -> Iterator[Front]:
    """The shop behind one API, with a scripted model; every test ends by running plain SQL on it."""
    shop = Front(request.param, shop_path, model)
    yield shop
    assert shop.count() == 10
    shop.close()


def user_turn(request: ChatRequest) -> str:
    return request.messages[-1]["content"]


# ------------------------------------------------------------------------------------------ refused


@pytest.mark.parametrize("text", ["", "   ", "\n\t \r\n"], ids=["empty", "spaces", "whitespace"])
def test_empty_questions_are_refused(front: Front, model: ScriptedChatModel, text: str) -> None:
    with pytest.raises(QuestionError, match="empty"):
        front.ask(text)
    assert not model.requests


def test_control_characters_alone_are_an_empty_question(shop_path: Path, model: ScriptedChatModel) -> None:
    front = Front("engine", shop_path, model)
    with pytest.raises(QuestionError, match="empty"):
        front.ask("\x00\x07\x1b\u200b")
    assert front.count() == 10 and not model.requests


def test_control_characters_alone_are_a_question_for_the_dbapi(shop_path: Path, model: ScriptedChatModel) -> None:
    front = Front("dbapi", shop_path, model)
    with pytest.raises(QuestionError, match="empty"):
        front.ask("\x00\x07\x1b\u200b")
    assert front.count() == 10 and not model.requests


def test_a_100_kb_question_is_refused_before_the_model(front: Front, model: ScriptedChatModel) -> None:
    question = ("How many customers ordered something last year, and what did they order? " * 1_400)[:100_000]
    with pytest.raises(QuestionError, match="max_question_chars"):
        front.ask(question)
    assert not model.requests


def test_a_100_kb_question_within_a_raised_limit_reaches_the_model(shop_path: Path, model: ScriptedChatModel) -> None:
    question = ("How many customers are from Brazil? " * 3_000)[:100_000]
    front = Front("engine", shop_path, model, max_question_chars=200_000)
    assert front.ask(question)[0] == [(2,)]
    assert question.strip() in user_turn(model.requests[0]) and front.count() == 10


@pytest.mark.parametrize("text", [b"How many \xff\xfe customers?", b"\xc3\x28", b"Kunden aus Brasilien? \xe4"],
                         ids=["ff-fe", "bad-continuation", "latin-1"])
def test_invalid_utf8_is_refused(front: Front, model: ScriptedChatModel, text: bytes) -> None:
    with pytest.raises(QuestionError, match="UTF-8"):
        front.ask(text)
    assert not model.requests


def test_valid_utf8_bytes_are_a_question(front: Front, model: ScriptedChatModel) -> None:
    rows, report = front.ask("Wie viele Kunden kommen aus Brasilien? Grüße".encode())
    assert rows == [(2,)] and report is not None and report.question.endswith("Grüße")


@pytest.mark.parametrize("text", [None, 42, ["How many customers?"]], ids=["none", "int", "list"])
def test_non_text_is_refused(front: Front, model: ScriptedChatModel, text: Any) -> None:
    with pytest.raises(QuestionError, match="text"):
        front.ask(text)
    assert not model.requests


# ------------------------------------------------------------------------------ odd, but answerable


def test_control_characters_are_dropped(front: Front, model: ScriptedChatModel) -> None:
    rows, report = front.ask("How many\x00 customers\x1b[31m are from\x07 Brazil?\u200b\u202e")
    assert rows == [(2,)] and report is not None
    sent = user_turn(model.requests[0])
    assert "Brazil?" in sent
    assert not [ch for ch in sent if ch not in "\n\t" and unicodedata.category(ch)[0] == "C"]


def test_sql_through_the_dbapi_runs_unchanged_without_the_model(shop_path: Path, model: ScriptedChatModel) -> None:
    front = Front("dbapi", shop_path, model)
    for sql in (COUNT_SQL, f"  {COUNT_SQL};  ", "select count(*) from customers -- how many are there?"):
        rows, report = front.ask(sql)
        assert rows == [(10,)] and report is None
    assert not model.requests


def test_mode_question_reads_sql_as_a_question(shop_path: Path, model: ScriptedChatModel) -> None:
    front = Front("dbapi", shop_path, model)
    rows, report = front.ask(COUNT_SQL, mode="question")
    assert rows == [(2,)] and report is not None and report.sql == BRAZIL_SQL
    assert user_turn(model.requests[0]).endswith(f"Question: {COUNT_SQL}")
    assert front.count() == 10


def test_ask_reads_sql_as_a_question(shop_path: Path, model: ScriptedChatModel) -> None:
    front = Front("engine", shop_path, model)
    rows, report = front.ask(COUNT_SQL)
    assert rows == [(2,)] and report is not None and len(model.requests) == 1


LANGUAGES = {
    "german": "Wie viele Kunden kommen aus Brasilien?",
    "chinese": "有多少客户来自巴西？",
    "japanese": "ブラジルの顧客は何人いますか？",
    "russian": "Сколько клиентов из Бразилии?",
    "arabic": "كم عدد العملاء من البرازيل؟",
    "french-emoji": "Combien de clients viennent du Brésil ? 🇧🇷",
}


@pytest.mark.parametrize("api, language", [
    (api, language) for api in APIS for language in LANGUAGES
])
def test_questions_in_other_languages_are_answered(shop_path: Path, api: str, language: str) -> None:
    server = FakeServer()
    server.script = [Reply(body=completion(fenced(BRAZIL_SQL)))]
    front = Front(api, shop_path, llm_base_url=server.url, llm_api_key="x", llm_max_retries=0)
    try:
        rows, report = front.ask(LANGUAGES[language])
        assert rows == [(2,)] and report is not None and report.question == LANGUAGES[language]
        assert server.requests[0]["messages"][-1]["content"].endswith(f"Question: {LANGUAGES[language]}")
        assert front.count() == 10
    finally:
        front.close()
        server.httpd.shutdown()
        server.httpd.server_close()


# ---------------------------------------------------------------------- a database that goes away

@pytest.fixture(scope="module")
def throwaway_pg() -> Iterator[PostgresServer]:
    """A server of this module's own (never the session's), which the tests stop and start."""
    skip_without_postgres()
    server = PostgresServer("verifiedsql-pg-down-")
    try:
        server.start()
        load_shop(sa.create_engine(server.url)).dispose()
        yield server
    finally:
        server.remove()


def stopping_model(server: PostgresServer) -> tuple[ScriptedChatModel, Callable[[], None]]:
    """A model that answers ``COUNT_SQL``, and a trigger that makes its next answer stop the server first."""
    armed: list[bool] = []

    def script(request: ChatRequest) -> str:
        if armed:
            armed.clear()
            server.stop()
        return fenced(COUNT_SQL)

    return ScriptedChatModel(script), lambda: armed.append(True)


def asked(engine: sa.Engine) -> list[tuple[Any, ...]] | Exception:
    """The answer's rows, or the error the question raised."""
    try:
        with engine.connect() as conn:
            return [tuple(row) for row in conn.execute(verifiedsql.ask("How many customers are there?")).all()]
    except Exception as error:  # noqa: BLE001 - which errors come out is what the test checks
        return error


@pytest.mark.postgres
@pytest.mark.parametrize("pre_ping", [False, True], ids=["pool", "pool-pre-ping"])
def test_postgres_stopped_mid_question(throwaway_pg: PostgresServer, pre_ping: bool) -> None:
    model, stop_during_next_answer = stopping_model(throwaway_pg)
    engine = verifiedsql.create_engine(throwaway_pg.url, llm=model, pool_pre_ping=pre_ping, **OPTIONS)
    assert asked(engine) == [(10,)]  # the schema is reflected and cached while the server is up
    stop_during_next_answer()
    try:
        during = asked(engine)
    finally:
        throwaway_pg.start()
    assert isinstance(during, Exception)
    # Back up: the same engine answers again. Without pre-ping, one stale pooled connection may fail once.
    after = [asked(engine) for _ in range(2)]
    assert [(10,)] in (after if not pre_ping else after[:1])
    with engine.connect() as conn:
        assert conn.execute(sa.text(COUNT_SQL)).scalar() == 10
    engine.dispose()
    for error in (during, *after):
        if isinstance(error, Exception) and not isinstance(error, VerifiedSQLError):
            raise error


# -------------------------------------------------------- issue 33: a file that is not a database, NaN


@pytest.mark.parametrize("api", APIS)
def test_a_file_that_is_not_a_database_is_a_typed_error(api: str, tmp_path: Path, model: ScriptedChatModel) -> None:
    """Finding 12: reading the tables of a file that is not a database ends in ``QueryError`` (through the
    DB-API a ``verifiedsql.dbapi.Error``), saying what to check; never a bare driver or SQLAlchemy error."""
    path = tmp_path / "notes.sqlite"
    path.write_bytes(b"these are my notes, not a database\n" * 200)
    front = Front(api, path, model)
    try:
        with pytest.raises(verifiedsql.errors.QueryError, match="file is not a database") as failed:
            front.ask("How many customers are there?")
        assert isinstance(failed.value, verifiedsql.dbapi.Error) and "check that" in str(failed.value)
        assert not model.requests
    finally:
        front.close()


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")], ids=["nan", "inf", "-inf"])
@pytest.mark.parametrize("option", ["statement_timeout_s", "question_timeout_s", "probe_timeout_s", "llm_timeout_s"])
def test_a_timeout_that_is_not_a_finite_number_is_refused(option: str, value: float, shop_path: Path,
                                                          model: ScriptedChatModel) -> None:
    """Finding 15: NaN passes every ``<= 0`` check; it is a ``ConfigurationError`` through both APIs."""
    with pytest.raises(verifiedsql.errors.ConfigurationError, match=option):
        verifiedsql.create_engine(f"sqlite:///{shop_path}", llm=model, **{option: value})
    with pytest.raises(verifiedsql.errors.ConfigurationError, match=option):
        verifiedsql.dbapi.connect(sqlite3.connect(shop_path), llm=model, **{option: value})
