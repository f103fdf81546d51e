"""Adaptive sampling (``adaptive``): candidates drawn one at a time, stopping once the vote is settled."""

from __future__ import annotations

import pytest
from fakes import ScriptedChatModel, ask, by_seed

from verifiedsql.config import Options
from verifiedsql.errors import ConfigurationError
from verifiedsql.stages.sampling import majority_probability

BRAZIL = "SELECT name FROM customers WHERE country = 'Brazil' ORDER BY name"
OTHER = "SELECT name FROM customers WHERE country = 'USA' ORDER BY name"
BROKEN = "SELECT nme FROM customers"


def generations(model: ScriptedChatModel) -> int:
    return model.purposes().count("generate")


def test_the_posterior_is_a_binomial_tail():
    assert majority_probability(2, 0) == pytest.approx(0.875)
    assert majority_probability(3, 0) == pytest.approx(0.9375)
    assert majority_probability(4, 0) == pytest.approx(1 - 1 / 32)
    assert majority_probability(3, 1) == pytest.approx(0.8125)
    assert majority_probability(0, 3) == pytest.approx(1 / 16)


def test_three_agreeing_candidates_stop_the_drawing(shop_engine):
    model = ScriptedChatModel(by_seed({i: BRAZIL for i in range(5)}))
    rows, report, _ = ask(shop_engine, "Who are the customers from Brazil?", model, adaptive=True)
    assert len(rows) == 2 and generations(model) == 3 and len(report.candidates) == 3
    assert report.vote == "unanimous"
    assert any("adaptive sampling stopped after 3 candidates" in note for note in report.notes)
    # three of three are weaker evidence than five of five: at most probable
    assert report.confidence == "probable" and "3 of 3 candidates" in report.evidence[0].detail


def test_without_adaptive_every_candidate_is_drawn(shop_engine):
    model = ScriptedChatModel(by_seed({i: BRAZIL for i in range(5)}))
    _, report, _ = ask(shop_engine, "Who are the customers from Brazil?", model)
    assert generations(model) == 5 and report.confidence == "verified"


def test_disagreement_draws_up_to_candidates(shop_engine):
    model = ScriptedChatModel(by_seed({0: BRAZIL, 1: OTHER, 2: BRAZIL, 3: BRAZIL, 4: OTHER}))
    rows, report, _ = ask(shop_engine, "Customers from Brazil?", model, adaptive=True)
    assert generations(model) == 5 and len(report.candidates) == 5 and len(rows) == 2
    assert not any("adaptive sampling" in note for note in report.notes)


def test_a_failed_candidate_counts_against_the_leader(shop_engine):
    model = ScriptedChatModel(by_seed({0: BRAZIL, 1: BROKEN, 2: BRAZIL, 3: BRAZIL, 4: BRAZIL}))
    _, report, _ = ask(shop_engine, "Customers from Brazil?", model, adaptive=True, max_refinements=0,
                       schema_repair=False)
    # 2 of 3 (0.69) and 3 of 4 (0.81) are short of 0.9; 4 of 5 is the last candidate anyway
    assert generations(model) == 5 and report.vote == "majority"


def test_a_lower_confidence_stops_after_two(shop_engine):
    model = ScriptedChatModel(by_seed({i: BRAZIL for i in range(5)}))
    _, report, _ = ask(shop_engine, "Customers from Brazil?", model, adaptive=True,
                       adaptive_confidence=0.85)
    assert generations(model) == 2 and len(report.candidates) == 2


def test_the_confidence_must_be_a_probability_above_one_half():
    for bad in (0.5, 1.0, 2.0):
        with pytest.raises(ConfigurationError, match="adaptive_confidence"):
            Options(adaptive_confidence=bad)
