"""Typed errors, the schema boundary and scrubbed secrets (issue 17, findings 10, 12 and 14).

* Model text nested deeper than the parsers recurse (SQL with 60 or 500 nested parentheses, a VET step
  ``1+1+...+1``, JSON nested thousands deep in a probe or review reply) ends as a dropped candidate or a
  fallback recorded in the report, never a bare ``RecursionError``: on every engine, through both APIs.
* With ``schema=``, SQL reading another schema, another database or a system catalog is refused before it
  runs (statement guard; the engine guard too: PostgreSQL's plan, DuckDB's parse tree), and system relations that hold
  secrets are refused without ``schema=`` as well. An engine error that quotes a stored value reaches
  neither the model nor the report with that value in it.
* Credentials in the model URL and the API key appear in no error, log record, report or cache file.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import Api, HostileModel, Outcome, World, Worlds
from fake_openai import FakeServer, Reply, completion

import verifiedsql
import verifiedsql.dbapi
from verifiedsql import backends
from verifiedsql.config import LLMSettings, Options
from verifiedsql.db.database import Database
from verifiedsql.errors import LLMError, QueryError, UnsafeSQLError

DIALECTS = backends.names()  # every registered engine (verifiedsql/backends/)
QUESTION = "How many orders are there?"
COUNT_SQL = "SELECT COUNT(*) FROM orders"
TOKEN = "tok_9f2c41d7e0secret"  # a value in another schema that must never reach the model or the report


def nested(depth: int) -> str:
    return "SELECT " + "(" * depth + "1" + ")" * depth


# ---------------------------------------------------------------------------------------- recursion


@pytest.mark.parametrize("depth", [60, 500])
@pytest.mark.parametrize("dialect", DIALECTS)
def test_deeply_nested_candidate_is_dropped_with_its_reason(dialect: str, depth: int, worlds: Worlds,
                                                            hostile: HostileModel) -> None:
    world = worlds(dialect)
    hostile.serve(nested(depth))
    for api in world.apis():
        outcome = world.ask(api, QUESTION)
        assert not outcome.answered
        greedy = outcome.report.candidates[0]
        assert greedy.status == "unsafe" and "nests brackets" in (greedy.error or ""), greedy.error
        assert all(p.status == "unsafe" for p in outcome.report.probes)


def test_a_stray_driver_error_is_a_failed_candidate(worlds: Worlds, hostile: HostileModel) -> None:
    """DuckDB computes an interval Python cannot hold; fetching it raises OverflowError in the driver."""
    world = worlds("duckdb")
    hostile.serve("SELECT INTERVAL 100000000 YEAR AS forever", refine=[COUNT_SQL])
    for api in world.apis():
        outcome = world.ask(api, QUESTION)
        greedy = outcome.report.candidates[0]
        assert outcome.answered and greedy.attempts, greedy
        assert "OverflowError" in hostile.prompt_text()


def test_a_result_value_nested_too_deeply_to_load_is_a_failed_candidate(worlds: Worlds,
                                                                        hostile: HostileModel) -> None:
    """psycopg loads a jsonb value with Python's json module, which recurses once per level."""
    world = worlds("postgresql")
    hostile.serve("SELECT CAST(repeat('[', 5000) || repeat(']', 5000) AS jsonb) AS deep", refine=[COUNT_SQL])
    for api in world.apis():
        outcome = world.ask(api, QUESTION)
        greedy = outcome.report.candidates[0]
        assert outcome.answered and outcome.rows == [(25,)] and greedy.attempts, greedy
        assert "nested too deeply" in hostile.prompt_text()


def test_a_stored_value_the_driver_cannot_load_only_loses_its_samples(tmp_path: Path,
                                                                      hostile: HostileModel) -> None:
    """Reflection samples every table; a DuckDB interval too large for Python must not end the question."""
    import duckdb

    path = tmp_path / "forever.duckdb"
    with duckdb.connect(str(path)) as raw:
        raw.execute("CREATE TABLE spans AS SELECT 1 AS id, INTERVAL 100000000 YEAR AS forever")
    hostile.serve("SELECT COUNT(*) FROM spans")
    options = {"llm_base_url": hostile.url, "llm_api_key": "x", "candidates": 1, "probe": False}
    engine = verifiedsql.create_engine(f"duckdb:///{path}", **options)
    with engine.connect() as conn:
        assert conn.execute(verifiedsql.ask("How many spans are there?")).all() == [(1,)]
    engine.dispose()
    with verifiedsql.dbapi.connect(duckdb.connect(str(path)), **options) as connection:
        cursor = connection.cursor()
        cursor.execute("How many spans are there?", mode="question")
        assert cursor.fetchall() == [(1,)]


class Replies:
    """A model for the reply-parsing cases: generation answers ``COUNT_SQL``; the reply of ``purpose`` (told
    apart by its system prompt) is ``text``."""

    MARKERS = {
        "probe": '"probe_sql"',
        "professions": "You assemble a panel",
        "vet-step": "step by step with pandas",
    }

    def __init__(self) -> None:
        self.server = FakeServer()
        self.server.responder = self.reply
        self.texts: dict[str, str] = {}

    def reply(self, request: dict[str, Any]) -> Reply:
        system = request["messages"][0]["content"]
        for purpose, text in self.texts.items():
            if self.MARKERS[purpose] in system:
                return Reply(body=completion(text))
        if system.startswith("You are a "):
            return Reply(body=completion("VERDICT: APPROVE"))
        if "YES or NO" in request["messages"][-1]["content"]:
            return Reply(body=completion("YES"))
        return Reply(body=completion(f"```sql\n{COUNT_SQL}\n```"))


@pytest.fixture(scope="module")
def replies() -> Iterator[Replies]:
    model = Replies()
    yield model
    model.server.close()


def _ask_each_api(world: World, replies: Replies, **options: Any) -> Iterator[Outcome]:
    front = world.variant(replies.server.url, **{"probe": False, "verify": False, **options})
    try:
        for api in front.apis():
            yield front.ask(api, QUESTION)
    finally:
        front.close()


DEEP_JSON = "[" * 100_000 + "]" * 100_000


def test_deeply_nested_json_in_a_probe_reply_is_an_invalid_probe(worlds: Worlds, replies: Replies) -> None:
    replies.texts = {"probe": '{"action": "probe", "probe_sql": "SELECT 1", "relevant_columns": ' + DEEP_JSON + "}"}
    for outcome in _ask_each_api(worlds("sqlite"), replies, probe=True, max_probes=2):
        assert outcome.answered
        assert [p.status for p in outcome.report.probes] == ["invalid", "invalid"]


def test_deeply_nested_json_in_a_review_reply_falls_back(worlds: Worlds, replies: Replies) -> None:
    replies.texts = {"professions": DEEP_JSON}
    for outcome in _ask_each_api(worlds("sqlite"), replies, review=True, review_rounds=1):
        assert outcome.answered
        assert outcome.report.review is not None and outcome.report.review.professions_source == "fallback"


def test_a_vet_step_nested_too_deeply_is_turned_down(worlds: Worlds, replies: Replies) -> None:
    from verifiedsql.guard.sandbox import Sandbox

    if not Sandbox().available():
        pytest.skip("bubblewrap cannot run here, so VET does not run model code")
    replies.texts = {"vet-step": "```python\nresult = " + "+".join(["1"] * 5_000) + "\n```"}
    for outcome in _ask_each_api(worlds("sqlite"), replies, vet=True, vet_steps=1, vet_step_repairs=1):
        assert outcome.answered
        trace = outcome.report.trace
        assert trace is not None and trace.steps and trace.steps[0].status != "accepted"
        assert "SyntaxError" in trace.steps[0].problems[0]


# -------------------------------------------------------------------------------------- schema=


@pytest.fixture(scope="module")
def other_schema(worlds: Worlds) -> dict[str, str]:
    """A schema ``other`` beside the shop on DuckDB and PostgreSQL, holding ``secrets(token)``; the
    catalog name each engine qualifies it with."""
    catalogs = {}
    for dialect in ("duckdb", "postgresql", "snowflake"):
        world = worlds(dialect)
        with world.engine.begin() as conn:
            conn.exec_driver_sql("CREATE SCHEMA IF NOT EXISTS other")
            conn.exec_driver_sql("CREATE TABLE IF NOT EXISTS other.secrets (id INTEGER, token TEXT)")
            conn.exec_driver_sql(f"INSERT INTO other.secrets VALUES (1, '{TOKEN}')")
            catalogs[dialect] = conn.exec_driver_sql("SELECT current_database()").scalar()
        if dialect == "postgresql":
            with world.engine.begin() as conn:
                conn.exec_driver_sql("DROP ROLE IF EXISTS verifiedsql_victim")
                conn.exec_driver_sql("CREATE ROLE verifiedsql_victim LOGIN PASSWORD 'victim-password'")
    return catalogs


def _leaks(outcome: Outcome, hostile: HostileModel, *secrets: str) -> list[str]:
    shown = hostile.prompt_text() + json.dumps(outcome.report.to_dict(), default=str)
    return [secret for secret in secrets if secret in shown]


DEFAULT_SCHEMA = {"duckdb": "main", "postgresql": "public", "snowflake": "schema1"}


def _refused_outside_schema(world: World, hostile: HostileModel, sql: str) -> None:
    """The model's ``sql`` is refused as outside the schema on every API, and no secret reaches the model."""
    try:
        hostile.serve(sql)
        for api in world.apis():
            outcome = world.ask(api, QUESTION)
            greedy = outcome.report.candidates[0]
            assert greedy.status == "unsafe" and "outside schema" in (greedy.error or ""), greedy.error
            assert not _leaks(outcome, hostile, TOKEN)
    finally:
        world.close()


@pytest.mark.parametrize("dialect", ["duckdb", "postgresql", "snowflake"])
@pytest.mark.parametrize("reference", ["other.secrets", "{catalog}.other.secrets", "information_schema.tables"])
def test_schema_is_a_boundary(dialect: str, reference: str, worlds: Worlds, hostile: HostileModel,
                              other_schema: dict[str, str]) -> None:
    table = reference.format(catalog=other_schema[dialect])
    column = "token" if "secrets" in table else "table_name"
    world = worlds(dialect).variant(hostile.url, schema=DEFAULT_SCHEMA[dialect])
    _refused_outside_schema(world, hostile, f"SELECT CAST({column} AS INTEGER) FROM {table}")


def test_the_schemas_own_tables_still_answer(worlds: Worlds, hostile: HostileModel) -> None:
    world = worlds("postgresql").variant(hostile.url, schema="public")
    try:
        hostile.serve("WITH o AS (SELECT * FROM public.orders) SELECT COUNT(*) FROM o JOIN customers c "
                      "ON c.id = o.customer_id")
        for api in world.apis():
            assert world.ask(api, QUESTION).rows == [(25,)]
    finally:
        world.close()


@pytest.mark.parametrize("sql", [
    "SELECT rolname, rolpassword FROM pg_authid",
    "SELECT CAST(rolpassword AS INTEGER) FROM pg_catalog.pg_authid WHERE rolname = 'verifiedsql_victim'",
    "SELECT usename, passwd FROM pg_shadow",
    "SELECT query FROM pg_stat_activity",
])
def test_secret_catalogs_are_refused_without_schema(sql: str, worlds: Worlds, hostile: HostileModel,
                                                    other_schema: dict[str, str]) -> None:
    world = worlds("postgresql")
    hostile.serve(sql)
    for api in world.apis():
        outcome = world.ask(api, QUESTION)
        greedy = outcome.report.candidates[0]
        assert greedy.status == "unsafe", greedy
        assert not _leaks(outcome, hostile, "SCRAM-SHA-256")


@pytest.fixture(scope="module")
def case_schemas(worlds: Worlds) -> World:
    """Issue 33, finding 10: PostgreSQL schemas ``s1`` and ``"S1"`` (two schemas: a quoted name keeps its case),
    the second holding a secret."""
    world = worlds("postgresql")
    with world.engine.begin() as conn:
        conn.exec_driver_sql('CREATE SCHEMA IF NOT EXISTS s1')
        conn.exec_driver_sql('CREATE TABLE IF NOT EXISTS s1.orders AS SELECT * FROM public.orders')
        conn.exec_driver_sql('CREATE SCHEMA IF NOT EXISTS "S1"')
        conn.exec_driver_sql('CREATE TABLE IF NOT EXISTS "S1".secrets (id INTEGER, token TEXT)')
        conn.exec_driver_sql(f"INSERT INTO \"S1\".secrets VALUES (1, '{TOKEN}')")
    return world


CASE_ESCAPE = 'SELECT CAST(token AS INTEGER) AS n FROM "S1".secrets'


def test_a_schema_of_another_case_is_outside_the_boundary_for_each_layer(case_schemas: World) -> None:
    database = Database(case_schemas.engine, Options(llm=LLMSettings(), schema="s1"))
    with pytest.raises(UnsafeSQLError) as statement:
        database._check(CASE_ESCAPE)  # the statement guard and its schema boundary, alone
    assert statement.value.layer == "statement" and "outside schema" in str(statement.value)
    with pytest.raises(UnsafeSQLError) as engine:
        database.run_query(CASE_ESCAPE, guard=False)
    assert engine.value.layer == "engine"
    assert database.run_query("SELECT COUNT(*) FROM S1.orders").rows == ((25,),)  # unquoted: folds to s1


def test_a_schema_of_another_case_never_reaches_the_model(case_schemas: World, hostile: HostileModel) -> None:
    world = case_schemas.variant(hostile.url, schema="s1")
    _refused_outside_schema(world, hostile, CASE_ESCAPE)


def test_the_postgresql_engine_guard_holds_the_boundary_alone(worlds: Worlds, other_schema: dict[str, str]) -> None:
    engine = worlds("postgresql").engine
    bounded = Database(engine, Options(llm=LLMSettings(), schema="public"))
    unbounded = Database(engine, Options(llm=LLMSettings()))
    for sql in ("SELECT token FROM other.secrets", "SELECT * FROM information_schema.tables"):
        with pytest.raises(UnsafeSQLError) as refused:
            bounded.run_query(sql, guard=False)
        assert refused.value.layer == "engine"
    with pytest.raises(UnsafeSQLError) as refused:
        unbounded.run_query("SELECT rolname, rolpassword FROM pg_authid", guard=False)
    assert refused.value.layer == "engine"
    assert unbounded.run_query("SELECT rolname FROM pg_roles WHERE rolname = 'verifiedsql_victim'",
                               guard=False).rows == (("verifiedsql_victim",),)


def test_the_duckdb_engine_guard_holds_the_boundary_alone(worlds: Worlds, other_schema: dict[str, str]) -> None:
    bounded = Database(worlds("duckdb").engine, Options(llm=LLMSettings(), schema="main"))
    for sql in ("SELECT token FROM other.secrets", f"SELECT token FROM {other_schema['duckdb']}.other.secrets",
                "SELECT * FROM information_schema.tables", "SELECT * FROM system.main.duckdb_tables"):
        with pytest.raises(UnsafeSQLError) as refused:
            bounded.run_query(sql, guard=False)
        assert refused.value.layer == "engine", sql
    assert bounded.run_query("SELECT COUNT(*) FROM main.orders", guard=False).rows == ((25,),)


@pytest.mark.parametrize("dialect", ["duckdb", "postgresql", "snowflake"])
def test_engine_errors_never_quote_stored_values(dialect: str, worlds: Worlds, hostile: HostileModel,
                                                 other_schema: dict[str, str]) -> None:
    world = worlds(dialect)
    hostile.serve("SELECT CAST(token AS INTEGER) FROM other.secrets")
    for api in world.apis():
        outcome = world.ask(api, QUESTION)
        greedy = outcome.report.candidates[0]
        assert greedy.status == "error" and "<value>" in (greedy.error or ""), greedy.error
        assert not _leaks(outcome, hostile, TOKEN)


PHRASE = "phrase 7c1d secretword"  # a stored value with spaces: no tsquery, jsonpath or type name parses it
UNRECOGNISED = {  # issue 33, finding 8: engine errors that quote a stored value the scrubber did not know
    "postgresql": [
        "SELECT timezone(note, now()) FROM other.notes",
        "SELECT date_trunc(note, now()) FROM other.notes",
        "SELECT encode('x'::bytea, note) FROM other.notes",
        "SELECT convert_to('x', note) FROM other.notes",
        "SELECT pg_size_bytes(note) FROM other.notes",
        "SELECT note::tsquery FROM other.notes",  # SQLSTATE 42601, raised while the query runs
        "SELECT note::jsonpath FROM other.notes",
        "SELECT note::regtype FROM other.notes",  # 42601 with a CONTEXT line naming the whole value
        "SELECT replace(note, ' ', '')::regclass FROM other.notes",  # relation "..." does not exist
    ],
    "duckdb": ["SELECT timezone(note, now()) FROM other.notes", "SELECT date_trunc(note, now()) FROM other.notes"],
}
CASES = [(dialect, sql) for dialect, sqls in UNRECOGNISED.items() for sql in sqls]


@pytest.fixture(scope="module")
def notes(worlds: Worlds, other_schema: dict[str, str]) -> None:
    for dialect in UNRECOGNISED:
        with worlds(dialect).engine.begin() as conn:
            conn.exec_driver_sql("CREATE TABLE IF NOT EXISTS other.notes (note TEXT)")
            conn.exec_driver_sql(f"INSERT INTO other.notes VALUES ('{PHRASE}')")


@pytest.mark.parametrize(("dialect", "sql"), CASES, ids=[f"{d}-{sql.split()[1][:24]}" for d, sql in CASES])
def test_unrecognised_engine_errors_never_quote_stored_values(dialect: str, sql: str, worlds: Worlds,
                                                              hostile: HostileModel, notes: None) -> None:
    world = worlds(dialect)
    hostile.serve(sql, refine=[COUNT_SQL])
    for api in world.apis():
        outcome = world.ask(api, QUESTION)
        first = outcome.report.candidates[0]
        assert first.attempts and first.attempts[0] == sql, first  # it failed, and was refined
        assert "<value>" in hostile.prompt_text(), hostile.prompt_text()[-600:]
        assert not _leaks(outcome, hostile, "7c1d", "secretword"), hostile.prompt_text()[-600:]
        assert "CONTEXT" not in hostile.prompt_text()


def test_identifier_errors_keep_their_bytes() -> None:
    """What SQLite's recorded runs showed the model must not change (the replay caches stay valid)."""
    from verifiedsql.guard.redact import engine_error

    for message in ('no such column: T1.name', 'near "create": syntax error', 'no such table: Degrees',
                    'ambiguous column name: Code', 'misuse of aggregate: COUNT()',
                    'column "x" does not exist\nLINE 1: SELECT x FROM t\n               ^'):
        assert engine_error(message) == message


# --------------------------------------------------------------------------------------- secrets

USER, PASSWORD, API_KEY = "alice", "hunter2-url-password", "sk-madeup0123456789abcdefKEY"
SECRETS = (PASSWORD, API_KEY)


def with_credentials(url: str) -> str:
    return url.replace("http://", f"http://{USER}:{PASSWORD}@")


def _clean(*texts: str) -> None:
    for text in texts:
        for secret in SECRETS:
            assert secret not in text, text


@pytest.fixture()
def logs(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.DEBUG)
    return caplog


def _log_text(caplog: pytest.LogCaptureFixture) -> str:
    return "\n".join(f"{r.name} {r.getMessage()}" for r in caplog.records)


@pytest.mark.parametrize("api", ["engine", "dbapi"])
@pytest.mark.parametrize("fault", ["refused", "401", "500"])
def test_credentials_never_appear_in_errors_or_logs(api: Api, fault: str, worlds: Worlds,
                                                    logs: pytest.LogCaptureFixture) -> None:
    server = FakeServer()
    body = {"error": {"message": f"Incorrect API key provided: {API_KEY}. Authorization: Bearer {API_KEY}"}}
    server.script = [Reply(status=int(fault) if fault != "refused" else 200, body=body)]
    url = server.url
    if fault == "refused":
        server.close()  # nothing listens there any more: connection refused
    world = worlds("sqlite").variant(with_credentials(url), llm_api_key=API_KEY, probe=False)
    try:
        with pytest.raises(LLMError) as failed:
            world.ask(api, QUESTION)
        assert isinstance(failed.value, verifiedsql.dbapi.Error)
        assert "<redacted>@127.0.0.1" in str(failed.value)
        _clean(str(failed.value), repr(failed.value), _log_text(logs), repr(world.engine))
    finally:
        world.close()
        if fault != "refused":
            server.close()


def test_credentials_never_reach_the_report_or_the_cache(worlds: Worlds, tmp_path: Path,
                                                         logs: pytest.LogCaptureFixture) -> None:
    """The probe call fails (its error becomes a note in the report); generation answers and is recorded."""
    server = FakeServer()
    server.responder = lambda request: (
        Reply(status=500, body={"error": {"message": f"upstream said: bad key {API_KEY}"}})
        if '"probe_sql"' in request["messages"][0]["content"] else Reply(body=completion(f"```sql\n{COUNT_SQL}\n```"))
    )
    cache = tmp_path / "cache.sqlite"
    world = worlds("sqlite").variant(with_credentials(server.url), llm_api_key=API_KEY, cache=cache)
    try:
        for api in world.apis():
            outcome = world.ask(api, QUESTION)
            assert outcome.answered and any("could not be reached" in note for note in outcome.report.notes)
            _clean(json.dumps(outcome.report.to_dict(), default=str), repr(outcome.report))
        _clean(_log_text(logs))
        world.close()
        stored = b"".join(p.read_bytes() for p in tmp_path.iterdir())
        for secret in SECRETS:
            assert secret.encode() not in stored
        _clean(repr(Options(llm=LLMSettings(base_url=with_credentials(server.url), api_key=API_KEY))))
    finally:
        server.close()


def test_a_stray_error_while_running_is_a_query_error(worlds: Worlds) -> None:
    """The backstop under every stage: an untyped error from the driver becomes ``QueryError``."""
    database = Database(worlds("duckdb").engine, Options(llm=LLMSettings()))
    with pytest.raises(QueryError, match="OverflowError"):
        database.run_query("SELECT INTERVAL 100000000 YEAR")
    with pytest.raises(UnsafeSQLError, match="nests brackets"):
        database.run_query(nested(60))
