"""verifiedsql: ask a database questions in plain language; the SQL is verified before it answers.

    engine = verifiedsql.create_engine("sqlite:///shop.db")
    with engine.connect() as conn:
        result = conn.execute(verifiedsql.ask("How many customers are from Brazil?"))
        result.all(), result.verification
"""

from .config import LLMSettings, Options
from .engine import Ask, VerifiedResult, ask, create_async_engine, create_engine
from .errors import (
    ConfigurationError,
    EmptySchemaError,
    LLMError,
    ModelInstallError,
    ModelTimeoutError,
    NoAnswerError,
    NoDataError,
    NotConfiguredError,
    PromptTooLongError,
    QueryError,
    QueryTimeoutError,
    QuestionError,
    ReplayMissError,
    UnsafeSQLError,
    UnverifiedAnswerError,
    VerifiedSQLError,
)
from .report import VerificationReport

__version__ = "0.1.0"

__all__ = [
    "Ask", "ConfigurationError", "EmptySchemaError", "LLMError", "LLMSettings", "ModelInstallError",
    "ModelTimeoutError", "NoAnswerError", "NoDataError", "NotConfiguredError", "Options", "PromptTooLongError",
    "QueryError", "QueryTimeoutError", "QuestionError", "ReplayMissError", "UnsafeSQLError", "UnverifiedAnswerError",
    "VerificationReport", "VerifiedResult", "VerifiedSQLError", "ask", "create_async_engine", "create_engine",
]
