"""The two shapes every pipeline stage has, and the candidate pool the second kind works on.

- A **context stage** (schema compression, value grounding, probing, verify-and-repair) runs before
  generation and adds to the question's context: prompt blocks in ``ctx.schema_text``, or a check every
  candidate goes through (``ctx.candidate_checks``).
- A **pool stage** (consensus, VET, review, DPC) takes the candidate pool after the vote and returns it,
  maybe with new candidates, clusters or another selection.

Each stage decides whether it runs from the options and the pool's state alone (``enabled``/``applies``),
never from the report; it writes only its own report section. The pipeline (``verifiedsql.pipeline``)
holds the two ordered tuples and loops over them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Protocol

from ..config import Options
from ..llm.base import ChatResponse, Message
from ..report import Cluster, LLMPurpose
from .cluster import Selection
from .context import QuestionContext
from .generate import CandidateRun


@dataclass(frozen=True)
class Pool:
    """The candidates that ran (or failed), their result clusters and the current selection.
    ``tie_unresolved`` is set when consensus enforcement could not break a tie, so the dual-paradigm test
    settles it whether or not its own option is on."""

    runs: list[CandidateRun]
    clusters: list[Cluster]
    selection: Selection | None
    tie_unresolved: bool = False

    @property
    def answered(self) -> bool:
        """True when the selection has rows to answer with."""
        return self.selection is not None and self.selection.representative.result is not None

    def with_selection(self, selection: Selection | None) -> Pool:
        return replace(self, selection=selection)


class ContextStage(Protocol):
    """Runs before generation; adds prompt context or candidate checks to ``ctx``."""

    name: str  # the key of ``report.timings``

    def enabled(self, options: Options) -> bool: ...

    def run(self, ctx: QuestionContext) -> None: ...


class PoolStage(Protocol):
    """Runs after the vote; returns the pool to answer from."""

    name: str

    def applies(self, options: Options, pool: Pool) -> bool: ...

    def run(self, ctx: QuestionContext, pool: Pool) -> Pool: ...


class Stage:
    """The working parts of a model-using stage for one question: a view of its context."""

    def __init__(self, ctx: QuestionContext) -> None:
        self.ctx = ctx
        self.llm = ctx.llm
        self.database = ctx.database
        self.options = ctx.options
        self.report = ctx.report
        self.deadline = ctx.deadline

    def ask(self, messages: tuple[Message, ...], purpose: LLMPurpose, *, seed: int = 0,
            max_tokens: int | None = None) -> ChatResponse:
        """One zero-temperature call, recorded in the report; ``LLMError`` propagates."""
        return self.ctx.ask(messages, purpose, seed=seed, max_tokens=max_tokens)
