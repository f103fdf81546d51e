"""Database information compression (after ReFoRCE, section 3.2.1): the schema text of the prompts,
within a token budget.

Each step runs only while the text is still over ``budget_tokens``:

1. grouping (always): sharded or copied tables are shown once, the others by name (``grouping``);
2. sample values trimmed: one fewer per column at a time, then none;
3. table-level linking (``linking``): groups ranked by lexical overlap with the question, with the
   foreign-key neighbours of the best right after them; only when no group scores above zero, and a
   model is given, the model's Y/N per group ranks instead. The best groups that fit are kept, shown in
   schema order, and samples come back for them as far as the budget allows.

A table the question names literally is never dropped, even when that leaves the text over budget.

A schema reflected without samples (``Database.reflect`` samples a large one lazily) gets them through
``sampler`` only for the tables the text shows: all representatives when the text without samples fits the
budget, else those of the groups linking keeps. The text is then the one the steps above give on the fully
sampled schema; only ``tokens_before`` counts the schema as reflected.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ...config import Options
from ...db.schema import Schema, render_schema
from ...llm.base import ChatModel
from ...llm.prompts import generation_messages
from ...report import VerificationReport
from ..common.grouping import TableGroup, group_tables, render_group, sample_depth
from ..common.linking import lexical_scores, link_order, model_votes, named_groups, neighbours
from ..context import QuestionContext

__all__ = ["CompressedSchema", "TableGroup", "compress_schema", "estimate_tokens", "group_tables"]

# (schema, table names) -> the schema with sample values in those tables (``Database.with_samples``).
Sampler = Callable[[Schema, Iterable[str]], Schema]

MAX_LINK_CALLS = 40  # Y/N model calls per question at most (the first groups in schema order)
SEPARATOR = "\n\n"


def estimate_tokens(text: str) -> int:
    """Tokens of ``text``, estimated as one per four characters, rounded up: the usual rule of thumb for
    BPE tokenizers on English and code. DDL full of digits and underscores tokenizes somewhat denser, so
    a budget is approximate; no tokenizer is loaded."""
    return _estimate(len(text))


def _estimate(chars: int) -> int:
    return (chars + 3) // 4


def _joined_chars(texts: Sequence[str]) -> int:
    """The length of the texts joined by SEPARATOR, without joining them."""
    return sum(map(len, texts)) + len(SEPARATOR) * max(0, len(texts) - 1)


def _tokens(texts: Sequence[str]) -> int:
    return _estimate(_joined_chars(texts))


@dataclass(frozen=True)
class CompressedSchema:
    """The schema text for the prompts and what compression did to get there."""

    text: str
    tokens_before: int  # the full schema as ``render_schema`` writes it
    tokens_after: int
    tokens_grouped: int  # after grouping alone
    groups: tuple[TableGroup, ...]  # groups of two or more tables
    tables_kept: tuple[str, ...]  # shown, or listed by name in a kept group
    tables_dropped: tuple[str, ...]
    tables_shown: tuple[str, ...]  # whose DDL the text shows (the kept groups' representatives)
    steps: tuple[str, ...]  # e.g. ("grouping", "samples trimmed to 2", "samples removed", "lexical linking")
    budget_tokens: int

    @property
    def ratio(self) -> float:
        """How many times smaller the text got (tokens before / after)."""
        return self.tokens_before / max(1, self.tokens_after)

    @property
    def over_budget(self) -> bool:
        return self.tokens_after > self.budget_tokens

    def figures(self) -> dict[str, Any]:
        """The report's ``schema_compression`` entry."""
        return {
            "tokens_before": self.tokens_before, "tokens_after": self.tokens_after, "ratio": round(self.ratio, 2),
            "groups": len(self.groups), "tables_kept": len(self.tables_kept),
            "tables_total": len(self.tables_kept) + len(self.tables_dropped), "steps": list(self.steps),
        }


def _fit(order: Sequence[int], texts: Sequence[str], named: set[int], budget: int) -> list[int]:
    """The named groups, then each group in ``order`` whose text still fits, in schema order; the first in
    ``order`` when nothing else would be kept (a prompt always shows some table)."""
    kept = set(named) or set(order[:1])
    chars = _joined_chars([texts[i] for i in kept])
    for index in order:
        extra = len(texts[index]) + (len(SEPARATOR) if kept else 0)
        if index not in kept and _estimate(chars + extra) <= budget:
            kept.add(index)
            chars += extra
    return sorted(kept)


def compress_schema(schema: Schema, question: str, budget_tokens: int, llm: ChatModel | None = None,
                    report: VerificationReport | None = None, sampler: Sampler | None = None) -> CompressedSchema:
    """The schema as prompt text of at most ``budget_tokens`` (estimated) tokens, by the steps in the
    module docstring. ``llm`` is asked (recorded in ``report``) only when lexical linking finds nothing;
    ``sampler`` gives the shown tables their samples where the schema has none yet."""
    groups = group_tables(schema)
    if sampler is not None and _tokens([render_group(g, samples=0) for g in groups]) <= budget_tokens:
        groups = _sampled(schema, groups, range(len(groups)), sampler)  # no linking: every group is shown
        sampler = None
    texts = [render_group(group) for group in groups]
    tokens_grouped = _tokens(texts)
    steps = ["grouping"]
    samples = depth = sample_depth(schema.tables)
    while _tokens(texts) > budget_tokens and samples > 0:
        samples -= 1
        texts = [render_group(group, samples=samples) for group in groups]
        steps.append(f"samples trimmed to {samples}" if samples else "samples removed")
    kept = list(range(len(groups)))
    if _tokens(texts) > budget_tokens:
        kept = _link(groups, texts, question, budget_tokens, llm, report, steps)
        texts = [texts[i] for i in kept]
        if sampler is not None:
            groups = _sampled(schema, groups, kept, sampler)
            depth = max(depth, sample_depth([groups[i].representative for i in kept]))
        for restored in range(depth, samples, -1):
            richer = [render_group(groups[i], samples=restored) for i in kept]
            if _tokens(richer) <= budget_tokens:
                texts = richer
                steps.append(f"samples restored to {restored}")
                break
    text = SEPARATOR.join(texts)
    compressed = CompressedSchema(
        text=text,
        tokens_before=estimate_tokens(render_schema(schema)),
        tokens_after=estimate_tokens(text),
        tokens_grouped=tokens_grouped,
        groups=tuple(g for g in groups if g.is_group),
        tables_kept=tuple(name for i in kept for name in groups[i].names),
        tables_dropped=tuple(name for i in sorted(set(range(len(groups))) - set(kept)) for name in groups[i].names),
        tables_shown=tuple(groups[i].representative.name for i in kept),
        steps=tuple(steps),
        budget_tokens=budget_tokens,
    )
    if compressed.over_budget and report is not None:
        report.notes.append(f"schema compression: {compressed.tokens_after} tokens, over the budget of "
                            f"{budget_tokens}: the tables the question names (or the best table) do not fit")
    return compressed


def _sampled(schema: Schema, groups: list[TableGroup], indexes: Iterable[int], sampler: Sampler) -> list[TableGroup]:
    """``groups`` with the representatives of those at ``indexes`` sampled (one ``sampler`` call)."""
    chosen = set(indexes)
    names = [groups[i].representative.name for i in sorted(chosen)]
    sampled = {table.name: table for table in sampler(schema, names).tables}
    return [replace(g, tables=(sampled.get(g.representative.name, g.representative), *g.tables[1:]))
            if i in chosen else g for i, g in enumerate(groups)]


def _link(groups: list[TableGroup], texts: list[str], question: str, budget: int, llm: ChatModel | None,
          report: VerificationReport | None, steps: list[str]) -> list[int]:
    """Indexes of the groups to keep: lexical ranking, or the model's votes when it has no signal."""
    named = named_groups(groups, question)
    scores = lexical_scores(groups, question)
    steps.append("lexical linking")
    refused: set[int] = set()
    if max(scores, default=0) == 0 and llm is not None:
        asked = [i for i in range(len(groups)) if i not in named][:MAX_LINK_CALLS]
        record = report if report is not None else VerificationReport(question=question, dialect="")
        votes = model_votes(llm, record, question, {i: texts[i] for i in asked})
        scores = [int(votes.get(i, False)) for i in range(len(groups))]
        steps.append("model linking")
        if any(scores):  # the groups the model turned down do not fill the budget (unless it said N to all)
            refused = {i for i, yes in votes.items() if not yes}
    order = [i for i in link_order(scores, named, neighbours(groups)) if i not in refused]
    return _fit(order, texts, named, budget)


class SchemaCompression:
    """Context stage (option ``compress_schema``): the prompt's schema text becomes the compressed one, and
    its figures go into ``report.schema_compression``."""

    name = "compress"

    def enabled(self, options: Options) -> bool:
        return options.compress_schema

    def run(self, ctx: QuestionContext) -> None:
        self.compress_to(ctx, ctx.options.prompt_budget_tokens)

    def fit_window(self, ctx: QuestionContext, window: int | None, why: str) -> None:
        """Compress the context's schema so that the prompt fits a context window of ``window`` model tokens
        (None: unknown, so to ``prompt_budget_tokens``), whether the option is on or not; a note says ``why``."""
        ctx.report.notes.append(f"the schema was compressed to fit the model's context window ({why})")
        self.compress_to(ctx, fitting_budget(ctx.options, window))

    def compress_to(self, ctx: QuestionContext, budget_tokens: int) -> None:
        """Compress the context's schema to ``budget_tokens``."""
        def sampler(schema: Schema, tables: Iterable[str]) -> Schema:
            return ctx.database.with_samples(schema, tables, ctx.deadline)

        compressed = compress_schema(ctx.schema, ctx.question, budget_tokens, ctx.llm, ctx.report, sampler)
        ctx.schema_text, ctx.report.schema_compression = compressed.text, compressed.figures()
        ctx.schema = sampler(ctx.schema, compressed.tables_shown)  # what the prompt shows, with its samples


PROMPT_OVERHEAD_TOKENS = 300  # the generation prompt's instructions and question, in characters / 4 (about)


def prompt_chars(ctx: QuestionContext) -> int:
    """The length of the context's generation prompt, in characters."""
    return sum(len(message["content"]) for message in generation_messages(ctx.profile, ctx.schema_text, ctx.question))


def over_window(ctx: QuestionContext, window: int) -> bool:
    """Whether the generation prompt may not fit a context window of ``window`` model tokens with the answer
    (``max_tokens``): counted at 2 characters a model token (DDL with samples measured 2.25; Spider's largest
    prompt, 5,200 characters, fits 4,096)."""
    return prompt_chars(ctx) // 2 + ctx.options.max_tokens > window


def fitting_budget(options: Options, window: int | None) -> int:
    """A schema budget (``estimate_tokens``: characters / 4) whose prompt fits a window of ``window`` model tokens
    with room for the answer; the option's budget when the window is unknown or larger. A model token is about
    2.3 characters of DDL with samples, so half the window's tokens left, less the instructions and the
    question, is a safe count of characters / 4."""
    budget = options.prompt_budget_tokens
    if window is None:
        return budget
    return max(1, min(budget, (window - options.max_tokens) // 2 - PROMPT_OVERHEAD_TOKENS))
