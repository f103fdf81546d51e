"""``verifiedsql bench calibrate RECORDS``: fit the calibrated confidence of ``stages/calibration.py`` on one
seeded half of a run's records and report it on the other.

Each answered record carries the features the library read (``features``; ``first_features`` for the greedy
candidate alone). Two logistic models are fitted on the fit half (standardised features, L2-penalised with the
strength of least 5-fold cross-validated log-loss there): one
for answers chosen among the candidates, one for the greedy candidate alone. On the fit half, the stop
threshold is the lowest greedy probability at which answering with the greedy candidate alone loses no more
than ``max_ex_loss`` of accuracy; the tiers' thresholds are the lowest probabilities at which the answers at or
above them are at least ``TARGETS`` precise. Everything is then measured on the report half: the tiers'
precision and coverage, the area under the risk-coverage curve (AURC) against the vote-based rule's, accuracy
and model calls per question with the stop.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import minimize

from ..stages.calibration import FEATURES, Calibration, Logistic, opposed
from .tiers import _tier, fit, halves

TARGETS = {"verified": 0.95, "probable": 0.75}
STOP_FLOOR = 0.5  # the greedy candidate alone is never the answer where it is likelier wrong than right
_RANK = {"verified": 3, "probable": 2, "doubtful": 1, "unverified": 0, "none": -1}


def fit_logistic(rows: Sequence[dict[str, float]], labels: Sequence[bool], l2: float = 1.0) -> Logistic:
    """An L2-penalised logistic regression over ``FEATURES`` (standardised); constant features get no weight."""
    x = np.array([[row.get(name, 0.0) for name in FEATURES] for row in rows], dtype=float)
    y = np.array(labels, dtype=float)
    means, scales = x.mean(axis=0), x.std(axis=0)
    scales[scales < 1e-9] = 1.0
    z = (x - means) / scales

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        logits = z @ theta[1:] + theta[0]
        p = 1.0 / (1.0 + np.exp(-logits))
        eps = 1e-12
        value = -np.sum(y * np.log(p + eps) + (1 - y) * np.log(1 - p + eps)) + 0.5 * l2 * np.sum(theta[1:] ** 2)
        gradient = np.concatenate([[np.sum(p - y)], z.T @ (p - y) + l2 * theta[1:]])
        return float(value), gradient

    solved = minimize(loss, np.zeros(len(FEATURES) + 1), jac=True, method="L-BFGS-B")
    theta = solved.x
    return Logistic({n: round(float(w), 6) for n, w in zip(FEATURES, theta[1:])},
                    {n: round(float(m), 6) for n, m in zip(FEATURES, means)},
                    {n: round(float(s), 6) for n, s in zip(FEATURES, scales)}, round(float(theta[0]), 6))


PENALTIES = (0.3, 1.0, 3.0, 10.0, 30.0)  # the L2 strengths the cross-validation chooses among


def _fold(count: int, folds: int, fold: int) -> tuple[list[int], list[int]]:
    """The indexes trained on and held out in ``fold`` (every ``folds``-th row held out)."""
    return ([i for i in range(count) if i % folds != fold], list(range(fold, count, folds)))


def choose_penalty(rows: Sequence[dict[str, float]], labels: Sequence[bool], folds: int = 5) -> float:
    """The L2 strength of ``PENALTIES`` with the least held-out log-loss over ``folds`` folds of the rows (1.0
    where the rows are too few, or all of one label)."""
    if len(rows) < 2 * folds or len(set(labels)) < 2:
        return 1.0

    def held_out_loss(l2: float) -> float:
        total = 0.0
        for fold in range(folds):
            train, held = _fold(len(rows), folds, fold)
            model = fit_logistic([rows[i] for i in train], [labels[i] for i in train], l2)
            for i in held:
                p = min(max(model.probability(rows[i]), 1e-6), 1 - 1e-6)
                total -= math.log(p if labels[i] else 1 - p)
        return total

    return min(PENALTIES, key=held_out_loss)


def threshold(scored: Sequence[tuple[float, bool]], target: float, minimum: int = 5) -> float:
    """The lowest probability whose answers at or above it are at least ``target`` precise (and at least
    ``minimum`` of them); infinity when none is. (Thresholds are stored rounded down to 4 places.)"""
    best = math.inf
    ordered = sorted(scored, key=lambda pair: -pair[0])
    right = 0
    for count, (probability, correct) in enumerate(ordered, start=1):
        right += correct
        tied_next = count < len(ordered) and ordered[count][0] == probability
        if not tied_next and count >= minimum and right / count >= target:
            best = math.floor(probability * 10_000) / 10_000
    return best


def aurc(scored: Sequence[tuple[float, bool]]) -> float:
    """The area under the risk-coverage curve: the mean, over coverages 1/n .. n/n, of the error rate among the
    most confident answers (ties in expectation). Lower is better; unanswered questions come last, as errors."""
    ordered = sorted(scored, key=lambda pair: -pair[0])
    total, errors, position, risks = len(ordered), 0.0, 0, []
    index = 0
    while index < total:
        group = [c for p, c in ordered[index:] if p == ordered[index][0]]
        group_errors = sum(not c for c in group)
        for j in range(1, len(group) + 1):
            risks.append((errors + j * group_errors / len(group)) / (position + j))
        errors += group_errors
        position += len(group)
        index += len(group)
    return sum(risks) / len(risks) if risks else 0.0


@dataclass(frozen=True)
class Policy:
    """What one question ends with under the stop: the probability, whether it is right, the calls paid, and
    whether a check is against the answer (then it is not verified, whatever its probability)."""

    probability: float
    correct: bool
    calls: float
    stopped: bool
    opposed: bool = False


def _answered(record: dict[str, Any]) -> bool:
    return record.get("status") == "answered" and bool(record.get("features"))


def _first_correct(record: dict[str, Any]) -> bool:
    candidates = record.get("candidates") or []
    return bool(candidates and candidates[0].get("correct"))


def _first_calls(record: dict[str, Any]) -> float:
    """The model calls the greedy candidate alone cost: its generation and its refinements."""
    first = (record.get("candidates") or [{}])[0]
    return 1.0 + float(first.get("attempts") or 0)


def policy(record: dict[str, Any], calibration: Calibration, stop: float | None) -> Policy:
    """The outcome of ``record``'s question with the stop at ``stop`` (None: never stop)."""
    if not _answered(record):
        return Policy(-1.0, False, float(record.get("llm_calls") or 0), False)
    first = record.get("first_features") or {}
    if stop is not None and first and calibration.first is not None:
        p_first = calibration.first.probability(first)
        if p_first >= stop:
            return Policy(p_first, _first_correct(record), _first_calls(record), True, opposed(first))
    return Policy(calibration.pool.probability(record["features"]), bool(record.get("correct")),
                  float(record.get("llm_calls") or 0), False, opposed(record["features"]))


def choose_stop(records: Sequence[dict[str, Any]], calibration: Calibration, max_ex_loss: float) -> float | None:
    """The lowest greedy probability at which stopping loses at most ``max_ex_loss`` of accuracy on ``records``."""
    if calibration.first is None or not records:
        return None
    full = sum(bool(r.get("correct")) for r in records) / len(records)
    candidates = sorted({round(calibration.first.probability(r["first_features"]), 4)
                         for r in records if _answered(r) and r.get("first_features")})
    for stop in (c for c in candidates if c >= STOP_FLOOR):
        ex = sum(policy(r, calibration, stop).correct for r in records) / len(records)
        if ex >= full - max_ex_loss:
            return stop
    return None


def fit_calibration(records: Sequence[dict[str, Any]], model: str, max_ex_loss: float = 0.005,
                    folds: int = 5) -> Calibration:
    """The calibration fitted on ``records`` (one strategy's, one half). The tiers' thresholds are chosen on
    out-of-fold probabilities (each record scored by fits, with the same penalties, that did not see it), so that
    they are not set by the fit's own optimism about the answers it learnt from."""
    answered = [r for r in records if _answered(r)]
    pool_rows, first_rows = _rows(answered)
    penalties = (choose_penalty(*pool_rows, folds), choose_penalty(*first_rows, folds) if first_rows[0] else None)
    pool, first = _fits(pool_rows, first_rows, penalties)
    draft = Calibration(model, pool, first, {})
    stop = choose_stop(records, draft, max_ex_loss)
    outcomes = []
    if len(answered) >= 2 * folds:
        for fold in range(folds):
            train, held = _fold(len(answered), folds, fold)
            fold_pool, fold_first = _fits(*_rows([answered[i] for i in train]), penalties)
            outcomes += [policy(answered[i], Calibration(model, fold_pool, fold_first, {}), stop) for i in held]
    else:
        outcomes = [policy(r, draft, stop) for r in answered]
    thresholds = {tier: threshold([(o.probability, o.correct) for o in outcomes
                                   if not (o.opposed and tier == "verified")], target)
                  for tier, target in TARGETS.items()}
    return Calibration(model, pool, first, {k: round(v, 4) for k, v in thresholds.items() if math.isfinite(v)}, stop)


Rows = tuple[list[dict[str, float]], list[bool]]


def _rows(answered: Sequence[dict[str, Any]]) -> tuple[Rows, Rows]:
    """(features, right) of the chosen answers, and of the greedy candidates alone where recorded."""
    alone = [r for r in answered if r.get("first_features")]
    return (([r["features"] for r in answered], [bool(r.get("correct")) for r in answered]),
            ([r["first_features"] for r in alone], [_first_correct(r) for r in alone]))


def _fits(pool_rows: Rows, first_rows: Rows, penalties: tuple[float, float | None]) -> tuple[Logistic,
                                                                                            Logistic | None]:
    """The pool fit and the greedy-alone fit on the rows of answered records, with the given L2 strengths."""
    first = fit_logistic(*first_rows, penalties[1]) if first_rows[0] and penalties[1] is not None else None
    return fit_logistic(*pool_rows, penalties[0]), first


def measure(records: Sequence[dict[str, Any]], calibration: Calibration, vote_rule: Callable[[dict[str, Any]], str],
            use_stop: bool = True) -> dict[str, Any]:
    """The figures of ``calibration`` on ``records`` (the report half), beside the vote-based rule's."""
    stop = calibration.stop if use_stop else None
    outcomes = [policy(r, calibration, stop) for r in records]
    n = max(1, len(records))
    tiers: dict[str, dict[str, float | int | None]] = {}
    for tier in ("verified", "probable", "doubtful"):
        chosen = [o for o in outcomes if o.probability >= 0 and calibration.tier(o.probability, o.opposed) == tier]
        right = sum(o.correct for o in chosen)
        tiers[tier] = {"answers": len(chosen), "right": right,
                       "precision": round(right / len(chosen), 4) if chosen else None,
                       "coverage": round(len(chosen) / n, 4)}
    vote_scores = [(_RANK[vote_rule(r)] + float(r.get("vote_share") or 0) / 10, bool(r.get("correct")))
                   for r in records]
    vote_verified = [r for r in records if vote_rule(r) == "verified"]
    return {
        "questions": len(records),
        "ex": round(sum(o.correct for o in outcomes) / n, 4),
        "ex_without_stop": round(sum(bool(r.get("correct")) for r in records) / n, 4),
        "calls_per_question": round(sum(o.calls for o in outcomes) / n, 3),
        "calls_without_stop": round(sum(float(r.get("llm_calls") or 0) for r in records) / n, 3),
        "stopped": sum(o.stopped for o in outcomes),
        "aurc": round(aurc([(o.probability, o.correct) for o in outcomes]), 4),
        "aurc_vote": round(aurc(vote_scores), 4),
        "tiers": tiers,
        "vote_verified": {"answers": len(vote_verified), "right": sum(bool(r.get("correct")) for r in vote_verified),
                          "coverage": round(len(vote_verified) / n, 4)},
        "risk_coverage": _curve([(o.probability, o.correct) for o in outcomes]),
        "risk_coverage_vote": _curve(vote_scores),
    }


def _curve(scored: Sequence[tuple[float, bool]]) -> list[list[float]]:
    """(coverage, risk) at each distinct confidence, most confident first: the points of the plot."""
    ordered = sorted(scored, key=lambda pair: -pair[0])
    points, errors = [], 0
    for count, (probability, correct) in enumerate(ordered, start=1):
        errors += not correct
        if count == len(ordered) or ordered[count][0] != probability:
            points.append([round(count / len(ordered), 4), round(errors / count, 4)])
    return points


def calibrate(records: Sequence[dict[str, Any]], strategy: str, model: str, seed: int = 0,
              max_ex_loss: float = 0.005, use_stop: bool = True) -> tuple[Calibration, dict[str, Any]]:
    """Fit on one seeded half of ``strategy``'s records, measure on the other (with the sure stop, or every
    candidate drawn when ``use_stop`` is false); the vote-based rule is fitted on the same fit half
    (``bench tiers``) for the comparison."""
    chosen = _scored(records, strategy)
    fit_ids, report_ids = halves((r["id"] for r in chosen), seed)
    fitted_on = [r for r in chosen if r["id"] in fit_ids]
    reported = [r for r in chosen if r["id"] in report_ids]
    calibration = fit_calibration(fitted_on, model, max_ex_loss)
    rule = fit(fitted_on)
    figures = {"model": model, "strategy": strategy, "seed": seed, "use_stop": use_stop, "fit_questions": len(fit_ids),
               "report_questions": len(report_ids), "thresholds": calibration.thresholds, "stop": calibration.stop,
               **measure(reported, calibration, lambda r: _tier(r, rule), use_stop)}
    return Calibration(model, calibration.pool, calibration.first, calibration.thresholds, calibration.stop,
                       {k: v for k, v in figures.items() if not k.startswith("risk_coverage")}), figures


def _scored(records: Sequence[dict[str, Any]], strategy: str) -> list[dict[str, Any]]:
    """``strategy``'s records that reached the model and have token scores (a cache whose scores are being added,
    with ``llm rescore``, has scored a prefix of the seeded questions: fits and reports keep to those)."""
    return [r for r in records if r.get("strategy") == strategy and r.get("status") != "llm_error" and r.get("scored")]


def rank_auc(values: Sequence[float], labels: Sequence[bool]) -> float | None:
    """The chance that a right answer's value is above a wrong one's (ties count half); None without both."""
    right = sorted(v for v, label in zip(values, labels) if label)
    wrong = sorted(v for v, label in zip(values, labels) if not label)
    if not right or not wrong:
        return None
    above = sum(bisect.bisect_left(wrong, v) + 0.5 * (bisect.bisect_right(wrong, v) - bisect.bisect_left(wrong, v))
                for v in right)
    return above / (len(right) * len(wrong))


def feature_aucs(records: Sequence[dict[str, Any]], strategy: str) -> dict[str, dict[str, float | None]]:
    """Each feature's ``rank_auc`` over every scored answer of ``strategy`` (``pool``: the chosen answer against
    its rightness; ``first``: the greedy candidate alone against its own)."""
    answered = [r for r in records if r.get("strategy") == strategy and r.get("scored") and _answered(r)]
    names = sorted({name for r in answered for name in r["features"]})
    alone = [r for r in answered if r.get("first_features")]
    return {name: {"pool": rank_auc([r["features"].get(name, 0.0) for r in answered],
                                    [bool(r.get("correct")) for r in answered]),
                   "first": rank_auc([r["first_features"].get(name, 0.0) for r in alone],
                                     [_first_correct(r) for r in alone])}
            for name in names}


def ceiling(records: Sequence[dict[str, Any]], strategy: str, target: float = TARGETS["verified"]) -> dict[str, Any]:
    """An optimistic bound on the calibrated ``verified`` tier: the pool fit on every scored answer of
    ``strategy`` (no half held out), scored on those same answers; the largest share of the questions whose
    answers at or above one probability are at least ``target`` precise, and the fit's AUC there. A held-out
    half is expected to do worse than a fit that has seen its answers."""
    chosen = _scored(records, strategy)
    answered = [r for r in chosen if _answered(r)]
    (rows, labels), _ = _rows(answered)
    if not rows:
        return {"questions": len(chosen), "answered": 0, "auc": None, "coverage": 0.0}
    model = fit_logistic(rows, labels, choose_penalty(rows, labels))
    scored = [(model.probability(row), label) for row, label in zip(rows, labels)]
    bound = threshold(scored, target)
    covered = sum(p >= bound for p, _ in scored) if math.isfinite(bound) else 0
    return {"questions": len(chosen), "answered": len(answered), "target": target,
            "auc": rank_auc([p for p, _ in scored], labels), "coverage": round(covered / max(1, len(chosen)), 4)}


def render(figures: dict[str, Any]) -> str:
    """``calibrate``'s figures as Markdown: the tiers on the report half, AURC, accuracy and calls."""
    percent = lambda value: "-" if value is None else f"{100 * value:.1f}%"  # noqa: E731
    lines = [f"{figures['strategy']}: fitted on {figures['fit_questions']} questions (seed {figures['seed']}), "
             f"reported on the other {figures['report_questions']}; thresholds {figures['thresholds']}, "
             f"stop {figures['stop']}", "",
             "| tier | answers | right | precision | coverage |", "|---|---:|---:|---:|---:|"]
    for tier, row in figures["tiers"].items():
        lines.append(f"| {tier} | {row['answers']} | {row['right']} | {percent(row['precision'])} | "
                     f"{percent(row['coverage'])} |")
    vote = figures["vote_verified"]
    lines += ["", f"vote-based rule: verified {vote['right']} of {vote['answers']} right, coverage "
                  f"{percent(vote['coverage'])}",
              f"AURC {figures['aurc']:.4f} (vote-based rule {figures['aurc_vote']:.4f}); EX {percent(figures['ex'])} "
              f"({percent(figures['ex_without_stop'])} without the stop); calls per question "
              f"{figures['calls_per_question']} ({figures['calls_without_stop']} without; stopped on "
              f"{figures['stopped']})", "", "the row of docs/benchmarks/calibration.md:", table_row(figures)]
    return "\n".join(lines)


def table_row(figures: dict[str, Any]) -> str:
    """One split's figures as the docs' table row: model, seed, whether the sure stop was on, calibrated and
    vote-rule ``verified`` (precision / coverage), AURC (calibrated / vote rule), EX and model calls per
    question (as measured / with every candidate drawn)."""
    percent = lambda value: "none" if value is None else f"{100 * value:.1f}%"  # noqa: E731
    verified, vote = figures["tiers"]["verified"], figures["vote_verified"]
    vote_precision = vote["right"] / vote["answers"] if vote["answers"] else None
    stop = "sure stop" if figures["use_stop"] else "every candidate"
    return (f"| {figures['model']} | {figures['seed']} | {stop} | {percent(verified['precision'])} / "
            f"{percent(verified['coverage'])} | {percent(vote_precision)} / {percent(vote['coverage'])} | "
            f"{figures['aurc']:.4f} / {figures['aurc_vote']:.4f} | {percent(figures['ex'])} / "
            f"{percent(figures['ex_without_stop'])} | {figures['calls_per_question']:.2f} / "
            f"{figures['calls_without_stop']:.2f} |")
