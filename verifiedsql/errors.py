"""Typed errors. Every message says what went wrong and what to do next."""

from __future__ import annotations

from typing import Any


class VerifiedSQLError(Exception):
    """Base class of every error raised by verifiedsql."""


class ConfigurationError(VerifiedSQLError, ValueError):
    """An option or environment variable has a value verifiedsql cannot use."""


class NotConfiguredError(VerifiedSQLError):
    """A question was sent through an engine that verifiedsql does not wrap."""


class UnknownBackendError(ConfigurationError):
    """No registered backend (``verifiedsql.backends``) has this engine name or DB-API driver; the message
    names the supported ones."""


class EmptySchemaError(VerifiedSQLError):
    """The database (or the chosen schema) has no tables, so there is nothing to ask about."""


class QuestionError(VerifiedSQLError, ValueError):
    """The question itself is unusable (empty, too long, not text)."""


class UnsafeSQLError(VerifiedSQLError):
    """A statement was refused by a safety layer; ``construct`` names what was refused (a statement kind, a
    function, or a relation outside ``schema=`` or holding secrets: ``verifiedsql.guard.boundary``)."""

    def __init__(self, message: str, *, construct: str, layer: str = "statement") -> None:
        super().__init__(message)
        self.construct = construct
        self.layer = layer


class UnparseableSQLError(UnsafeSQLError):
    """The statement guard could not parse the SQL (or it nests too deeply to check), so it cannot vouch
    for it."""


class QueryTimeoutError(VerifiedSQLError):
    """A generated query ran longer than the statement timeout."""


class QueryError(VerifiedSQLError):
    """The database raised an error while running a generated, read-only query, or its driver failed on the
    result (a value Python cannot hold, one nested too deeply to load). The message never quotes stored
    values (``verifiedsql.guard.redact``)."""


class LLMError(VerifiedSQLError):
    """The language model could not be reached or gave no usable answer."""


class ModelTimeoutError(LLMError):
    """The model gave no complete answer within the time allowed (``llm_timeout_s``): an endless or very long
    reply, or a server too slow for the budget. Raise ``llm_timeout_s``, or ask again. A record/replay cache
    keeps the request that timed out, and a replay raises this again for it, as the recorded run saw."""


class PromptTooLongError(LLMError):
    """The model's server refused a prompt longer than its context window (a large schema, mostly): turn on
    ``compress_schema``, name fewer tables with ``schema=``, or use a model with a longer context.
    ``context_tokens``: the window's size in the model's tokens, where the server said it."""

    def __init__(self, message: str, context_tokens: int | None = None) -> None:
        super().__init__(message)
        self.context_tokens = context_tokens


class ReplayMissError(VerifiedSQLError):
    """Replay-only cache mode met a request that was never recorded. Not an ``LLMError``: no stage may
    treat it as a model failure and carry on, or a replay would silently answer differently."""


class ModelInstallError(VerifiedSQLError):
    """The embedded local model could not be installed or started."""


class NoAnswerError(VerifiedSQLError):
    """No candidate SQL could be executed; ``report`` shows every attempt."""

    def __init__(self, message: str, report: Any) -> None:
        super().__init__(message)
        self.report = report


class NoDataError(NoAnswerError):
    """The database holds no data for this question: the answer would read no table; no candidate ran and most
    failed on a table or column the database does not have (``missing`` names them) or were statements that
    change data; or, with ``scope_check``, the model said the schema does not hold the data. A
    ``NoAnswerError``, so ``except NoAnswerError`` still catches it; ``report`` shows every attempt
    (``verifiedsql/stages/scope.py`` decides)."""

    def __init__(self, message: str, report: Any, missing: tuple[str, ...] = ()) -> None:
        super().__init__(message, report)
        self.missing = missing


class UnverifiedAnswerError(VerifiedSQLError):
    """The answer's confidence tier is below the ``require`` option. The best answer is still here: its
    ``rows``, ``columns`` and ``report`` (with the evidence)."""

    def __init__(self, message: str, result: Any, report: Any) -> None:
        super().__init__(message)
        self.result = result
        self.rows: list[tuple[Any, ...]] = [tuple(row) for row in result.rows]
        self.columns: list[str] = list(result.columns)
        self.report = report


class QuestionTimeoutError(VerifiedSQLError):
    """The question's time budget (``question_timeout_s``) ran out before any candidate could be run;
    ``report`` shows what was done until then (None when the question never got that far)."""

    def __init__(self, message: str, report: Any = None) -> None:
        super().__init__(message)
        self.report = report


class SessionStateError(QueryError):
    """A generated query left session state on the connection that could not be undone (PostgreSQL: a
    temporary object); the query counts as failed, and a pooled connection is discarded."""


class OpenTransactionError(VerifiedSQLError):
    """The connection is inside a transaction, so a read-only one cannot be started on it.

    Not a query error: no rewrite of the SQL helps, so it is raised to the caller at once.
    """


class SandboxError(VerifiedSQLError):
    """The sandbox for model-written Python could not be set up or run."""


class SandboxUnavailableError(SandboxError):
    """No working sandbox (bubblewrap) here, so model-written Python is not run at all (never unsandboxed)."""


class SliceError(VerifiedSQLError):
    """A schema slice could not be built or used: a table or column name of a candidate SQL did not
    resolve, or a candidate failed on the empty slice. Callers fall back to selection without an MDD."""
