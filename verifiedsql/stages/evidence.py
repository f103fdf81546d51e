"""Evidence for the chosen answer, and the confidence tier it supports.

Each check looks at the answer from one side and says ``for``, ``against`` or ``neutral``:
- ``vote``: the share of all candidates, failed ones included, whose result equals the answer's;
- ``result``: an empty result, a result of NULLs only, a NULL first cell (a NULL group key or an
  aggregate over nothing), or one row of aggregates that are all zero or NULL (``COUNT`` over no rows); a
  result cut at the row or byte cap (neutral);
- ``ties``: an ``ORDER BY ... LIMIT n`` that cuts through rows the ordering ranks equal (``stages/ties.py``):
  which of them come back is the engine's choice, so agreeing candidates agree on that choice, not on the answer;
- ``tables``: an answer built only from constants, that reads no table;
- ``wording``: a string value the SQL compares with a column that the question does not name (against: the
  answer rests on a value the user never gave, as when a question no table answers is matched to a stored
  value that looks related);
- ``today``: the SQL reads today's date where the question names no time relative to today (against: the
  answer changes from day to day);
- ``dates``: (SQLite) the SQL compares a date with a number, which SQLite makes true for every row or none;
- ``days``, ``joins``, ``counted``, ``grouping`` (``stages/shape_checks.py``): a day of the year or month read
  as a number of days; a join that only repeats rows; "how many X" where the SQL reads no table of X; a value
  per group where the question asks for one. ``result`` also speaks against a result whose every number is
  negative where the question asks how long;
- ``refinement``: the chosen SQL needed self-refinement or a repair before it ran (neutral: the repaired SQL
  still has to win the vote);
- ``constraints``: the question's constraints (``verify``), and with ``constraint_repair`` the arithmetic its
  words ask for (``pvsql/rules/``), met or not;
- ``literals``: the string and date literals the chosen SQL compares with columns (``check_literals``):
  ``for`` when every one is stored in its column as written; ``against`` when one is not, but is stored in a
  table linked to the column's table by a key (a name compared with a column of ids); neutral when one is
  stored nowhere (an empty answer may be right) or was repaired to the stored variant;
- ``dpc``, ``trace``, ``review``: what the dual-paradigm test, the execution trace and the R3 review
  concluded, when they ran;
- ``time``: the question's time budget ran out before every check was done.

With ``weigh_evidence`` the vote itself weighs these checks on each candidate before any vote (``doubts``): a
result that is empty, NULL, or negative where the question asks how long; a compared value the question does not
name; a literal that lives in a linked table; today's date unasked; a date compared with a number on SQLite; and
the four shape checks. A doubted candidate counts as less than one vote when clusters are compared
(``cluster.select_majority``).

The tier follows from the evidence by ``TierRule.tier_of`` (its thresholds are fitted on one seeded half of
Spider dev and reported on the other; see docs/trust.md):
- ``unverified``: nothing ran, the time ran out, or the answer reads no table;
- ``verified``: at least ``verified_share`` of the candidates agree, and at least ``verified_agree`` of them,
  and no check is against it;
- ``probable``: more than half agree (or a single candidate that a DPC, trace or review check supports),
  and no check on the result itself is against it;
- ``doubtful``: everything else that ran.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sqlglot import exp

from ..errors import UnsafeSQLError
from ..guard.safety import parse_one_query
from ..report import Candidate, Confidence, Evidence, EvidenceVerdict, LiteralOutcome, VerificationReport
from ..results import ResultSet
from .base import Pool
from .cluster import Doubt
from .common.catalog import Catalog
from .common.date_nodes import column_resolver, is_date_valued, reads_today
from .common.terms import named_in
from .context import QuestionContext
from .generate import CandidateRun
from .literals import compared_values
from .shape_checks import calendar_days, counted_table, negative_duration, repeating_joins, split_into_groups
from .ties import tie_evidence

HARD = ("tables", "time")  # checks that, against an answer, leave it unverified
RESULT = ("result",)  # checks on the rows themselves
SUPPORT = ("dpc", "trace", "review")  # independent checks that may stand in for a vote


def _vote(pool: Pool) -> Evidence:
    assert pool.selection is not None
    total, agree = len(pool.runs), len(pool.selection.cluster.members)
    detail = f"{agree} of {total} candidates (failed ones included) give this result"
    if total < 2:
        return Evidence("vote", "neutral", "a single candidate: nothing to compare it with")
    return Evidence("vote", "for" if agree * 2 > total else "against", detail)


def vote_share(pool: Pool) -> float:
    """The share of all candidates, failed ones included, in the answer's cluster."""
    assert pool.selection is not None
    return len(pool.selection.cluster.members) / max(1, len(pool.runs))


def vote_count(pool: Pool) -> int:
    """The number of candidates in the answer's cluster."""
    assert pool.selection is not None
    return len(pool.selection.cluster.members)


def _result(result: ResultSet) -> list[Evidence]:
    found: list[Evidence] = []
    if result.row_count == 0:
        found.append(Evidence("result", "against", "the result is empty"))
    elif all(value is None for row in result.rows for value in row):
        found.append(Evidence("result", "against", "every value of the result is NULL"))
    elif result.rows and result.rows[0] and result.rows[0][0] is None:
        found.append(Evidence("result", "against", "the first cell is NULL (a NULL key, or an aggregate of nothing)"))
    if result.truncated:
        found.append(Evidence("result", "neutral", f"the result was cut at {result.row_count} rows"))
    return found


def _empty_aggregate(result: ResultSet, tree: exp.Expr | None) -> list[Evidence]:
    """Against an answer that is one row of aggregates, all zero or NULL: a ``COUNT`` over no rows reads like a
    count, but says that the filter matched nothing. (Not one of the vote's doubts: measured, weighing it in
    the vote gained on the 0.5B model and lost on the 1.5B; docs/benchmarks/stages.md.)"""
    if not isinstance(tree, exp.Select) or tree.args.get("group") or result.row_count != 1:
        return []
    outputs = [e.this if isinstance(e, exp.Alias) else e for e in tree.expressions]
    if not outputs or not all(isinstance(e, exp.AggFunc) for e in outputs):
        return []
    if any(value is not None and value != 0 for value in result.rows[0]) or result.rows[0][0] is None:
        return []  # a first cell of NULL is already a result check of its own
    return [Evidence("result", "against", "every aggregate is zero or NULL (a count over no rows)")]


def _query_tree(sql: str, ctx: QuestionContext) -> exp.Expr | None:
    """The chosen SQL's tree, read once for the checks below; None when the guard's parser cannot read it."""
    try:
        return parse_one_query(sql, ctx.database.profile)
    except UnsafeSQLError:
        return None


def reads_a_table(tree: exp.Expr | None) -> bool:
    """Whether the query reads any table (an answer made of constants reads none). An unread query ran, so
    the engine read it: a parser gap is not held against it."""
    return tree is None or any(True for _ in tree.find_all(exp.Table))


def _wording(tree: exp.Expr | None, question: str) -> list[Evidence]:
    """Against the answer when it compares a column with a string value the question does not name."""
    values = compared_values(tree) if tree is not None else []
    unnamed = list(dict.fromkeys(v for v in values if not named_in(v, question)))
    if not unnamed:
        return []
    shown = ", ".join(exp.Literal.string(v).sql() for v in unnamed[:3])
    return [Evidence("wording", "against", f"the SQL compares with {shown}, which the question does not name")]


_TODAY_WORDS = re.compile(r"\b(?:today|now|current|currently|present|as of|ago|recent|recently|this (?:year|month|week|"
                          r"quarter)|past \d+|so far|to date|still|yet|age|aged|old|older)\b")


def _today(tree: exp.Expr | None, question: str) -> list[Evidence]:
    """Against an answer that reads today's date (``CURRENT_DATE``, ``NOW()``, ``'now'``) where the question names
    no time relative to today: such an answer changes from one day to the next."""
    if tree is None or _TODAY_WORDS.search(question.lower()):
        return []
    if not reads_today(tree):
        return []
    return [Evidence("today", "against", "the SQL reads today's date, which the question does not ask about: the "
                     "answer changes from day to day")]


def _numeric(node: exp.Expr) -> bool:
    """A number on SQLite: a number literal or arithmetic (which SQLite always computes as a number)."""
    node = node.unnest()
    return (isinstance(node, exp.Literal) and not node.is_string) or isinstance(node, (exp.Add, exp.Sub, exp.Mul,
                                                                                      exp.Div))


def _date_against_number(tree: exp.Expr | None, catalog: Catalog) -> list[Evidence]:
    """(SQLite) Against an answer that compares a date with a number (``end_date > STRFTIME('%Y', start_date) +
    10``): SQLite orders every text above every number, so such a comparison holds for every row or for none."""
    if tree is None or catalog.engine != "sqlite":
        return []
    column_of = column_resolver(tree, catalog)
    for node in tree.find_all(exp.GT, exp.GTE, exp.LT, exp.LTE, exp.EQ, exp.NEQ, exp.Between):
        sides = ([node.this, node.args.get("low"), node.args.get("high")] if isinstance(node, exp.Between)
                 else [node.this, node.expression])
        present = [side for side in sides if side is not None]
        if any(is_date_valued(side, column_of) for side in present) and any(_numeric(side) for side in present):
            return [Evidence("dates", "against", f"{node.sql(dialect='sqlite')} compares a date with a number, "
                             "which SQLite makes true for every row or for none")]
    return []


def _sql_checks(tree: exp.Expr | None, ctx: QuestionContext) -> list[Evidence]:
    """What the SQL alone says against the answer: an unnamed value, today's date unasked, a date against a
    number, a day of the year or month for a number of days, a join that only repeats rows."""
    catalog = Catalog(ctx.schema, ctx.database.profile.name)
    return (_wording(tree, ctx.question) + _today(tree, ctx.question) + _date_against_number(tree, catalog)
            + calendar_days(tree, ctx.question, catalog, ctx.database.profile.sqlglot_dialect)
            + repeating_joins(tree, ctx.question, catalog) + counted_table(tree, ctx.question, catalog))


def _answer_shape(tree: exp.Expr | None, result: ResultSet, ctx: QuestionContext) -> list[Evidence]:
    """What the rows say against the answer given the question: a negative time, one value asked and a value
    per group given."""
    return negative_duration(result, ctx.question) + split_into_groups(tree, result, ctx.question)


_LITERAL_VERDICTS: tuple[tuple[LiteralOutcome, EvidenceVerdict], ...] = (
    ("elsewhere", "against"), ("absent", "neutral"), ("repaired", "neutral"), ("variant", "neutral"))


def _literals(chosen: Candidate) -> list[Evidence]:
    """The literal checks of the chosen SQL (``check_literals``); nothing when it compares no literal."""
    checks = chosen.literals
    if not checks:
        return []
    found: list[Evidence] = []
    for outcome, verdict in _LITERAL_VERDICTS:
        details = [check.detail for check in checks if check.outcome == outcome]
        if details:
            found.append(Evidence("literals", verdict, "; ".join(details)))
    if all(check.outcome == "found" for check in checks):
        found.append(Evidence("literals", "for", f"{_count(len(checks))} compared with a column "
                              f"{'is' if len(checks) == 1 else 'are'} stored there as written"))
    return found


def _count(n: int) -> str:
    return "the one literal" if n == 1 else f"all {n} literals"


def _stage_checks(report: VerificationReport, chosen_sql: str, cluster: set[int]) -> list[Evidence]:
    found: list[Evidence] = []
    if report.dpc is not None and report.dpc.status == "decided":
        kept = report.dpc.winner in cluster
        found.append(Evidence("dpc", "for" if kept else "against",
                              f"the dual-paradigm test {'chose' if kept else 'did not choose'} this result "
                              f"({report.dpc.reason})"))
    if report.trace is not None and report.trace.outcome == "accepted" and report.trace.candidate is not None:
        agrees = report.trace.candidate in cluster
        found.append(Evidence("trace", "for" if agrees else "against",
                              "the verified execution trace " + ("gives" if agrees else "does not give") +
                              " this result"))
    if report.consensus is not None and report.consensus.first_round:
        first = "was tied" if report.consensus.trigger == "tie" else "had no candidate that ran"
        found.append(Evidence("consensus", "against",
                              f"the first vote {first}; these candidates were generated again after column "
                              "exploration, so their agreement is not the whole question's"))
    if report.review is not None and report.review.rounds:
        found.append(Evidence("review", "neutral" if report.review.changed else "for",
                              "the R3 review " + ("revised the SQL" if report.review.changed else
                                                  "left the SQL unchanged")))
    return found


def doubts(run: CandidateRun, ctx: QuestionContext) -> list[Evidence]:
    """The checks against one candidate's result on their own, before any vote: an empty, NULL or (for a time
    between dates) negative result, what the SQL alone says against it (``_sql_checks``), a literal stored in a
    linked table instead."""
    tree = _query_tree(run.candidate.sql, ctx)
    if run.result is not None:
        found = [e for e in _result(run.result) if e.verdict == "against"] + _answer_shape(tree, run.result, ctx)
    else:
        found = []
    found += _sql_checks(tree, ctx)
    found += [e for e in _literals(run.candidate) if e.verdict == "against"]
    return found


def doubt_for(ctx: QuestionContext) -> Doubt | None:
    """The vote's doubt for this question (``weigh_evidence``), or None when the vote counts heads only."""
    if not ctx.options.weigh_evidence:
        return None
    return lambda run: bool(doubts(run, ctx))


def gather_evidence(ctx: QuestionContext, pool: Pool, timed_out: bool) -> list[Evidence]:
    """Every check on the pool's selected answer (which ran)."""
    assert pool.selection is not None and pool.selection.representative.result is not None
    chosen = pool.selection.representative.candidate
    result = pool.selection.representative.result
    tree = _query_tree(chosen.sql, ctx)
    found = [_vote(pool), *_result(result), *_answer_shape(tree, result, ctx), *_empty_aggregate(result, tree),
             *tie_evidence(ctx, tree, result)]
    if not reads_a_table(tree):
        found.append(Evidence("tables", "against", "the answer is built from constants and reads no table"))
    if chosen.attempts:
        found.append(Evidence("refinement", "neutral",
                              f"the chosen SQL ran after {len(chosen.attempts)} failed or repaired version(s)"))
    found += _literals(chosen)
    found += _sql_checks(tree, ctx)
    if ctx.options.verify or (ctx.options.constraint_repair and ctx.report.constraints):  # the question states some
        found.append(Evidence("constraints", "against" if chosen.violations else "for",
                              "; ".join(chosen.violations) if chosen.violations
                              else "every constraint of the question is met"))
    found += _stage_checks(ctx.report, chosen.sql, set(pool.selection.cluster.members))
    if timed_out:
        found.append(Evidence("time", "against", "the time budget ran out before every check was done"))
    return found


@dataclass(frozen=True)
class TierRule:
    """The rule from evidence to tier. ``verified`` needs at least ``verified_share`` of the candidates and
    at least ``verified_agree`` of them in agreement: three agreeing candidates of three are weaker evidence
    than five of five (measured on the 1.5B model: 25 of 30 right against 20 of 20; docs/benchmarks/speed.md), so
    an answer whose sampling stopped early (``adaptive``) or that had fewer candidates is at most probable."""

    verified_share: float = 1.0
    verified_agree: int = 5

    def tier_of(self, evidence: list[Evidence], share: float, agree: int) -> Confidence:
        """The tier of an answer with ``evidence``, in a cluster of ``agree`` candidates, ``share`` of all."""
        against = {e.check for e in evidence if e.verdict == "against"}
        support = {e.check for e in evidence if e.verdict == "for" and e.check in SUPPORT}
        if against & set(HARD):
            return "unverified"
        voted = any(e.check == "vote" and e.verdict == "for" for e in evidence)
        if voted and share >= self.verified_share and agree >= self.verified_agree and not against:
            return "verified"
        if (voted or (support and "vote" not in against)) and not against & set(RESULT):
            return "probable"
        return "doubtful"


DEFAULT_RULE = TierRule()
