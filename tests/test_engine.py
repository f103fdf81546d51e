"""The SQLAlchemy integration, on SQLite with a scripted model (the logic, not the model, is tested)."""

import shutil
from pathlib import Path

import pandas as pd
import pytest
import sqlalchemy as sa
from fakes import ScriptedChatModel, by_seed, fenced
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

import verifiedsql
from verifiedsql.errors import NoAnswerError, NotConfiguredError, QuestionError

SHOP = Path(__file__).parents[1] / "examples" / "shop.db"
BRAZIL = "SELECT name FROM customers WHERE country = 'Brazil' ORDER BY name"


@pytest.fixture
def shop_url(tmp_path):
    path = tmp_path / "shop.db"
    shutil.copy(SHOP, path)
    return f"sqlite:///{path}"


def engine_with(url, replies, **options):
    return verifiedsql.create_engine(url, llm=ScriptedChatModel(replies), **options)


def test_question_returns_an_ordinary_result_with_a_report(shop_url):
    engine = engine_with(shop_url, lambda r: fenced(BRAZIL), candidates=3)
    with engine.connect() as conn:
        result = conn.execute(verifiedsql.ask("Which customers are from Brazil?"))
        assert list(result.keys()) == ["name"]
        report = result.verification
        assert result.all() == [("Ana Souza",), ("Bruno Lima",), ("Carla Dias",)]
    assert report.vote == "unanimous" and report.sql == BRAZIL
    assert len(report.candidates) == 3 and report.total_tokens == 45
    assert set(report.timings) == {"context", "literals", "constraints", "generate", "select"}


def test_result_api_first_scalars_mappings(shop_url):
    engine = engine_with(shop_url, lambda r: fenced(BRAZIL), candidates=1)
    with engine.connect() as conn:
        assert conn.execute(verifiedsql.ask("q")).first() == ("Ana Souza",)
        assert conn.execute(verifiedsql.ask("q")).scalars().all()[0] == "Ana Souza"
        assert conn.execute(verifiedsql.ask("q")).mappings().first() == {"name": "Ana Souza"}


def test_plugin_entry_point_gives_the_same_engine(shop_url):
    fake = ScriptedChatModel(lambda r: fenced("SELECT COUNT(*) FROM orders"))
    engine = sa.create_engine(shop_url, plugins=["verifiedsql"], verifiedsql={"candidates": 2},
                              verifiedsql_llm=fake)
    with engine.connect() as conn:
        assert conn.execute(verifiedsql.ask("How many orders?")).scalar() == 60
    assert len(fake.requests) == 2


def test_session_execute_and_pandas_read_sql(shop_url):
    engine = engine_with(shop_url, lambda r: fenced(BRAZIL), candidates=1)
    with Session(engine) as session:
        assert len(session.execute(verifiedsql.ask("q")).all()) == 3
    frame = pd.read_sql(verifiedsql.ask("q"), engine)
    assert list(frame.columns) == ["name"] and len(frame) == 3


class Base(DeclarativeBase):
    pass


class Customer(Base):
    __tablename__ = "customers"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str]
    country: Mapped[str]
    joined_on: Mapped[str]


def test_plain_sql_core_and_orm_behave_as_on_the_raw_engine(shop_url):
    raw = sa.create_engine(shop_url)
    wrapped = engine_with(shop_url, [])
    query = "SELECT country, COUNT(*) FROM customers GROUP BY country ORDER BY 2 DESC, 1"
    with raw.connect() as a, wrapped.connect() as b:
        assert a.execute(sa.text(query)).all() == b.execute(sa.text(query)).all()
        table = sa.Table("products", sa.MetaData(), autoload_with=b)
        ordered = sa.select(table).order_by(table.c.id)
        assert b.execute(ordered).all() == a.execute(ordered).all()
    with Session(wrapped) as session:
        session.add(Customer(id=99, name="Zoe", country="Chile", joined_on="2024-01-01"))
        session.commit()
        assert session.get(Customer, 99).name == "Zoe"


def test_question_on_an_unwrapped_engine_says_what_to_do(shop_url):
    with sa.create_engine(shop_url).connect() as conn, pytest.raises(NotConfiguredError, match="plugins"):
        conn.execute(verifiedsql.ask("q"))


@pytest.mark.parametrize("question", ["", "   \n\t", None, "x" * 5000])
def test_bad_questions_get_a_typed_error_before_any_model_call(shop_url, question):
    fake = ScriptedChatModel([])
    engine = verifiedsql.create_engine(shop_url, llm=fake)
    with engine.connect() as conn, pytest.raises(QuestionError):
        conn.execute(verifiedsql.ask(question))
    assert fake.requests == []


def test_failing_candidate_is_refined_with_the_database_error(shop_url):
    fake = ScriptedChatModel(by_seed({0: "SELECT nam FROM customers"}, refine="SELECT name FROM customers"))
    engine = verifiedsql.create_engine(shop_url, llm=fake, candidates=1)
    with engine.connect() as conn:
        result = conn.execute(verifiedsql.ask("names"))
        assert len(result.all()) == 12
    candidate = result.verification.candidates[0]
    assert candidate.attempts == ["SELECT nam FROM customers"] and candidate.status == "ok"
    assert "nam" in fake.requests[1].messages[-1]["content"]


def test_harmful_sql_from_the_model_is_refused_and_nothing_changes(shop_url):
    fake = ScriptedChatModel(by_seed({0: "DELETE FROM customers"}, refine="DROP TABLE customers"))
    engine = verifiedsql.create_engine(shop_url, llm=fake, candidates=1)
    with engine.connect() as conn:
        with pytest.raises(NoAnswerError) as caught:
            conn.execute(verifiedsql.ask("delete everyone"))
        assert conn.execute(sa.text("SELECT COUNT(*) FROM customers")).scalar() == 12
    candidate = caught.value.report.candidates[0]
    assert candidate.status == "unsafe" and "DROP" in candidate.error
    # DELETE refused -> refined to DROP, refused -> the next refinement repeats DROP, so it stops
    assert candidate.attempts == ["DELETE FROM customers"]
    assert [r.purpose for r in fake.requests] == ["generate", "refine", "refine"]


def test_disagreement_is_reported_as_majority(shop_url):
    replies = {0: BRAZIL, 1: BRAZIL, 2: "SELECT name FROM customers WHERE country = 'USA'"}
    engine = verifiedsql.create_engine(shop_url, llm=ScriptedChatModel(by_seed(replies)), candidates=3)
    with engine.connect() as conn:
        report = conn.execute(verifiedsql.ask("Brazilians")).verification
    assert report.vote == "majority" and len(report.clusters) == 2
    assert [c.cluster for c in report.candidates] == [0, 0, 1]


@pytest.mark.parametrize("url", ["sqlite://", "duckdb:///:memory:"])
def test_question_keeps_the_callers_uncommitted_work_on_a_shared_connection(url):
    """In-memory databases share one raw connection: asking must not roll the caller's work back."""
    engine = verifiedsql.create_engine(url, llm=ScriptedChatModel(lambda r: fenced("SELECT COUNT(*) FROM t")),
                                       candidates=1)
    with engine.connect() as conn:
        conn.execute(sa.text("CREATE TABLE t (a INTEGER)"))
        conn.commit()
        conn.execute(sa.text("INSERT INTO t VALUES (1)"))
        conn.execute(verifiedsql.ask("how many rows?")).all()
        assert conn.execute(sa.text("SELECT COUNT(*) FROM t")).scalar() == 1
        conn.commit()
    with engine.connect() as conn:
        assert conn.execute(sa.text("SELECT COUNT(*) FROM t")).scalar() == 1


def test_question_about_an_empty_database_is_a_typed_error():
    fake = ScriptedChatModel([])
    engine = verifiedsql.create_engine("sqlite://", llm=fake)
    with engine.connect() as conn, pytest.raises(verifiedsql.EmptySchemaError, match="no tables"):
        conn.execute(verifiedsql.ask("How many customers?"))
    assert fake.requests == []


def test_cli_refuses_a_missing_sqlite_file(tmp_path, capsys):
    from verifiedsql.cli import main

    missing = tmp_path / "missing.db"
    assert main(["ask", f"sqlite:///{missing}", "How many?"]) == 2
    assert not missing.exists() and "no SQLite database" in capsys.readouterr().err


def test_refinement_that_repeats_the_failing_sql_stops_early(shop_url):
    fake = ScriptedChatModel(by_seed({0: "SELECT nam FROM customers"}, refine="SELECT nam FROM customers"))
    engine = verifiedsql.create_engine(shop_url, llm=fake, candidates=1, max_refinements=2)
    with engine.connect() as conn, pytest.raises(NoAnswerError) as caught:
        conn.execute(verifiedsql.ask("names"))
    assert [r.purpose for r in fake.requests] == ["generate", "refine"]
    candidate = caught.value.report.candidates[0]
    assert candidate.attempts == [] and "repeated" in caught.value.report.notes[0]
