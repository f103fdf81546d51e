"""Prompt rules that follow the schema rather than the dialect alone (``schema_hints``): a date-function
rule only when the schema has date columns, naming them; number columns that hold years named as such, so
that they are compared directly; a ratio rule that leaves percentages to the question. An engine whose
profile has no ``schema_prompt_hints`` keeps its fixed rules."""

from __future__ import annotations

from dataclasses import replace

from ...db.schema import Schema
from ...profiles import DialectProfile
from .facts import holds_dates, holds_years
from .grouping import capped_list

MAX_NAMED = 8  # columns named in one hint; more are counted
YEAR_HINT = ("These columns hold years as plain numbers; compare them with numbers, never through date "
             "functions: {columns}.")


def schema_hints(profile: DialectProfile, schema: Schema) -> tuple[str, ...]:
    """The rules a prompt on ``schema`` shows: the profile's schema rules, then the date and year hints
    this schema calls for."""
    dates: list[str] = []
    years: list[str] = []
    for table in schema.tables:
        for column in table.columns:
            name = f"{table.name}.{column.name}"
            if (held := holds_dates(column)) is not None:
                dates.append(name if held == "typed" else f"{name} (text)")
            elif holds_years(column):
                years.append(name)
    hints = list(profile.schema_prompt_hints)
    if dates and profile.date_hint:
        hints.append(profile.date_hint.format(columns=capped_list(dates, MAX_NAMED)))
    if years:
        hints.append(YEAR_HINT.format(columns=capped_list(years, MAX_NAMED)))
    return tuple(hints)


def prompt_profile(profile: DialectProfile, schema: Schema, enabled: bool) -> DialectProfile:
    """``profile`` with the rules its prompts show on ``schema``: the schema's when ``enabled`` and the
    engine has schema rules, else unchanged."""
    if not enabled or not profile.schema_prompt_hints:
        return profile
    return replace(profile, prompt_hints=schema_hints(profile, schema))
