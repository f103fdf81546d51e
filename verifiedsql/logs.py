"""The library's loggers, each named once here: ``verifiedsql`` and a child per concern, as SQLAlchemy has
``sqlalchemy.engine``. verifiedsql never configures logging. Its root logger holds only a ``NullHandler``,
so the application chooses the handlers and levels.

- ``verifiedsql.question``, INFO: one line per question (outcome, tier, model calls, tokens, seconds, the
  question and the chosen SQL).
- ``verifiedsql.stages.<name>``, DEBUG: each stage's start and end, with seconds (the names of
  ``report.timings``).
- ``verifiedsql.llm``, DEBUG: each model call (purpose, model, tokens, seconds, cached or not), and each
  failed one.
- ``verifiedsql.sql``, DEBUG: each query and plan run for a question (status, rows, milliseconds, the SQL).

Messages are %-formatted only when they are emitted, and the work of building them (flattening SQL,
summing tokens) is done only at an enabled level. Questions and SQL are logged. Credentials never are:
no URL is logged, and a failed model call's message passes through ``redact.secrets``.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from .errors import QueryError, QueryTimeoutError, QuestionTimeoutError, UnsafeSQLError
from .guard.redact import secrets

if TYPE_CHECKING:
    from .llm.base import ChatRequest, ChatResponse
    from .report import VerificationReport

ROOT = "verifiedsql"
QUESTION = "verifiedsql.question"
STAGES = "verifiedsql.stages"  # the parent of one logger per stage: verifiedsql.stages.<name>
LLM = "verifiedsql.llm"
SQL = "verifiedsql.sql"

_root = logging.getLogger(ROOT)
if not any(isinstance(handler, logging.NullHandler) for handler in _root.handlers):
    _root.addHandler(logging.NullHandler())  # the convention for libraries; see the logging HOWTO

_question = logging.getLogger(QUESTION)
_stages = logging.getLogger(STAGES)  # made first, so each stage's logger has it as its parent at once
_llm = logging.getLogger(LLM)
_sql = logging.getLogger(SQL)

_LINE_BREAK = re.compile(r"[ \t]*(?:\r\n|\r|\n)\s*")


def one_line(sql: str | None) -> str:
    """``sql`` on one line (each line break and the indentation around it becomes one space), or ``-``."""
    return _LINE_BREAK.sub(" ", sql.strip()) if sql else "-"


def stage_logger(name: str) -> logging.Logger:
    """The logger of the stage called ``name`` (its key in ``report.timings``)."""
    return logging.getLogger(f"{STAGES}.{name}")


@contextmanager
def stage(name: str) -> Iterator[None]:
    """Log the block's start and its end with its seconds, at DEBUG on ``verifiedsql.stages.<name>``;
    an exception that ends the block is named in the end line."""
    log = stage_logger(name)
    if not log.isEnabledFor(logging.DEBUG):
        yield
        return
    log.debug("stage %s: start", name)
    start = time.perf_counter()
    ending = "end"
    try:
        yield
    except BaseException as error:
        ending = f"ended by {type(error).__name__}"
        raise
    finally:
        log.debug("stage %s: %s after %.3f s", name, ending, time.perf_counter() - start)


def model_call(request: ChatRequest, response: ChatResponse, seconds: float) -> None:
    """One model call that answered, ``seconds`` being its time here (near 0 for a cached reply)."""
    if _llm.isEnabledFor(logging.DEBUG):
        _llm.debug("model call %s: %s, %d prompt + %d completion tokens, %.3f s%s", request.purpose,
                   response.model, response.prompt_tokens, response.completion_tokens, seconds,
                   ", cached" if response.cached else "")


def model_call_failed(request: ChatRequest, seconds: float, error: BaseException) -> None:
    """One model call that raised (``LLMError``, or the question's time running out)."""
    if _llm.isEnabledFor(logging.DEBUG):
        _llm.debug("model call %s: failed after %.3f s: %s: %s", request.purpose, seconds,
                   type(error).__name__, secrets(str(error)))


def query_status(error: BaseException) -> str:
    """A failed query's status, in the words of a candidate's status (``report.CandidateStatus``)."""
    if isinstance(error, UnsafeSQLError):
        return "unsafe"
    if isinstance(error, (QueryTimeoutError, QuestionTimeoutError)):
        return "timeout"
    if isinstance(error, QueryError):
        return "error"
    return type(error).__name__


def query_ran(kind: str, sql: str, doing: str, started: float, rows: int | None = None,
              truncated: bool = False) -> None:
    """A query (``kind`` "query") or plan ("explain") that succeeded; ``started`` is its
    ``time.perf_counter()`` at the start, ``rows`` how many came back (None for a plan)."""
    if _sql.isEnabledFor(logging.DEBUG):
        fetched = "" if rows is None else f", {rows} row{'' if rows == 1 else 's'}" + (" (truncated)" * truncated)
        _sql.debug("%s ok%s, %.1f ms (%s): %s", kind, fetched, (time.perf_counter() - started) * 1000, doing, sql)


def query_failed(kind: str, sql: str, doing: str, started: float, error: BaseException) -> None:
    """A query or plan that raised; the error's message never quotes stored values (``redact``)."""
    if _sql.isEnabledFor(logging.DEBUG):
        _sql.debug("%s %s, %.1f ms (%s): %s\n-- %s: %s", kind, query_status(error),
                   (time.perf_counter() - started) * 1000, doing, sql, type(error).__name__, error)


def question(report: VerificationReport, seconds: float, error: BaseException | None = None) -> None:
    """The question's one INFO line: how it ended (``answered``, or the error's class), the tier and SQL
    of the answer chosen (``-`` when none was), and what it cost."""
    if not _question.isEnabledFor(logging.INFO):
        return
    outcome = "answered" if error is None else type(error).__name__
    if report.timed_out:
        outcome += " (timed out)"
    tier = report.confidence if report.sql else "-"
    _question.info("%s: tier=%s model_calls=%d tokens=%d seconds=%.3f question=%r sql=%s", outcome, tier,
                   len(report.llm_calls), report.total_tokens, seconds, report.question, one_line(report.sql))
