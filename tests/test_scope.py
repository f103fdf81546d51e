"""Questions the data cannot answer (issue 13, item 7): the question set, ``NoDataError`` from the answer
step's rules and from the optional scope check, the CLI's exit status, and ``verifiedsql bench scope``, with
a scripted model on real SQLite."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from pathlib import Path

import pytest
import sqlalchemy as sa
from backends import load_shop
from fakes import ScriptedChatModel, ask, fenced

import verifiedsql
from verifiedsql import backends
from verifiedsql.bench.data import DEFAULT_DATA_DIR
from verifiedsql.bench.scope import KINDS, ScopeConfig, load_questions, run_scope
from verifiedsql.errors import NoAnswerError, NoDataError
from verifiedsql.llm.base import ChatRequest
from verifiedsql.stages.common.failures import error_class, missing_name
from verifiedsql.stages.repair import resembles

ROOT = Path(__file__).resolve().parents[1]
QUESTIONS = ROOT / "benchmarks" / "out_of_scope.json"
OLD_TEXT = "rephrase the question, or use a larger model"

CONSTANT = "SELECT 'Bonjour' AS greeting"
BRAZIL = "SELECT name FROM customers WHERE country = 'Brazil' ORDER BY name"
NO_COLUMN = "SELECT ticket_price FROM orders"
NO_TABLE = "SELECT name FROM sponsors"
SYNTAX = "SELECT name FROM customers QUALIFY id > 1"  # the engine itself rejects it


@pytest.fixture
def shop(tmp_path):
    engine = load_shop(sa.create_engine(f"sqlite:///{tmp_path / 'shop.db'}"))
    yield engine
    engine.dispose()


def scripted(generate: str, scope: str | None = None) -> ScriptedChatModel:
    """Every generation and refinement answers ``generate``; the scope check answers ``scope``."""

    def script(request: ChatRequest) -> str:
        if request.purpose == "scope":
            assert scope is not None, "the scope check was asked, though it should not have been"
            return scope
        return fenced(generate)

    return ScriptedChatModel(script)


# ---------------------------------------------------------------------------------------- the question set


def test_the_question_set_is_well_formed():
    rows = json.loads(QUESTIONS.read_text("utf-8"))
    assert len(rows) >= 48 and all(set(row) == {"id", "db_id", "question", "kind"} for row in rows)
    kinds = Counter(row["kind"] for row in rows)
    assert set(kinds) == set(KINDS) and min(kinds.values()) >= 10, kinds
    assert len({row["id"] for row in rows}) == len(rows)
    assert len({row["question"].strip().lower() for row in rows}) == len(rows), "a question is repeated"
    assert len({row["db_id"] for row in rows}) >= 15, "spread over the dev databases"
    assert len(load_questions(QUESTIONS)) == len(rows)  # the harness reads it
    databases = ROOT / DEFAULT_DATA_DIR / "database"
    if not databases.is_dir():
        pytest.skip(f"no Spider dev data at {databases}")
    assert {row["db_id"] for row in rows} <= {p.name for p in databases.iterdir()}


def test_missing_columns_and_tables_are_missing_from_their_database():
    """A question of kind missing-column or missing-table names a thing its database has no column or table
    for: the words the set uses for it are no table or column name there."""
    tables = ROOT / DEFAULT_DATA_DIR / "tables.json"
    if not tables.exists():
        pytest.skip(f"no Spider dev schemas at {tables}")
    schemas = {s["db_id"]: {n.lower() for n in s["table_names_original"]}
               | {c.lower() for _, c in s["column_names_original"]} for s in json.loads(tables.read_text())}
    absent = {"sponsor", "sponsors", "ticket_price", "departure_time", "currency", "salary", "weight", "price",
              "email", "colour", "color", "breed", "agent", "agents", "coach", "casino", "paintings", "rivers"}
    for row in json.loads(QUESTIONS.read_text("utf-8")):
        assert row["db_id"] in schemas
        if row["kind"] in ("missing-column", "missing-table"):
            assert not {word for word in absent if word in row["question"].lower()} & schemas[row["db_id"]], row


# ------------------------------------------------------------------------------------ the deterministic rules


def test_an_answer_built_from_constants_is_no_data(shop):
    with pytest.raises(NoDataError) as info:
        ask(shop, "How do you say hello in French?", scripted(CONSTANT))
    error = info.value
    assert isinstance(error, NoAnswerError) and error.missing == ()
    assert "holds no data for this question" in str(error) and "reads no table" in str(error)
    assert "customers, orders" in str(error)  # what to ask about instead
    assert "Bonjour" not in str(error)  # nothing the model made is told as a fact
    report = error.report
    assert report.sql == CONSTANT and report.confidence == "unverified"
    assert {e.check: e.verdict for e in report.evidence}["tables"] == "against"
    assert report.reason.startswith("no data")


@pytest.mark.parametrize(("sql", "name"), [(NO_COLUMN, "ticket_price"), (NO_TABLE, "sponsors")])
def test_every_candidate_failing_on_a_missing_name_is_no_data(shop, sql, name):
    with pytest.raises(NoDataError) as info:
        ask(shop, "What did each ticket cost?", scripted(sql))
    error = info.value
    assert error.missing == (name,) and f"({name})" in str(error) and "holds no data" in str(error)
    assert OLD_TEXT not in str(error)
    assert error.report.candidates and all(c.status == "error" for c in error.report.candidates)


def test_most_candidates_failing_on_a_missing_name_is_no_data(shop):
    # three of five candidates ask for a column no table has; two fail on their own syntax
    def script(request: ChatRequest) -> str:
        return fenced(SYNTAX if (request.seed or 0) in (1, 3) else NO_COLUMN)

    with pytest.raises(NoDataError) as info:
        ask(shop, "What did each ticket cost?", ScriptedChatModel(script), max_refinements=0)
    assert info.value.missing == ("ticket_price",) and "most queries written for it" in str(info.value)
    assert [c.status for c in info.value.report.candidates].count("error") == 5


@pytest.mark.parametrize(("sql", "keyword"), [
    ("DELETE FROM orders WHERE total < 10", "DELETE"),
    ("UPDATE customers SET country = 'Chile'", "UPDATE"),
    ("INSERT INTO customers (id, name) VALUES (99, 'Zed')", "INSERT"),
    ("DROP TABLE orders", "DROP"),
])
def test_a_request_to_change_data_is_no_data(shop, sql, keyword):
    with pytest.raises(NoDataError) as info:
        ask(shop, "Remove the small orders.", scripted(sql))
    error = info.value
    assert f"are {keyword} statements" in str(error) and "run a change as your own SQL" in str(error)
    assert OLD_TEXT not in str(error) and error.missing == ()
    assert all(c.status == "unsafe" for c in error.report.candidates)
    with shop.connect() as connection:  # nothing was changed
        assert connection.execute(sa.text("SELECT count(*) FROM orders")).scalar() > 0
        assert connection.execute(sa.text("SELECT count(*) FROM customers WHERE country = 'Chile'")).scalar() == 0


@pytest.mark.parametrize("dialect", backends.names())
def test_the_guard_refusal_of_a_change_is_read_on_every_engine(dialect):
    from verifiedsql.errors import UnsafeSQLError
    from verifiedsql.guard.safety import check_query
    from verifiedsql.profiles import profile_for
    from verifiedsql.stages.common.failures import data_change

    expected = {"DELETE FROM t": "DELETE", "UPDATE t SET a = 1": "UPDATE", "INSERT INTO t VALUES (1)": "INSERT",
                "TRUNCATE TABLE t": "TRUNCATETABLE", "SET x = 1": None, "SELECT 1 FROM t; SELECT 2": None}
    for sql, keyword in expected.items():
        with pytest.raises(UnsafeSQLError) as info:
            check_query(sql, profile_for(dialect))
        assert data_change("unsafe", str(info.value)) == keyword, sql
    assert data_change("error", "only queries are run; this is a DELETE statement") is None


def test_a_column_the_schema_has_elsewhere_is_a_mistake_not_missing_data(shop):
    # orders has no country, customers has: the query is wrong, the data is there
    with pytest.raises(NoAnswerError) as info:
        ask(shop, "Which countries ordered?", scripted("SELECT country FROM orders"), schema_repair=False,
            max_refinements=0)
    assert type(info.value) is NoAnswerError and OLD_TEXT in str(info.value)
    assert error_class("error", info.value.report.candidates[0].error) == "unknown column"


@pytest.mark.parametrize("sql", ["SELECT contry FROM customers", "SELECT ctry FROM customers"])
def test_a_misspelled_or_abbreviated_name_is_a_mistake_not_missing_data(shop, sql):
    # customers has a country: "contry" and "ctry" are no columns, but the data is there
    with pytest.raises(NoAnswerError) as info:
        ask(shop, "Which customers are there?", scripted(sql), schema_repair=False, max_refinements=0)
    assert type(info.value) is NoAnswerError and OLD_TEXT in str(info.value)


@pytest.mark.parametrize(("wanted", "names", "expected"), [
    ("independenceyear", ["IndepYear"], True),  # an abbreviation
    ("dept_name", ["department_name"], True),
    ("adress", ["address"], True),  # a misspelling
    ("Weight_Rank", ["Weight", "Rank"], False),  # a name plus another word: something else
    ("coat_code", ["code"], False),
    ("email", ["name", "emp_id"], False),
])
def test_which_names_resemble_a_schema_name(wanted, names, expected):
    assert resembles(wanted, names) is expected


def test_a_syntax_failure_keeps_the_old_no_answer_error(shop):
    with pytest.raises(NoAnswerError) as info:
        ask(shop, "Which customers are there?", scripted(SYNTAX), max_refinements=1)
    assert type(info.value) is NoAnswerError
    assert str(info.value) == ("none of the generated queries ran successfully; see the report's candidates for "
                               "the errors, rephrase the question, or use a larger model.")


def test_a_mix_of_missing_names_and_other_failures_keeps_the_old_error(shop):
    def script(request: ChatRequest) -> str:
        return fenced(NO_COLUMN if (request.seed or 0) % 2 else SYNTAX)

    with pytest.raises(NoAnswerError) as info:
        ask(shop, "What did each ticket cost?", ScriptedChatModel(script), max_refinements=0)
    assert type(info.value) is NoAnswerError and OLD_TEXT in str(info.value)


def test_no_data_error_is_a_no_answer_error():
    assert isinstance(NoDataError("m", None), NoAnswerError) and issubclass(NoDataError, verifiedsql.NoAnswerError)
    assert verifiedsql.NoDataError is NoDataError and "NoDataError" in verifiedsql.__all__


@pytest.mark.parametrize(("error", "expected"), [
    ("the database rejected the query: no such column: T1.genre", ("column", "genre")),
    ("no such table: main.sponsors", ("table", "sponsors")),
    ('Binder Error: Referenced column "genre" not found in FROM clause!', ("column", "genre")),
    ('Binder Error: Table "T1" does not have a column named "genre"', ("column", "genre")),
    ("Catalog Error: Table with name sponsors does not exist!", ("table", "sponsors")),
    ('column "genre" does not exist', ("column", "genre")),
    ("column t1.genre does not exist", ("column", "genre")),
    ('relation "public.sponsors" does not exist', ("table", "sponsors")),
    ("invalid identifier 'T1.GENRE'", ("column", "GENRE")),
    ('missing FROM-clause entry for table "t2"', None),
    ("near \"QUALIFY\": syntax error", None),
])
def test_the_missing_name_is_read_from_each_engines_message(error, expected):
    assert missing_name(error) == expected


# ------------------------------------------------------------------------------------------ the scope check


def test_scope_check_no_below_probable_is_no_data(shop):
    model = scripted(BRAZIL, scope="NO.")
    with pytest.raises(NoDataError) as info:  # a single candidate: doubtful
        ask(shop, "Who won the World Cup in 2018?", model, candidates=1, scope_check=True)
    assert "the model said no" in str(info.value) and "holds no data" in str(info.value)
    scope = [r for r in model.requests if r.purpose == "scope"]
    assert len(scope) == 1 and scope[0].temperature == 0.0
    assert "Who won the World Cup in 2018?" in scope[0].messages[-1]["content"]
    assert [c.purpose for c in info.value.report.llm_calls] == ["generate", "scope"]


def test_scope_check_yes_keeps_the_answer(shop):
    rows, report, model = ask(shop, "Customers from Brazil?", scripted(BRAZIL, scope="Yes"), candidates=1,
                              scope_check=True)
    assert len(rows) == 2 and report.confidence == "doubtful" and model.purposes() == ["generate", "scope"]
    assert "scope check: the model said YES" in report.notes and "scope" in report.timings


def test_scope_check_unclear_reply_keeps_the_answer(shop):
    rows, _, _ = ask(shop, "Customers from Brazil?", scripted(BRAZIL, scope="Perhaps."), candidates=1,
                     scope_check=True)
    assert len(rows) == 2


def test_scope_check_is_off_by_default_for_this_model_and_skips_trusted_answers(shop):
    _, report, model = ask(shop, "Customers from Brazil?", scripted(BRAZIL), candidates=1)
    assert report.confidence == "doubtful" and "scope" not in model.purposes()
    _, report, model = ask(shop, "Customers from Brazil?", scripted(BRAZIL), scope_check=True)
    assert report.confidence == "verified" and "scope" not in model.purposes()


@pytest.mark.parametrize(("model_name", "asked"), [("qwen2.5-coder-1.5b", True), ("qwen2.5-coder-0.5b", True),
                                                  ("gpt-4o", False)])
def test_scope_check_by_default_only_with_the_models_it_was_measured_on(shop, model_name, asked):
    def script(request: ChatRequest) -> str:
        return "NO" if request.purpose == "scope" else fenced(BRAZIL)

    model = ScriptedChatModel(script, name=model_name)
    if asked:
        with pytest.raises(NoDataError):
            ask(shop, "Who won the World Cup in 2018?", model, candidates=1)
    else:
        rows, report, _ = ask(shop, "Who won the World Cup in 2018?", model, candidates=1)
        assert report.confidence == "doubtful" and len(rows) == 2
    assert ("scope" in model.purposes()) is asked
    with pytest.raises(NoDataError):  # on when asked for, whichever the model
        ask(shop, "Who won the World Cup in 2018?", ScriptedChatModel(script, name=model_name), candidates=1,
            scope_check=True)
    off = ScriptedChatModel(script, name=model_name)
    ask(shop, "Who won the World Cup in 2018?", off, candidates=1, scope_check=False)
    assert "scope" not in off.purposes()


def test_the_scope_checked_models_are_the_embedded_ones():
    from verifiedsql.config import SCOPE_CHECKED_MODELS
    from verifiedsql.llm.models import DEFAULT_MODEL, MODELS

    assert SCOPE_CHECKED_MODELS == {model.alias for model in MODELS.values()}
    assert DEFAULT_MODEL in MODELS


def test_scope_check_when_no_query_ran(shop):
    with pytest.raises(NoDataError) as info:
        ask(shop, "Write a poem about our customers.", scripted(SYNTAX, scope="NO"), candidates=1,
            max_refinements=0, scope_check=True)
    assert "no query ran" in str(info.value)
    with pytest.raises(NoAnswerError) as plain:
        ask(shop, "Which customers are there?", scripted(SYNTAX, scope="YES"), candidates=1, max_refinements=0,
            scope_check=True)
    assert type(plain.value) is NoAnswerError and OLD_TEXT in str(plain.value)


# ------------------------------------------------------------------------------------------------- the CLI


def test_the_cli_says_no_data_and_exits_with_4(shop, monkeypatch, capsys):
    import verifiedsql.llm
    from verifiedsql.cli import main

    monkeypatch.setattr(verifiedsql.llm, "chat_model_for", lambda options: scripted(CONSTANT))
    assert main(["ask", str(shop.url), "How do you say hello in French?"]) == 4
    assert "no data: the database holds no data for this question" in capsys.readouterr().err
    monkeypatch.setattr(verifiedsql.llm, "chat_model_for", lambda options: scripted(SYNTAX))
    assert main(["ask", str(shop.url), "Which customers are there?"]) == 2
    assert OLD_TEXT in capsys.readouterr().err


# ------------------------------------------------------------------------------------- bench scope (harness)

BENCH = [
    {"id": 1, "db_id": "shop", "question": "Who painted the Mona Lisa?", "kind": "general-knowledge"},
    {"id": 2, "db_id": "shop", "question": "What did each ticket cost?", "kind": "missing-column"},
    {"id": 3, "db_id": "shop", "question": "Write a poem about our customers.", "kind": "other-task"},
]
BENCH_SQL = {BENCH[0]["question"]: CONSTANT, BENCH[1]["question"]: NO_COLUMN,
             BENCH[2]["question"]: "SELECT name FROM customers"}


def bench_model() -> ScriptedChatModel:
    def script(request: ChatRequest) -> str:
        if request.purpose == "scope":
            return "NO"
        asked = next(m["content"] for m in request.messages if "Question: " in m["content"])
        question = asked.rsplit("Question: ", 1)[1]
        return fenced(next(sql for q, sql in BENCH_SQL.items() if question.startswith(q)))

    return ScriptedChatModel(script, name="bench-model")


@pytest.fixture
def bench(tmp_path):
    folder = tmp_path / "spider" / "database" / "shop"
    folder.mkdir(parents=True)
    conn = sqlite3.connect(folder / "shop.sqlite")
    conn.executescript("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT, country TEXT);"
                       "INSERT INTO customers VALUES (1, 'Ana', 'Brazil'), (2, 'Ben', 'USA');"
                       "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER, amount REAL);"
                       "INSERT INTO orders VALUES (1, 1, 9.5);")
    conn.commit()
    conn.close()
    questions = tmp_path / "questions.json"
    questions.write_text(json.dumps(BENCH))
    return ScopeConfig(questions_path=questions, data_dir=tmp_path / "spider", cache_path=None,
                       strategies=["greedy+repair", "greedy+repair+scope"], out_dir=tmp_path / "out")


def test_bench_scope_records_each_outcome(bench):
    model = bench_model()
    run = run_scope(bench, llm=model, progress=lambda line: None)
    by_key = {(r["strategy"], r["id"]): r for r in run.records}
    assert len(run.records) == 6
    assert by_key["greedy+repair", 1]["outcome"] == "no-data" and by_key["greedy+repair", 1]["sql"] == CONSTANT
    assert by_key["greedy+repair", 2]["outcome"] == "no-data" and by_key["greedy+repair", 2]["missing"] == [
        "ticket_price"]
    assert by_key["greedy+repair", 3]["outcome"] == "doubtful"  # one candidate: no vote to show
    assert by_key["greedy+repair+scope", 3]["outcome"] == "no-data"  # the model said NO
    assert by_key["greedy+repair+scope", 3]["purposes"] == ["generate", "scope"]
    greedy, scoped = run.summary["greedy+repair"], run.summary["greedy+repair+scope"]
    assert greedy["outcomes"]["no-data"] == 2 and greedy["outcomes"]["doubtful"] == 1 and greedy["verified"] == 0
    assert scoped["outcomes"]["no-data"] == 3 and scoped["scope_calls"] == 1
    assert greedy["by_kind"] == {"general-knowledge": {"no-data": 1}, "missing-column": {"no-data": 1},
                                 "other-task": {"doubtful": 1}}
    payload = json.loads(run.outputs["json"].read_text())
    assert payload["summary"]["greedy+repair"]["verified"] == 0 and len(payload["records"]) == 6
    markdown = run.outputs["md"].read_text()
    assert "| greedy+repair | 3 |" in markdown and "Answered at `verified`: 0." in markdown
    assert {p.name for p in run.outputs.values()} == {"scope-sqlite-bench-model.json", "scope-sqlite-bench-model.md"}


def test_bench_scope_resumes_and_reports_from_the_cli(bench, capsys):
    run_scope(bench, llm=bench_model(), progress=lambda line: None)
    idle = ScriptedChatModel([], name="bench-model")  # nothing left to ask
    again = run_scope(bench, llm=idle, progress=lambda line: None)
    assert idle.requests == [] and len(again.records) == 6
    from verifiedsql.cli import main

    assert main(["bench", "scope", "--report-only", "--questions", str(bench.questions_path), "--data",
                 str(bench.data_dir), "--out", str(bench.out_dir), "--strategies", "greedy+repair",
                 "--model", "0.5b", "--quiet"]) == 0  # no model is loaded: the records of the 0.5B model (none)
    out = capsys.readouterr().out
    assert "greedy+repair" in out and "no records" in out
    assert (bench.out_dir / "scope-sqlite-qwen2.5-coder-0.5b.md").exists()


@pytest.mark.parametrize(("sql", "name"), [(NO_COLUMN, "ticket_price"), (NO_TABLE, "sponsors")])
def test_a_missing_name_is_no_data_on_every_engine(shop_engine, sql, name):
    """Each engine's own error for a missing table or column is read (PostgreSQL, DuckDB, Snowflake, SQLite)."""
    with pytest.raises(NoDataError) as info:
        ask(shop_engine, "What did each ticket cost?", scripted(sql))
    # as the engine names it: Snowflake folds unquoted names to upper case
    assert tuple(n.lower() for n in info.value.missing) == (name,), info.value.report.candidates[0].error


def test_an_answer_built_from_constants_is_no_data_on_every_engine(shop_engine):
    with pytest.raises(NoDataError):
        ask(shop_engine, "How do you say hello in French?", scripted(CONSTANT))
