"""Calibrated confidence: requests ask for token log-probabilities, the cache keeps them, the candidates'
certainty is read from them, the fit turns them into a probability and tiers, and the greedy candidate
answers alone when it is sure. An endpoint that gives none answers as before."""

from __future__ import annotations

import json
import math

import pytest
from fakes import ScriptedChatModel, ask, by_seed, fenced

from verifiedsql.bench.calibrate import aurc, calibrate, ceiling, fit_logistic, threshold
from verifiedsql.llm.base import ChatRequest, ChatResponse, TokenScores
from verifiedsql.llm.cache import RecordingChatModel
from verifiedsql.llm.scores import dumps, from_openai, loads, top_entropy
from verifiedsql.report import Candidate
from verifiedsql.stages.calibration import FEATURES, Calibration, Logistic, answer_features
from verifiedsql.stages.certainty import certainty

BRAZIL = "SELECT name FROM customers WHERE country = 'Brazil' ORDER BY name"
OTHER = "SELECT name FROM customers WHERE country = 'USA' ORDER BY name"


def _fit(weight_on_certainty: float = 2.0, stop: float | None = None) -> Calibration:
    """A hand-made fit: the probability grows with the chosen SQL's mean token log-probability and the share."""
    weights = {name: 0.0 for name in FEATURES} | {"sql_mean": weight_on_certainty, "share": 1.0}
    logistic = Logistic(weights, {n: 0.0 for n in FEATURES} | {"sql_mean": -0.5},
                        {n: 1.0 for n in FEATURES} | {"sql_mean": 0.25}, 0.0)
    return Calibration("scripted", logistic, logistic, {"verified": 0.95, "probable": 0.6}, stop)


def _ask_over_http(engine, model, question: str, **options):
    """Ask through the public API with a real OpenAI client (``model``) against the scripted HTTP server."""
    import verifiedsql

    verified = verifiedsql.create_engine(engine.url, llm=model, **options)
    try:
        with verified.connect() as conn:
            result = conn.execute(verifiedsql.ask(question))
            return [tuple(row) for row in result.all()], result.verification
    finally:
        verified.dispose()


def _write(tmp_path, calibration: Calibration) -> str:
    path = tmp_path / "fit.json"
    path.write_text(json.dumps(calibration.to_json()))
    return str(path)


def test_openai_logprobs_are_read_with_the_entropy_of_the_alternatives():
    content = {"content": [
        {"token": "SELECT", "logprob": -0.1, "top_logprobs": [{"token": "SELECT", "logprob": -0.1},
                                                             {"token": "WITH", "logprob": -2.4}]},
        {"token": " 1", "logprob": -0.5, "top_logprobs": []}]}
    scores = from_openai(content)
    assert scores is not None and scores.tokens == ("SELECT", " 1") and scores.logprobs == (-0.1, -0.5)
    assert scores.entropies[0] == pytest.approx(top_entropy([-0.1, -2.4])) and scores.entropies[1] == 0.0
    assert 0 < scores.entropies[0] < math.log(2)
    assert from_openai(None) is None and from_openai({"content": [{"token": 1}]}) is None


def test_scores_round_trip_and_junk_reads_as_none():
    scores = TokenScores(("a", "b"), (-0.25, -1.5), (0.1, 0.0))
    assert loads(dumps(scores)) == scores
    for junk in ("[]", "not json", "[" * 100_000, 3, None, '[["a"], [1, 2], [0]]'):
        assert loads(junk) is None


def test_certainty_reads_the_sql_span_names_and_literals():
    text = "```sql\nSELECT name FROM t WHERE c = 'x'\n```"
    pieces = ["```", "sql", "\n", "SELECT", " name", " FROM", " t", " WHERE", " c", " =", " 'x'", "\n", "```"]
    values = [-3.0, -3.0, -3.0, -0.1, -0.4, -0.1, -0.2, -0.1, -0.6, -0.1, -1.2, -3.0, -3.0]
    reply = ChatResponse(text, "m", 1, 1, 0.0, scores=TokenScores(tuple(pieces), tuple(values), (0.0,) * 13))
    found = certainty(reply, "SELECT name FROM t WHERE c = 'x'", "sqlite")
    assert found is not None and found.tokens == 8  # the fence's tokens are left out
    assert found.low == -1.2 and found.literals == -1.2
    assert found.names == pytest.approx((-0.4 - 0.2 - 0.6) / 3)
    assert certainty(ChatResponse(text, "m", 1, 1, 0.0), "SELECT 1", "sqlite") is None


def test_the_cache_keeps_scores_and_an_older_cache_still_replays(tmp_path):
    scores = TokenScores(("SELECT", " 1"), (-0.2, -0.3), (0.4, 0.0))
    inner = ScriptedChatModel(["SELECT 1"], logprob=lambda request, reply: -0.25)
    cache = RecordingChatModel(inner, tmp_path / "c.sqlite")
    request = ChatRequest(messages=({"role": "user", "content": "q"},), logprobs=True)
    first = cache.complete(request)
    assert first.scores is not None and not first.cached
    again = cache.complete(request)
    assert again.cached and again.scores == first.scores
    cache.close()
    # a cache recorded before scores were kept (no column) replays, with no scores
    import sqlite3
    old = tmp_path / "old.sqlite"
    db = sqlite3.connect(old)
    db.execute("CREATE TABLE responses (key TEXT PRIMARY KEY, model TEXT NOT NULL, request TEXT NOT NULL, "
               "text TEXT NOT NULL, response_model TEXT NOT NULL, prompt_tokens INTEGER NOT NULL, completion_tokens "
               "INTEGER NOT NULL, seconds REAL NOT NULL, purpose TEXT, created REAL NOT NULL)")
    from verifiedsql.llm.cache import request_key
    key, payload = request_key("scripted", request)
    db.execute("INSERT INTO responses VALUES (?, 'scripted', ?, 'SELECT 1', 'scripted', 1, 1, 0.1, 'generate', 0)",
               (key, payload))
    db.commit()
    db.close()
    replay = RecordingChatModel(None, old, "replay", model_name="scripted")
    assert replay.complete(request).scores is None
    assert scores.tokens == ("SELECT", " 1")


def test_generation_and_refinement_requests_ask_for_logprobs_over_http(server, shop_engine):
    from fake_openai import Reply, completion

    def responder(payload):
        body = completion(fenced(BRAZIL))
        body["choices"][0]["logprobs"] = {"content": [{"token": fenced(BRAZIL), "logprob": -0.05,
                                                       "top_logprobs": []}]}
        return Reply(body=body)

    server.responder = responder
    rows, report = _ask_over_http(shop_engine, server.model(), "Who are the customers from Brazil?", candidates=2)
    assert len(rows) == 2
    asked = [p for p in server.requests]
    assert asked and all(p.get("logprobs") is True and p.get("top_logprobs") == 5 for p in asked)
    assert all(c.certainty is not None for c in report.candidates)
    assert report.features and report.features["scored"] == 1.0


def test_an_endpoint_that_refuses_logprobs_still_answers(server, shop_engine):
    from fake_openai import Reply, completion

    def responder(payload):
        if payload.get("logprobs"):
            return Reply(status=400, body={"error": {"message": "logprobs is not supported by this model"}})
        return Reply(body=completion(fenced(BRAZIL)))

    server.responder = responder
    rows, report = _ask_over_http(shop_engine, server.model(), "Who are the customers from Brazil?", candidates=2)
    assert len(rows) == 2 and report.probability is None and report.confidence_from == "vote"
    assert any("confidence from the vote alone" in note for note in report.notes)
    # each candidate asked again without them; the two go out side by side, so the second may have been sent
    # with them before the first's refusal came back (refused once too), or after it (sent without them)
    flags = [bool(p.get("logprobs")) for p in server.requests]
    assert flags.count(False) == 2 and 1 <= flags.count(True) <= 2 and flags[-1] is False, flags
    model = server.model()
    server.requests.clear()
    _ask_over_http(shop_engine, model, "Who are the customers from Brazil?", candidates=1)
    _ask_over_http(shop_engine, model, "Who are the customers from Brazil?", candidates=1)
    assert [bool(p.get("logprobs")) for p in server.requests] == [True, False, False]  # then never again


def test_no_scores_leaves_the_vote_rule(shop_engine, tmp_path):
    model = ScriptedChatModel(by_seed({i: BRAZIL for i in range(5)}))
    _, report, _ = ask(shop_engine, "Who are the customers from Brazil?", model,
                       calibration=_write(tmp_path, _fit()))
    assert report.probability is None and report.confidence == "verified" and report.confidence_from == "vote"


def test_the_probability_rises_with_the_models_certainty(shop_engine, tmp_path):
    fit = _write(tmp_path, _fit())
    probabilities = []
    for logprob in (-2.0, -0.6, -0.05):
        model = ScriptedChatModel(by_seed({i: BRAZIL for i in range(5)}), logprob=lambda r, t, v=logprob: v)
        _, report, _ = ask(shop_engine, "Who are the customers from Brazil?", model, calibration=fit)
        assert report.confidence_from == "calibration" and report.probability is not None
        probabilities.append(report.probability)
        assert f"probability {report.probability:.2f}" in report.summary() and "probability" in report.to_html()
    assert probabilities[0] < probabilities[1] < probabilities[2]


def test_a_sure_greedy_candidate_answers_alone_and_an_unsure_one_draws_the_rest(shop_engine, tmp_path):
    fit = _write(tmp_path, _fit(stop=0.9))
    sure = ScriptedChatModel(by_seed({i: BRAZIL for i in range(5)}), logprob=lambda r, t: -0.01)
    rows, report, _ = ask(shop_engine, "Who are the customers from Brazil?", sure, calibration=fit, sure_stop=True)
    assert len(rows) == 2 and sure.purposes().count("generate") == 1
    assert any(note.startswith("sure stop") for note in report.notes)
    unsure = ScriptedChatModel(by_seed({0: BRAZIL, 1: OTHER, 2: BRAZIL, 3: BRAZIL, 4: BRAZIL}),
                               logprob=lambda r, t: -3.0)
    _, report, _ = ask(shop_engine, "Who are the customers from Brazil?", unsure, calibration=fit, sure_stop=True)
    assert unsure.purposes().count("generate") == 5 and report.features["agree"] == 4


def test_a_stated_constraint_the_sql_misses_is_evidence_without_a_model_call(shop_engine, tmp_path):
    model = ScriptedChatModel(by_seed({i: "SELECT name FROM customers" for i in range(5)}),
                              logprob=lambda r, t: -0.05)
    _, report, _ = ask(shop_engine, "List the top 3 customers by name", model, calibration=_write(tmp_path, _fit()))
    assert model.purposes().count("generate") == 5
    assert any(e.check == "constraints" and e.verdict == "against" for e in report.evidence)
    assert report.features["check_constraints"] == -1.0 and report.confidence != "verified"


def test_features_of_an_answer():
    def cand(index, mean, status="ok"):
        from verifiedsql.report import Certainty
        return Candidate(index, "greedy" if index == 0 else "sample", "SELECT 1", status,
                         certainty=Certainty(5, mean, mean - 1, 5 * mean, None, None, 0.3))
    candidates = [cand(0, -0.1), cand(1, -0.1), cand(2, -1.0)]
    features = answer_features(candidates, [0, 1], candidates[0], [], "probable")
    assert features["share"] == pytest.approx(2 / 3) and features["agree"] == 2 and features["greedy_in"] == 1
    assert features["mass"] > features["share"]  # the agreeing candidates are the likelier ones
    assert features["sql_names"] == features["sql_mean"] == -0.1 and features["rule"] == 2.0


def test_threshold_aurc_and_the_fit():
    assert threshold([(0.9, True)] * 19 + [(0.9, False)] + [(0.5, False)] * 5, 0.95) == 0.9
    assert math.isinf(threshold([(0.9, False)] * 10, 0.95))
    assert aurc([(0.9, True), (0.1, False)]) == pytest.approx((0 + 0.5) / 2)
    assert aurc([(0.9, False), (0.1, True)]) == pytest.approx((1 + 0.5) / 2)
    assert aurc([(0.5, True), (0.5, False)]) == pytest.approx((0.5 + 0.5) / 2)  # ties in expectation
    rows = [{"sql_mean": -0.1 * (i % 10), "share": 1.0} for i in range(200)]
    model = fit_logistic(rows, [i % 10 < 5 for i in range(200)])
    assert model.probability({"sql_mean": -0.05, "share": 1}) > 0.8 > 0.2 > model.probability({"sql_mean": -0.9,
                                                                                              "share": 1})


def test_bench_calibrate_fits_on_one_half_and_reports_on_the_other():
    records = []
    for i in range(120):
        right = i % 3 != 0
        mean = -0.05 if right else -1.5
        features = {"share": 1.0, "agree": 5.0, "drawn": 5.0, "sql_mean": mean + 0.01 * (i % 7), "scored": 1.0}
        records.append({"strategy": "default", "id": i, "status": "answered", "correct": right, "vote_share": 1.0,
                        "scored": True,
                        "evidence": [["vote", "for"]], "llm_calls": 5,
                        "candidates": [{"correct": right, "attempts": 0}] * 5,
                        "features": features, "first_features": dict(features, share=1.0, agree=1.0, drawn=1.0)})
    calibration, figures = calibrate(records, "default", "scripted")
    assert figures["fit_questions"] == figures["report_questions"] == 60
    assert figures["tiers"]["verified"]["precision"] == 1.0 and figures["tiers"]["verified"]["coverage"] > 0.5
    assert figures["aurc"] < figures["aurc_vote"]
    assert figures["calls_per_question"] < figures["calls_without_stop"] and figures["ex"] == figures[
        "ex_without_stop"]
    assert Calibration.from_json(json.loads(json.dumps(calibration.to_json()))) == calibration


def test_the_ceiling_is_the_coverage_a_fit_on_every_answer_reaches():
    def record(i: int, right: bool, mean: float) -> dict:
        return {"strategy": "default", "id": i, "status": "answered", "correct": right, "scored": True,
                "features": {"share": 1.0, "sql_mean": mean}}

    separable = [record(i, i % 2 == 0, -0.05 if i % 2 == 0 else -1.5) for i in range(100)]
    assert ceiling(separable, "default")["coverage"] == 0.5  # every right answer, and no wrong one
    noise = [record(i, i % 2 == 0, -0.5) for i in range(100)]  # nothing tells them apart
    assert ceiling(noise, "default")["coverage"] == 0.0
    assert ceiling([dict(r, scored=False) for r in separable], "default")["answered"] == 0


def test_a_fit_given_to_the_bench_reaches_only_the_strategies_that_use_calibration():
    from verifiedsql.bench.strategies import strategy_options

    base = {"local_model": "0.5b", "calibration": "/tmp/fit.json"}
    assert strategy_options("default+calibrated", base).calibration == "/tmp/fit.json"
    assert strategy_options("default+sure", base).calibration == "/tmp/fit.json"
    assert strategy_options("default", base).calibration == "off"
    assert strategy_options("default+calibrated", {"local_model": "0.5b"}).calibration is None


def test_rank_auc_counts_ties_half_and_needs_both_labels():
    from verifiedsql.bench.calibrate import rank_auc

    assert rank_auc([0.9, 0.8, 0.1], [True, True, False]) == 1.0
    assert rank_auc([0.1, 0.9], [True, False]) == 0.0
    assert rank_auc([0.5, 0.5], [True, False]) == 0.5
    assert rank_auc([0.5, 0.7], [True, True]) is None
