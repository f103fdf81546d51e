"""Named pipeline configurations compared by the harness. Later stages add entries here."""

from __future__ import annotations

from typing import Any, Mapping

from ..config import Options
from ..errors import ConfigurationError

# name -> Options overrides. Every strategy shares the same candidate pool through the record/replay
# cache: greedy's only request is self-consistency's candidate 0 (temperature 0, seed 0).
# The stages that are on by default (``Options``); BASELINE below turns them off for the other strategies.
DEFAULT_ON: dict[str, Any] = {"schema_repair": True, "check_literals": True, "weigh_evidence": True,
                              "constraint_repair": True}

STRATEGIES: dict[str, dict[str, Any]] = {
    "greedy": {"candidates": 1},
    "self-consistency": {"candidates": 5},
    # The same candidate requests as greedy / self-consistency: a failing candidate is first repaired from
    # schema facts; refinement (with the unchanged prompt) only follows when no repair runs.
    "greedy+repair": {"candidates": 1, "schema_repair": True},
    "self-consistency+repair": {"candidates": 5, "schema_repair": True},
    # Prompt rules from the schema (changes the generation prompt on engines with schema rules; SQLite's
    # prompts are the same either way).
    "greedy+repair+hints": {"candidates": 1, "schema_repair": True, "schema_hints": True},
    "self-consistency+repair+hints": {"candidates": 5, "schema_repair": True, "schema_hints": True},
    # A refinement after an unknown table or column shows the schema's facts about it: new refinement requests.
    "greedy+repair+facts": {"candidates": 1, "schema_repair": True, "schema_facts": True},
    "self-consistency+repair+facts": {"candidates": 5, "schema_repair": True, "schema_facts": True},
    # The same candidate requests as greedy+repair / self-consistency+repair: each literal compared with a
    # column is then looked up there (a stored variant repaired, a name held in a linked table rewritten).
    "greedy+repair+literals": {"candidates": 1, "schema_repair": True, "check_literals": True},
    "self-consistency+repair+literals": {"candidates": 5, "schema_repair": True, "check_literals": True},
    # Same candidate requests as self-consistency (verify only adds repair calls), so the cache is shared.
    "+verify": {"candidates": 5, "verify": True},
    "+ground": {"candidates": 5, "ground_values": True},
    "+ground+verify": {"candidates": 5, "ground_values": True, "verify": True},
    # Probing changes the generation prompt; +probe+verify shares +probe's candidate requests.
    "+probe": {"candidates": 5, "probe": True},
    "+probe+verify": {"candidates": 5, "probe": True, "verify": True},
    # Same candidates as self-consistency; adds slicing, MDD and solver calls when candidates disagree.
    "+dpc": {"candidates": 5, "dpc": True},
    # Same first-round candidates as self-consistency; explores and regenerates only on a tie or all failures.
    "+consensus": {"candidates": 5, "consensus": True},
    # Same candidate requests as self-consistency when no tables group and the schema fits the budget.
    "+compress": {"candidates": 5, "compress_schema": True},
    # A budget below most Spider schemas (171-1,098 est. tokens), so trimming and table linking do run.
    "+compress-250": {"candidates": 5, "compress_schema": True, "prompt_budget_tokens": 250},
    # Same candidates as self-consistency; R3 review of the selected SQL adds a "review" candidate.
    "+review": {"candidates": 5, "review": True},
    # R3 as a strategy of its own: greedy's one candidate, then review, rebuttal and revision.
    "review-only": {"candidates": 1, "review": True},
    # Same candidates as self-consistency; VET traces the question in pandas and adds a "vet" candidate.
    "+vet": {"candidates": 5, "vet": True},
    # VET as a strategy of its own: greedy's one candidate, and the trace-verified SQL where one is accepted.
    "vet-only": {"candidates": 1, "vet": True},
    # The same candidate requests as greedy+repair / self-consistency+repair; below probable (or with no query
    # that ran), one zero-temperature question: does the schema hold the data? (scope_check)
    "greedy+repair+scope": {"candidates": 1, "schema_repair": True, "scope_check": True},
    "self-consistency+repair+scope": {"candidates": 5, "schema_repair": True, "scope_check": True},
    # The library's default pipeline without its scope check, and its greedy half: every stage that is on by
    # default and adds no model request, on (tests/test_stage_options.py keeps these in step with Options).
    "default": {"candidates": 5, **DEFAULT_ON},
    "default-greedy": {"candidates": 1, **DEFAULT_ON},
    # The same candidate requests as default / self-consistency, drawn one at a time: drawing stops once the
    # vote is settled (adaptive sampling, stages/sampling.py), so later candidates are never asked for.
    "default-adaptive": {"candidates": 5, **DEFAULT_ON, "adaptive": True},
    # The default pipeline with the calibrated confidence (the fit shipped for the model: tiers from
    # report.probability), and with the sure stop too (the greedy candidate alone when the fit is sure of it).
    # The same candidate requests as default's (the sure stop's first is default's greedy one).
    "default+calibrated": {"candidates": 5, **DEFAULT_ON, "calibration": None},
    "default+sure": {"candidates": 5, **DEFAULT_ON, "calibration": None, "sure_stop": True},
    # The default pipeline with the model scope check (one call per answer below probable, or with none): the
    # library's default with the embedded models (LIBRARY_DEFAULT). Its NO ends a question only where half the
    # question's words name nothing in the database; default+scope-alone lets the NO alone decide (the fit).
    "default+scope": {"candidates": 5, **DEFAULT_ON, "scope_check": True},
    "default+scope-alone": {"candidates": 5, **DEFAULT_ON, "scope_check": True, "scope_unmatched_share": 0.0},
    "self-consistency+adaptive": {"candidates": 5, "adaptive": True},
    # The default pipeline with one more optional stage: its candidate requests are default's, so each adds
    # only that stage's own requests to the cache (how bench stages measures a stage on the default model).
    "default+facts": {"candidates": 5, **DEFAULT_ON, "schema_facts": True},
    "default+verify": {"candidates": 5, **DEFAULT_ON, "verify": True},
    # The default pipeline without the deterministic constraint repair (stages/pvsql/rules/): default's
    # candidate requests (the repair asks the model nothing).
    "default-constraints": {"candidates": 5, **DEFAULT_ON, "constraint_repair": False},
    "default+dpc": {"candidates": 5, **DEFAULT_ON, "dpc": True},
    "default+consensus": {"candidates": 5, **DEFAULT_ON, "consensus": True},
    "default+review": {"candidates": 5, **DEFAULT_ON, "review": True},
    # Probing changes the generation prompt, so default+probe asks for a pool of its own (five new candidates).
    "default+probe": {"candidates": 5, **DEFAULT_ON, "probe": True},
    "default+vet": {"candidates": 5, **DEFAULT_ON, "vet": True},
    # Schema compression at its default budget: the generation prompt changes only where tables group or a
    # schema is over the budget (none of Spider's at 6,000 estimated tokens, so none of default's are new).
    "default+compress": {"candidates": 5, **DEFAULT_ON, "compress_schema": True},
}

REFERENCE = "self-consistency"  # the baseline of "gap closed"


def parse_strategies(text: str) -> list[str]:
    """``"greedy,self-consistency"`` -> the names, checked against the registry."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in STRATEGIES]
    if unknown or not names:
        raise ConfigurationError(f"unknown strategy {unknown or text!r}; known: {sorted(STRATEGIES)}.")
    return names


# What every strategy starts from unless it says otherwise: the stages whose default is on are off, so that a
# strategy's name means the same pipeline as when its figures were recorded (``+repair`` turns repair on).
# The scope check's default depends on the model (``Options.checks_scope``), so every strategy pins it.
BASELINE: dict[str, Any] = {name: False for name in DEFAULT_ON} | {"schema_facts": False, "schema_hints": False,
                                                                   "scope_check": False, "calibration": "off",
                                                                   "sure_stop": False}

LIBRARY_DEFAULT = "default+scope"  # the strategy that is the library's default pipeline with the embedded models


def strategy_options(name: str, base: Mapping[str, Any]) -> Options:
    """The Options for strategy ``name``: ``base`` values, then ``BASELINE``, with the strategy's overrides on top.
    A strategy that uses the model's calibration (``calibration`` None) uses the one ``base`` names, if any."""
    values = {**base, **BASELINE, **STRATEGIES[name]}
    if STRATEGIES[name].get("calibration", "off") is None and base.get("calibration") is not None:
        values["calibration"] = base["calibration"]
    return Options.build(values)
