"""User-facing options, with environment-variable fallbacks for the LLM settings."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal, Mapping

from .errors import ConfigurationError
from .report import CONFIDENCE_TIERS, Confidence

CacheMode = Literal["off", "readwrite", "replay"]
LOCAL_MODELS = ("1.5b", "0.5b")
# The models (by the name they answer to) whose scope check was measured on Spider dev and the out-of-scope set
# (docs/benchmarks/scope-sqlite.md): with its word matching it refused no right answer of either
# model's Spider runs. scope_check=None turns the check on for these only.
SCOPE_CHECKED_MODELS = frozenset({"qwen2.5-coder-1.5b", "qwen2.5-coder-0.5b"})


def _env(*names: str) -> str | None:
    for name in names:
        value = os.environ.get(name)
        if value:
            return value
    return None


@dataclass(frozen=True)
class LLMSettings:
    """Where the model lives. With no base URL and no API key, the embedded local model is used."""

    base_url: str | None = field(default=None, repr=False)  # may hold user:password@; never shown in a repr
    model: str | None = None
    api_key: str | None = field(default=None, repr=False)
    local_model: str = "1.5b"
    timeout_s: float = 180.0
    max_retries: int = 3
    local_threads: int | None = None

    @property
    def uses_embedded_model(self) -> bool:
        return not self.base_url and not self.api_key

    @classmethod
    def from_env(cls, **overrides: Any) -> LLMSettings:
        settings = cls(
            base_url=_env("VERIFIEDSQL_LLM_BASE_URL", "OPENAI_BASE_URL"),
            model=_env("VERIFIEDSQL_LLM_MODEL", "OPENAI_MODEL"),
            api_key=_env("VERIFIEDSQL_LLM_API_KEY", "OPENAI_API_KEY"),
            local_model=_env("VERIFIEDSQL_LOCAL_MODEL") or "1.5b",
        )
        settings = replace(settings, **{k: v for k, v in overrides.items() if v is not None})
        if settings.local_model not in LOCAL_MODELS:
            raise ConfigurationError(
                f"local_model={settings.local_model!r} is not known; choose one of {LOCAL_MODELS}."
            )
        return settings


@dataclass(frozen=True)
class Options:
    """Everything a verified engine or connection can be told. Defaults suit an interactive user."""

    llm: LLMSettings = field(default_factory=LLMSettings.from_env)
    cache_path: Path | None = None
    cache_mode: CacheMode = "off"
    candidates: int = 5
    temperature: float = 0.7
    # draw candidates one at a time, greedy first, and stop once the vote is settled (stages/sampling.py):
    # P(the leading result is the majority) >= adaptive_confidence; at most `candidates` in all
    adaptive: bool = False
    adaptive_confidence: float = 0.9
    # a calibrated chance of being right (report.probability) where the model gives token log-probabilities:
    # the fit in this file (written by `verifiedsql bench calibrate`); None: the one shipped for the embedded
    # model, if any; "off" (or no fit): the tiers follow the vote-based rule, and the report says so
    calibration: str | None = None
    # draw the greedy candidate first and answer with it alone when its calibrated probability clears the fit's
    # stop threshold; else draw the rest (stages/confidence.py). Needs a calibration with a stop threshold
    sure_stop: bool = False
    # model requests of one question sent side by side (the candidates; recorded in candidate order)
    concurrency: int = 5
    max_refinements: int = 2
    row_cap: int = 10_000
    # per query: the fetch stops once its cells pass this many bytes (estimated: text and bytes by length,
    # 8 per number) and the result is marked truncated, like a row-capped one; SQLite values are capped at it
    max_result_bytes: int = 64 * 1024 * 1024
    statement_timeout_s: float = 30.0
    sample_values: int = 3
    max_question_chars: int = 4_000
    question_timeout_s: float = 600.0  # wall-time budget of one question, every stage and model call included
    # the lowest confidence tier an answer may have; below it the question raises UnverifiedAnswerError
    require: Confidence | None = None
    # below probable (or with no candidate that ran): ask the model once whether the schema holds the data;
    # a clear "no" raises NoDataError (stages/scope.py) when at least scope_unmatched_share of the question's
    # content words name nothing in the database (stages/scope_terms.py; 0: the model's NO alone decides).
    # None: on for the models it was measured on (SCOPE_CHECKED_MODELS, both embedded ones), off for any other
    scope_check: bool | None = None
    scope_unmatched_share: float = 0.5
    schema: str | None = None
    # PostgreSQL: run each generated query under SET LOCAL ROLE <question_role> (e.g. a role with pg_read_all_data)
    question_role: str | None = None
    max_tokens: int = 512
    ground_values: bool = False  # look question literals up in text columns; matches go into the prompt
    # repair a failing candidate on its AST from schema facts (columns, keys, types, dialect) before refinement
    schema_repair: bool = True  # on by default: measured on Spider dev (docs/benchmarks/stages.md)
    # prompt rules from the schema (date columns named, year columns named) instead of the dialect's fixed ones;
    # off: on PostgreSQL greedy+repair got 35.9% EX with them and 43.6% without (39 Spider questions; docs/benchmarks)
    schema_hints: bool = False
    # a refinement after an unknown table or column also shows what the schema says about that name (off
    # until measured: its refinement requests are new, see docs/benchmarks/stages.md)
    schema_facts: bool = False
    # look each string or date literal a candidate compares with a column up in that column (stages/literals.py)
    check_literals: bool = True
    # the vote counts a candidate whose result has evidence against it (empty or NULL, a value the question does
    # not name, a literal stored in a linked table) as less than one: it must lead by two (stages/evidence.py)
    weigh_evidence: bool = True
    verify: bool = False  # check each candidate that ran against the question's constraints and repair it
    # repair each candidate that ran, on its AST, to the arithmetic the question's words ask for (a ratio is not
    # scaled by 100 and a percentage is, "A to B" divides by B, a change divides the difference by its base, no
    # integer division, days by date arithmetic (both ends when asked), distinct counts, rounding and letter case
    # as the question instructs: stages/pvsql/rules/); what it still breaks is evidence. No model call; on
    # because it lost nothing on Spider and added EX on the analytics set
    constraint_repair: bool = True
    max_repairs: int = 3
    probe: bool = False  # let the model run exploratory queries first; findings go into the prompt
    max_probes: int = 5
    probe_timeout_s: float = 5.0
    dpc: bool = False  # when candidates disagree, test champion vs challenger on a distinguishing database
    dpc_margin: float = 0.0  # the challenger must beat the champion's score by more than this
    dpc_votes: int = 1  # solver attempts (seeds) that vote
    mdd_max_rows: int = 30  # rows per table of a distinguishing database
    # on a tied vote or when every candidate fails: explore columns, regenerate, re-vote; a tie left goes to DPC
    consensus: bool = False
    max_explorations: int = 10  # exploration queries of consensus enforcement (each LIMIT 20)
    compress_schema: bool = False  # group sharded tables; over the budget, trim samples and link tables
    prompt_budget_tokens: int = 6_000  # estimated tokens (chars/4) of the schema text when compress_schema is on
    review: bool = False  # R3: reviewers review the selected SQL, the writer rebuts and revises (a new candidate)
    reviewers: int = 3
    review_rounds: int = 3
    # VET: trace the question in pandas steps on real data, rebuild the SQL from the trace, keep it if it agrees
    vet: bool = False
    vet_steps: int = 5
    vet_step_repairs: int = 3
    vet_max_rows: int = 10_000  # rows fetched per candidate table for the trace
    # threshold of the question-reconstruction check (see verifiedsql/stages/vet/similarity.py)
    vet_similarity: float = 0.6

    def __post_init__(self) -> None:
        numbers = [(item.name, getattr(self, item.name)) for item in fields(self)]
        for name, value in [*numbers, ("llm_timeout_s", getattr(self.llm, "timeout_s", 0.0))]:
            if isinstance(value, float) and not math.isfinite(value):  # NaN passes every comparison below
                raise ConfigurationError(f"{name}={value!r}: give a finite number.")
        if self.cache_mode not in ("off", "readwrite", "replay"):
            raise ConfigurationError(
                f"cache_mode={self.cache_mode!r}: use 'off', 'readwrite' or 'replay'."
            )
        if self.require is not None and self.require not in CONFIDENCE_TIERS:
            raise ConfigurationError(f"require={self.require!r}: use one of {', '.join(CONFIDENCE_TIERS)} (or None).")
        if self.cache_mode != "off" and self.cache_path is None:
            raise ConfigurationError(f"cache_mode={self.cache_mode!r} needs cache_path=<file>.")
        if self.question_role is not None and (not isinstance(self.question_role, str) or not self.question_role):
            raise ConfigurationError("question_role must be a PostgreSQL role name (or None).")
        if self.candidates < 1:
            raise ConfigurationError("candidates must be at least 1.")
        if self.concurrency < 1:
            raise ConfigurationError("concurrency must be at least 1 (1 sends one model request at a time).")
        if not 0.5 < self.adaptive_confidence < 1:
            raise ConfigurationError("adaptive_confidence must be between 0.5 and 1 (a probability; 0.9 stops "
                                     "after three agreeing candidates).")
        if self.row_cap < 1 or self.statement_timeout_s <= 0:
            raise ConfigurationError("row_cap and statement_timeout_s must be positive.")
        if self.max_result_bytes < 1:
            raise ConfigurationError("max_result_bytes must be positive (bytes of one query's result).")
        if self.max_repairs < 0 or self.max_probes < 0 or self.max_explorations < 0:
            raise ConfigurationError("max_repairs, max_probes and max_explorations must be 0 or more.")
        if self.dpc_votes < 1 or self.mdd_max_rows < 1:
            raise ConfigurationError("dpc_votes and mdd_max_rows must be at least 1.")
        if self.probe_timeout_s <= 0 or self.question_timeout_s <= 0:
            raise ConfigurationError("probe_timeout_s and question_timeout_s must be positive.")
        if self.prompt_budget_tokens < 1:
            raise ConfigurationError("prompt_budget_tokens must be positive.")
        if self.reviewers < 1 or self.review_rounds < 1:
            raise ConfigurationError("reviewers and review_rounds must be at least 1.")
        if self.vet_steps < 1 or self.vet_step_repairs < 0 or self.vet_max_rows < 1:
            raise ConfigurationError("vet_steps and vet_max_rows must be at least 1, vet_step_repairs 0 or more.")
        if not -1.0 <= self.vet_similarity <= 1.0:
            raise ConfigurationError("vet_similarity is a cosine similarity threshold between -1 and 1.")
        if not 0.0 <= self.scope_unmatched_share <= 1.0:
            raise ConfigurationError("scope_unmatched_share is a share of the question's words, between 0 and 1.")

    def checks_scope(self, model_name: str) -> bool:
        """Whether the scope check runs with the model named ``model_name``: ``scope_check`` when it is set,
        else whether the model is one the check was measured on (``SCOPE_CHECKED_MODELS``)."""
        return self.scope_check if self.scope_check is not None else model_name in SCOPE_CHECKED_MODELS

    @classmethod
    def build(cls, values: Mapping[str, Any] | None = None) -> Options:
        """Options from keyword values; LLM keys are ``llm_base_url``, ``llm_model``, ``llm_api_key``,
        ``local_model``, ``llm_timeout_s``, ``llm_max_retries``; ``cache`` is a shorthand for cache_path
        with read-write mode."""
        values = dict(values or {})
        llm = values.pop("llm", None)
        llm_keys = {
            "llm_base_url": "base_url", "llm_model": "model", "llm_api_key": "api_key",
            "local_model": "local_model", "llm_timeout_s": "timeout_s",
            "llm_max_retries": "max_retries", "local_threads": "local_threads",
        }
        llm_overrides = {llm_keys[k]: values.pop(k) for k in list(values) if k in llm_keys}
        if llm is None:
            llm = LLMSettings.from_env(**llm_overrides)
        elif llm_overrides:
            llm = replace(llm, **llm_overrides)
        if "cache" in values:
            cache = values.pop("cache")
            if cache is not None:
                values.setdefault("cache_path", cache)
                values.setdefault("cache_mode", "readwrite")
        if values.get("cache_path") is not None:
            values["cache_path"] = Path(values["cache_path"])
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ConfigurationError(
                f"unknown verifiedsql option(s) {unknown}; known: {sorted(known | set(llm_keys) | {'cache'})}."
            )
        return cls(llm=llm, **values)
