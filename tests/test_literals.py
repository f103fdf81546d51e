"""Literal checks (``check_literals``, ``verifiedsql/stages/literals.py``): each string or date literal that a
candidate compares with a column is looked up in that column, on real engines with a scripted model.

Found as written: evidence for. A case, whitespace or near variant stored: the SQL is repaired and run again,
recorded as a repair. Stored in a table linked by a key (Spider's ``flights.Airline = 'United Airlines'``):
evidence against, a hint, and the comparison rewritten through the key. Stored nowhere: neutral. No prompt
changes, and every lookup goes through both safety layers with the literal quoted by sqlglot.
"""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa
from backends import DIALECTS
from fakes import ScriptedChatModel, ask, by_seed, context, fenced

from verifiedsql.bench.strategies import strategy_options
from verifiedsql.config import LLMSettings, Options
from verifiedsql.db.database import Database
from verifiedsql.report import Candidate, VerificationReport
from verifiedsql.stages.generate import CandidateRun, execute_candidate
from verifiedsql.stages.literals import MAX_LITERALS, MIN_LEFT_S, LiteralChecker

QUESTION = "A question whose answer compares a column with a value?"

# Spider's flight_2, in small: flights.Airline holds airline ids, the names are in airlines.Airline
FLIGHTS = [
    "CREATE TABLE airlines (uid INTEGER PRIMARY KEY, Airline TEXT, Abbreviation TEXT, Country TEXT)",
    "CREATE TABLE airports (City TEXT, AirportCode TEXT PRIMARY KEY, AirportName TEXT, Country TEXT)",
    "CREATE TABLE flights (Airline INTEGER, FlightNo INTEGER, SourceAirport TEXT, DestAirport TEXT, "
    "PRIMARY KEY (Airline, FlightNo), FOREIGN KEY (Airline) REFERENCES airlines(uid), "
    "FOREIGN KEY (SourceAirport) REFERENCES airports(AirportCode), "
    "FOREIGN KEY (DestAirport) REFERENCES airports(AirportCode))",
    "INSERT INTO airlines VALUES (1, 'United Airlines', 'UAL', 'USA'), (2, 'US Airways', 'USAir', 'USA'), "
    "(3, 'Delta Airlines', 'Delta', 'USA'), (4, 'Air France', 'AF', 'France')",
    "INSERT INTO airports VALUES ('Aberdeen', 'APG', 'Phillips AAF', ' USA'), "
    "('Abilene', 'ABI', 'Municipal', ' USA'), ('Paris', 'CDG', 'Charles de Gaulle', 'France')",
    "INSERT INTO flights VALUES (1, 28, 'APG', 'ABI'), (1, 29, 'ABI', 'APG'), (3, 44, 'APG', 'CDG'), "
    "(4, 7, 'CDG', 'APG'), (4, 8, 'CDG', 'ABI')",
]

# The same on every engine: fakesnow reflects no foreign keys, so the link is also a key by its name
LINKED = [
    "CREATE TABLE airlines (airline_id INTEGER PRIMARY KEY, name TEXT, country TEXT)",
    "CREATE TABLE flights (airline_id INTEGER REFERENCES airlines(airline_id), flight_no INTEGER, source TEXT)",
    "INSERT INTO airlines VALUES (1, 'United Airlines', 'USA'), (2, 'Delta Airlines', 'USA'), "
    "(3, 'Air France', 'France')",
    "INSERT INTO flights VALUES (1, 28, 'APG'), (1, 29, 'ABI'), (2, 44, 'APG'), (3, 7, 'CDG')",
]

ENGINES = list(DIALECTS)


def loaded(engine: sa.Engine, statements: list[str]) -> sa.Engine:
    with engine.begin() as conn:
        for statement in statements:
            conn.execute(sa.text(statement))
    return engine


@pytest.fixture
def flights(engine_factory) -> sa.Engine:
    return loaded(engine_factory("sqlite"), FLIGHTS)


@pytest.fixture
def statements(monkeypatch) -> list[str]:
    """Every statement run through ``Database.run_query``, in order."""
    seen: list[str] = []
    run_query = Database.run_query

    def recording(self, sql, **kwargs):
        seen.append(sql)
        return run_query(self, sql, **kwargs)

    monkeypatch.setattr(Database, "run_query", recording)
    return seen


def asked(engine: sa.Engine, sql: str, **options: Any) -> tuple[list[tuple[Any, ...]], VerificationReport,
                                                                  ScriptedChatModel]:
    """Ask with one greedy candidate whose SQL is ``sql``; a refinement request fails the test."""
    options.setdefault("candidates", 1)
    rows, report, model = ask(engine, QUESTION, ScriptedChatModel(lambda request: fenced(sql)), **options)
    assert set(model.purposes()) == {"generate"}
    return sorted(rows), report, model


def kept(engine: sa.Engine, sql: str) -> tuple[list[tuple[Any, ...]], VerificationReport, Candidate]:
    """``asked``, for SQL that must run as written (no attempt before it, no fix); gives its only candidate."""
    rows, report, _ = asked(engine, sql)
    candidate = report.candidates[0]
    assert report.sql == sql and candidate.attempts == [] and candidate.fixes == []
    return rows, report, candidate


def literal_evidence(report: VerificationReport) -> list[tuple[str, str]]:
    return [(e.verdict, e.detail) for e in report.evidence if e.check == "literals"]


def outcomes(candidate: Candidate) -> list[tuple[str, str, str]]:
    return [(c.literal, c.column, c.outcome) for c in candidate.literals]


# ------------------------------------------------------------------------------- found as written

def test_a_literal_stored_as_written_is_evidence_for(flights):
    rows, report, candidate = kept(flights, "SELECT COUNT(*) FROM airlines WHERE Country = 'USA'")
    assert rows == [(3,)] and outcomes(candidate) == [("USA", "airlines.Country", "found")]
    assert "repair" not in candidate.checks and candidate.literal_hints == ()
    assert literal_evidence(report) == [("for", "the one literal compared with a column is stored there as written")]


def test_like_without_a_wildcard_is_an_equality_and_with_one_is_skipped(flights):
    _, report, _ = asked(flights, "SELECT COUNT(*) FROM airlines WHERE Airline LIKE 'Air France' AND Abbreviation "
                                  "IN ('AF', 'UAL')")
    assert outcomes(report.candidates[0]) == [("Air France", "airlines.Airline", "found"),
                                              ("AF", "airlines.Abbreviation", "found"),
                                              ("UAL", "airlines.Abbreviation", "found")]
    assert literal_evidence(report)[0][1].startswith("all 3 literals")
    sql = "SELECT COUNT(*) FROM airlines WHERE Airline LIKE 'united%' OR Airline LIKE 'Delt_ Airlines'"
    rows, report, _ = asked(flights, sql)
    assert rows == [(2,)] and report.sql == sql
    assert report.candidates[0].literals == [] and literal_evidence(report) == []


# ------------------------------------------------------------------------------ stored variants

@pytest.mark.parametrize(("broken", "stored", "expected"), [
    ("SELECT COUNT(*) FROM airlines WHERE Airline = 'united airlines'", "'United Airlines'", [(1,)]),  # case
    ("SELECT City FROM airports WHERE Country = 'USA'", "' USA'", [("Aberdeen",), ("Abilene",)]),  # whitespace
    ("SELECT Airline FROM airlines WHERE 'Frence' = Country", "'France'", [("Air France",)]),  # a near miss
], ids=["case", "whitespace", "near"])
def test_a_stored_variant_repairs_the_literal(flights, broken, stored, expected):
    rows, report, _ = asked(flights, broken)
    candidate = report.candidates[0]
    assert rows == expected
    assert candidate.attempts == [broken] and report.sql == candidate.sql != broken and stored in report.sql
    assert len(candidate.fixes) == 1 and candidate.fixes[0].endswith(f"-> {stored} (the value stored in "
                                                                     f"{outcomes(candidate)[0][1]})")
    assert [c.outcome for c in candidate.literals] == ["repaired"]
    assert candidate.checks[-1] == "repair"
    assert [verdict for verdict, _ in literal_evidence(report)] == ["neutral"]
    assert "repair: candidate 0: " in report.summary()


def test_a_short_literal_is_not_matched_within_edits(flights):
    rows, report, _ = asked(flights, "SELECT COUNT(*) FROM airlines WHERE Country = 'USB'")
    assert rows == [(0,)] and report.candidates[0].fixes == []
    assert outcomes(report.candidates[0]) == [("USB", "airlines.Country", "absent")]


# ------------------------------------------------------------------------- held in a linked table

def test_a_name_compared_with_a_column_of_ids_is_evidence_against_and_is_rewritten(flights):
    broken = "SELECT COUNT(*) FROM flights WHERE Airline = 'United Airlines'"
    rows, report, model = asked(flights, broken, candidates=5)
    detail = ("'United Airlines' is not in flights.Airline; it is in airlines.Airline (reached by the foreign key "
              "flights.Airline -> airlines.uid)")
    assert rows == [(2,)]
    assert report.sql == ("SELECT COUNT(*) FROM flights WHERE Airline IN (SELECT uid FROM airlines WHERE "
                          "Airline = 'United Airlines')")
    candidate = report.candidates[0]
    assert candidate.attempts == [broken] and candidate.checks[-1] == "repair"
    assert candidate.fixes == [f"Airline = 'United Airlines' -> {report.sql.split('WHERE ', 1)[1]} ('United "
                               "Airlines' is in airlines.Airline, reached by the foreign key flights.Airline -> "
                               "airlines.uid)"]
    assert outcomes(candidate) == [("United Airlines", "flights.Airline", "elsewhere")]
    assert candidate.literal_hints == (detail,)
    assert literal_evidence(report) == [("against", detail)]
    # five candidates agree, but a check is against the answer: probable, not verified
    assert report.vote == "unanimous" and report.confidence == "probable"
    assert len(model.requests) == 5


def test_a_code_column_compared_with_a_city_is_rewritten_through_its_key(flights):
    broken = "SELECT T1.FlightNo FROM flights AS T1 WHERE T1.SourceAirport = 'Aberdeen' ORDER BY T1.FlightNo"
    rows, report, _ = asked(flights, broken)
    assert rows == [(28,), (44,)]
    assert "T1.SourceAirport IN (SELECT AirportCode FROM airports WHERE City = 'Aberdeen')" in report.sql
    assert literal_evidence(report)[0][0] == "against"
    assert "airports.City" in literal_evidence(report)[0][1]


def test_not_equal_becomes_not_in(flights):
    rows, report, _ = asked(flights, "SELECT COUNT(*) FROM flights WHERE Airline <> 'united airlines'")
    assert rows == [(3,)]
    assert "NOT Airline IN (SELECT uid FROM airlines WHERE Airline = 'United Airlines')" in report.sql
    assert "as 'United Airlines'" in report.candidates[0].literals[0].detail


def test_the_prompts_are_the_same_with_and_without_the_checks(flights):
    broken = "SELECT COUNT(*) FROM flights WHERE Airline = 'United Airlines'"
    _, on, with_checks = asked(flights, broken, candidates=3)
    _, off, without = asked(flights, broken, candidates=3, check_literals=False)
    assert [r.messages for r in with_checks.requests] == [r.messages for r in without.requests]
    assert off.sql == broken and off.candidates[0].literals == [] and literal_evidence(off) == []
    assert on.sql != broken


# --------------------------------------------------------------------------------- stored nowhere

def test_a_literal_stored_nowhere_is_neutral(flights):
    rows, report, candidate = kept(flights, "SELECT COUNT(*) FROM flights AS f JOIN airlines AS a ON f.Airline = "
                                            "a.uid WHERE a.Country = 'Atlantis'")
    assert rows == [(0,)] and outcomes(candidate) == [("Atlantis", "airlines.Country", "absent")]
    [(verdict, detail)] = literal_evidence(report)
    assert verdict == "neutral" and detail.startswith("'Atlantis' is in no column compared with it")


def test_an_injection_looking_literal_is_looked_up_as_one_value(flights, statements):
    sql = "SELECT COUNT(*) FROM airlines WHERE Airline = 'x'' OR 1=1 --'"
    rows, report, _ = asked(flights, sql)
    assert rows == [(0,)]
    assert outcomes(report.candidates[0]) == [("x' OR 1=1 --", "airlines.Airline", "absent")]
    lookups = [s for s in statements if s != sql]
    quoted = [s for s in lookups if "'x'' OR 1=1 --'" in s]
    assert len(quoted) >= 2 and all(s in quoted or "'x'" not in s for s in lookups)  # never cut at the quote
    assert all(s.upper().startswith("SELECT") and "LIMIT" in s.upper() for s in lookups)
    with flights.begin() as conn:
        conn.execute(sa.text("INSERT INTO airlines VALUES (9, 'x'' OR 1=1 --', 'X', 'Nowhere')"))
    rows, report, _ = asked(flights, sql)
    assert rows == [(1,)] and outcomes(report.candidates[0]) == [("x' OR 1=1 --", "airlines.Airline", "found")]


# ------------------------------------------------------------------------------------ the limits

def test_at_most_a_few_literals_per_candidate(flights):
    values = ", ".join(f"'Country {n}'" for n in range(MAX_LITERALS + 2))
    _, report, _ = asked(flights, f"SELECT COUNT(*) FROM airlines WHERE Country IN ({values})")
    checked = [c.outcome for c in report.candidates[0].literals]
    assert checked == ["absent"] * MAX_LITERALS + ["unchecked"] * 2


def test_identical_lookups_are_made_once_per_question(flights, statements):
    script = by_seed({0: "SELECT COUNT(*) FROM airlines WHERE Country = 'Atlantis'",
                      1: "SELECT COUNT(uid) FROM airlines WHERE Country = 'Atlantis'",
                      2: "SELECT COUNT(Airline) FROM airlines WHERE Country = 'Atlantis'"})
    ask(flights, QUESTION, script, candidates=3)
    lookups = [s for s in statements if "Atlantis" in s and not s.startswith("SELECT COUNT")]
    assert lookups and len(lookups) == len(set(lookups))


def test_nothing_is_looked_up_when_the_time_is_short(flights, statements):
    database = Database(flights, Options(llm=LLMSettings()))
    database.reflect()  # before the clock starts: on busy cores reflection alone can take the budget
    sql = "SELECT COUNT(*) FROM airlines WHERE Airline = 'united airlines'"
    ctx = context(database, budget_s=MIN_LEFT_S - 0.2)  # enough to run the candidate, too little to look up
    execution = execute_candidate(ctx, sql)
    run = CandidateRun(Candidate(0, "greedy", sql), execution.result)
    assert LiteralChecker(ctx).check(run) is run
    assert statements == [sql] and run.candidate.literals == [] and run.candidate.sql == sql
    assert any("literal checks skipped" in note for note in ctx.report.notes)


def test_the_option_and_the_strategies():
    assert Options(llm=LLMSettings()).check_literals is True
    base = {"llm": LLMSettings()}
    assert not strategy_options("greedy+repair", base).check_literals
    assert not strategy_options("self-consistency", base).check_literals
    for name in ("greedy+repair+literals", "self-consistency+repair+literals"):
        options = strategy_options(name, base)
        assert options.check_literals and options.schema_repair


# ------------------------------------------------------------------------------ on every engine

@pytest.fixture(params=ENGINES)
def linked(request, engine_factory) -> sa.Engine:
    return loaded(engine_factory(request.param), LINKED)


def test_a_case_variant_is_repaired_on_every_engine(linked):
    broken = "SELECT COUNT(*) FROM airlines WHERE name = 'united airlines'"
    rows, report, _ = asked(linked, broken)
    candidate = report.candidates[0]
    assert rows == [(1,)] and candidate.attempts == [broken] and "'United Airlines'" in report.sql
    assert candidate.fixes == ["'united airlines' -> 'United Airlines' (the value stored in airlines.name)"]
    assert [c.outcome for c in candidate.literals] == ["repaired"]


def test_a_name_compared_with_ids_is_against_and_rewritten_on_every_engine(linked):
    broken = "SELECT COUNT(*) FROM flights WHERE airline_id = 'United Airlines'"
    rows, report, _ = asked(linked, broken)
    candidate = report.candidates[0]
    # engines with strict types reject the comparison first, and the schema repair casts the column
    assert rows == [(2,)] and candidate.attempts[0] == broken
    assert report.sql.endswith("WHERE airline_id IN (SELECT airline_id FROM airlines WHERE name = 'United Airlines')")
    [(verdict, detail)] = literal_evidence(report)
    assert verdict == "against"
    assert detail.startswith("'United Airlines' is not in flights.airline_id; it is in airlines.name (reached by ")
    assert candidate.literal_hints == (detail,)


@pytest.mark.parametrize(("dialect", "schema"), [("sqlite", "main"), ("duckdb", "main"), ("postgresql", "public")])
def test_schema_qualified_tables(engine_factory, dialect, schema):
    engine = loaded(engine_factory(dialect), LINKED)
    broken = f"SELECT COUNT(*) FROM {schema}.flights AS f WHERE f.airline_id = 'Delta Airlines'"
    rows, report, _ = asked(engine, broken)
    assert rows == [(1,)]
    assert f"f.airline_id IN (SELECT airline_id FROM {schema}.airlines WHERE name = 'Delta Airlines')" in report.sql


def test_sqlite_text_compared_with_a_number_is_compared_as_text(tmp_path):
    """strftime() gives text with no affinity: ``= 2020`` never matches on SQLite; the literal becomes '2020'."""
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'years.db'}")
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE visits (id INTEGER PRIMARY KEY, visited TEXT)")
        conn.exec_driver_sql("INSERT INTO visits VALUES (1, '2020-03-01'), (2, '2021-05-02'), (3, '2020-07-09')")
    sql = "SELECT COUNT(*) FROM visits WHERE strftime('%Y', visited) = 2020"
    rows, report, _ = ask(engine, "How many visits in 2020?", [fenced(sql)], candidates=1)
    assert rows == [(2,)]
    assert any("never matches on SQLite" in fix for fix in report.candidates[0].fixes)
    off, _, _ = ask(engine, "How many visits in 2020?", [fenced(sql)], candidates=1, check_literals=False)
    assert off == [(0,)]
