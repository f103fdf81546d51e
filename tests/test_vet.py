"""Verifiable execution tracing (VET) with a scripted model: the candidate column set and its bounded
fetch, pandas steps run in the sandbox with their checks and repairs, the YES/NO stop check, SQL rebuilt
from the trace and kept only when it matches the trace and the question, on all four engines."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable

import fakes
import pytest
import sqlalchemy as sa
import sqlglot
from backends import checksum, load_shop
from fakes import ScriptedChatModel, context, fenced, purposes

import verifiedsql
from verifiedsql.bench.strategies import STRATEGIES, strategy_options
from verifiedsql.config import Options
from verifiedsql.db.database import Database
from verifiedsql.guard.sandbox import Sandbox
from verifiedsql.llm.base import ChatRequest
from verifiedsql.llm.replies import yes_no
from verifiedsql.report import VerificationReport
from verifiedsql.stages.vet.data import candidate_tables, load_trace_data
from verifiedsql.stages.vet.prompts import restated_question
from verifiedsql.stages.vet.similarity import offline_similarity
from verifiedsql.stages.vet.stage import REPEATED, SQL_ATTEMPTS, ExecutionTracer
from verifiedsql.stages.vet.steps import (
    outside_columns,
    outside_tables,
    rows_in,
    sanity_problem,
    step_shape,
    with_result,
)

QUESTION = "How many customers come from Brazil?"
WRONG = "SELECT COUNT(*) FROM customers WHERE country = 'brazil'"  # 0 rows match: the value is 'Brazil'
RIGHT = "SELECT COUNT(*) FROM customers WHERE country = 'Brazil'"  # 2
FILTER = "result = customers[customers['country'] == 'Brazil']"
COUNT = "result = len(result)"
RESTATED = "How many customers are from Brazil?"

needs_sandbox = pytest.mark.skipif(not Sandbox().available(), reason="bubblewrap cannot run here")


def python(code: str) -> str:
    return f"```python\n{code}\n```"


def step_number(request: ChatRequest) -> int:
    """The step a vet-step request asks for (the first user turn says "Write step N.")."""
    return int(request.messages[1]["content"].rsplit("Write step ", 1)[1].rstrip("."))


def script(steps: dict[int, list[str]] | Callable[[ChatRequest], str], sql: list[str] | str = RIGHT,
           stop: Callable[[ChatRequest], str] | None = None, restated: str = RESTATED,
           generated: str = WRONG) -> ScriptedChatModel:
    """Steps by number (each list answers the first try, then the repairs, in order), the stop check (YES
    once two steps are accepted unless ``stop`` says otherwise), SQL replies in order, the restated question."""
    tries = {n: list(codes) for n, codes in steps.items()} if isinstance(steps, dict) else None
    sqls = [sql] if isinstance(sql, str) else list(sql)

    def answer(request: ChatRequest) -> str:
        if request.purpose in ("generate", "refine"):
            return fenced(generated)
        if request.purpose == "vet-step":
            if tries is None:
                return steps(request)  # type: ignore[operator]
            codes = tries[step_number(request)]
            return python(codes.pop(0) if len(codes) > 1 else codes[0])
        if request.purpose == "vet-stop":
            if stop is not None:
                return stop(request)
            return "YES" if "Step 2 (accepted)" in request.messages[-1]["content"] else "NO"
        if request.purpose == "vet-sql":
            return fenced(sqls.pop(0) if len(sqls) > 1 else sqls[0])
        if request.purpose == "vet-question":
            return restated
        pytest.fail(f"unexpected {request.purpose!r} request")

    return ScriptedChatModel(answer)


def ask(engine: sa.Engine | str, fake: ScriptedChatModel, question: str = QUESTION, **options: object):
    # the literal checks would repair WRONG's 'brazil' before the trace is compared with it
    return fakes.ask(engine, question, fake, **{"candidates": 1, "vet": True, "check_literals": False, **options})


@pytest.fixture
def shop_url(tmp_path) -> str:
    url = f"sqlite:///{tmp_path / 'shop.db'}"
    load_shop(sa.create_engine(url)).dispose()
    return url


# ------------------------------------------------------------------------------------ step analysis


def test_step_kinds_reads_and_column_literals():
    assert step_shape(FILTER).kind == "filter"
    assert step_shape("result = customers.query('country == \"Brazil\"')").kind == "filter"
    assert step_shape("result = orders.sort_values('amount').head(3)").kind == "filter"
    assert step_shape(COUNT).kind == "aggregate" and step_shape(COUNT).reads == {"len", "result"}
    assert step_shape("result = orders.groupby('status')['amount'].sum()").kind == "aggregate"
    merged = step_shape("m = orders.merge(customers, left_on='customer_id', right_on='id')\nresult = m")
    assert merged.kind == "join" and merged.reads == {"orders", "customers"}  # m is its own
    assert merged.column_names == {"customer_id", "id"}
    assert step_shape("result = customers[['name', 'country']]").kind == "transform"
    with pytest.raises(SyntaxError):
        step_shape("result = customers[")


def test_an_unnamed_or_printed_output_becomes_result():
    assert with_result("n = people['Nationality'].unique()\nprint(n)") == (
        "n = people['Nationality'].unique()\nresult = n")
    assert with_result("a = customers\nb = len(a)") == "a = customers\nb = len(a)\nresult = b"
    assert with_result("customers.head()") == "result = customers.head()"
    assert with_result("result = customers\nprint(result)") == "result = customers"
    assert with_result("print(1, 2)") == "print(1, 2)" and with_result("result = (") == "result = ("


def test_sanity_rules():
    filt, agg, join = step_shape(FILTER), step_shape(COUNT), step_shape("result = orders.merge(customers)")
    assert sanity_problem(filt, 10, 2) is None
    assert "must not add rows" in sanity_problem(filt, 10, 11)
    assert "left no rows" in sanity_problem(filt, 10, 0)
    assert sanity_problem(agg, 2, 1) is None and sanity_problem(agg, 1, 1) is None  # nothing to reduce
    assert "must reduce the rows" in sanity_problem(agg, 5, 5)
    assert sanity_problem(join, 25, 40) is None
    assert rows_in(agg, 2, {"customers": 10}) == 2
    assert rows_in(filt, None, {"customers": 10, "orders": 25}) == 10
    assert rows_in(step_shape("result = 1"), 4, {"customers": 10}) is None


def test_candidate_set_checks():
    shape = step_shape("result = customers[customers['email'] == 'x'].merge(suppliers)")
    assert outside_columns(shape, ["id", "country"], ["id", "country", "email"]) == ["email"]
    assert outside_columns(step_shape("result = customers[['id', 'rate']]"), ["id"], ["id", "email"]) == []
    assert outside_tables(shape, ["customers"], ["customers", "suppliers"]) == ["suppliers"]


def test_the_restated_question_is_read_from_prose_not_sql():
    assert restated_question("How many customers are there?") == "How many customers are there?"
    assert restated_question("```sql\nSELECT x FROM t\n```\nQuestion: **What is x?**") == "What is x?"
    assert restated_question("SELECT name FROM t WHERE a = 1\nThe names of t") == "The names of t"
    assert restated_question("SELECT course_description FROM Courses") == ""


def test_yes_no_is_strict():
    assert yes_no("YES") is True and yes_no(" no.") is False and yes_no("**Yes**") is True
    assert yes_no("Maybe, yes") is None and yes_no("") is None


def test_options_and_strategies():
    options = Options()
    assert (options.vet, options.vet_steps, options.vet_step_repairs, options.vet_similarity) == (False, 5, 3, 0.6)
    assert STRATEGIES["+vet"] == {"candidates": 5, "vet": True}
    assert strategy_options("vet-only", {}).candidates == 1 and strategy_options("vet-only", {}).vet
    for bad in ({"vet_steps": 0}, {"vet_step_repairs": -1}, {"vet_max_rows": 0}, {"vet_similarity": 1.5}):
        with pytest.raises(verifiedsql.errors.ConfigurationError):
            Options(**bad)


def test_candidate_tables_follow_the_question_and_foreign_keys(shop_url):
    database = Database(sa.create_engine(shop_url), Options())
    schema = database.reflect()
    assert [t.name for t in candidate_tables(schema, "List the names of customers from Japan")] == [
        "customers", "orders"]  # orders joins customers by its foreign key
    assert [t.name for t in candidate_tables(schema, "Which status is the most common?")] == ["orders", "customers"]
    assert len(candidate_tables(schema, "zzz qqq")) == 2  # no overlap: every table


def test_the_fetch_is_bounded_and_typed(shop_url):
    database = Database(sa.create_engine(shop_url), Options())
    tables = list(database.reflect().tables)
    data = load_trace_data(context(database), tables, 4)
    assert data.row_counts() == {"customers": 4, "orders": 4} and data.truncated == ["customers", "orders"]
    assert list(data.frames["customers"].columns) == ["id", "name", "country", "joined"]
    full = load_trace_data(context(database), tables, 1000)
    assert full.row_counts() == {"customers": 10, "orders": 25} and full.truncated == []


# ------------------------------------------------------------------------------------------- pipeline


@needs_sandbox
def test_a_trace_is_verified_and_its_sql_answers_on_every_engine(shop_engine):
    before = checksum(shop_engine)
    rows, report, fake = ask(shop_engine, script({1: [FILTER], 2: [COUNT]}))
    trace = report.trace
    assert rows == [(2,)], report.summary()
    assert trace.outcome == "accepted" and trace.consistent and trace.sql == RIGHT
    assert [s.kind for s in trace.steps] == ["filter", "aggregate"]
    assert [(s.rows_in, s.rows_out) for s in trace.steps] == [(10, 2), (2, 1)]
    assert [s.sufficient for s in trace.steps] == ["NO", "YES"]
    assert set(trace.columns) == {"customers", "orders"} and trace.truncated == []
    assert purposes(fake) == ["generate", "vet-step", "vet-stop", "vet-step", "vet-stop", "vet-sql"] + (
        ["vet-question"] if offline_similarity() else [])
    # the VET candidate beat the wrong greedy one in their 1-1 tie, and the report says why
    assert report.sql == RIGHT and "verified execution trace" in report.reason
    assert report.candidates[-1].origin == "vet" and trace.candidate == report.candidates[-1].index
    # the step prompt shows the DataFrames with dtypes and rows; the SQL prompt names the engine's dialect
    step_prompt = fake.requests[1].messages[-1]["content"]
    assert "DataFrame `customers`" in step_prompt and "country" in step_prompt and "Brazil" in step_prompt
    sql_prompt = fake.requests[5].messages[0]["content"]
    assert verifiedsql.profiles.profile_for(shop_engine.dialect.name).display_name in sql_prompt
    assert "trace: 2 step(s) over 2 table(s) -> accepted" in report.summary()
    assert checksum(shop_engine) == before


@needs_sandbox
def test_failed_and_implausible_steps_are_repaired(shop_url):
    steps = {1: ["result = customers[customers['Country'] == 'Brazil']",  # KeyError: the column is 'country'
                 "result = customers[customers['country'] == 'brazil']",  # no rows: the value is 'Brazil'
                 FILTER],
             2: ["result = result.groupby('id').size()",  # groups of one: does not reduce
                 COUNT]}
    rows, report, fake = ask(shop_url, script(steps))
    first, second = report.trace.steps
    assert rows == [(2,)] and report.trace.outcome == "accepted"
    assert first.status == "accepted" and len(first.problems) == 2
    assert "KeyError" in first.problems[0] and "left no rows" in first.problems[1]
    assert "must reduce the rows" in second.problems[0]
    repair = fake.requests[2].messages[-1]["content"]
    assert "Step 1 is not accepted" in repair and "KeyError" in repair  # the error went back to the model


@needs_sandbox
def test_a_step_outside_the_candidate_set_never_runs(shop_url, tmp_path):
    # the question names only customers; a third, unrelated table exists but is not in the candidate set
    engine = sa.create_engine(shop_url)
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE suppliers (id INTEGER PRIMARY KEY, secret TEXT)")
        conn.exec_driver_sql("INSERT INTO suppliers VALUES (1, 'x')")
    engine.dispose()
    steps = {1: ["result = suppliers[suppliers['secret'] == 'x']", FILTER], 2: [COUNT]}
    rows, report, _ = ask(shop_url, script(steps))
    assert "suppliers" not in report.trace.columns
    assert "outside the candidate tables and columns" in report.trace.steps[0].problems[0]
    assert report.trace.steps[0].rows_out == 2 and rows == [(2,)]


@needs_sandbox
def test_repeated_code_and_the_repair_budget_end_the_trace(shop_url):
    _, report, fake = ask(shop_url, script({1: ["print(customers['nope'])"]}))
    assert report.trace.steps[0].problems[-1] == REPEATED and report.trace.outcome == "failed"
    assert report.trace.steps[0].code == "result = customers['nope']"  # the printed value became the output
    assert report.trace.reason == "no step was accepted" and report.sql == WRONG  # the greedy answer stands
    assert purposes(fake).count("vet-step") == 2

    def new_error_each_time(request: ChatRequest) -> str:
        return python(f"result = customers['nope{len(request.messages)}_{id(request)}']")

    _, report, fake = ask(shop_url, script(new_error_each_time), vet_step_repairs=2)
    assert purposes(fake).count("vet-step") == 3 and len(report.trace.steps[0].problems) == 3


@needs_sandbox
def test_the_step_cap_and_an_unclear_stop_check(shop_url):
    steps = {n: ["result = customers"] for n in range(1, 6)}
    _, report, fake = ask(shop_url, script(steps, stop=lambda r: "Perhaps", sql="SELECT * FROM customers"),
                          vet_steps=3)
    assert len(report.trace.steps) == 3 and report.trace.stop == "stopped after vet_steps=3 steps"
    assert [s.sufficient for s in report.trace.steps] == ["unclear"] * 3
    assert all(r.temperature == 0.0 for r in fake.requests if r.purpose.startswith("vet"))


@needs_sandbox
def test_sql_that_disagrees_with_the_trace_is_rejected(shop_url):
    _, report, fake = ask(shop_url, script({1: [FILTER], 2: [COUNT]}, sql="SELECT COUNT(*) FROM customers"))
    trace = report.trace
    assert trace.outcome == "rejected" and not trace.consistent and len(trace.sql_problems) == SQL_ATTEMPTS
    assert "last step's output" in trace.sql_problems[0] and "| 10" not in trace.sql_problems[0]
    assert purposes(fake).count("vet-sql") == SQL_ATTEMPTS and report.sql == WRONG
    assert trace.candidate is None and all(c.origin != "vet" for c in report.candidates)
    retry = [r for r in fake.requests if r.purpose == "vet-sql"][1].messages[-1]["content"]
    assert "10" in retry and "2" in retry  # both results were shown


@needs_sandbox
@pytest.mark.parametrize("layer", ["statement", "engine"])
def test_unsafe_reconstructed_sql_is_refused_and_never_runs(shop_url, layer, monkeypatch):
    if layer == "engine":  # the engine guard alone: the statement guard lets everything through
        monkeypatch.setattr("verifiedsql.stages.generate.parse_one_query",  # a parse with no safety check
                            lambda sql, profile: sqlglot.parse_one(sql, read=profile.sqlglot_dialect))
        monkeypatch.setattr("verifiedsql.db.database.check_query", lambda sql, profile, *_, **__: None)
    engine = sa.create_engine(shop_url)
    before = checksum(engine)
    _, report, _ = ask(shop_url, script({1: [FILTER], 2: [COUNT]}, sql="DELETE FROM customers"))
    problem = report.trace.sql_problems[0]
    assert report.trace.outcome == "rejected" and "did not run" in problem
    assert ("read-only mode refused" if layer == "engine" else "only queries are run") in problem
    assert checksum(engine) == before
    engine.dispose()


@needs_sandbox
def test_cut_tables_are_compared_on_the_rows_the_trace_saw(shop_engine):
    steps = {1: ["result = customers[customers['id'] > 1]"], 2: [COUNT]}
    sql = "SELECT COUNT(*) FROM customers WHERE id > 1"
    rows, report, _ = ask(shop_engine, script(steps, sql=sql, restated="How many customers have an id above 1?"),
                          question="How many customers have an id above 1?", vet_max_rows=4)
    trace = report.trace
    assert trace.truncated == ["customers", "orders"] and trace.steps[1].rows_out == 1
    assert trace.outcome == "accepted" and trace.consistent  # 3 on the 4 rows seen, on both tracks
    assert rows == [(9,)]  # the accepted SQL answers on the whole table


@needs_sandbox
@pytest.mark.skipif(offline_similarity() is None, reason="wordllama is not installed")
def test_a_restated_question_far_from_the_asked_one_is_rejected(shop_url):
    _, report, _ = ask(shop_url, script({1: [FILTER], 2: [COUNT]}, restated="What is the oldest order's status?"))
    trace = report.trace
    assert trace.consistent and trace.similarity_check == "failed" and trace.outcome == "rejected"
    assert trace.similarity < 0.6 and report.sql == WRONG
    _, report, _ = ask(shop_url, script({1: [FILTER], 2: [COUNT]}))
    assert report.trace.similarity_check == "passed" and report.trace.similarity > 0.9


@needs_sandbox
def test_without_a_similarity_model_the_check_is_reported_as_not_run(shop_url):
    engine = sa.create_engine(shop_url)
    report = VerificationReport(question=QUESTION, dialect="sqlite")
    ctx = context(Database(engine, Options()), QUESTION, script({1: [FILTER], 2: [COUNT]}))
    report = ctx.report
    tracer = ExecutionTracer(ctx, use_similarity=False)
    traced = tracer.trace(QUESTION)
    assert traced is not None and traced.sql == RIGHT and traced.result.rows == ((2,),)
    assert report.trace.similarity_check.startswith("not run: no offline embedding model")
    assert report.trace.outcome == "accepted"


def test_without_a_sandbox_the_trace_is_skipped_and_no_code_is_asked_for(shop_url, monkeypatch):
    monkeypatch.setattr(Sandbox, "available", lambda self: False)
    rows, report, fake = ask(shop_url, script({1: [FILTER]}))
    assert report.trace.outcome == "skipped" and "no sandbox" in report.trace.reason
    assert purposes(fake) == ["generate"] and rows == [(0,)]


@needs_sandbox
def test_an_array_output_is_one_column(shop_url):
    steps = {1: ["countries = customers['country'].unique()\nprint(countries)"], 2: ["result = len(result)"]}
    fake = script(steps, sql="SELECT COUNT(DISTINCT country) FROM customers", restated="How many countries are there?")
    _, report, _ = ask(shop_url, fake, question="How many different countries are there?")
    assert [(s.rows_in, s.rows_out) for s in report.trace.steps] == [(10, 6), (6, 1)]
    assert report.trace.consistent


@needs_sandbox
def test_vet_answers_when_every_candidate_failed(shop_url):
    rows, report, _ = ask(shop_url, script({1: [FILTER], 2: [COUNT]}, generated="SELECT nope FROM nowhere"))
    assert rows == [(2,)] and report.sql == RIGHT and report.candidates[0].status == "error"


@pytest.mark.skipif(offline_similarity() is None, reason="wordllama is not installed")
def test_loading_the_embedding_model_leaves_the_root_logger_alone():
    code = ("import logging; from verifiedsql.stages.vet.similarity import offline_similarity; "
            "assert offline_similarity() is not None; root = logging.getLogger(); "
            "assert not root.handlers and root.level == logging.WARNING, (root.handlers, root.level)")
    subprocess.run([sys.executable, "-c", code], check=True)
