"""Evidence for the chosen answer and the confidence tier it supports, and ``require=`` on every front end:
a scripted model on real engines."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from fakes import ScriptedChatModel, ask, by_seed, fenced

import verifiedsql
import verifiedsql.dbapi
from verifiedsql.bench.tiers import fit, unopposed_by_agreement, verified_by_agreement
from verifiedsql.errors import ConfigurationError, NoDataError, UnverifiedAnswerError
from verifiedsql.report import Evidence
from verifiedsql.stages.evidence import TierRule

BRAZIL = "SELECT name FROM customers WHERE country = 'Brazil' ORDER BY name"
NOBODY = "SELECT name FROM customers WHERE country = 'Atlantis'"
NULL_MAX = "SELECT MAX(amount) FROM orders WHERE status = 'lost'"
CONSTANT = "SELECT 'Bonjour' AS greeting"
OTHER = "SELECT name FROM customers WHERE country = 'USA' ORDER BY name"


def verdicts(report) -> dict[str, str]:
    return {e.check: e.verdict for e in report.evidence}


def test_a_unanimous_answer_with_rows_is_verified(shop_engine):
    rows, report, _ = ask(shop_engine, "Who are the customers from Brazil?", lambda r: fenced(BRAZIL))
    assert len(rows) == 2 and report.vote == "unanimous"
    assert report.confidence == "verified" and report.verified and report.at_least("probable")
    assert verdicts(report) == {"vote": "for", "literals": "for"}  # 'Brazil' is stored as written
    assert "5 of 5 candidates" in report.evidence[0].detail


def test_a_value_the_question_does_not_name_keeps_an_answer_below_verified(shop_engine):
    # unanimous, stored as written, rows returned: only the wording says the user never gave 'Brazil'
    rows, report, _ = ask(shop_engine, "Which customers come from the largest country of South America?",
                          lambda r: fenced(BRAZIL))
    assert len(rows) == 2 and report.vote == "unanimous"
    assert report.confidence == "probable" and not report.verified
    assert verdicts(report)["wording"] == "against"
    assert "'Brazil', which the question does not name" in next(e.detail for e in report.evidence
                                                                if e.check == "wording")


@pytest.mark.parametrize(("value", "question", "named"), [
    ("Brazil", "Who are the customers from brazil?", True),
    ("European", "Which countries are in Europe?", True),  # a shared stem
    ("Amenity", "Which properties have amenities?", True),
    ("France", "Which cars are French?", False),  # no lexicon of nationalities
    ("cat", "Which cars are there?", False),
    ("United Airlines", 'Flights of the airline "United Airlines"?', True),
    ("Two Year Truce", "In which year did the Second World War end?", False),  # one word of three
    ("T", "Which languages are official?", False),
    ("2020-01-01", "Orders of the first day of 2020?", True),  # no letter: checked elsewhere
])
def test_which_values_a_question_names(value, question, named):
    from verifiedsql.stages.common.terms import named_in
    assert named_in(value, question) is named


def test_an_answer_made_of_constants_is_never_returned(shop_engine):
    with pytest.raises(NoDataError) as info:  # what it says comes from the model, not from the data
        ask(shop_engine, "How do you say hello in French?", lambda r: fenced(CONSTANT))
    report = info.value.report
    assert report.sql == CONSTANT and report.vote == "unanimous"
    assert report.confidence == "unverified" and verdicts(report)["tables"] == "against"


def test_an_empty_unanimous_result_is_doubtful(shop_engine_sqlite):
    rows, report, _ = ask(shop_engine_sqlite, "Customers from Atlantis?", lambda r: fenced(NOBODY))
    assert rows == [] and report.vote == "unanimous"
    assert report.confidence == "doubtful" and verdicts(report)["result"] == "against"


def test_a_null_aggregate_is_doubtful(shop_engine_sqlite):
    rows, report, _ = ask(shop_engine_sqlite, "Largest lost order?", lambda r: fenced(NULL_MAX))
    assert rows == [(None,)] and report.confidence == "doubtful"
    assert any(e.check == "result" and "NULL" in e.detail for e in report.evidence)


def test_a_majority_is_probable_and_a_tie_doubtful(shop_engine_sqlite):
    _, majority, _ = ask(shop_engine_sqlite, "Customers from Brazil?",
                         by_seed({0: BRAZIL, 1: BRAZIL, 2: BRAZIL, 3: OTHER, 4: OTHER}))
    assert majority.vote == "majority" and majority.confidence == "probable"
    _, tie, _ = ask(shop_engine_sqlite, "Customers from Brazil?", by_seed({0: BRAZIL, 1: OTHER}), candidates=2)
    assert tie.vote == "unverified" and tie.confidence == "doubtful" and verdicts(tie)["vote"] == "against"


def test_the_vote_weighs_evidence_against_a_result(shop_engine):
    # three candidates compare with a value the question never gave and find nobody; two find the customers
    script = by_seed({0: NOBODY, 1: NOBODY, 2: NOBODY, 3: BRAZIL, 4: BRAZIL})
    rows, report, _ = ask(shop_engine, "Customers from Brazil?", script)
    assert len(rows) == 2 and report.sql == BRAZIL
    assert report.vote == "unverified" and "a larger cluster's result has evidence against it" in report.reason
    assert report.confidence == "doubtful"  # two of five: the vote itself is still against it
    rows, report, _ = ask(shop_engine, "Customers from Brazil?", script, weigh_evidence=False)
    assert rows == [] and report.sql == NOBODY and report.vote == "majority"


def test_a_doubted_result_still_wins_by_two_votes(shop_engine_sqlite):
    # 'USA' is not in the question, but four of five agree on it: a lead of two or more outweighs the doubt
    script = by_seed({0: OTHER, 1: OTHER, 2: OTHER, 3: OTHER, 4: BRAZIL})
    _, report, _ = ask(shop_engine_sqlite, "Customers from Brazil?", script)
    assert report.sql == OTHER and report.vote == "majority"
    assert verdicts(report)["wording"] == "against" and report.confidence == "probable"


def test_a_single_candidate_has_no_vote_to_show(shop_engine_sqlite):
    _, report, _ = ask(shop_engine_sqlite, "Customers from Brazil?", lambda r: fenced(BRAZIL), candidates=1)
    assert verdicts(report)["vote"] == "neutral" and report.confidence == "doubtful"


def test_failed_candidates_count_against_the_vote_share(shop_engine_sqlite):
    script = by_seed({0: BRAZIL, 1: BRAZIL, 2: "SELECT nme FROM customers", 3: "SELECT nme FROM customers",
                      4: "SELECT nme FROM customers"})
    _, report, _ = ask(shop_engine_sqlite, "Customers from Brazil?", script, max_refinements=0)
    assert len(report.clusters) == 1  # the two that ran agree, but they are 2 of 5
    assert verdicts(report)["vote"] == "against" and report.confidence == "doubtful"


def test_the_tier_rule_is_ordered():
    rule = TierRule(verified_share=0.8, verified_agree=4)
    vote = Evidence("vote", "for", "")
    assert rule.tier_of([vote], 0.8, 4) == "verified"
    assert rule.tier_of([vote], 0.6, 3) == "probable"
    assert rule.tier_of([vote], 1.0, 3) == "probable"  # three of three: too few in agreement
    assert rule.tier_of([vote, Evidence("result", "against", "")], 1.0, 5) == "doubtful"
    assert rule.tier_of([vote, Evidence("time", "against", "")], 1.0, 5) == "unverified"
    assert rule.tier_of([Evidence("vote", "neutral", ""), Evidence("dpc", "for", "")], 1.0, 1) == "probable"


def test_the_fit_chooses_how_many_must_agree():
    def record(i: int, drawn: int, correct: bool) -> dict:
        return {"id": i, "status": "answered", "vote_share": 1.0, "evidence": [["vote", "for"]],
                "candidates": [{}] * drawn, "correct": correct}

    # three of three are right only half the time, five of five always: the fit asks for five
    records = [record(i, 3, i % 2 == 0) for i in range(10)] + [record(10 + i, 5, True) for i in range(10)]
    rule = fit(records)
    assert rule.verified_agree == 5 and rule.verified_share == 1.0
    assert verified_by_agreement(records, rule) == {5: (10, 10)}
    assert verified_by_agreement(records, TierRule(1.0, 3)) == {3: (10, 5), 5: (10, 10)}


def test_the_unopposed_answers_bound_every_threshold():
    def record(i: int, agree: int, evidence: list[list[str]], correct: bool) -> dict:
        return {"id": i, "status": "answered", "vote_share": agree / 5, "evidence": [["vote", "for"], *evidence],
                "candidates": [{}] * 5, "correct": correct}

    records = [record(0, 5, [], True), record(1, 5, [["result", "against"]], True), record(2, 4, [], False),
               record(3, 3, [["literals", "for"]], True), record(4, 5, [["refinement", "neutral"]], False),
               {"id": 5, "status": "no_answer", "vote_share": None, "candidates": [], "correct": False},
               {**record(6, 2, [], True), "evidence": [["vote", "against"]]}]
    # the empty result (1), the unanswered question (5) and the minority answer (6) are left out
    assert unopposed_by_agreement(records) == {3: (1, 1), 4: (1, 0), 5: (2, 1)}
    for share, agree in [(1.0, 5), (0.8, 4), (0.6, 3)]:
        verified = verified_by_agreement(records, TierRule(share, agree))
        assert all(verified[k] == unopposed_by_agreement(records)[k] for k in verified)


# ------------------------------------------------------------------------------------------ require=


def test_require_raises_with_the_best_answer_on_the_engine(shop_engine_sqlite):
    model = ScriptedChatModel(by_seed({0: BRAZIL, 1: BRAZIL, 2: BRAZIL, 3: OTHER, 4: OTHER}))
    verified = verifiedsql.create_engine(shop_engine_sqlite.url, llm=model, require="verified")
    try:
        with verified.connect() as conn, pytest.raises(UnverifiedAnswerError) as info:
            conn.execute(verifiedsql.ask("Customers from Brazil?"))
    finally:
        verified.dispose()
    error = info.value
    assert error.report.confidence == "probable" and "below require='verified'" in str(error)
    assert error.columns == ["name"] and len(error.rows) == 2 and error.report.sql == BRAZIL


def test_require_is_met_by_a_verified_answer(shop_engine_sqlite):
    rows, report, _ = ask(shop_engine_sqlite, "Customers from Brazil?", lambda r: fenced(BRAZIL), require="verified")
    assert len(rows) == 2 and report.verified


def test_require_through_the_plugin(shop_engine_sqlite):
    model = ScriptedChatModel(lambda r: fenced(NOBODY))
    engine = sa.create_engine(shop_engine_sqlite.url, plugins=["verifiedsql"],
                              verifiedsql={"require": "probable"}, verifiedsql_llm=model)
    try:
        with engine.connect() as conn, pytest.raises(UnverifiedAnswerError) as info:
            conn.execute(verifiedsql.ask("Customers from Atlantis?"))
    finally:
        engine.dispose()
    assert info.value.rows == [] and info.value.report.confidence == "doubtful"


def test_require_through_the_dbapi(shop_engine_sqlite):
    import sqlite3

    raw = sqlite3.connect(shop_engine_sqlite.url.database)
    conn = verifiedsql.dbapi.connect(raw, llm=ScriptedChatModel(lambda r: fenced(NOBODY)), require="probable")
    try:
        with pytest.raises(UnverifiedAnswerError) as info:
            conn.cursor().execute("Customers from Atlantis?")
    finally:
        conn.close()
    assert info.value.rows == [] and info.value.report.confidence == "doubtful"


def test_an_unknown_tier_is_a_configuration_error(shop_engine_sqlite):
    with pytest.raises(ConfigurationError, match="require='certain'"):
        verifiedsql.create_engine(shop_engine_sqlite.url, llm=ScriptedChatModel([]), require="certain")


@pytest.fixture
def shop_engine_sqlite(tmp_path):
    from backends import load_shop

    engine = load_shop(sa.create_engine(f"sqlite:///{tmp_path / 'shop.db'}"))
    yield engine
    engine.dispose()


# ----------------------------------------------------------------- a LIMIT that cuts through tied rows (ties)

TOP_COUNTRY = "SELECT country FROM customers GROUP BY country ORDER BY COUNT(*) DESC LIMIT 1"  # USA: 3, alone
TOP_TWO_COUNTRIES = {  # USA 3, then Brazil and Germany with 2 each: the second row is one of a tie
    "aggregate": "SELECT country FROM customers GROUP BY country ORDER BY COUNT(*) DESC LIMIT 2",
    "alias": "SELECT country, COUNT(*) AS customers_there FROM customers GROUP BY country "
             "ORDER BY customers_there DESC LIMIT 2",
    "position": "SELECT country, COUNT(*) FROM customers GROUP BY country ORDER BY 2 DESC LIMIT 2",
}
BUSIEST_CUSTOMER = ("SELECT c.name FROM customers AS c JOIN orders AS o ON o.customer_id = c.id "
                    "GROUP BY c.id, c.name ORDER BY COUNT(*) DESC LIMIT 1")  # customers 1 to 5: 3 orders each


def test_a_limit_over_a_unique_top_row_is_verified(shop_engine):
    rows, report, _ = ask(shop_engine, "Which country has the most customers?", lambda r: fenced(TOP_COUNTRY))
    assert [tuple(r) for r in rows] == [("USA",)] and report.confidence == "verified"
    assert "ties" not in verdicts(report)


@pytest.mark.parametrize("form", sorted(TOP_TWO_COUNTRIES))
def test_a_limit_that_cuts_through_tied_rows_is_not_verified(shop_engine, form):
    rows, report, _ = ask(shop_engine, "Which two countries have the most customers?",
                          lambda r: fenced(TOP_TWO_COUNTRIES[form]))
    assert len(rows) == 2 and report.vote == "unanimous"
    assert verdicts(report)["ties"] == "against" and report.confidence == "probable"
    assert "row 3 ties with row 2" in next(e.detail for e in report.evidence if e.check == "ties")


def test_the_top_row_of_a_tie_is_the_engines_choice(shop_engine):
    rows, report, _ = ask(shop_engine, "Which customer placed the most orders?", lambda r: fenced(BUSIEST_CUSTOMER))
    assert len(rows) == 1 and verdicts(report)["ties"] == "against" and not report.verified


def test_a_count_over_no_rows_is_doubtful(shop_engine_sqlite):
    rows, report, _ = ask(shop_engine_sqlite, "How many customers from Atlantis?",
                          lambda r: fenced("SELECT COUNT(*) FROM customers WHERE country = 'Atlantis'"))
    assert [tuple(r) for r in rows] == [(0,)] and report.confidence == "doubtful"
    assert any(e.check == "result" and "zero" in e.detail for e in report.evidence)
    _, counted, _ = ask(shop_engine_sqlite, "How many customers from Brazil?",
                        lambda r: fenced("SELECT COUNT(*) FROM customers WHERE country = 'Brazil'"))
    assert counted.confidence == "verified"


@pytest.mark.parametrize(("sql", "probe"), [
    ("SELECT a FROM t ORDER BY b DESC LIMIT 3", "SELECT a, b AS tie_key_0 FROM t ORDER BY b DESC LIMIT 4"),
    ("SELECT a, COUNT(*) AS n FROM t GROUP BY a ORDER BY n DESC, a LIMIT 1",
     "SELECT a, COUNT(*) AS n, COUNT(*) AS tie_key_0, a AS tie_key_1 FROM t GROUP BY a ORDER BY n DESC, a LIMIT 2"),
    ("SELECT a, MAX(b) FROM t GROUP BY a ORDER BY 2 LIMIT 1",
     "SELECT a, MAX(b), MAX(b) AS tie_key_0 FROM t GROUP BY a ORDER BY 2 LIMIT 2"),
])
def test_the_tie_probe_reads_the_ordering_keys(sql, probe):
    import sqlglot

    from verifiedsql.stages.ties import limit_of, tie_probe
    tree = sqlglot.parse_one(sql)
    limit = limit_of(tree)
    assert limit is not None and tie_probe(tree, limit).sql() == probe


@pytest.mark.parametrize("sql", ["SELECT a FROM t LIMIT 1", "SELECT DISTINCT a FROM t ORDER BY a LIMIT 1",
                                 "SELECT a FROM t ORDER BY a", "SELECT a FROM t UNION SELECT b FROM u LIMIT 1"])
def test_only_an_ordered_limit_is_checked_for_ties(sql):
    import sqlglot

    from verifiedsql.stages.ties import limit_of
    assert limit_of(sqlglot.parse_one(sql)) is None


TODAY = "SELECT COUNT(*) FROM customers WHERE joined < DATE('now', '-400 days')"
GIVEN_DAY = "SELECT COUNT(*) FROM customers WHERE joined < DATE('2021-01-01', '-100 days')"


def test_an_answer_on_today_s_date_the_question_does_not_ask_about_is_doubted(shop_engine_sqlite):
    # three candidates read today's date, two the day the question means: today's counts as less in the vote
    question = "How many customers joined over 100 days before the start of 2021?"
    rows, report, _ = ask(shop_engine_sqlite, question,
                          by_seed({0: TODAY, 1: TODAY, 2: TODAY, 3: GIVEN_DAY, 4: GIVEN_DAY}))
    assert report.sql == GIVEN_DAY and "today" not in verdicts(report)
    rows, report, _ = ask(shop_engine_sqlite, question, lambda r: fenced(TODAY))
    assert verdicts(report)["today"] == "against" and report.confidence == "probable"


def test_today_s_date_is_repaired_to_the_one_date_the_question_gives(shop_engine_sqlite):
    rows, report, _ = ask(shop_engine_sqlite, "How many customers joined over 400 days before 2021-01-01?",
                          lambda r: fenced(TODAY))
    assert "DATE('2021-01-01', '-400 days')" in report.sql and "today" not in verdicts(report)
    assert any("the question's date" in fix for c in report.candidates for fix in c.fixes)


def test_today_s_date_is_no_doubt_where_the_question_asks_about_today(shop_engine_sqlite):
    rows, report, _ = ask(shop_engine_sqlite, "How many customers joined more than 400 days ago?",
                          lambda r: fenced(TODAY))
    assert "today" not in verdicts(report) and report.confidence == "verified"


@pytest.mark.parametrize("sql", ["SELECT COUNT(*) FROM customers WHERE joined > 2020",
                                 "SELECT COUNT(*) FROM customers WHERE joined > STRFTIME('%Y', '2020-06-01') + 1",
                                 "SELECT COUNT(*) FROM customers WHERE joined BETWEEN 2020 AND '2021-01-01'"])
def test_a_date_compared_with_a_number_on_sqlite_is_doubted(shop_engine_sqlite, sql):
    right = "SELECT COUNT(*) FROM customers WHERE joined > '2021-01-01'"
    rows, report, _ = ask(shop_engine_sqlite, "How many customers joined after 2021?",
                          by_seed({0: sql, 1: sql, 2: sql, 3: right, 4: right}))
    assert report.sql == right
    rows, report, _ = ask(shop_engine_sqlite, "How many customers joined after 2021?", lambda r: fenced(sql))
    assert verdicts(report)["dates"] == "against" and report.confidence == "probable"


def test_a_date_compared_with_a_date_or_a_year_with_a_number_is_no_doubt(shop_engine_sqlite):
    for sql in ("SELECT COUNT(*) FROM customers WHERE joined > DATE('2020-06-01', '+10 days')",
                "SELECT COUNT(*) FROM customers WHERE CAST(STRFTIME('%Y', joined) AS INTEGER) > 2020"):
        rows, report, _ = ask(shop_engine_sqlite, "How many customers joined after 2020?", lambda r: fenced(sql))
        assert "dates" not in verdicts(report), sql


def lone_and_outvoted(engine, question: str, doubted: str, right: str):
    """Three candidates give ``doubted``, two ``right``: the doubt lets the two win. Returns the winners' rows
    and report, then the report of ``doubted`` given alone."""
    rows, report, _ = ask(engine, question, by_seed({0: doubted, 1: doubted, 2: doubted, 3: right, 4: right}))
    assert report.sql == right
    lone_rows, lone, _ = ask(engine, question, lambda r: fenced(doubted))
    return rows, report, lone_rows, lone


DAY_OF_YEAR = "SELECT STRFTIME('%j', MAX(joined)) FROM customers"
DAYS_BETWEEN = "SELECT JULIANDAY(MAX(joined)) - JULIANDAY('2020-01-01') FROM customers"


def test_a_day_of_the_year_read_as_a_number_of_days_is_doubted(shop_engine_sqlite):
    # the last customer joined on 2020-11-29: its day of the year is 334, the days since 2020-01-01 are 333
    rows, report, _, lone = lone_and_outvoted(shop_engine_sqlite, "How many days after 2020-01-01 did the last "
                                              "customer join?", DAY_OF_YEAR, DAYS_BETWEEN)
    assert rows == [(333.0,)] and "days" not in verdicts(report)
    assert verdicts(lone)["days"] == "against" and lone.confidence == "probable"
    assert "is a day of the year or month" in next(e.detail for e in lone.evidence if e.check == "days")


def test_a_day_of_the_year_is_no_doubt_where_the_question_asks_for_one(shop_engine_sqlite):
    rows, report, _ = ask(shop_engine_sqlite, "On which day of the year did the last customer join?",
                          lambda r: fenced(DAY_OF_YEAR))
    assert "days" not in verdicts(report) and report.confidence == "verified"


@pytest.mark.parametrize(("sql", "dialect", "doubted"), [
    ("SELECT EXTRACT(DAY FROM MAX(joined)) - EXTRACT(DAY FROM MIN(joined)) FROM customers", "postgres", True),
    ("SELECT EXTRACT(DOY FROM MAX(joined)) FROM customers", "postgres", True),
    ("SELECT DAYOFYEAR(MAX(joined)) FROM customers", "duckdb", True),
    ("SELECT AVG(STRFTIME('%d', joined)) FROM customers", "sqlite", True),
    ("SELECT EXTRACT(DAY FROM MAX(joined) - MIN(joined)) FROM customers", "postgres", False),  # of an interval
    ("SELECT STRFTIME('%J', MAX(joined)) - STRFTIME('%J', MIN(joined)) FROM customers", "sqlite", False),
    # a filter on the day of the month, with the question's number of days (the question below gives 7)
    ("SELECT COUNT(*) FROM customers WHERE EXTRACT(DAY FROM joined) > 7", "postgres", True),
    ("SELECT COUNT(*) FROM customers WHERE 7 <= (STRFTIME('%d', joined))", "sqlite", True),
    ("SELECT COUNT(*) FROM customers WHERE EXTRACT(DAY FROM joined) > 10", "postgres", False),
    ("SELECT COUNT(*) FROM customers WHERE EXTRACT(DAY FROM joined) = 7", "postgres", False),
    ("SELECT COUNT(*) FROM customers WHERE STRFTIME('%d', joined) = '15'", "sqlite", False),  # a filter
    ("SELECT STRFTIME('%j', JULIANDAY(MAX(joined)) - JULIANDAY(MIN(joined))) FROM customers", "sqlite", True),
    ("SELECT EXTRACT(DAY FROM MAX(country)) FROM customers", "postgres", False),  # not a date
])
def test_which_day_fields_are_read_as_a_number_of_days(sql, dialect, doubted):
    import sqlglot

    from verifiedsql.db.schema import Column, Schema, Table
    from verifiedsql.stages.common.catalog import Catalog
    from verifiedsql.stages.shape_checks import calendar_days
    customers = Table("customers", (Column("id", "INTEGER", primary_key=True), Column("country", "TEXT"),
                                    Column("joined", "DATE")))
    found = calendar_days(sqlglot.parse_one(sql, read=dialect), "How many customers joined more than 7 days after "
                          "the first one?", Catalog(Schema((customers,)), "sqlite"), dialect)
    assert bool(found) is doubted


REPEATED = "SELECT COUNT(*) FROM customers AS c JOIN orders AS o ON o.customer_id = c.id WHERE c.country = 'Brazil'"
ONCE = "SELECT COUNT(*) FROM customers WHERE country = 'Brazil'"


def test_a_join_that_only_repeats_rows_is_doubted(shop_engine):
    # the Brazilian customers' orders are counted, not the customers: orders is read for nothing but its join
    rows, report, _, lone = lone_and_outvoted(shop_engine, "How many customers are from Brazil?", REPEATED, ONCE)
    assert rows == [(2,)] and "joins" not in verdicts(report)
    assert verdicts(lone)["joins"] == "against" and lone.confidence == "probable"
    assert "orders is joined on customer_id" in next(e.detail for e in lone.evidence if e.check == "joins")


@pytest.mark.parametrize(("question", "sql"), [
    ("How many orders do the customers from Brazil have?", REPEATED),  # the question names the joined table
    ("How many customers from Brazil ordered?", REPEATED.replace("COUNT(*)", "COUNT(DISTINCT c.id)")),
    ("What did the customers from Brazil order?", "SELECT o.amount FROM orders AS o JOIN customers AS c ON "
                                                  "c.id = o.customer_id WHERE c.country = 'Brazil'"),  # a lookup
    ("How many customers from Brazil ordered?", "SELECT COUNT(*) FROM customers AS c JOIN orders AS o ON "
                                                "o.customer_id = c.id WHERE o.status IS NOT NULL AND "
                                                "c.country = 'Brazil'"),  # orders read in the WHERE
])
def test_which_joins_are_no_doubt(shop_engine_sqlite, question, sql):
    rows, report, _ = ask(shop_engine_sqlite, question, lambda r: fenced(sql))
    assert "joins" not in verdicts(report)


def test_a_bridge_table_read_only_in_its_joins_is_no_doubt():
    import sqlglot

    from verifiedsql.db.schema import Column, Schema, Table
    from verifiedsql.stages.common.catalog import Catalog
    from verifiedsql.stages.shape_checks import repeating_joins
    tables = tuple(Table(name, (Column("id", "INTEGER", primary_key=True), *(Column(c, "INTEGER") for c in cs)))
                   for name, cs in (("teacher", ("name",)), ("course", ("title",)),
                                    ("course_arrange", ("teacher_id", "course_id"))))
    catalog = Catalog(Schema(tables), "sqlite")
    bridge = ("SELECT t.name FROM course AS c JOIN course_arrange AS a ON c.id = a.course_id JOIN teacher AS t "
              "ON a.teacher_id = t.id WHERE c.title = 'Math'")
    leaf = "SELECT t.name FROM teacher AS t JOIN course_arrange AS a ON a.teacher_id = t.id"
    question = "Who teaches math?"
    assert repeating_joins(sqlglot.parse_one(bridge), question, catalog) == []
    assert repeating_joins(sqlglot.parse_one(leaf), question, catalog)[0].check == "joins"
    assert repeating_joins(sqlglot.parse_one(leaf), "Which teachers have a course arranged?", catalog) == []


CUSTOMERS_ONLY = "SELECT COUNT(*) FROM customers WHERE country = 'Brazil'"
THEIR_ORDERS = ("SELECT COUNT(*) FROM orders AS o JOIN customers AS c ON c.id = o.customer_id "
                "WHERE c.country = 'Brazil'")


def test_a_count_that_reads_no_table_of_the_counted_things_is_doubted(shop_engine):
    _, report, _, lone = lone_and_outvoted(shop_engine, "How many orders were placed by customers from Brazil?",
                                           CUSTOMERS_ONLY, THEIR_ORDERS)
    assert "counted" not in verdicts(report)
    assert verdicts(lone)["counted"] == "against" and lone.confidence == "probable"
    assert "counts orders, and the SQL reads no orders table" in next(e.detail for e in lone.evidence
                                                                     if e.check == "counted")


def test_a_count_through_a_column_named_for_the_counted_things_is_no_doubt(shop_engine_sqlite):
    rows, report, _ = ask(shop_engine_sqlite, "How many different customers have orders?",
                          lambda r: fenced("SELECT COUNT(DISTINCT customer_id) FROM orders"))
    assert "counted" not in verdicts(report) and report.confidence == "verified"


BACKWARDS = "SELECT JULIANDAY(MIN(joined)) - JULIANDAY(MAX(joined)) FROM customers"
FORWARDS = "SELECT JULIANDAY(MAX(joined)) - JULIANDAY(MIN(joined)) FROM customers"


def test_a_negative_number_of_days_is_doubted(shop_engine_sqlite):
    rows, _, lone_rows, lone = lone_and_outvoted(shop_engine_sqlite, "How many days passed between the first and "
                                                 "the last customer joining?", BACKWARDS, FORWARDS)
    assert rows == [(333.0,)] and lone_rows == [(-333.0,)] and lone.confidence == "doubtful"
    assert any(e.check == "result" and "negative" in e.detail for e in lone.evidence)
    rows, report, _ = ask(shop_engine_sqlite, "What is the earliest minus the latest joining date, as a number?",
                          lambda r: fenced(BACKWARDS))
    assert report.confidence == "verified"  # the question asks for no time between dates


PER_CUSTOMER = "SELECT SUM(amount) FROM orders GROUP BY customer_id"
TOTAL = "SELECT SUM(amount) FROM orders"


AVERAGE_PER_CUSTOMER = "SELECT AVG(amount) FROM orders GROUP BY customer_id"


def test_a_value_per_group_where_the_question_asks_for_one_is_doubted(shop_engine):
    # an average per group is no part of the average over the rows: the repair leaves it, the vote doubts it
    _, report, _, lone = lone_and_outvoted(shop_engine, "What is the average amount of all orders?",
                                           AVERAGE_PER_CUSTOMER, "SELECT AVG(amount) FROM orders")
    assert "grouping" not in verdicts(report)
    assert verdicts(lone)["grouping"] == "against" and lone.confidence == "probable"
    assert "one value for each customer_id (10 rows)" in next(e.detail for e in lone.evidence
                                                              if e.check == "grouping")


def test_a_total_split_into_unlabelled_groups_where_one_is_asked_is_repaired_to_the_total(shop_engine):
    rows, report, _ = ask(shop_engine, "What is the total amount of all orders?", lambda r: fenced(PER_CUSTOMER))
    total, _, _ = ask(shop_engine, "What is the total amount of all orders?", lambda r: fenced(TOTAL))
    assert rows == total and len(rows) == 1 and "GROUP BY" not in report.sql.upper()
    assert any("one value" in fix for candidate in report.candidates for fix in candidate.fixes)
    assert "grouping" not in verdicts(report)


def test_rows_of_no_aggregate_where_the_question_asks_for_an_average_are_doubted(shop_engine):
    _, report, _, lone = lone_and_outvoted(shop_engine, "On average, how large is an order?",
                                           "SELECT amount FROM orders", "SELECT AVG(amount) FROM orders")
    assert "grouping" not in verdicts(report)
    assert verdicts(lone)["grouping"] == "against" and lone.confidence == "probable"
    assert "no average or total" in next(e.detail for e in lone.evidence if e.check == "grouping")


@pytest.mark.parametrize(("question", "sql"), [
    ("What is the total amount for each customer?", PER_CUSTOMER),  # the question asks for one value per group
    ("Find the amounts of the orders above the average.",  # the average is a subquery's
     "SELECT amount FROM orders WHERE amount > (SELECT AVG(amount) FROM orders)"),
    ("How large is the order total of customer 1?", "SELECT amount FROM orders WHERE customer_id = 1 LIMIT 1"),
    ("What is the total amount of all orders?", "SELECT customer_id, SUM(amount) FROM orders GROUP BY customer_id"),
    ("Which customers ordered more than 500 in all?",
     "SELECT customer_id FROM orders GROUP BY customer_id HAVING SUM(amount) > 500"),
])
def test_which_groupings_are_no_doubt(shop_engine_sqlite, question, sql):
    rows, report, _ = ask(shop_engine_sqlite, question, lambda r: fenced(sql))
    assert "grouping" not in verdicts(report)
