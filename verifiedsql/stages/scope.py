"""Questions the data cannot answer: the answer step's rules that end a question in ``NoDataError`` (a
``NoAnswerError``) instead of an answer or the plain ``NoAnswerError``. The pipeline calls ``check_unanswered``
when no candidate ran and ``check_answer`` once the answer has its evidence and tier. Every rule reads only
the report, the reflected schema and the engine's errors; none is tuned to a question.

- **No table read** (``check_answer``): the selected answer reads no table (its ``tables`` evidence is
  against it: it is built only from constants), so what it says comes from the model, not from the data.
- **Missing names** (``check_unanswered``): no candidate ran, and most candidates (more than half) failed, after
  repair and refinement, on a schema-name error (``failures.error_class``: unknown table or unknown column)
  whose name is no table or column anywhere in the schema, nor a near miss or abbreviation of one
  (``repair.resembles``). A column that exists in another table or under another spelling
  (``independenceyear`` for ``IndepYear``), or an alias the query did not define ("missing FROM-clause
  entry"), is a mistake of the query, not missing data, and does not count. The error names the missing
  names it could read. When fewer do, the old ``NoAnswerError`` stays.
- **A change, not a question** (``check_unanswered``): no candidate ran, and most candidates were refused as
  statements that change data or schema (``failures.data_change``: DELETE, UPDATE, INSERT, ...). Questions
  are answered by reading only, so no data answers it; the error says so and names the statements.
- **Scope check** (``scope_check``; by default on for the embedded models, ``Options.checks_scope``): when
  the answer's tier is below ``probable``, or no candidate ran and the rules above did not decide, the model
  is asked once, at temperature 0 (``scope_prompts.py``), whether the schema holds the data. A clear NO
  (``llm.replies.yes_no``) ends the question when at least ``scope_unmatched_share`` of the question's
  content words name no table, column or stored value (``scope_terms.py``): a small model says NO to hard
  questions too, and those name the data. Anything else, a failed or cut-off call included, leaves the
  outcome as it was; ``report.scope`` says what was found.

The message says what to do (ask about what the tables hold, and names them) and states nothing the model
made up as a fact: not the constants of an answer, and the model's NO only as what the model said.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence

from ..db.schema import Schema
from ..errors import LLMError, NoDataError, QuestionTimeoutError
from ..llm.replies import yes_no
from ..report import ScopeCheck, VerificationReport
from .common.failures import SCHEMA_NAME_CLASSES, data_change, error_class, missing_name
from .common.grouping import capped_list
from .context import QuestionContext
from .repair import resembles
from .scope_prompts import SCOPE_MAX_TOKENS, scope_messages
from .scope_terms import unmatched_words

SHOWN_TABLES = 12  # table names listed in the message; more are counted
_ALIAS_ERROR = re.compile(r"missing from-clause entry", re.IGNORECASE)


def _tables(schema: Schema) -> str:
    return capped_list([table.name for table in schema.tables], SHOWN_TABLES)


def no_data(ctx: QuestionContext, reason: str, missing: tuple[str, ...] = ()) -> NoDataError:
    """The ``NoDataError`` for ``reason``, with the report (its reason and a note say why)."""
    ctx.report.reason = f"no data: {reason}"
    ctx.note(f"no data for this question: {reason}")
    return NoDataError(
        f"the database holds no data for this question: {reason}. Ask about what its tables hold "
        f"({_tables(ctx.schema)}); the report's candidates show every attempt.",
        ctx.report, missing)


def schema_names(schema: Schema) -> set[str]:
    """Every table and column name of the schema, lower-cased."""
    return {table.name.lower() for table in schema.tables} | {
        column.name.lower() for table in schema.tables for column in table.columns}


def _most(report: VerificationReport, found: list[str | None]) -> tuple[str, ...] | None:
    """``found`` per candidate: when more than half found something and no candidate ran, the distinct
    findings in order; None otherwise."""
    if any(candidate.status == "ok" for candidate in report.candidates):
        return None
    hits = [item for item in found if item is not None]
    return tuple(dict.fromkeys(hits)) if 2 * len(hits) > len(found) else None


def _missing_in(status: str, error: str | None, known: set[str]) -> str | None:
    """For a schema-name error on a name the schema has nothing like: that name ("" when the error names
    none); else None."""
    if error_class(status, error) not in SCHEMA_NAME_CLASSES or _ALIAS_ERROR.search(error or ""):
        return None  # another failure, or an alias the query did not define: its own mistake
    found = missing_name(error)
    if found is None:
        return ""
    # the schema has it (elsewhere, or spelled otherwise): the query's mistake
    return None if resembles(found[1], known) else found[1]


def missing_names(report: VerificationReport, schema: Schema) -> tuple[str, ...] | None:
    """The names the candidates' errors say are missing, in order (empty when no error gives one), when no
    candidate ran and most failed on a table or column the schema does not have; None otherwise."""
    known = schema_names(schema)
    found = _most(report, [_missing_in(c.status, c.error, known) for c in report.candidates])
    return None if found is None else tuple(name for name in found if name)


def data_changes(report: VerificationReport) -> tuple[str, ...] | None:
    """The statement keywords (``DELETE``), in order, when no candidate ran and most were refused as
    statements that change data or schema; None otherwise."""
    return _most(report, [data_change(c.status, c.error) for c in report.candidates])


def _scope_refused(ctx: QuestionContext) -> bool:
    """With ``scope_check``: the model, asked once at temperature 0, says the schema does not hold the data, and
    at least ``scope_unmatched_share`` of the question's content words name nothing in the database
    (``scope_terms``). What it found is ``report.scope``."""
    if not ctx.options.checks_scope(ctx.llm.name) or ctx.deadline.expired:
        return False
    start = time.perf_counter()
    try:
        reply = ctx.ask(scope_messages(ctx.schema_text, ctx.question), "scope", max_tokens=SCOPE_MAX_TOKENS)
    except (LLMError, QuestionTimeoutError) as error:
        ctx.note(f"the scope check was not done: {error}")
        ctx.report.scope = ScopeCheck(said="failed")
        return False
    finally:
        ctx.report.timings["scope"] = round(time.perf_counter() - start, 4)
    verdict = yes_no(reply.text)
    ctx.note("scope check: the model said " + {True: "YES", False: "NO", None: "neither YES nor NO"}[verdict])
    if verdict is not False:
        ctx.report.scope = ScopeCheck(said="unclear" if verdict is None else "yes")
        return False
    try:
        match = unmatched_words(ctx)
    except QuestionTimeoutError as error:
        ctx.note(f"the question's words were not looked up: {error}")
        ctx.report.scope = ScopeCheck(said="no", complete=False)
        return False
    check = ScopeCheck(said="no", words=list(match.words), unmatched=list(match.unmatched), complete=match.complete)
    check.ended = match.complete and check.unmatched_share >= ctx.options.scope_unmatched_share
    ctx.report.scope = check
    if not match.complete:
        ctx.note("the model's NO is not taken: the stored values could not all be read, so the question's words "
                 f"{_quoted(match.unmatched)} may be stored")
    elif not check.ended:
        ctx.note(f"the model's NO is not taken: {len(match.unmatched)} of the question's {len(match.words)} words "
                 f"name nothing in the database (at least {ctx.options.scope_unmatched_share:.0%} must)")
    return check.ended


def _quoted(words: Sequence[str]) -> str:
    """``'a', 'b'``: each distinct word once, in order."""
    return ", ".join(repr(word) for word in dict.fromkeys(words))


def _unmatched_text(ctx: QuestionContext) -> str:
    """``; its words 'a', 'b' name no table, column or stored value`` for the message (``report.scope``'s
    unmatched words; empty when there are none)."""
    check = ctx.report.scope
    if check is None or not check.unmatched:
        return ""
    return f"; its words {_quoted(check.unmatched)} name no table, column or stored value"


def check_unanswered(ctx: QuestionContext) -> None:
    """No candidate ran: ``NoDataError`` when most candidates change data, or name a table or column the
    database does not have, or (``scope_check``) when the model says the schema does not hold the data and the
    question's words name nothing in it; else nothing."""
    changes = data_changes(ctx.report)
    if changes is not None:
        raise no_data(ctx, f"it asks to change the database (the queries written for it are {', '.join(changes)} "
                           "statements), and questions are only answered by reading; run a change as your own SQL")
    missing = missing_names(ctx.report, ctx.schema)
    if missing is not None:
        names = f" ({', '.join(missing)})" if missing else ""
        raise no_data(ctx, "most queries written for it ask for a table or column the database does not "
                           f"have{names}", missing)
    if _scope_refused(ctx):
        raise no_data(ctx, "no query ran, and asked whether the schema holds this data, the model said no"
                           + _unmatched_text(ctx))


def check_answer(ctx: QuestionContext) -> None:
    """The answer has its evidence and tier: ``NoDataError`` when it reads no table, or (``scope_check``) when
    it is below ``probable``, the model says the schema does not hold the data and the question's words name
    nothing in it; else nothing."""
    if any(e.check == "tables" and e.verdict == "against" for e in ctx.report.evidence):
        raise no_data(ctx, "the answer reads no table (it is built only from values the model wrote)")
    if not ctx.report.at_least("probable") and _scope_refused(ctx):
        raise no_data(ctx, f"the answer is only {ctx.report.confidence}, and asked whether the schema holds this "
                           "data, the model said no" + _unmatched_text(ctx))
