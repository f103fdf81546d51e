"""R3 review (review, rebuttal, revision) with a scripted model: professions, verdicts, revisions that are
run read-only and shown next round, the stop rules, the ``review`` candidate and both safety layers."""

from __future__ import annotations

import json
from collections.abc import Callable

import fakes
import pytest
import sqlalchemy as sa
import sqlglot
from backends import checksum, load_shop
from fakes import ScriptedChatModel, fenced, purposes

import verifiedsql
from verifiedsql.bench.strategies import STRATEGIES, strategy_options
from verifiedsql.config import Options
from verifiedsql.llm.base import ChatRequest
from verifiedsql.results import ResultSet
from verifiedsql.stages.r3.prompts import (
    FALLBACK_PROFESSIONS,
    parse_professions,
    parse_verdict,
    render_table,
)
from verifiedsql.stages.r3.review import (
    STOP_APPROVED,
    STOP_ROUNDS,
    STOP_TIME,
    STOP_UNCHANGED,
)

QUESTION = "How many customers come from Brazil?"
WRONG = "SELECT COUNT(*) FROM customers WHERE country = 'brazil'"  # 0: the stored value is 'Brazil'
RIGHT = "SELECT COUNT(*) FROM customers WHERE country = 'Brazil'"  # 2
RIGHT_IN = "SELECT COUNT(*) FROM customers WHERE country IN ('Brazil')"
ALL = "SELECT COUNT(*) FROM customers"  # 10
PROFESSIONS = ["Data analyst in retail", "Senior database engineer for filters", "SQL clause reviewer"]
APPROVE = "VERDICT: APPROVE\nLooks right."
ISSUES = "VERDICT: ISSUES\nThe country is stored capitalised: use 'Brazil'."


def script(generated: dict[int, str] | str, reviews: list[str] | Callable[[ChatRequest], str],
           revisions: list[str], professions: str = json.dumps(PROFESSIONS)) -> ScriptedChatModel:
    """Generation by seed; professions; reviewer verdicts in order (or by a function); writer replies in order."""
    reviews_left = reviews if callable(reviews) else list(reviews)
    revisions_left = list(revisions)

    def answer(request: ChatRequest) -> str:
        if request.purpose == "generate":
            sql = generated if isinstance(generated, str) else generated[request.seed or 0]
            return fenced(sql)
        if request.purpose == "review-professions":
            return professions
        if request.purpose == "review":
            return reviews_left(request) if callable(reviews_left) else reviews_left.pop(0)
        if request.purpose == "review-revise":
            return revisions_left.pop(0)
        pytest.fail(f"unexpected {request.purpose!r} request")

    return ScriptedChatModel(answer)


def ask(engine: sa.Engine | str, fake: ScriptedChatModel, **options: object):
    # the literal checks would repair WRONG's 'brazil' before the review sees it
    return fakes.ask(engine, QUESTION, fake, **{"candidates": 1, "review": True, "check_literals": False, **options})


@pytest.fixture
def shop_url(tmp_path):
    url = f"sqlite:///{tmp_path / 'shop.db'}"
    load_shop(sa.create_engine(url)).dispose()
    return url


# ------------------------------------------------------------------------------------- parsing


def test_parsers_and_table():
    assert parse_professions(json.dumps(PROFESSIONS), 3) == PROFESSIONS
    assert parse_professions('```json\n{"Reviewer A": "Analyst", "Reviewer B": "Engineer"}\n```', 2) == [
        "Analyst", "Engineer"]
    assert parse_professions('["only one"]', 3) is None and parse_professions("no json", 1) is None
    assert parse_verdict(APPROVE) == ("approve", "Looks right")
    assert parse_verdict("Verdict: issues - wrong join")[0] == "issues"
    assert parse_verdict("I think it is fine")[0] == "unclear"
    table = render_table(ResultSet(("n", "name"), tuple((i, f"x{i}") for i in range(12))))
    assert table.splitlines()[0] == "| n | name |" and "| 9 | x9 |" in table and "| 10 |" not in table
    assert table.endswith("(2 more rows)")
    assert render_table(ResultSet(("n",), ())).endswith("(no rows)")


def test_options_and_strategies():
    options = Options()
    assert (options.review, options.reviewers, options.review_rounds) == (False, 3, 3)
    assert STRATEGIES["+review"] == {"candidates": 5, "review": True}
    assert strategy_options("review-only", {}).candidates == 1 and strategy_options("review-only", {}).review
    with pytest.raises(verifiedsql.errors.ConfigurationError):
        Options(reviewers=0)


# ----------------------------------------------------------------------------------------- loop


def test_all_approve_in_round_one_leaves_the_sql_unchanged(shop_url):
    rows, report, fake = ask(shop_url, script(RIGHT, [APPROVE] * 3, []))
    assert rows == [(2,)] and report.sql == RIGHT
    assert purposes(fake) == ["generate", "review-professions", "review", "review", "review"]
    review = report.review
    assert review.professions == PROFESSIONS and review.professions_source == "model"
    assert len(review.rounds) == 1 and review.stop == STOP_APPROVED and not review.changed
    assert review.candidate is None and len(report.candidates) == 1
    assert [v.verdict for v in review.rounds[0].verdicts] == ["approve"] * 3
    # each reviewer has its own profession in its system prompt, and sees the schema, SQL and result table
    for request, profession in zip(fake.requests[2:], PROFESSIONS):
        system, user = request.messages[0]["content"], request.messages[-1]["content"]
        assert profession in system and QUESTION in user and RIGHT in user and "customers" in user
        assert "| 2 |" in user
    assert "review: 3 reviewers, 1 round(s), unchanged; all reviewers approved" in report.summary()
    assert report.to_dict()["review"]["stop"] == STOP_APPROVED


def test_professions_fall_back_when_the_reply_is_unusable(shop_url):
    _, report, fake = ask(shop_url, script(RIGHT, [APPROVE] * 2, [], professions="Sure, two experts."),
                          reviewers=2)
    assert report.review.professions == list(FALLBACK_PROFESSIONS[:2])
    assert report.review.professions_source == "fallback"
    assert FALLBACK_PROFESSIONS[1] in fake.requests[3].messages[0]["content"]


def test_issues_revision_rerun_then_approve_on_every_engine(shop_engine):
    before = checksum(shop_engine)
    reviews = [ISSUES, APPROVE, APPROVE] + [APPROVE] * 3
    rebuttal = "The analyst and engineers are right about the case.\n" + fenced(RIGHT)
    rows, report, fake = ask(shop_engine, script(WRONG, reviews, [rebuttal]))
    assert rows == [(2,)] and report.sql == RIGHT
    review = report.review
    assert [r.sql for r in review.rounds] == [WRONG, RIGHT]
    first = review.rounds[0]
    assert first.verdicts[0].verdict == "issues" and "Brazil" in first.verdicts[0].explanation
    assert first.revision == RIGHT and first.status == "ok" and first.row_count == 1
    assert "right about the case" in first.rebuttal and "```" not in first.rebuttal
    assert review.stop == STOP_APPROVED and review.final_sql == RIGHT and review.changed
    # the writer saw the reviews and the result; the next round's reviewers saw the revision's result
    writer = next(r for r in fake.requests if r.purpose == "review-revise")
    assert "use 'Brazil'" in writer.messages[-1]["content"] and "| 0 |" in writer.messages[-1]["content"]
    assert WRONG in writer.messages[-2]["content"]
    assert "| 2 |" in [r for r in fake.requests if r.purpose == "review"][3].messages[-1]["content"]
    # the reviewed SQL joined the pool as a candidate and (a tie of one against one) was chosen
    added = report.candidates[review.candidate]
    assert added.origin == "review" and added.sql == RIGHT and added.attempts == [WRONG]
    assert len(report.candidates) == 2 and len(report.clusters) == 2 and "R3 review" in report.reason
    assert checksum(shop_engine) == before


def test_stops_after_review_rounds(shop_url):
    revisions = [fenced(RIGHT), fenced(RIGHT_IN)]
    _, report, fake = ask(shop_url, script(WRONG, lambda r: ISSUES, revisions), review_rounds=2)
    assert purposes(fake).count("review-revise") == 2 and purposes(fake).count("review") == 6
    assert report.review.stop == STOP_ROUNDS.format(rounds=2)
    assert [r.revision for r in report.review.rounds] == [RIGHT, RIGHT_IN]
    assert report.review.final_sql == RIGHT_IN and report.sql == RIGHT_IN


def test_unchanged_sql_stops_with_the_rebuttal_recorded(shop_url):
    reply = "I disagree: the question says brazil in lower case.\n" + fenced(WRONG)
    rows, report, fake = ask(shop_url, script(WRONG, lambda r: ISSUES, [reply, "never asked"]))
    assert purposes(fake).count("review-revise") == 1
    review = report.review
    assert review.stop == STOP_UNCHANGED and len(review.rounds) == 1 and review.rounds[0].revision is None
    assert "I disagree" in review.rounds[0].rebuttal
    assert review.candidate is None and len(report.candidates) == 1 and rows == [(0,)]


def test_a_revision_that_fails_is_set_aside_and_fed_back(shop_url):
    reviews = [ISSUES] * 3 + [ISSUES] * 3 + [APPROVE] * 3
    revisions = [fenced("SELECT nope FROM customers"), fenced(RIGHT)]
    rows, report, fake = ask(shop_url, script(WRONG, reviews, revisions))
    first, second, third = report.review.rounds
    assert first.revision == "SELECT nope FROM customers" and first.status == "error" and "nope" in first.error
    assert second.sql == WRONG  # reverted to the last SQL that ran
    writer = [r for r in fake.requests if r.purpose == "review-revise"][1].messages[-1]["content"]
    assert "failed" in writer and "nope" in writer
    assert second.revision == RIGHT and third.sql == RIGHT and report.review.stop == STOP_APPROVED
    assert rows == [(2,)]


def test_a_failing_last_revision_leaves_the_last_sql_that_ran(shop_url):
    _, report, _ = ask(shop_url, script(WRONG, lambda r: ISSUES, [fenced("SELECT nope FROM customers")]),
                       review_rounds=1)
    assert report.review.final_sql == WRONG and not report.review.changed and report.sql == WRONG
    assert len(report.candidates) == 1


@pytest.mark.parametrize("layer", ["statement", "engine"])
def test_unsafe_revisions_are_refused_by_both_layers(shop_url, layer, monkeypatch):
    if layer == "engine":  # take the statement guard away: the engine guard must hold on its own
        monkeypatch.setattr("verifiedsql.stages.generate.parse_one_query",  # a parse with no safety check
                            lambda sql, profile: sqlglot.parse_one(sql, read=profile.sqlglot_dialect))
        monkeypatch.setattr("verifiedsql.db.database.check_query", lambda sql, profile, *_, **__: None)
    engine = sa.create_engine(shop_url)
    before = checksum(engine)
    rows, report, _ = ask(shop_url, script(WRONG, lambda r: ISSUES, [fenced("DELETE FROM customers")]),
                          review_rounds=1)
    first = report.review.rounds[0]
    assert first.revision == "DELETE FROM customers" and first.status == "unsafe"
    assert ("read-only mode refused" if layer == "engine" else "only queries are run") in first.error
    assert report.sql == WRONG and rows == [(0,)] and checksum(engine) == before
    engine.dispose()


def test_the_review_candidate_can_change_the_selection(shop_url):
    generated = {0: WRONG, 1: WRONG, 2: RIGHT_IN, 3: RIGHT_IN, 4: ALL}
    rows, report, _ = ask(shop_url, script(generated, [], []), candidates=5, review=False)
    assert rows == [(0,)] and "greedy" in report.reason  # a 2-2 tie goes to the greedy candidate
    rows, report, _ = ask(shop_url, script(generated, lambda r: ISSUES, [fenced(RIGHT), fenced(RIGHT)]),
                          candidates=5)
    assert rows == [(2,)]
    assert report.review.reviewed == 0 and report.review.candidate == 5
    assert report.candidates[5].origin == "review"
    chosen = next(c for c in report.clusters if 5 in c.members)
    assert sorted(chosen.members) == [2, 3, 5] and report.sql in (RIGHT, RIGHT_IN)


def test_off_by_default_leaves_the_requests_unchanged(shop_url):
    _, off, plain = ask(shop_url, script(WRONG, [], []), review=False)
    assert off.review is None and purposes(plain) == ["generate"]
    _, on, reviewed = ask(shop_url, script(WRONG, [APPROVE] * 3, []))
    first, before = reviewed.requests[0], plain.requests[0]  # review adds calls after generation, changes none
    assert (first.messages, first.temperature, first.seed, first.max_tokens) == (
        before.messages, before.temperature, before.seed, before.max_tokens)
    assert "review" not in off.timings and "review" in on.timings


def test_the_time_budget_stops_the_review_with_the_sql_that_ran(shop_url):
    import time

    def slow(request: ChatRequest) -> str:
        time.sleep(0.6)
        return ISSUES

    rows, report, _ = ask(shop_url, script(WRONG, slow, []), question_timeout_s=0.5)
    assert report.review.stop == STOP_TIME and report.review.final_sql == WRONG
    assert rows == [(0,)] and report.vote == "unverified"
