"""The scope check's word matching (``stages/scope_terms.py``): a model's NO ends a question only when enough
of the question's words name nothing in the database (no table, no column, no stored value). Real engines,
a scripted model for the scope reply."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from fakes import ScriptedChatModel, ask, context, fenced

from verifiedsql.config import Options
from verifiedsql.db.database import Database
from verifiedsql.db.schema import Column, Schema, Table
from verifiedsql.errors import ConfigurationError, NoDataError, QueryError
from verifiedsql.llm.base import ChatRequest
from verifiedsql.stages.scope_terms import (
    VALUE_DISTINCT,
    content_words,
    schema_words,
    stem,
    unmatched_words,
    words_of,
)

BRAZIL = "SELECT name FROM customers WHERE country = 'Brazil' ORDER BY name"
IN_DATA = "Which customers are from Brazil?"  # customers: a table; brazil: a stored value
NOT_IN_DATA = "Who won the World Cup in 2018?"  # won, world, cup: nothing of the shop's


def recorded_queries(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every statement run through ``Database.run_query`` from now on, in order."""
    seen: list[str] = []
    run_query = Database.run_query

    def recording(self: Database, sql: str, **kwargs: object) -> object:
        seen.append(sql)
        return run_query(self, sql, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Database, "run_query", recording)
    return seen


def saying_no() -> ScriptedChatModel:
    """One candidate (so the answer is doubtful and the check is asked), and NO to the scope check."""
    return ScriptedChatModel(lambda request: "NO" if request.purpose == "scope" else fenced(BRAZIL))


# ------------------------------------------------------------------------------------------------ words


def test_content_words_leave_out_the_words_of_asking():
    assert content_words("Who painted the Mona Lisa?") == ("painted", "mona", "lisa")
    assert content_words("List the names of the 3 oldest singers, in descending order.") == ("oldest", "singers")
    assert content_words("") == ()


def test_identifiers_split_at_underscores_and_case_changes():
    assert words_of("Song_release_year") == ["song", "release", "year"]
    assert words_of("PetType") == ["pet", "type"]
    schema = Schema(tables=(Table("Highschooler", (Column("ID", "INT"), Column("grade", "INT"))),))
    assert list(schema_words(schema)) == ["highschooler", "id", "grade"]


@pytest.mark.parametrize(("word", "root"), [("countries", "country"), ("singers", "singer"), ("leaves", "leaf"),
                                            ("classes", "class"), ("owned", "own"), ("playing", "play"),
                                            ("gas", "gas"), ("bus", "bus")])
def test_stem_takes_off_one_ending_and_keeps_three_letters(word, root):
    assert stem(word) == root


# ------------------------------------------------------------------------------------- on every engine


def test_a_question_the_data_names_keeps_its_answer_despite_the_models_no(shop_engine):
    rows, report, _ = ask(shop_engine, IN_DATA, saying_no(), candidates=1, scope_check=True)
    assert len(rows) == 2 and report.confidence == "doubtful"
    scope = report.scope
    assert scope is not None and scope.said == "no" and not scope.ended
    assert scope.words == ["customers", "brazil"] and scope.unmatched == []  # brazil: a stored value
    assert any(note.startswith("the model's NO is not taken: 0 of the question's 2 words") for note in report.notes)


def test_a_question_whose_words_name_nothing_ends_in_no_data(shop_engine):
    with pytest.raises(NoDataError) as info:
        ask(shop_engine, NOT_IN_DATA, saying_no(), candidates=1, scope_check=True)
    message = str(info.value)
    assert "the model said no; its words 'won', 'world', 'cup' name no table, column or stored value" in message
    scope = info.value.report.scope
    assert scope.ended and scope.unmatched == ["won", "world", "cup"] and scope.unmatched_share == 1.0


def test_a_table_and_column_named_by_reserved_words_are_read(shop_engine):
    """The stored values of ``"order"."select"`` are read on every engine (the names are quoted), so a word
    stored only there matches and every column could be read."""
    with shop_engine.begin() as conn:
        conn.execute(sa.text('CREATE TABLE "order" (id INTEGER PRIMARY KEY, "select" VARCHAR(20))'))
        conn.execute(sa.text('INSERT INTO "order" (id, "select") VALUES (1, \'Zanzibar\')'))
    match = unmatched_words(context(Database(shop_engine, Options()), "Which customers come from Zanzibar?"))
    assert "zanzibar" in match.words and "zanzibar" not in match.unmatched and match.complete


# ------------------------------------------------------------------------------------------ the option


def test_a_share_of_zero_lets_the_models_no_decide(shop_engine):
    with pytest.raises(NoDataError):
        ask(shop_engine, IN_DATA, saying_no(), candidates=1, scope_check=True, scope_unmatched_share=0.0)


def test_the_share_and_its_bounds():
    assert Options().scope_unmatched_share == 0.5
    with pytest.raises(ConfigurationError, match="scope_unmatched_share"):
        Options.build({"scope_unmatched_share": 1.5})


def test_a_yes_reads_no_value(shop_engine, monkeypatch):
    reads = recorded_queries(monkeypatch)
    model = ScriptedChatModel(lambda request: "YES" if request.purpose == "scope" else fenced(BRAZIL))
    _, report, _ = ask(shop_engine, NOT_IN_DATA, model, candidates=1, scope_check=True)
    assert report.scope is not None and report.scope.said == "yes" and report.scope.words == []
    assert not any("DISTINCT" in sql for sql in reads)


# ------------------------------------------------------------------------------------ bounded reads (SQLite)


@pytest.fixture
def shop(engine_factory) -> sa.Engine:
    from backends import load_shop

    return load_shop(engine_factory("sqlite"))


def test_values_are_read_by_bounded_distinct_scans_until_every_word_matches(shop, monkeypatch):
    reads = recorded_queries(monkeypatch)
    ask(shop, IN_DATA, saying_no(), candidates=1, scope_check=True)
    scans = [sql for sql in reads if "SELECT DISTINCT v" in sql]
    # customers.name holds no "brazil", customers.country does: the reads stop there
    scan = "SELECT DISTINCT v FROM (SELECT {} AS v FROM customers LIMIT 10000) AS s LIMIT " + str(VALUE_DISTINCT)
    assert scans == [scan.format("name"), scan.format("country")]


def test_a_failed_read_keeps_the_answer(shop, monkeypatch):
    run_query = Database.run_query

    def failing(self, sql, **kwargs):
        if "SELECT DISTINCT v" in sql:
            raise QueryError("the read failed")
        return run_query(self, sql, **kwargs)

    monkeypatch.setattr(Database, "run_query", failing)
    rows, report, _ = ask(shop, IN_DATA, saying_no(), candidates=1, scope_check=True)
    scope = report.scope  # brazil is found in no read: it might be in one that failed
    assert len(rows) == 2 and scope.unmatched == ["brazil"] and not scope.complete and not scope.ended
    assert any("the stored values could not all be read" in note for note in report.notes)


def test_the_cap_on_columns_read_keeps_the_answer(shop, monkeypatch):
    import verifiedsql.stages.scope_terms as scope_terms

    monkeypatch.setattr(scope_terms, "VALUE_COLUMNS", 1)  # customers.name only: brazil is in customers.country
    rows, report, _ = ask(shop, IN_DATA, saying_no(), candidates=1, scope_check=True)
    assert len(rows) == 2 and not report.scope.complete and not report.scope.ended
    with pytest.raises(NoDataError):  # every word matches a name: no value is read, and a share of 0 takes the NO
        ask(shop, "Which customers are there?", saying_no(), candidates=1, scope_check=True,
            scope_unmatched_share=0.0)


def test_the_words_are_not_looked_up_without_a_no(shop):
    def script(request: ChatRequest) -> str:
        return "Perhaps." if request.purpose == "scope" else fenced(BRAZIL)

    rows, report, _ = ask(shop, NOT_IN_DATA, ScriptedChatModel(script), candidates=1, scope_check=True)
    assert len(rows) == 2 and report.scope is not None and report.scope.said == "unclear"


# ------------------------------------------------------------------------------ the fit (bench scope-fit)


def test_the_fit_takes_the_lowest_share_that_refuses_no_right_answer_on_the_fit_half():
    from verifiedsql.bench.scope_fit import ALONE, WITHOUT, fit_share
    from verifiedsql.bench.tiers import halves

    fit_ids, _ = halves(range(1, 9))
    shares = {i: (0.4 if i in fit_ids else 0.3) for i in range(1, 9)}  # the NO's share of unmatched words
    spider = {
        ALONE: {i: {"id": i, "scope": {"ended": True, "unmatched_share": shares[i]}} for i in range(1, 9)},
        WITHOUT: {i: {"id": i, "correct": i in fit_ids} for i in range(1, 9)},  # right on the fit half only
    }
    out_of_scope = {ALONE: {1: {"outcome": "no-data", "scope": {"ended": True, "unmatched_share": 1.0}},
                            2: {"outcome": "no-data"},  # a rule ended it: counted at every share
                            3: {"outcome": "no-data", "scope": {"ended": True, "unmatched_share": 0.25}},
                            4: {"outcome": "doubtful"}}}
    fitted, rows = fit_share(spider, out_of_scope)
    assert fitted == 0.5  # 1/3 would refuse the fit half's right answers (share 0.4)
    by_share = {round(row.share, 2): row for row in rows}
    assert by_share[0.33].fit_right_refused == 4 and by_share[0.5].fit_refused == 0
    assert by_share[0.25].report_refused == 4 and by_share[0.33].report_refused == 0
    assert [by_share[s].out_of_scope_no_data for s in (0.0, 0.25, 0.33, 1.0)] == [3, 3, 2, 2]
