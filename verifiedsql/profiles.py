"""Loads the declarative engine profiles from the ``verifiedsql.dialects`` package (``dialects/``)."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources

from .errors import ConfigurationError


@dataclass(frozen=True)
class DialectProfile:
    """What verifiedsql needs to know about one engine; behaviour lives in flags, not code."""

    name: str
    display_name: str
    sqlalchemy_names: tuple[str, ...]
    sqlglot_dialect: str
    read_only_strategy: str
    deny_functions: frozenset[str]
    deny_table_functions: frozenset[str]
    prompt_hints: tuple[str, ...]  # the dialect's fixed rules (all a prompt shows when schema hints are off)
    # With schema hints on: these rules instead, plus the date hint filled with the schema's date columns
    # (``stages/common/hints.py``). Empty: this engine's prompts keep ``prompt_hints`` either way.
    schema_prompt_hints: tuple[str, ...] = ()
    date_hint: str = ""
    has_ilike: bool = False  # the engine has ILIKE (else case-insensitive matching uses LOWER(...) LIKE)
    probe_template: str = "SELECT DISTINCT {column} FROM {table} LIMIT 20"  # example probe for the model


def _load(name: str) -> DialectProfile:
    text = resources.files("verifiedsql.dialects").joinpath(f"{name}.toml").read_text("utf-8")
    data = tomllib.loads(text)
    return DialectProfile(
        name=data["name"],
        display_name=data["display_name"],
        sqlalchemy_names=tuple(data["sqlalchemy_names"]),
        sqlglot_dialect=data["sqlglot_dialect"],
        read_only_strategy=data["read_only_strategy"],
        deny_functions=frozenset(f.lower() for f in data.get("deny_functions", [])),
        deny_table_functions=frozenset(f.lower() for f in data.get("deny_table_functions", [])),
        prompt_hints=tuple(data.get("prompt_hints", [])),
        schema_prompt_hints=tuple(data.get("schema_prompt_hints", [])),
        date_hint=data.get("date_hint", ""),
        has_ilike=bool(data.get("has_ilike", False)),
        probe_template=data.get("probe_template", DialectProfile.probe_template),
    )


@cache
def all_profiles() -> dict[str, DialectProfile]:
    """Every shipped profile, keyed by its name."""
    names = sorted(
        entry.name.removesuffix(".toml")
        for entry in resources.files("verifiedsql.dialects").iterdir()
        if entry.name.endswith(".toml")
    )
    return {name: _load(name) for name in names}


def profile_for(sqlalchemy_dialect_name: str) -> DialectProfile:
    """The profile for a SQLAlchemy dialect name such as ``sqlite`` or ``postgresql``."""
    for profile in all_profiles().values():
        if sqlalchemy_dialect_name in profile.sqlalchemy_names:
            return profile
    raise ConfigurationError(
        f"verifiedsql has no profile for the {sqlalchemy_dialect_name!r} dialect; supported: "
        f"{sorted(all_profiles())}. Add a TOML profile under dialects/ to support it."
    )
